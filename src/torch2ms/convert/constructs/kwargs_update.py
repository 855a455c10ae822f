"""``kwargs.update(context=c)`` on a function's own ``**kwargs`` before ``self.fn(x, **kwargs)`` (issue 24,
class 6: perceiver's PreNorm). GRAPH_MODE compiles ``dict.update`` on the keyword dict to nothing it
passes on ("Got an unexpected keyword argument 'context'"), but compiles item assignment: the call
becomes one ``kwargs['context'] = c`` per keyword (or per key of a dict display), the same dict.
Only the ``**`` parameter of the enclosing function is rewritten (``pbar.update(n=1)`` is no dict).
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from ..construct import Construct
from ..context import RewriteContext
from ..hooks import leave
from ..plan import Stmt
from .map_lambda import mark_with_parents

_TEXT = re.compile(r"\*\*\w+")


def _updates(tree: ast.Module) -> set[int]:
    """ids of ``NAME.update(...)`` expression statements on the ``**NAME`` parameter of their function."""
    out: set[int] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.args.kwarg is None:
            continue
        name = fn.args.kwarg.arg
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute)
                and node.value.func.attr == "update"
                and isinstance(node.value.func.value, ast.Name)
                and node.value.func.value.id == name
                and _plain(node.value)
            ):
                out.add(id(node.value))
    return out


def _plain(call: ast.Call) -> bool:
    """Keywords only (no ``**d``), or one dict display with string keys."""
    if call.keywords and not call.args:
        return all(k.arg is not None for k in call.keywords)
    if len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.Dict):
        return all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in call.args[0].keys)
    return False


def _sees(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    if ".update(" not in source or not _TEXT.search(source):
        return
    found = _updates(tree)
    if found:
        mark_with_parents(plan, lambda root: id(root) in found)


CONSTRUCT = Construct("kwargs update", order=58, sees=_sees)


def _is_update(node: ast.AST | None) -> bool:
    if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call) or not _plain(node.value):
        return False
    func = node.value.func
    return isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name)


def _kwarg_of_function(ctx: RewriteContext, node: ast.stmt) -> str | None:
    """The ``**`` parameter of the innermost function around ``node`` (by line)."""
    tree = ctx.facts.tree
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for fn in ast.walk(tree) if tree is not None else ():
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.lineno < node.lineno <= (fn.end_lineno or 0):
            if best is None or fn.lineno > best.lineno:
                best = fn
    return best.args.kwarg.arg if best is not None and best.args.kwarg is not None else None


def _items(call: cst.Call) -> list[tuple[str, cst.BaseExpression]]:
    if call.args and call.args[0].keyword is None:
        value = call.args[0].value
        assert isinstance(value, cst.Dict)
        return [
            (e.key.value, e.value)
            for e in value.elements
            if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
        ]
    return [(repr(a.keyword.value), a.value) for a in call.args if a.keyword is not None]


@leave(cst.SimpleStatementLine)
def kwargs_update(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``kwargs.update(context=normed)`` → ``kwargs['context'] = normed``."""
    node = ctx.statement.node if ctx.statement is not None else None
    if node is None or len(updated.body) != 1 or not _is_update(node):
        return updated
    assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
    func = node.value.func
    assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
    if _kwarg_of_function(ctx, node) != func.value.id:
        return updated
    expr = updated.body[0]
    if not (isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call)):
        return updated
    items = _items(expr.value)
    if not items:
        return updated
    target = cst.Name(func.value.id)
    body = [
        cst.Assign(
            targets=[cst.AssignTarget(cst.Subscript(target, [cst.SubscriptElement(cst.Index(cst.SimpleString(key)))]))],
            value=value,
        )
        for key, value in items
    ]
    return updated.with_changes(body=body)
