"""``x[mask] = v`` / ``x[mask] += v`` with a boolean mask (issue 24, class 4): GRAPH_MODE's setitem by a
bool tensor broadcasts a tensor value to the whole of x and fails to compile (PyNative takes it).

Where the index is certainly a boolean mask — a comparison (``labels == -1``), its negation ``~``, a
``&``/``|``/``^`` of one, or ``torch.logical_*`` / ``isnan``-like calls — and the target is a local name,
the statement becomes ``x = torch2ms.runtime.masked_assign(x, mask, v[, "add"])`` (runtime/masking.py:
``ops.where`` over the widened mask, ``masked_scatter`` for one row per selected element): the same
values in both modes. Any other index (an int, a slice, a name of unknown type) is left as written.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from ...analysis.astwalk import nodes
from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext
from ..hooks import leave
from ..plan import Stmt
from .map_lambda import mark_with_parents

_AUG_OPS: dict[type, str] = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
_CST_OPS: dict[type, str] = {
    cst.AddAssign: "add",
    cst.SubtractAssign: "sub",
    cst.MultiplyAssign: "mul",
    cst.DivideAssign: "div",
}
_MASK_CALLS = frozenset(
    "logical_and logical_or logical_not logical_xor isnan isinf isfinite isneginf isposinf isin".split()
)
_COMPARE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
# `x[...] = ` / `x[...] += `: the text test before any walk
_SUBSCRIPT_STORE = re.compile(r"\]\s*[-+*/]?=(?!=)")


def is_mask(node: ast.expr) -> bool:
    """Whether an index expression is certainly a boolean tensor mask."""
    if isinstance(node, ast.Compare):
        return all(isinstance(op, _COMPARE) for op in node.ops)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return is_mask(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return is_mask(node.left) or is_mask(node.right)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in _MASK_CALLS
    return False


def masked_store(stmt: ast.AST) -> bool:
    """``name[mask] = value`` or ``name[mask] op= value`` (op one of + - * /)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AugAssign) and type(stmt.op) in _AUG_OPS:
        target = stmt.target
    else:
        return False
    return isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and is_mask(target.slice)


def _sees(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    """Such statements are visited whether or not they name torch (``y[labels == -1] = 0.0``)."""
    if not _SUBSCRIPT_STORE.search(source):
        return
    # mark_with_parents hands over a statement's own expressions (an Assign's targets), not the statement
    targets = {
        id(n.targets[0] if isinstance(n, ast.Assign) else n.target)  # type: ignore[attr-defined]
        for n in nodes(tree)
        if isinstance(n, (ast.Assign, ast.AugAssign)) and masked_store(n)
    }
    if targets:
        mark_with_parents(plan, lambda root: id(root) in targets)


CONSTRUCT = Construct("masked assignment", order=55, sees=_sees)


def _parts(stmt: cst.BaseSmallStatement) -> tuple[cst.Subscript, cst.BaseExpression, str] | None:
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        target, op = stmt.targets[0].target, ""
    elif isinstance(stmt, cst.AugAssign) and type(stmt.operator) in _CST_OPS:
        target, op = stmt.target, _CST_OPS[type(stmt.operator)]
    else:
        return None
    if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and len(target.slice) == 1):
        return None
    if not isinstance(target.slice[0].slice, cst.Index):
        return None
    return target, stmt.value, op


@leave(cst.SimpleStatementLine)
def masked_assignment(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``x[labels == 0] += w`` → ``x = masked_assign(x, labels == 0, w, "add")``."""
    node = ctx.statement.node if ctx.statement is not None else None
    if node is None or len(updated.body) != 1 or not ctx.in_module_class or not masked_store(node):
        return updated
    parts = _parts(updated.body[0])
    if parts is None:
        return updated
    target, value, op = parts
    index = target.slice[0].slice
    assert isinstance(index, cst.Index)
    args = [cst.Arg(target.value), cst.Arg(index.value), cst.Arg(value)]
    if op:
        args.append(cst.Arg(cst.SimpleString(f'"{op}"')))
    call = cst.Call(func=ctx.parse_ms("torch2ms.runtime.masked_assign"), args=args)
    ctx.record(
        "torch.Tensor.__setitem__",
        "converted",
        _("x[mask] = v by a boolean mask: torch2ms.runtime.masked_assign (GRAPH_MODE's bool setitem fails)"),
    )
    name = target.value
    assert isinstance(name, cst.Name)  # _parts keeps Name targets only
    assign = cst.Assign(targets=[cst.AssignTarget(target=name)], value=call)
    return updated.with_changes(body=[assign])
