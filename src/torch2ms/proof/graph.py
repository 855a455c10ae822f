"""R27: run the MindSpore side of a case inside a GRAPH_MODE Cell as well."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from typing import Any

from ..kb import Case, Entry
from .inputs import case_seed

__all__ = ["run_in_graph_mode", "wants_graph"]


def wants_graph(entry: Entry, case: Case, index: int) -> bool:
    """The first case of every function/method entry also runs in GRAPH_MODE unless it opts out."""
    if case.setup or case.check in ("optimizer", "scheduler") or entry.kind == "class":
        return bool(case.graph) and not case.setup
    return case.graph if case.graph is not None else index == 0


def run_in_graph_mode(expr: str, inputs: dict[str, Any], entry: Entry, index: int) -> Any:
    """Evaluate a MindSpore expression over ``inputs`` inside a GRAPH_MODE Cell.

    MindSpore compiles ``construct`` from its source file, so the Cell is written to a temporary module.
    """
    import mindspore as ms

    names = list(inputs)
    src = (
        "import mindspore\nimport numpy as np\nimport torch2ms.runtime\n\n\n"
        "class GraphCase(mindspore.nn.Cell):\n"
        f"    def construct(self, {', '.join(names)}):\n"
        f"        return {expr}\n"
    )
    mod_name = f"graph_case_{case_seed(entry, index)}"
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/{mod_name}.py"
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(src)
        spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[mod_name] = module  # the graph compiler looks the module up by name
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            return module.GraphCase()(*[inputs[n] for n in names])
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
            sys.modules.pop(mod_name, None)
