"""torch's ``torch.autograd.grad(outputs, inputs, ...)`` inside a loss (a WGAN-GP's gradient penalty),
as MindSpore expresses it: the gradient of a function of the inputs (convert/constructs/input_grads.py
writes the function, ``lambda x: D(x)``, from the statements that computed ``outputs``). Called inside
the outer ``value_and_grad``'s forward function it is a grad nested in a grad, which MindSpore
differentiates again (PyNative and GRAPH_MODE): the penalty's gradient reaches the parameters."""

from __future__ import annotations

from typing import Any

import mindspore as ms
from mindspore import ops

__all__ = ["input_grads"]


def input_grads(fn: Any, inputs: tuple, grad_outputs: Any = None, create_graph: bool = True) -> tuple:
    """The gradients of ``fn(*inputs)`` with respect to each input, a tuple as torch's. Without
    ``grad_outputs`` (torch's ``ones_like(outputs)``) MindSpore's default sensitivity is ones; with it, the
    gradient of ``sum(fn(*inputs) * grad_outputs)`` (a vector-Jacobian product). Without ``create_graph``
    torch's result is a constant: it is here too (stop_gradient)."""
    positions = tuple(range(len(inputs)))
    if grad_outputs is None:
        grads = ms.grad(fn, grad_position=positions)(*inputs)
    else:
        weights = ops.stop_gradient(grad_outputs)
        grads = ms.grad(lambda *xs: (fn(*xs) * weights).sum(), grad_position=positions)(*inputs)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if not create_graph:
        grads = ops.stop_gradient(grads)
    return grads
