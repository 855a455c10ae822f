"""``xs.pop()`` inside an expression in a Module's methods (issue 24: guided-diffusion's UNet,
``h = th.cat([h, hs.pop()], dim=1)``): MindSpore 2.10's GRAPH_MODE gives a ``pop`` that is part of a larger
expression the value ``(list, item)`` instead of the item ("Failed calling Concat with
tensors=List[Tensor, Tuple[List[Tensor], Tensor]]", "'Tuple' object has no attribute 'dtype'"), while
``y = xs.pop()`` on its own line compiles as Python runs it. So each such pop is taken out of its statement
into a local assigned just before it, in the order Python evaluates them:

    h = cat([h, hs.pop()], axis=1)      →      _t2m_pop = hs.pop()
                                                h = cat([h, _t2m_pop], axis=1)

Only where the order cannot change: a statement (assignment, augmented assignment, return, expression)
whose pops are not under a lambda, a comprehension, a conditional expression or ``and``/``or`` (they may run
zero or many times), and whose other calls before the pop are not methods of the same list.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext
from ..hooks import leave
from ..plan import Stmt
from .map_lambda import mark_with_parents

_TEXT = re.compile(r"\.pop\(")
_LAZY = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.IfExp, ast.BoolOp)
_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)
NAME = "_t2m_pop"


def _pops(stmt: ast.AST) -> list[ast.Call]:
    """The ``name.pop(...)`` calls of a statement that are part of a larger expression, in evaluation
    order; [] when one of them sits where it may run zero or many times."""
    if not isinstance(stmt, _STATEMENTS) or stmt.value is None:
        return []
    if isinstance(stmt.value, ast.Call) and _is_pop(stmt.value) and not isinstance(stmt, ast.AugAssign):
        return []  # ``y = xs.pop()`` / ``xs.pop()`` alone: GRAPH_MODE compiles it
    found: list[ast.Call] = []

    def walk(node: ast.AST, lazy: bool) -> bool:
        if isinstance(node, ast.Call) and _is_pop(node):
            if lazy:
                return False
            for arg in node.args:  # ``xs.pop(ys.pop())``: the inner one runs first
                if not walk(arg, lazy):
                    return False
            found.append(node)
            return True
        inner = lazy or isinstance(node, _LAZY)
        return all(walk(child, inner) for child in ast.iter_child_nodes(node))

    if not walk(stmt.value, False):
        return []
    # The list read elsewhere in the statement (``f(hs) + hs.pop()``) would see it popped too early.
    lists = [p.func.value.id for p in found]  # type: ignore[attr-defined]
    reads = [n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and n.id in lists]
    return found if len(reads) == len(lists) else []


def _is_pop(call: ast.Call) -> bool:
    return (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "pop"
        and isinstance(call.func.value, ast.Name)
        and not call.keywords
        and len(call.args) <= 1
    )


def _sees(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    if _TEXT.search(source):
        mark_with_parents(plan, lambda node: bool(_pops(node)))


CONSTRUCT = Construct("list pop in expression", order=63, sees=_sees)


class _Hoist(cst.CSTTransformer):
    """Replaces each ``name.pop(...)`` by a fresh local, collecting the assignments in evaluation order."""

    def __init__(self, taken: set[str]) -> None:
        super().__init__()
        self.taken = taken
        self.assigns: list[cst.SimpleStatementLine] = []

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == "pop"
            and isinstance(func.value, cst.Name)
            and len(updated.args) <= 1
            and not any(a.keyword or a.star for a in updated.args)
        ):
            return updated
        name = NAME
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        self.assigns.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], updated)]))
        return cst.Name(name)


@leave(cst.SimpleStatementLine)
def hoist_pop(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``h = cat([h, hs.pop()])`` → ``_t2m_pop = hs.pop()`` then ``h = cat([h, _t2m_pop])`` in Module methods."""
    node = ctx.statement.node if ctx.statement is not None else None
    if node is None or not ctx.in_module_class or not ctx.func_stack or len(updated.body) != 1:
        return updated
    pops = _pops(node)
    if not pops:
        return updated
    taken = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    hoist = _Hoist(taken)
    body = updated.body[0]
    value = getattr(body, "value", None)
    if value is None:
        return updated
    new_value = value.visit(hoist)
    if len(hoist.assigns) != len(pops):
        return updated  # the converted statement no longer shows the same pops: leave it
    ctx.record(
        "list.pop",
        "converted",
        _("list.pop() inside an expression taken onto its own line: GRAPH_MODE gives (list, item) for it there"),
    )
    first = hoist.assigns[0].with_changes(leading_lines=updated.leading_lines)
    last = updated.with_changes(body=[body.with_changes(value=new_value)], leading_lines=[])
    return cst.FlattenSentinel([first, *hoist.assigns[1:], last])
