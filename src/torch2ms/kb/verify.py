"""Differential check of one KB case: real PyTorch and real MindSpore on the same random inputs.

Needs both frameworks (imported lazily). The MindSpore side is produced by the same rewrite
rules the converter uses, so a passing case proves the rule, not a hand-written twin.
"""

from __future__ import annotations

import sys
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import KB, Case, Entry
from .rewrite import rewrite_expression

# Case ``inputs`` are expressions over these helpers: randn(2, 3), randint(0, 5, (4,)), ...


def _input_namespace(rng: np.random.Generator) -> dict[str, Any]:
    def randn(*shape, dtype="float32"):
        return rng.standard_normal(shape).astype(dtype)

    def rand(*shape, dtype="float32"):
        return rng.random(shape).astype(dtype)

    def randpos(*shape, dtype="float32"):
        return (rng.random(shape) + 0.5).astype(dtype)

    def randint(low, high, shape, dtype="int64"):
        return rng.integers(low, high, size=shape).astype(dtype)

    def randbool(*shape):
        return rng.random(shape) > 0.5

    def arange(n, dtype="float32"):
        return np.arange(n).astype(dtype)

    return {
        "randn": randn,
        "rand": rand,
        "randpos": randpos,
        "randint": randint,
        "randbool": randbool,
        "arange": arange,
        "np": np,
    }


class CaseFailure(AssertionError):
    """A differential case whose numbers disagree (or that could not run)."""


@dataclass
class CaseResult:
    torch_src: str
    ms_src: str
    max_abs: float


def _seed(entry: Entry, index: int) -> int:
    return zlib.crc32(f"{entry.torch}#{index}".encode())


def _to_numpy(value: Any, side: str) -> Any:
    import mindspore as ms
    import torch

    if isinstance(value, torch.Tensor):
        v = value.detach().cpu()
        if v.dtype == torch.bfloat16:
            v = v.float()
        return v.numpy()
    if isinstance(value, ms.Tensor):
        if value.dtype == ms.bfloat16:
            value = value.astype(ms.float32)
        return value.asnumpy()
    if isinstance(value, (tuple, list)):
        if isinstance(value, torch.Size):
            return tuple(value)
        return type(value)(_to_numpy(v, side) for v in value)
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    if isinstance(value, ms.dtype.Type) if hasattr(ms.dtype, "Type") else False:
        return str(value).lower()
    return value


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)) and not _is_shape(value):
        out = []
        for v in value:
            out.extend(_flatten(v))
        return out
    return [value]


def _is_shape(value: Any) -> bool:
    return (
        isinstance(value, tuple)
        and all(isinstance(v, int) for v in value)
        and not any(isinstance(v, bool) for v in value)
    )


def compare(t_val: Any, m_val: Any, case: Case, what: str = "output") -> float:
    """Assert torch and MindSpore values agree as the case asks; return the max abs error."""
    t_list, m_list = _flatten(t_val), _flatten(m_val)
    if len(t_list) != len(m_list):
        raise CaseFailure(f"{what}: torch gave {len(t_list)} values, MindSpore {len(m_list)}")
    worst = 0.0
    for i, (t, m) in enumerate(zip(t_list, m_list)):
        label = f"{what}[{i}]" if len(t_list) > 1 else what
        if not isinstance(t, np.ndarray) and not isinstance(m, np.ndarray):
            if isinstance(t, float) or isinstance(m, float):
                if not np.isclose(float(t), float(m), rtol=case.rtol, atol=case.atol):
                    raise CaseFailure(f"{label}: torch {t!r} != MindSpore {m!r}")
            elif t != m and str(t) != str(m):
                raise CaseFailure(f"{label}: torch {t!r} != MindSpore {m!r}")
            continue
        t, m = np.asarray(t), np.asarray(m)
        if t.shape != m.shape:
            raise CaseFailure(f"{label}: shape torch {t.shape} vs MindSpore {m.shape}")
        if case.check != "stats" and t.dtype != m.dtype:
            raise CaseFailure(f"{label}: dtype torch {t.dtype} vs MindSpore {m.dtype}")
        if case.check == "shape" or t.size == 0:
            continue
        if case.check == "stats":
            tf, mf = t.astype(np.float64), m.astype(np.float64)
            for stat in (np.mean, np.std):
                a, b = float(stat(tf)), float(stat(mf))
                if abs(a - b) > case.atol + case.rtol * abs(a):
                    raise CaseFailure(f"{label}: {stat.__name__} torch {a:.6g} vs MindSpore {b:.6g}")
            continue
        if t.dtype == bool or not np.issubdtype(t.dtype, np.number):
            if not np.array_equal(t, m):
                raise CaseFailure(f"{label}: values differ ({int((t != m).sum())} of {t.size} elements)")
            continue
        tf, mf = t.astype(np.float64), m.astype(np.float64)
        if not np.allclose(tf, mf, rtol=case.rtol, atol=case.atol, equal_nan=True):
            err = np.nanmax(np.abs(tf - mf))
            raise CaseFailure(f"{label}: max abs error {err:.3g} > atol {case.atol} (rtol {case.rtol})")
        if tf.size:
            finite = np.isfinite(tf) & np.isfinite(mf)
            if finite.any():
                worst = max(worst, float(np.max(np.abs(tf[finite] - mf[finite]))))
    return worst


