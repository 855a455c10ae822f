"""Differential check of one KB case: real PyTorch and real MindSpore on the same random inputs.

The MindSpore side is produced by the same rewrite rules the converter uses, so a passing case
proves the rule, not a hand-written twin. Both frameworks are imported when a case runs.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kb import KB, Case, Entry
from ..kb.rewrite import rewrite_expression
from .compare import CaseFailure, CaseResult, compare, to_numpy
from .graph import run_in_graph_mode, wants_graph
from .inputs import case_seed, make_inputs
from .weights import converted_state, copy_torch_weights

__all__ = ["CaseResult", "GraphRunner", "case_owners", "ms_inputs", "mutated_input", "rewrite_case_source", "run_case"]

Owners = dict[str, str | tuple[str, ...]]
GraphRunner = Callable[[str, dict[str, Any], Entry, int], Any]


@dataclass
class _Sides:
    """The torch and MindSpore namespaces a case's expressions are evaluated in."""

    torch: dict[str, Any]
    ms: dict[str, Any]
    owners: Owners


def run_case(entry: Entry, case: Case, index: int, kb: KB, graph: GraphRunner = run_in_graph_mode) -> CaseResult:
    """Run one case on both frameworks and compare; raise CaseFailure on disagreement.

    ``graph`` evaluates the MindSpore expression in GRAPH_MODE (R27) for the cases that want it:
    one Cell per case by default, or a :class:`~torch2ms.proof.batch.GraphBatches` that compiles
    many cases at once.
    """
    import mindspore as ms

    if case.check in ("optimizer", "scheduler"):
        from .optim import run_optimizer_case  # multi-step training checks

        return run_optimizer_case(entry, case, index, kb)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    raw_inputs = make_inputs(case.inputs, np.random.default_rng(case_seed(entry, index)))
    sides = _sides(raw_inputs)
    if case.setup:
        _run_setup(case.setup, sides, kb)
    torch_src = ms_src = ""
    if entry.kind == "class":
        torch_src, ms_src = _build_instance(entry, case, sides, kb)
    ms_call = rewrite_case_source(kb, case.call, sides.owners)
    torch_src, ms_src = torch_src + case.call, ms_src + ms_call
    graph_inputs = ms_inputs(raw_inputs)  # fresh: an in-place call (x.copy_) must not feed the graph run
    t_out = eval(case.call, sides.torch)
    m_out = eval(ms_call, sides.ms)
    worst = compare(to_numpy(t_out), to_numpy(m_out), case)
    if case.check == "onnx":  # the call wrote a model to `f` on each side: run both in onnxruntime
        from .onnx_files import compare_onnx_files

        worst = max(worst, compare_onnx_files(sides.torch.get("f"), sides.ms.get("f"), raw_inputs, case))
    worst = max(worst, _compare_mutated(entry, case, sides, m_out))
    if entry.kind == "class" and case.train:
        worst = max(worst, _compare_state(sides, case, kb))
    if case.graph and entry.kind == "class":
        worst = max(worst, _class_graph_run(ms_call, t_out, case, sides))
    elif wants_graph(entry, case, index):
        g_out = graph(ms_call, graph_inputs, entry, index)
        worst = max(worst, compare(to_numpy(t_out), to_numpy(g_out), case, "graph output"))
    graph_ran = bool(case.graph and entry.kind == "class") or wants_graph(entry, case, index)
    return CaseResult(torch_src, ms_src, worst, ("pynative", "graph") if graph_ran else ("pynative",))


def ms_inputs(raw_inputs: dict[str, Any]) -> dict[str, Any]:
    """The case inputs as MindSpore sees them: arrays become Tensors, other values stay."""
    import mindspore as ms

    return {k: ms.Tensor(np.array(v)) if isinstance(v, np.ndarray) else v for k, v in raw_inputs.items()}


def case_owners(raw_inputs: dict[str, Any]) -> Owners:
    """Receiver types for the rewrite: ``m`` a Module, ``opt`` an Optimizer, array inputs Tensors."""
    owners: Owners = {"m": "torch.nn.Module", "opt": "torch.optim.Optimizer"}
    owners.update({k: "torch.Tensor" for k, v in raw_inputs.items() if isinstance(v, np.ndarray)})
    return owners


def _sides(raw_inputs: dict[str, Any]) -> _Sides:
    import mindspore as ms
    import mindspore.scipy.linalg  # what `from mindspore.scipy import linalg` loads in converted code
    import torch

    import torch2ms.runtime

    torch2ms.runtime.load_helpers()  # GRAPH_MODE runs spell helpers torch2ms.runtime.<name>

    def t_value(v):
        return torch.from_numpy(np.array(v)) if isinstance(v, np.ndarray) else v

    scratch = {"tmp": _scratch_folder()}
    tns: dict[str, Any] = {"torch": torch, "np": np, **scratch, **{k: t_value(v) for k, v in raw_inputs.items()}}
    if importlib.util.find_spec("torchvision") is not None:  # torchvision entries' calls name it
        import torchvision

        tns["torchvision"] = torchvision
    mns: dict[str, Any] = {
        "mindspore": ms,
        "ms": ms,
        "np": np,
        "torch2ms": torch2ms,
        **scratch,
        **ms_inputs(raw_inputs),
    }
    torch.manual_seed(0)
    ms.set_seed(0)
    return _Sides(tns, mns, case_owners(raw_inputs))


