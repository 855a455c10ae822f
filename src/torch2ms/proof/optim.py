"""Differential checks that need several training steps: optimizers and LR schedulers.

``check = "optimizer"``: the case inputs that are float arrays become trainable parameters on both
sides (torch ``nn.Parameter`` / MindSpore ``Parameter``, named after the input), available by name
and as the list ``params``. ``setup`` runs first (rewritten for MindSpore by the KB, like the call).
The ``call`` either builds the optimizer (``torch.optim.SGD(params, lr=0.1)``) or, for Optimizer
methods, acts on an ``opt`` built in ``setup`` (its result is compared too). Then both optimizers
run ``STEPS`` steps on a fixed differentiable loss (least squares per parameter on seeded data;
MindSpore gradients from ``mindspore.value_and_grad``) and every parameter is compared after
every step.

``check = "scheduler"``: ``opt`` comes from ``setup`` (default: ``torch.optim.SGD(params, lr=0.1)``)
and the ``call`` builds the scheduler (or, for scheduler methods, acts on a ``sched`` from ``setup``;
its result is compared). Each of ``SCHED_STEPS`` iterations trains one step, then
calls ``scheduler.step()`` (``step(metric)`` for ReduceLROnPlateau, from a fixed metric series)
and compares the learning rate of every param group, and the parameters, on both sides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..kb import KB, Case, Entry
from ..kb.rewrite import rewrite_expression
from .compare import CaseFailure, CaseResult, compare, to_numpy
from .inputs import case_seed, make_inputs

__all__ = ["run_optimizer_case"]

STEPS = 5
SCHED_STEPS = 10
# Plateau then improvement, so ReduceLROnPlateau both waits and reduces within SCHED_STEPS.
PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6]
DEFAULT_INPUTS = {"w": "randn(4, 3)", "b": "randn(4)"}
OWNERS: dict[str, str | tuple[str, ...]] = {
    "opt": "torch.optim.Optimizer",
    "sched": "torch.optim.lr_scheduler.LRScheduler",
}


@dataclass
class _Training:
    """Both sides' parameters, namespaces and the fixed least-squares data of each parameter."""

    tparams: dict[str, Any]
    mparams: dict[str, Any]
    tns: dict[str, Any]
    mns: dict[str, Any]
    data: dict[str, tuple[np.ndarray, np.ndarray]]
    mdata: dict[str, tuple[Any, Any]] = field(default_factory=dict)


def _scalarize(value: Any) -> Any:
    """0-d arrays (a MindSpore learning-rate Parameter) compare as Python floats."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return float(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_scalarize(v) for v in value)
    if isinstance(value, dict):
        return [_scalarize(v) for _, v in sorted(value.items())]
    return value


def _rewrite(kb: KB, src: str, what: str) -> str:
    res = rewrite_expression(kb, src, OWNERS)
    if not res.ok:
        raise CaseFailure(f"rewrite refused {what} {src!r}: {res.notes}")
    return res.source


def _loss_data(rng: np.random.Generator, arrays: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Fixed targets per parameter: least squares p2d @ X ≈ Y (2-D+) or p * c ≈ t (1-D)."""
    data = {}
    for name, arr in arrays.items():
        if arr.ndim >= 2:
            cols = arr.shape[-1]
            rows = int(np.prod(arr.shape[:-1]))
            data[name] = (
                rng.standard_normal((cols, 5)).astype(np.float32),
                rng.standard_normal((rows, 5)).astype(np.float32),
            )
        else:
            data[name] = (
                rng.standard_normal(arr.shape).astype(np.float32),
                rng.standard_normal(arr.shape).astype(np.float32),
            )
    return data


def _training(entry: Entry, case: Case, index: int) -> _Training:
    import mindspore as ms
    import torch

    rng = np.random.default_rng(case_seed(entry, index))
    raw = make_inputs(case.inputs or DEFAULT_INPUTS, rng)
    arrays = {
        k: np.ascontiguousarray(v)
        for k, v in raw.items()
        if isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.floating)
    }
    others = {k: v for k, v in raw.items() if k not in arrays}
    data = _loss_data(rng, arrays)
    tparams = {k: torch.nn.Parameter(torch.from_numpy(a.copy())) for k, a in arrays.items()}
    mparams = {k: ms.Parameter(ms.Tensor(a.copy()), name=k) for k, a in arrays.items()}
    tns: dict[str, Any] = {"torch": torch, "np": np, "params": list(tparams.values()), **others, **tparams}
    import torch2ms.runtime  # a converted optimizer may be a runtime helper (CoupledAdam)

    mns: dict[str, Any] = {"mindspore": ms, "ms": ms, "np": np, "torch2ms": torch2ms, **others, **mparams}
    mns["params"] = list(mparams.values())
    mdata = {k: (ms.Tensor(a), ms.Tensor(b)) for k, (a, b) in data.items()}
    return _Training(tparams, mparams, tns, mns, data, mdata)


