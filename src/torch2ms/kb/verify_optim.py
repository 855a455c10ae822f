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
from typing import Any

import numpy as np

from . import KB, Case, Entry
from .rewrite import rewrite_expression

STEPS = 5
SCHED_STEPS = 10
# Plateau then improvement, so ReduceLROnPlateau both waits and reduces within SCHED_STEPS.
PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6]
DEFAULT_INPUTS = {"w": "randn(4, 3)", "b": "randn(4)"}
OWNERS = {
    "opt": "torch.optim.Optimizer",
    "sched": "torch.optim.lr_scheduler.LRScheduler",
}


def _scalarize(value: Any) -> Any:
    """0-d arrays (a MindSpore learning-rate Parameter) compare as Python floats."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return float(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_scalarize(v) for v in value)
    if isinstance(value, dict):
        return [_scalarize(v) for _, v in sorted(value.items())]
    return value


def _rewrite(kb: KB, src: str, what: str):
    from .verify import CaseFailure

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


def run_optimizer_case(entry: Entry, case: Case, index: int, kb: KB):
    import mindspore as ms
    import torch

    from .verify import CaseFailure, CaseResult, _input_namespace, _seed, _to_numpy, compare

    ms.set_context(mode=ms.PYNATIVE_MODE)
    rng = np.random.default_rng(_seed(entry, index))
    ns = _input_namespace(rng)
    inputs = case.inputs or DEFAULT_INPUTS
    raw = {k: eval(v, dict(ns)) for k, v in inputs.items()}
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
    mns: dict[str, Any] = {
        "mindspore": ms,
        "ms": ms,
        "np": np,
        "params": list(mparams.values()),
        **others,
        **mparams,
    }
    torch.manual_seed(0)
    ms.set_seed(0)

    def t_loss():
        total = 0
        for k, p in tparams.items():
            a, b = (torch.from_numpy(d) for d in data[k])
            if p.ndim >= 2:
                total = total + ((p.reshape(-1, p.shape[-1]) @ a - b) ** 2).mean()
            else:
                total = total + ((p * a - b) ** 2).mean()
        return total

    mdata = {k: (ms.Tensor(a), ms.Tensor(b)) for k, (a, b) in data.items()}

    def m_loss():
        total = 0
        for k, p in mparams.items():
            a, b = mdata[k]
            if p.ndim >= 2:
                total = total + ((ms.ops.matmul(p.reshape(-1, p.shape[-1]), a) - b) ** 2).mean()
            else:
                total = total + ((p * a - b) ** 2).mean()
        return total

    setup_src = case.setup
    if case.check == "scheduler" and not re.search(r"\bopt\s*=", case.setup or ""):
        setup_src = "opt = torch.optim.SGD(params, lr=0.1)" + (f"\n{case.setup}" if case.setup else "")
    ms_setup = ""
    if setup_src:
        ms_setup = _rewrite(kb, setup_src, "setup")
        exec(setup_src, tns)
        exec(ms_setup, mns)
    ms_call = _rewrite(kb, case.call, "call")
    t_out = eval(case.call, tns)
    m_out = eval(ms_call, mns)
    worst = 0.0

    if case.check == "optimizer":
        if isinstance(t_out, torch.optim.Optimizer):
            topt, mopt = t_out, m_out
        else:
            # An Optimizer method: compare what it returned, then train the `opt` it acted on.
            worst = compare(
                _scalarize(_to_numpy(t_out, "torch")), _scalarize(_to_numpy(m_out, "ms")), case, "call result"
            )
            topt, mopt = tns.get("opt"), mns.get("opt")
            if not isinstance(topt, torch.optim.Optimizer):
                raise CaseFailure("optimizer case: the call is not an optimizer and setup defines no `opt`")
        tsched = msched = None
        steps = STEPS
    else:
        topt, mopt = tns["opt"], mns["opt"]
        sched_types = (torch.optim.lr_scheduler.LRScheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
        if isinstance(t_out, sched_types):
            tsched, msched = t_out, m_out
        else:
            # A scheduler method: compare what it returned, then keep stepping the `sched` from setup.
            worst = compare(
                _scalarize(_to_numpy(t_out, "torch")), _scalarize(_to_numpy(m_out, "ms")), case, "call result"
            )
            tsched, msched = tns.get("sched"), mns.get("sched")
            if not isinstance(tsched, sched_types):
                raise CaseFailure("scheduler case: the call is not a scheduler and setup defines no `sched`")
        steps = SCHED_STEPS

    def lrs():
        t_lr = [float(g["lr"]) for g in topt.param_groups]
        m_lr = [float(_to_numpy(g["lr"], "ms")) for g in mopt.param_groups]
        return t_lr, m_lr

    if tsched is not None:
        t_lr, m_lr = lrs()
        worst = max(worst, compare(t_lr, m_lr, case, "lr before the first step"))

    plateau = tsched is not None and isinstance(tsched, torch.optim.lr_scheduler.ReduceLROnPlateau)
    for step in range(steps):
        topt.zero_grad()
        t_loss().backward()
        topt.step()
        grad_fn = ms.value_and_grad(m_loss, None, mopt.parameters)
        _, grads = grad_fn()
        mopt(grads)
        for k in tparams:
            worst = max(
                worst,
                compare(_to_numpy(tparams[k], "torch"), _to_numpy(mparams[k], "ms"), case, f"step {step + 1}: {k}"),
            )
        if tsched is not None:
            if plateau:
                tsched.step(PLATEAU_METRICS[step])
                msched.step(PLATEAU_METRICS[step])
            else:
                tsched.step()
                msched.step()
            t_lr, m_lr = lrs()
            worst = max(worst, compare(t_lr, m_lr, case, f"lr after scheduler step {step + 1}"))

    setup_prefix = f"{setup_src}; " if setup_src else ""
    ms_prefix = f"{ms_setup}; " if ms_setup else ""
    return CaseResult(f"{setup_prefix}{case.call}", f"{ms_prefix}{ms_call}", worst)
