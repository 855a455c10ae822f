"""A training step whose forward may leave parameters out (needs MindSpore only).

torch gives a parameter that took no part in the forward no gradient at all (``.grad`` stays None) and its
optimizers skip it: no momentum, no weight decay, no moment update, no Adam step count. MindSpore's
``value_and_grad`` returns zeros for it and the optimizer moves it anyway (momentum, decay). A forward whose
Python control flow draws a random number of layers each step (``for _ in range(random.randint(...))``) leaves
a different set out each step; its converted step runs uncompiled (host draws), so the parameters the forward
read are known: ``StepSkippingUnread`` records them (through ``Cell.__getattr__``, the way a Cell reads its
Parameters) and runs each optimizer over the parameters that took part only (a parameter counts as taking part
when the forward read it or its gradient is not all zero); the others keep their values and their optimizer
state as torch leaves them. AdamW (and torch's Adam, which the conversion writes as AdamW) keeps one step
count per parameter, as torch does. In GRAPH_MODE the step is compiled and runs as a plain Cell.
"""

from __future__ import annotations

import math
from typing import Any

import mindspore as ms
from mindspore import nn, ops

__all__ = ["StepSkippingUnread"]


class StepSkippingUnread(nn.Cell):  # type: ignore[misc]
    """The converted TrainStep's base where its forward draws on the host: ``TrainStep(optimizer, ...)``."""

    def __init__(self, *optimizers: Any) -> None:
        super().__init__()
        object.__setattr__(self, "_unread_optimizers", tuple(optimizers))  # not sub-cells: no second registration

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if ms.get_context("mode") != ms.PYNATIVE_MODE or not self._unread_optimizers:
            return super().__call__(*args, **kwargs)
        reads: set[int] = set()
        getattr_ = nn.Cell.__getattr__

        def recording(cell: Any, name: str) -> Any:
            value = getattr_(cell, name)
            if isinstance(value, ms.Parameter):
                reads.add(id(value))
            return value

        for opt in self._unread_optimizers:
            opt.__dict__["construct"] = _present_only(opt, reads, type(opt).construct)
        nn.Cell.__getattr__ = recording
        try:
            return super().__call__(*args, **kwargs)
        finally:
            nn.Cell.__getattr__ = getattr_
            for opt in self._unread_optimizers:
                opt.__dict__.pop("construct", None)


def _present_only(opt: Any, reads: set[int], construct: Any) -> Any:
    def step(gradients: Any) -> Any:
        params = list(opt.parameters)
        present = [id(p) in reads or bool((g != 0).any()) for p, g in zip(params, gradients)]
        counts = _step_counts(opt, len(params))
        before = int(opt.state_step.value()) if counts is not None else 0
        lagging = [i for i, here in enumerate(present) if here and counts is not None and counts[i] != before]
        absent = [i for i, here in enumerate(present) if not here]
        states = _per_parameter_state(opt, params)
        kept = [(t[i], t[i].value().copy()) for i in absent for t in (params, *states)]
        start = {i: params[i].value().copy() for i in lagging}
        out = construct(opt, gradients)
        for param, value in kept:
            ops.assign(param, value)
        if counts is not None:
            for i, here in enumerate(present):
                counts[i] += int(here)
            for i in lagging:
                _adam_update(opt, i, start[i], counts[i])
        return out

    return step


def _per_parameter_state(opt: Any, params: list[Any]) -> list[Any]:
    """The optimizer's per-parameter state: its ParameterTuples cloned from the parameters (momentum
    buffers, first and second moments, SGD's first-step flags)."""
    ids = [id(p) for p in params]
    found, seen = [], set()
    for name, value in [*opt.__dict__.items(), *opt.__dict__.get("_params_list", {}).items()]:
        if name == "parameters" or not isinstance(value, (tuple, list)) or len(value) != len(params):
            continue
        if id(value) in seen or not all(isinstance(v, ms.Parameter) for v in value):
            continue
        if [id(v) for v in value] == ids:
            continue
        seen.add(id(value))
        found.append(value)
    return found


def _step_counts(opt: Any, n: int) -> list[int] | None:
    """One step count per parameter for AdamW-style optimizers (one ``state_step`` and ``exp_avg``)."""
    if not (hasattr(opt, "state_step") and hasattr(opt, "exp_avg") and hasattr(opt, "exp_avg_sq")):
        return None
    if "_unread_counts" not in opt.__dict__:
        opt.__dict__["_unread_counts"] = [int(opt.state_step.value())] * n
    counts: list[int] = opt.__dict__["_unread_counts"]
    return counts


def _adam_update(opt: Any, i: int, start: Any, step: int) -> None:
    """Parameter ``i``'s update redone with its own step count (the moments are already updated)."""
    group_id = max(g for g, s in enumerate(opt.group_start_id[:-1]) if s <= i)
    group = opt.param_groups[group_id]
    lr = float(group["lr"]) if isinstance(group.get("lr"), float) else float(opt.lrs[group_id].value())
    beta1, beta2 = group["betas"]
    decay = 0.0 if type(opt).__name__ == "CoupledAdam" else float(group.get("weight_decay", 0.0))
    second = opt.max_exp_avg_sq[i] if group.get("amsgrad") else opt.exp_avg_sq[i]
    step_size = lr / (1 - beta1**step)
    denom = second.value().sqrt() / math.sqrt(1 - beta2**step) + group["eps"]
    ops.assign(opt.parameters[i], start * (1 - lr * decay) - step_size * opt.exp_avg[i].value() / denom)