def layer_types(module: Any, kb: KB) -> dict[str, str]:
    """Prefix → canonical torch class name, for every submodule the KB knows."""
    out = {}
    for prefix, sub in module.named_modules():
        name = f"torch.nn.{type(sub).__name__}"
        if kb.get(name) is not None:
            out[prefix] = kb.get(name).torch
    return out


def copy_torch_weights(tmod: Any, mcell: Any, kb: KB) -> None:
    """Load a torch module's parameters and buffers into a MindSpore cell via the KB rules."""
    import mindspore as ms

    from ..weights.rename import convert_state_dict

    state = {k: v.detach().cpu().numpy() for k, v in tmod.state_dict().items()}
    converted = convert_state_dict(state, layer_types(tmod, kb), kb)
    params = dict(mcell.parameters_and_names())
    missing = [n for n in params if n not in converted]
    unexpected = [n for n in converted if n not in params]
    if missing or unexpected:
        raise CaseFailure(f"weights: MindSpore params not loaded {missing}, torch keys unused {unexpected}")
    for name, p in params.items():
        arr = converted[name]
        if tuple(arr.shape) != tuple(p.shape):
            raise CaseFailure(f"weights: {name} torch shape {arr.shape} vs MindSpore {tuple(p.shape)}")
        p.set_data(ms.Tensor(np.ascontiguousarray(arr), dtype=p.dtype))


