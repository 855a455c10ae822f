"""``map(lambda ...)`` / ``filter(lambda ...)`` in a Module's methods (issue 24, class 6): GRAPH_MODE
compiles no lambda that reads a variable of the function around it ("The Map operator don't support
Closure with free variable yet": mlp-mixer's ``sum(map(lambda fn: fn(x), self.fns))``). A list
comprehension is the same sequence, and GRAPH_MODE compiles it:

- ``map(lambda a: E, xs)`` → ``[E for a in xs]``; ``map(lambda a, b: E, xs, ys)`` →
  ``[E for a, b in zip(xs, ys)]``;
- ``filter(lambda a: C, xs)`` → ``[a for a in xs if C]``.

map and filter are lazy and a list is not, which no consumer of the result inside a forward tells apart
(``sum``, ``list``, unpacking, a ``for``). Lambdas with defaults, ``*args`` or keyword-only parameters
are left as written.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

import libcst as cst

from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext
from ..facts import ModuleFacts
from ..hooks import leave
from ..plan import Stmt, header_nodes

_TEXT = re.compile(r"\b(map|filter)\(\s*lambda\b")


def _is_map_lambda(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in ("map", "filter")
        and n.args
        and isinstance(n.args[0], ast.Lambda)
        for n in ast.walk(node)
    )


def mark_with_parents(plan: list[Stmt], wanted: Callable[[ast.AST], bool]) -> None:
    """Statements whose own expressions (not nested bodies) hold what ``wanted`` finds are visited,
    and so are the compound statements around them (a def with nothing else to convert included)."""
    ends: list[tuple[int, int]] = []  # open compound statements: (index, last nested index)
    for i, info in enumerate(plan):
        while ends and ends[-1][1] < i:
            ends.pop()
        if any(wanted(root) for root in header_nodes(info.node)):
            info.interesting = info.header = True
            for j, _end in ends:
                plan[j].interesting = True
        if info.size:
            ends.append((i, i + info.size))


def _sees(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    if "lambda" in source and _TEXT.search(source):
        mark_with_parents(plan, _is_map_lambda)


CONSTRUCT = Construct("map lambda", order=56, sees=_sees)


def _simple_params(lam: cst.Lambda) -> list[cst.Name] | None:
    p = lam.params
    if p.posonly_params or p.kwonly_params or p.star_kwarg or not isinstance(p.star_arg, cst.MaybeSentinel):
        return None
    if any(param.default is not None for param in p.params):
        return None
    return [param.name for param in p.params]


def _target(names: list[cst.Name]) -> cst.BaseAssignTargetExpression:
    if len(names) == 1:
        return names[0]
    return cst.Tuple([cst.Element(n) for n in names], lpar=[], rpar=[])


class _ToComprehension(cst.CSTTransformer):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if not (isinstance(func, cst.Name) and func.value in ("map", "filter") and len(updated.args) >= 2):
            return updated
        lam = updated.args[0].value
        if not isinstance(lam, cst.Lambda) or any(a.keyword or a.star for a in updated.args):
            return updated
        names = _simple_params(lam)
        iters = [a.value for a in updated.args[1:]]
        if names is None or len(names) != len(iters) or (func.value == "filter" and len(iters) != 1):
            return updated
        source = iters[0] if len(iters) == 1 else cst.Call(cst.Name("zip"), [cst.Arg(i) for i in iters])
        if func.value == "map":
            comp = cst.CompFor(target=_target(names), iter=source)
            self.count += 1
            return cst.ListComp(elt=lam.body, for_in=comp)
        comp = cst.CompFor(target=names[0], iter=source, ifs=[cst.CompIf(test=lam.body)])
        self.count += 1
        return cst.ListComp(elt=names[0], for_in=comp)


def _reads_rebound(loop: ast.For) -> bool:
    """Whether a lambda of the loop's iterable reads a name the loop body assigns (``for y in map(lambda
    fn: fn(out), fns): out = out + y``): map calls it lazily, after each assignment."""
    stored = {
        n.id for stmt in loop.body for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    stored |= {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    read = {
        n.id
        for lam in ast.walk(loop.iter)
        if isinstance(lam, ast.Lambda)
        for n in ast.walk(lam.body)
        if isinstance(n, ast.Name)
    }
    return bool(stored & read)


def _may_map_lambda(facts: ModuleFacts) -> bool:
    """Only a file that spells ``lambda`` and ``map`` or ``filter`` has a map/filter of a lambda."""
    source = facts.source
    return source is None or "lambda" in source and ("map" in source or "filter" in source)


@leave(cst.For, when=_may_map_lambda)
def map_lambda_loop(ctx: RewriteContext, original: cst.For, updated: cst.For):
    """``for y in map(lambda fn: fn(x), self.fns):`` → ``for y in [fn(x) for fn in self.fns]:``."""
    node = ctx.statement.node if ctx.statement is not None else None
    if not isinstance(node, ast.For) or not ctx.in_module_class or not _is_map_lambda(node.iter):
        return updated
    if _reads_rebound(node):
        return updated  # the lazy map would see the loop's new values: a list would not
    rewrite = _ToComprehension()
    loop_iter = updated.iter.visit(rewrite)
    if not rewrite.count or not isinstance(loop_iter, cst.BaseExpression):
        return updated
    ctx.record(
        "map", "converted", _("map/filter of a lambda becomes a list comprehension: GRAPH_MODE compiles no closure")
    )
    return updated.with_changes(iter=loop_iter)


@leave(cst.SimpleStatementLine, when=_may_map_lambda)
def map_lambda(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``sum(map(lambda fn: fn(x), self.fns))`` → ``sum([fn(x) for fn in self.fns])`` in Module methods."""
    node = ctx.statement.node if ctx.statement is not None else None
    if node is None or not ctx.in_module_class or not _is_map_lambda(node):
        return updated
    rewrite = _ToComprehension()
    out = updated.visit(rewrite)
    if rewrite.count:
        ctx.record(
            "map",
            "converted",
            _("map/filter of a lambda becomes a list comprehension: GRAPH_MODE compiles no closure"),
        )
    return out
