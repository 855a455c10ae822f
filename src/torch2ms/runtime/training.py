"""Helpers for converted training steps (convert/constructs/training/general.py writes their calls)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "accumulate_grads",
    "assign_data",
    "averaged",
    "data_parallel",
    "grad_of",
    "statistics_kept",
]


def accumulate_grads(total: Any, grads: Any) -> tuple:
    """torch's ``.grad`` after one more ``backward()``: the sum of the gradient tuples since the last
    ``zero_grad()`` (``total`` is None right after it)."""
    if total is None:
        return tuple(grads)
    return tuple(a + b for a, b in zip(total, grads))


def grad_of(param: Any, *pairs: Any) -> Any:
    """torch's ``param.grad``: the entry of a gradient tuple at the position of ``param`` in the
    parameter list it was taken over (each pair is ``(weights, grads)``, ``grads`` None after
    ``zero_grad()``); None where torch's would be None (cleared, or a parameter not differentiated)."""
    for weights, grads in pairs:
        for k, w in enumerate(weights):
            if w is param:
                return None if grads is None else grads[k]
    return None


@contextmanager
def statistics_kept(cells: Any) -> Iterator[None]:
    """A forward torch ran once and the converted step runs twice (a GAN's generator: its output fed the
    discriminator's step, detached, and then the generator's own step): the second run leaves the cells'
    non-trained state (BatchNorm's moving mean and variance) as the first run left it, so the statistics
    move once per step, as in torch. What is no Cell is skipped."""
    import mindspore as ms

    saved = [
        (p, p.value().copy())
        for c in cells
        if isinstance(c, ms.nn.Cell)
        for p in c.get_parameters()
        if not p.requires_grad
    ]
    try:
        yield
    finally:
        for p, value in saved:
            p.set_data(value)


def data_parallel(module: Any) -> Any:
    """torch's ``DistributedDataParallel(module)``: the module itself, its parameters marked, so that
    ``averaged`` knows torch all-reduces their gradients in ``backward()`` (a module torch never wraps
    trains on its own in every worker)."""
    for p in module.get_parameters() if hasattr(module, "get_parameters") else ():
        p.torch2ms_ddp = True
    return module


def averaged(weights: Any) -> bool:
    """Whether a training step averages the gradients of ``weights`` across the workers, as DDP does:
    the communication is initialised (msrun) and every weight belongs to a module wrapped with
    ``data_parallel``."""
    from mindspore.communication import GlobalComm

    weights = list(weights)
    return bool(GlobalComm.INITED) and bool(weights) and all(getattr(w, "torch2ms_ddp", False) for w in weights)


def assign_data(target: Any, value: Any) -> Any:
    """torch's in-place update of a tensor's data (``p.data.clamp_(-c, c)``, ``p.data.add_(-lr * p.grad)``,
    ``p -= lr * p.grad`` under ``no_grad``): a Parameter takes ``value`` by ``ops.assign``, which a step
    compiled by ``@ms.jit`` or GRAPH_MODE sees too (``p.data = v`` and ``set_data`` change the Python
    object only); another tensor takes it as its data. Returns ``target`` (a plain value: ``value``)."""
    import mindspore as ms

    if isinstance(target, ms.Parameter):
        if not isinstance(value, ms.Tensor):
            value = ms.Tensor(value, target.dtype)
        if value.dtype != target.dtype:
            value = value.astype(target.dtype)
        if tuple(value.shape) != tuple(target.shape):
            value = ms.ops.broadcast_to(value, target.shape)
        ms.ops.assign(target, value)
        return target
    if isinstance(target, ms.Tensor) and isinstance(value, ms.Tensor):
        target.data = value
        return target
    return value