def _torch_loss(tr: _Training) -> Any:
    import torch

    total = 0
    for k, p in tr.tparams.items():
        a, b = (torch.from_numpy(d) for d in tr.data[k])
        if p.ndim >= 2:
            total = total + ((p.reshape(-1, p.shape[-1]) @ a - b) ** 2).mean()
        else:
            total = total + ((p * a - b) ** 2).mean()
    return total


def _ms_loss(tr: _Training) -> Any:
    import mindspore as ms

    total = 0
    for k, p in tr.mparams.items():
        a, b = tr.mdata[k]
        if p.ndim >= 2:
            total = total + ((ms.ops.matmul(p.reshape(-1, p.shape[-1]), a) - b) ** 2).mean()
        else:
            total = total + ((p * a - b) ** 2).mean()
    return total


def _pick(t_out: Any, m_out: Any, kinds: tuple[type, ...], name: str, tr: _Training, case: Case):
    """The built object (an optimizer/scheduler), or for a method call: its result compared and ``name`` from setup."""
    if isinstance(t_out, kinds):
        return t_out, m_out, 0.0
    worst = compare(_scalarize(to_numpy(t_out)), _scalarize(to_numpy(m_out)), case, "call result")
    t_obj, m_obj = tr.tns.get(name), tr.mns.get(name)
    if not isinstance(t_obj, kinds):
        raise CaseFailure(f"{case.check} case: the call builds no {case.check} and setup defines no `{name}`")
    return t_obj, m_obj, worst


def _learning_rates(topt: Any, mopt: Any) -> tuple[list[float], list[float]]:
    t_lr = [float(g["lr"]) for g in topt.param_groups]
    m_lr = [float(to_numpy(g["lr"])) for g in mopt.param_groups]
    return t_lr, m_lr


def run_optimizer_case(entry: Entry, case: Case, index: int, kb: KB) -> CaseResult:
    """Build (or call) the optimizer/scheduler on both sides, train a few steps, compare every step."""
    import mindspore as ms
    import torch

    ms.set_context(mode=ms.PYNATIVE_MODE)
    tr = _training(entry, case, index)
    torch.manual_seed(0)
    ms.set_seed(0)
    setup_src = case.setup
    if case.check == "scheduler" and not re.search(r"\bopt\s*=", case.setup or ""):
        setup_src = "opt = torch.optim.SGD(params, lr=0.1)" + (f"\n{case.setup}" if case.setup else "")
    ms_setup = ""
    if setup_src:
        ms_setup = _rewrite(kb, setup_src, "setup")
        exec(setup_src, tr.tns)
        exec(ms_setup, tr.mns)
    ms_call = _rewrite(kb, case.call, "call")
    t_out = eval(case.call, tr.tns)
    m_out = eval(ms_call, tr.mns)
    tsched = msched = None
    if case.check == "optimizer":
        topt, mopt, worst = _pick(t_out, m_out, (torch.optim.Optimizer,), "opt", tr, case)
        steps = STEPS
    else:
        topt, mopt = tr.tns["opt"], tr.mns["opt"]
        kinds = (torch.optim.lr_scheduler.LRScheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
        tsched, msched, worst = _pick(t_out, m_out, kinds, "sched", tr, case)
        steps = SCHED_STEPS
        worst = max(worst, compare(*_learning_rates(topt, mopt), case, "lr before the first step"))
    worst = max(worst, _train(tr, topt, mopt, tsched, msched, steps, case))
    setup_prefix = f"{setup_src}; " if setup_src else ""
    ms_prefix = f"{ms_setup}; " if ms_setup else ""
    return CaseResult(f"{setup_prefix}{case.call}", f"{ms_prefix}{ms_call}", worst)


def _train(tr: _Training, topt: Any, mopt: Any, tsched: Any, msched: Any, steps: int, case: Case) -> float:
    """``steps`` training steps on both sides; parameters (and learning rates) compared after each."""
    import mindspore as ms
    import torch

    worst = 0.0
    plateau = isinstance(tsched, torch.optim.lr_scheduler.ReduceLROnPlateau)
    for step in range(steps):
        topt.zero_grad()
        _torch_loss(tr).backward()
        topt.step()
        grad_fn = ms.value_and_grad(lambda: _ms_loss(tr), None, mopt.parameters)
        _, grads = grad_fn()
        mopt(grads)
        for k in tr.tparams:
            here = compare(to_numpy(tr.tparams[k]), to_numpy(tr.mparams[k]), case, f"step {step + 1}: {k}")
            worst = max(worst, here)
        if tsched is None:
            continue
        metric = (PLATEAU_METRICS[step],) if plateau else ()
        tsched.step(*metric)
        msched.step(*metric)
        here = compare(*_learning_rates(topt, mopt), case, f"lr after scheduler step {step + 1}")
        worst = max(worst, here)
    return worst
