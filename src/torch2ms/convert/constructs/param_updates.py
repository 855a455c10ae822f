"""Loops that change a module's parameters in place keep torch's set of parameters.

``for p in D.parameters(): p.data.clamp_(-c, c)`` (a WGAN's weight clipping), ``p.data.mul_(k)`` or
``p.copy_(...)`` under ``no_grad``: statement_fixes.py writes each update as
``torch2ms.runtime.assign_data(p, ...)``. ``Module.parameters()`` converts to ``Cell.get_parameters()``,
which also yields BatchNorm's moving mean and variance (buffers in torch, which the loop never touched):
such a loop iterates ``torch2ms.runtime.torch_parameters(cell)`` instead (``named=True`` for
``named_parameters()``), the Cell's Parameters without those statistics.
"""

from __future__ import annotations

import libcst as cst

from ..construct import Construct
from ..context import RewriteContext
from ..hooks import leave

CONSTRUCT = Construct("parameter updates in a loop", order=122)

_METHODS = {"parameters": False, "named_parameters": True}


class _Updates(cst.CSTVisitor):
    """Whether the body calls ``assign_data(<name>, ...)``."""

    def __init__(self, name: str) -> None:
        self.name, self.found = name, False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        called = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if called == "assign_data" and node.args and isinstance(node.args[0].value, cst.Name):
            self.found = self.found or node.args[0].value.value == self.name


def _loop_parameter(loop: cst.For) -> str | None:
    """``p`` of ``for p in ...`` or ``for name, p in ...``."""
    target = loop.target
    if isinstance(target, cst.Tuple) and len(target.elements) == 2:
        target = target.elements[1].value
    return target.value if isinstance(target, cst.Name) else None


def _updates_parameters(ctx: RewriteContext, original: cst.CSTNode) -> bool:
    if not isinstance(original, cst.For) or not isinstance(original.iter, cst.Call):
        return False
    func = original.iter.func
    return isinstance(func, cst.Attribute) and func.attr.value in _METHODS and ctx.resolve(func) is None


@leave(cst.For)
def parameter_update_loop(ctx: RewriteContext, original: cst.For, updated: cst.For) -> cst.For:
    if not _updates_parameters(ctx, original):
        return updated
    name = _loop_parameter(updated)
    func = original.iter.func  # type: ignore[attr-defined]
    named = _METHODS[func.attr.value]
    converted = updated.iter
    if name is None or not isinstance(converted, cst.Call) or not isinstance(converted.func, cst.Attribute):
        return updated
    if original.iter.args:  # type: ignore[attr-defined]  # recurse=False: as converted
        return updated
    seen = _Updates(name)
    updated.body.visit(seen)
    if not seen.found:
        return updated
    args = [cst.Arg(converted.func.value)]
    if named:
        args.append(cst.Arg(cst.Name("True"), keyword=cst.Name("named")))
    return updated.with_changes(iter=cst.Call(ctx.parse_ms("torch2ms.runtime.torch_parameters"), args))