def run_case(entry: Entry, case: Case, index: int, kb: KB) -> CaseResult:
    """Run one case on both frameworks and compare; raise CaseFailure on disagreement."""
    import mindspore as ms
    import torch

    if case.check in ("optimizer", "scheduler"):
        # Multi-step training checks live in their own module.
        from .verify_optim import run_optimizer_case

        return run_optimizer_case(entry, case, index, kb)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    rng = np.random.default_rng(_seed(entry, index))
    ns = _input_namespace(rng)
    raw_inputs = {k: eval(v, dict(ns)) for k, v in case.inputs.items()}

    def t_value(v):
        return torch.from_numpy(np.array(v)) if isinstance(v, np.ndarray) else v

    def m_value(v):
        return ms.Tensor(np.array(v)) if isinstance(v, np.ndarray) else v

    tns: dict[str, Any] = {"torch": torch, "np": np, **{k: t_value(v) for k, v in raw_inputs.items()}}
    import torch2ms.runtime

    mns: dict[str, Any] = {
        "mindspore": ms,
        "ms": ms,
        "np": np,
        "torch2ms": torch2ms,
        **{k: m_value(v) for k, v in raw_inputs.items()},
    }
    torch.manual_seed(0)
    ms.set_seed(0)
    owners = {"m": "torch.nn.Module", "opt": "torch.optim.Optimizer"}
    owners.update({k: "torch.Tensor" for k, v in raw_inputs.items() if isinstance(v, np.ndarray)})
    if case.setup:
        setup_ms = rewrite_expression(kb, case.setup, owners)
        if not setup_ms.ok:
            raise CaseFailure(f"rewrite refused setup {case.setup!r}: {setup_ms.notes}")
        exec(case.setup, tns)
        exec(setup_ms.source, mns)
        for name, value in list(tns.items()):
            # Modules built in setup start with the same weights on both sides.
            if isinstance(value, torch.nn.Module) and isinstance(mns.get(name), ms.nn.Cell):
                if list(value.state_dict()):
                    copy_torch_weights(value, mns[name], kb)
    ms_call = rewrite_expression(kb, case.call, owners)
    if not ms_call.ok:
        raise CaseFailure(f"rewrite refused {case.call!r}: {ms_call.notes}")
    if entry.kind == "class":
        t_ctor = f"{entry.torch}({case.init or ''})"
        # The whole constructor expression, so nested torch layers (Sequential(...)) convert too.
        m_ctor = rewrite_expression(kb, t_ctor, owners)
        if not m_ctor.ok:
            raise CaseFailure(f"rewrite refused {t_ctor}: {m_ctor.notes}")
        tm = eval(t_ctor, tns)
        mm = eval(m_ctor.source, mns)
        tns["m"], mns["m"] = tm, mm
        if isinstance(tm, torch.nn.Module):  # data classes (DataLoader, samplers) are classes too
            if list(tm.state_dict()):
                copy_torch_weights(tm, mm, kb)
            tm.train(case.train)
            mm.set_train(case.train)
        torch_src, ms_src = f"m = {t_ctor}; {case.call}", f"m = {m_ctor.source}; {ms_call.source}"
    else:
        torch_src, ms_src = case.call, ms_call.source
    t_out = eval(case.call, tns)
    m_out = eval(ms_call.source, mns)
    worst = compare(_to_numpy(t_out, "torch"), _to_numpy(m_out, "ms"), case)
    if entry.kind == "class" and case.train and tns["m"].state_dict():
        # Running statistics and other buffers after the training-mode forward.
        from ..weights.rename import convert_state_dict

        t_state = {k: v.detach().cpu().numpy() for k, v in tns["m"].state_dict().items()}
        t_conv = convert_state_dict(t_state, layer_types(tns["m"], kb), kb)
        for name, p in mns["m"].parameters_and_names():
            worst = max(worst, compare(t_conv[name], p.asnumpy(), case, what=f"state {name}"))
    if case.graph and entry.kind == "class":
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            g_out = eval(ms_call.source, mns)
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
        if not case.train:
            worst = max(worst, compare(_to_numpy(t_out, "torch"), _to_numpy(g_out, "ms"), case, "graph output"))
    elif wants_graph(entry, case, index):
        g_out = run_in_graph_mode(ms_call.source, {k: mns[k] for k in raw_inputs}, entry, index)
        worst = max(worst, compare(_to_numpy(t_out, "torch"), _to_numpy(g_out, "ms"), case, "graph output"))
    return CaseResult(torch_src, ms_src, worst)


def wants_graph(entry: Entry, case: Case, index: int) -> bool:
    """R27: the first case of every function/method entry also runs in GRAPH_MODE unless it opts out."""
    if case.setup or case.check in ("optimizer", "scheduler") or entry.kind == "class":
        return bool(case.graph) and not case.setup
    return case.graph if case.graph is not None else index == 0


def run_in_graph_mode(expr: str, inputs: dict[str, Any], entry: Entry, index: int) -> Any:
    """Evaluate a MindSpore expression inside a GRAPH_MODE Cell (R27).

    MindSpore compiles construct from its source file, so the Cell is written to a temporary module.
    """
    import importlib.util
    import tempfile

    import mindspore as ms

    names = list(inputs)
    src = (
        "import mindspore\nimport numpy as np\n\n\n"
        "class GraphCase(mindspore.nn.Cell):\n"
        f"    def construct(self, {', '.join(names)}):\n"
        f"        return {expr}\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/graph_case_{_seed(entry, index)}.py"
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(src)
        mod_name = f"graph_case_{_seed(entry, index)}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module  # the graph compiler looks the module up by name
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            return module.GraphCase()(*[inputs[n] for n in names])
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
            sys.modules.pop(mod_name, None)
