"""Loops that change a module's parameters in place: the Parameter changes, and torch's set of them.

``for p in D.parameters(): p.data.clamp_(-c, c)`` (a WGAN's weight clipping), ``p.data.mul_(k)`` or
``p.clamp_(...)`` under ``no_grad``: statement_fixes.py writes each in-place method as
``torch2ms.runtime.assign_data(p, ...)`` (``ops.assign``: a ``@ms.jit`` step and GRAPH_MODE see it).
Here the spellings without a rewritten method: ``p -= v`` / ``p *= k`` / ``p.data -= v`` / ``p.data = v``
on the variable of a loop over parameters (MindSpore would rebind a name or change the Python object
only), and ``p.data.copy_(v)`` (``Tensor.copy_`` on the ``.data`` view). ``Module.parameters()`` converts to ``Cell.get_parameters()``,
which also yields BatchNorm's moving mean and variance (buffers in torch, which the loop never touched):
such a loop iterates ``torch2ms.runtime.torch_parameters(cell)`` instead (``named=True`` for
``named_parameters()``), the Cell's Parameters without those statistics.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.astwalk import nodes, walk
from ..construct import Construct
from ..context import RewriteContext
from ..hooks import leave
from ..plan import Stmt
from .map_lambda import mark_with_parents

_METHODS = {"parameters": False, "named_parameters": True}  # -> named
_OPERATORS: dict[type, type] = {
    cst.SubtractAssign: cst.Subtract,
    cst.AddAssign: cst.Add,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
}


def _parameter_iteration(node: ast.expr) -> bool:
    """``m.parameters()``, ``m.named_parameters()`` (inside ``chain(...)`` too), or a name that says it
    holds parameters (``params``, ``self.d_params``)."""
    if any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _METHODS
        for n in ast.walk(node)
    ):
        return True
    last = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "param" in last.lower()


def _loop_variable(loop: ast.For) -> str | None:
    target = loop.target
    if isinstance(target, ast.Tuple) and len(target.elts) == 2:
        target = target.elts[1]
    return target.id if isinstance(target, ast.Name) else None


def _updated_name(target: ast.expr) -> str | None:
    """``p`` of ``p`` or ``p.data``."""
    if isinstance(target, ast.Attribute) and target.attr == "data":
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _update_targets(tree: ast.Module) -> set[int]:
    """Ids of the targets of ``p -= v``, ``p.data -= v``, ``p.data = v`` inside a loop over parameters
    whose variable is p, and of the receivers of ``p.data.copy_(v)``."""
    found: set[int] = set()
    for node in nodes(tree):  # the file's one cached walk; only a loop over parameters is walked again
        if isinstance(node, ast.Call):
            if _is_data_copy(node):
                found.add(id(node))
        elif isinstance(node, ast.For) and _parameter_iteration(node.iter):
            name = _loop_variable(node)
            for inner in walk(node) if name else ():
                if isinstance(inner, ast.AugAssign) and _updated_name(inner.target) == name:
                    found.add(id(inner.target))
                elif isinstance(inner, ast.Assign) and len(inner.targets) == 1:
                    t = inner.targets[0]
                    if isinstance(t, ast.Attribute) and _updated_name(t) == name:
                        found.add(id(t))
    return found


def _is_data_copy(call: ast.Call) -> bool:
    f = call.func
    return (
        isinstance(f, ast.Attribute)
        and f.attr == "copy_"
        and isinstance(f.value, ast.Attribute)
        and f.value.attr == "data"
        and len(call.args) == 1
        and not call.keywords
    )


def _sees(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    if "param" in source or ".data.copy_(" in source:
        ids = _update_targets(tree)
        if ids:
            mark_with_parents(plan, lambda node: any(id(n) in ids for n in ast.walk(node)))


CONSTRUCT = Construct("parameter updates in a loop", order=122, sees=_sees)


class _Updates(cst.CSTVisitor):
    """Whether the body calls ``assign_data(<name>, ...)``."""

    def __init__(self, name: str) -> None:
        self.name, self.found = name, False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        called = (
            func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        )
        if called == "assign_data" and node.args and isinstance(node.args[0].value, cst.Name):
            self.found = self.found or node.args[0].value.value == self.name


def _loop_parameter(loop: cst.For) -> str | None:
    """``p`` of ``for p in ...`` or ``for name, p in ...``."""
    target: cst.BaseExpression = loop.target
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
        tight = cst.SimpleWhitespace("")
        equal = cst.AssignEqual(whitespace_before=tight, whitespace_after=tight)
        args.append(cst.Arg(cst.Name("True"), keyword=cst.Name("named"), equal=equal))
    return updated.with_changes(iter=cst.Call(ctx.parse_ms("torch2ms.runtime.torch_parameters"), args))


def _in_parameter_loop(ctx: RewriteContext, name: str) -> bool:
    return any(
        isinstance(info.node, ast.For) and _loop_variable(info.node) == name and _parameter_iteration(info.node.iter)
        for info in ctx.statements
        if info is not None
    )


def _assign_data(ctx: RewriteContext, param: cst.BaseExpression, value: cst.BaseExpression) -> cst.Call:
    return cst.Call(ctx.parse_ms("torch2ms.runtime.assign_data"), [cst.Arg(param), cst.Arg(value)])


def _owner(target: cst.BaseExpression) -> cst.Name | None:
    """``p`` of ``p`` / ``p.data``."""
    if isinstance(target, cst.Attribute) and target.attr.value == "data":
        target = target.value
    return target if isinstance(target, cst.Name) else None


def _update(ctx: RewriteContext, stmt: cst.BaseSmallStatement) -> cst.BaseSmallStatement | None:
    """The statement as an ``assign_data`` of the parameter, or None where it is no such update."""
    if isinstance(stmt, cst.AugAssign) and type(stmt.operator) in _OPERATORS:
        p = _owner(stmt.target)
        if p is None or not _in_parameter_loop(ctx, p.value):
            return None
        value = stmt.value
        if isinstance(value, cst.BinaryOperation | cst.BooleanOperation | cst.IfExp | cst.UnaryOperation):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        new = cst.BinaryOperation(cst.Name(p.value), _OPERATORS[type(stmt.operator)](), value)
        call = _assign_data(ctx, cst.Name(p.value), new)
        if isinstance(stmt.target, cst.Name):
            return cst.Assign([cst.AssignTarget(cst.Name(p.value))], call)
        return cst.Expr(call)
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Attribute):
        p = _owner(stmt.targets[0].target)
        if p is None or stmt.targets[0].target is p or not _in_parameter_loop(ctx, p.value):
            return None
        return cst.Expr(_assign_data(ctx, cst.Name(p.value), stmt.value))
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        call = stmt.value
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "copy_" and len(call.args) == 1):
            return None
        if not (isinstance(func.value, cst.Attribute) and func.value.attr.value == "data"):
            return None
        return cst.Expr(_assign_data(ctx, func.value.value, call.args[0].value))
    return None


@leave(cst.SimpleStatementLine)
def parameter_update(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    if len(updated.body) != 1:
        return updated
    new = _update(ctx, updated.body[0])
    return updated if new is None else updated.with_changes(body=[new])