@functools.cache
def _scratch_folder() -> str:
    """This process's folder for the files a case writes (``tmp`` in its source).

    One per process: a fixed path raced when two xdist workers ran the same dataset case at once, and
    one read a PNG the other was still writing.
    """
    return tempfile.mkdtemp(prefix="torch2ms_kb_")


def rewrite_case_source(kb: KB, src: str, owners: Owners, what: str = "") -> str:
    """The MindSpore source of a case's torch source, by the converter's rules (CaseFailure if refused)."""
    res = rewrite_expression(kb, src, owners)
    if not res.ok:
        raise CaseFailure(f"rewrite refused {what}{src!r}: {res.notes}")
    return res.source


def _run_setup(setup: str, sides: _Sides, kb: KB) -> None:
    """Torch statements run first (rewritten for MindSpore); modules built there share weights."""
    import mindspore as ms
    import torch

    setup_ms = rewrite_case_source(kb, setup, sides.owners, "setup ")
    exec(setup, sides.torch)
    exec(setup_ms, sides.ms)
    for name, value in list(sides.torch.items()):
        if isinstance(value, torch.nn.Module) and isinstance(sides.ms.get(name), ms.nn.Cell):
            if list(value.state_dict()):
                copy_torch_weights(value, sides.ms[name], kb)


def _build_instance(entry: Entry, case: Case, sides: _Sides, kb: KB) -> tuple[str, str]:
    """``m = <class>(<init>)`` on both sides (layers get torch's weights); returns both sources."""
    import torch

    t_ctor = f"{entry.torch}({case.init or ''})"
    # The whole constructor expression, so nested torch layers (Sequential(...)) convert too.
    m_ctor = rewrite_case_source(kb, t_ctor, sides.owners)
    tm = eval(t_ctor, sides.torch)
    mm = eval(m_ctor, sides.ms)
    sides.torch["m"], sides.ms["m"] = tm, mm
    sides.owners["m"] = _instance_owners(entry, tm)
    if isinstance(tm, torch.nn.Module):  # data classes (DataLoader, samplers) are classes too
        if list(tm.state_dict()):
            copy_torch_weights(tm, mm, kb)
        tm.train(case.train)
        mm.set_train(case.train)
    return f"m = {t_ctor}; ", f"m = {m_ctor}; "


def _instance_owners(entry: Entry, instance: Any) -> tuple[str, ...]:
    """Where ``m.method`` is looked up: the entry's own class, then the torch base it derives from."""
    import torch

    bases = (
        (torch.nn.Module, "torch.nn.Module"),
        (torch.optim.Optimizer, "torch.optim.Optimizer"),
        (torch.distributions.Distribution, "torch.distributions.Distribution"),
    )
    return (entry.torch, *(name for cls, name in bases if isinstance(instance, cls)))


def mutated_input(entry: Entry, case: Case) -> str | None:
    """The input an in-place call mutates on the torch side, to compare after the call.

    ``case.mutates`` names it (``""``: none); by default it is the receiver of an in-place Tensor
    method (``x.add_(y)``, ``x.__iadd__(y)``) when the receiver is a plain name.
    """
    if case.mutates is not None:
        return case.mutates or None
    if not entry.is_method or not entry.torch.startswith("torch.Tensor."):
        return None
    attr = entry.torch.rsplit(".", 1)[-1]
    inplace = attr.endswith("_") and not attr.startswith("_")
    if not (inplace or (attr.startswith("__i") and attr.endswith("__"))):
        return None
    try:
        call = ast.parse(case.call.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        return call.func.value.id if call.func.value.id in case.inputs else None
    return None


def _compare_mutated(entry: Entry, case: Case, sides: _Sides, m_out: Any) -> float:
    """After an in-place call, the mutated input must agree too: as converted code leaves it."""
    name = mutated_input(entry, case)
    if name is None:
        return 0.0
    if entry.rebinds_receiver:
        sides.ms[name] = m_out  # the converter writes `x = x.add(y)` for the statement `x.add_(y)`
    return compare(to_numpy(sides.torch[name]), to_numpy(sides.ms[name]), case, f"{name} after the call")


def _compare_state(sides: _Sides, case: Case, kb: KB) -> float:
    """Running statistics and other buffers after the training-mode forward."""
    tm, mm = sides.torch["m"], sides.ms["m"]
    if not tm.state_dict():
        return 0.0
    t_conv = converted_state(tm, kb)
    worst = 0.0
    for name, p in mm.parameters_and_names():
        worst = max(worst, compare(t_conv[name], p.asnumpy(), case, what=f"state {name}"))
    return worst


def _class_graph_run(ms_call: str, t_out: Any, case: Case, sides: _Sides) -> float:
    """The layer's forward once more in GRAPH_MODE (a training forward is only run, not compared)."""
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        g_out = eval(ms_call, sides.ms)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    if case.train:
        return 0.0
    return compare(to_numpy(t_out), to_numpy(g_out), case, "graph output")
