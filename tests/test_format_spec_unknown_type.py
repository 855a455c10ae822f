"""Issue 22, class 8: a 0-dim tensor formatted with a spec where its type is not visible.

torch's 0-dim tensor formats as its number (``f"{loss:.4f}"``); MindSpore's Tensor refuses any spec. Where the
light type inference does not know the value (a dict of losses a function returns, a loss a training step
returns, a value from a list), a float presentation type (``f e g %``) formats ``float(value)``: what torch
formats for a tensor, and the same text for a Python or numpy number. Generated matrix: where the value
comes from x the spec; the converted script's printed line must equal torch's, character for character.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap

import pytest
from requires_support import require_module

from torch2ms.convert import convert_source, convert_tree

SOURCES = {
    "dict_from_function": ("losses = estimate()", "losses['train']"),
    "returned_by_step": ("lossD = step()", "lossD"),
    "list_item": ("history = [step(), step()]", "history[-1]"),
    "tuple_unpacked": ("a, b = step(), 3", "a"),
    "python_int": ("n = count()", "n"),
    "numpy_scalar": ("v = np.float32(0.123456)", "v"),
    "attribute": ("box = Box()", "box.loss"),
}
SPECS = (".4f", "8.3e", ".2g", ".1%", ">10.5f")

HEAD = """
import numpy as np
import torch


def estimate():
    return {"train": torch.tensor(1.2345678) * 2, "val": torch.tensor(0.5)}


def step():
    w = torch.tensor([0.25, -1.5])
    return (w * w).sum() / 3


def count():
    return 7


class Box:
    def __init__(self):
        self.loss = torch.tensor(0.3333333)
"""


def _script() -> str:
    lines = [HEAD]
    for name, (setup, expr) in SOURCES.items():
        lines.append(setup)
        for spec in SPECS:
            lines.append(f'print("{name} {spec}", f"{{{expr}:{spec}}}")')
    return "\n".join(lines) + "\n"


def _run(path, block: bool) -> list[str]:
    prelude = ""
    if block:  # the converted script runs with MindSpore alone
        prelude = textwrap.dedent("""
            import sys
            class _Block:
                def find_spec(self, name, path=None, target=None):
                    if name.split(".")[0] in ("torch", "torch2ms"):
                        raise ImportError(name)
            sys.meta_path.insert(0, _Block())
        """)
    code = (
        prelude
        + f"import runpy, sys\nsys.path[0] = {str(path.parent)!r}\nrunpy.run_path({str(path)!r}, run_name='__main__')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.splitlines()


@pytest.mark.differential
def test_unknown_values_formatted_with_a_float_spec_print_as_torch(tmp_path):
    require_module("torch")
    require_module("mindspore")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "fmt.py").write_text(_script(), encoding="utf-8")
    convert_tree(tmp_path / "src", tmp_path / "out")  # the runtime vendored: MindSpore alone runs it
    want, got = _run(tmp_path / "src" / "fmt.py", False), _run(tmp_path / "out" / "fmt.py", True)
    assert len(want) == len(SOURCES) * len(SPECS)
    for w, g in itertools.zip_longest(want, got):
        assert g == w


@pytest.mark.parametrize("spec", ["", ">10", "d", "x", "{width}.2f"])
def test_other_specs_and_visible_numbers_are_left_alone(spec):
    """No spec, a non-float presentation type, a nested spec and a value that is visibly a number keep their
    text: only a float presentation type on a value of unknown type is wrapped."""
    src = f"import torch\nwidth = 8\nv = step()\nprint(f'{{v:{spec}}}', f'{{len([1]):.2f}}', f'{{0.5:.1f}}')\n"
    code = convert_source(src).code
    assert "float(" not in code, code
