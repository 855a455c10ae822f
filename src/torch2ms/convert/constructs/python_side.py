"""Python-side use of tensors that MindSpore's Tensor does not support the way torch's does.

A torch 0-dim tensor formats like its number (``f"{loss:.4f}"``, ``"{:.4f}".format(loss)``): its
``__format__`` formats ``self.item()``. MindSpore's Tensor refuses any format spec ("unsupported
format string passed to Tensor.__format__"). A tensor (as the light type inference knows it) formatted
with a spec gets ``.item()``, which is what torch formatted; other values are left alone.
"""

from __future__ import annotations

import ast
from bisect import bisect_left

import libcst as cst

from ...analysis.astwalk import nodes, walk
from ...analysis.infer import TENSOR
from ...i18n import _
from ..construct import Cache, Construct
from ..context import RewriteContext
from ..hooks import call, leave
from ..plan import Stmt


def mark_formatted(plan: list[Stmt], tree: ast.Module | None = None) -> None:
    """Statements formatting a value with a spec (``f"{loss:.4f}"``, ``"{:.4f}".format(loss)``) are
    visited: the value may be a tensor, which MindSpore cannot format that way. ``tree``: the module the
    plan was made from; the lines of its formatting nodes (one walk) rule out most statements unwalked."""
    own, lines = _formatting_lines(tree)
    for info in plan:
        if info.interesting or info.size:
            continue
        node = info.node
        if id(node) in own:
            at = bisect_left(lines, node.lineno)
            if at == len(lines) or lines[at] > (node.end_lineno or node.lineno):
                continue  # no formatting node within the statement's lines
        if any(_formats(n) for n in walk(node)):
            info.interesting = info.header = True


def _formats(n: ast.AST) -> bool:
    spec = isinstance(n, ast.FormattedValue) and n.format_spec is not None
    return spec or (
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "format"
        and isinstance(n.func.value, ast.Constant)
        and ":" in str(n.func.value.value)
    )


def _formatting_lines(tree: ast.Module | None) -> tuple[set[int], list[int]]:
    """(ids of the tree's statements, sorted lines of its formatting nodes); empty without a tree."""
    if tree is None:
        return set(), []
    own: set[int] = set()
    lines: list[int] = []
    for n in nodes(tree):
        kind = n.__class__
        if kind is ast.FormattedValue or kind is ast.Call:  # the only kinds _formats takes: one test per node
            if _formats(n):
                lines.append(n.lineno)  # type: ignore[attr-defined]
        elif isinstance(n, ast.stmt):
            own.add(id(n))
    return own, sorted(lines)


def _sees_formatted(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    if "{" in source and ":" in source:
        mark_formatted(plan, tree)


CONSTRUCT = Construct("python side", order=110, sees=_sees_formatted)


def _with_item(node: cst.BaseExpression) -> cst.BaseExpression:
    """``x`` → ``x.item()`` (parenthesised when it is not atomic)."""
    if not isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        node = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(cst.Attribute(node, cst.Name("item")))


def _is_tensor(ctx: RewriteContext, node: cst.BaseExpression) -> bool:
    return ctx.receiver_type(node) == TENSOR


class _FormattedParts(cst.CSTVisitor):
    """The ``{expr:spec}`` parts of the f-strings of a statement, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[cst.FormattedStringExpression] = []

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> bool:
        self.parts.append(node)
        return True


class _AddItem(cst.CSTTransformer):
    def __init__(self, wrap: list[bool]) -> None:
        super().__init__()
        self.wrap, self.at = wrap, 0

    def leave_FormattedStringExpression(self, original, updated):
        i, self.at = self.at, self.at + 1
        if i < len(self.wrap) and self.wrap[i]:
            return updated.with_changes(expression=_with_item(updated.expression))
        return updated


def _formats_with_spec(ctx: RewriteContext, stmt: ast.stmt) -> bool:
    """Does the statement hold an f-string part with a format spec? Answered for the file's own
    statements from the lines of its spec'd parts, found in one walk (a part lies within the lines
    of its statement; statements a stage wrote are walked one by one)."""
    memo = _SPEC_LINES.of(ctx)
    if not memo:
        memo.append(_spec_lines(ctx.facts.tree))
    own, lines = memo[0]
    if id(stmt) in own:
        at = bisect_left(lines, stmt.lineno)
        if at == len(lines) or lines[at] > (stmt.end_lineno or stmt.lineno):
            return False
    return any(isinstance(n, ast.FormattedValue) and n.format_spec is not None for n in walk(stmt))


_SPEC_LINES: Cache[list[tuple[set[int], list[int]]]] = Cache(list)  # the file's _spec_lines, once computed


def _spec_lines(tree: ast.Module | None) -> tuple[set[int], list[int]]:
    """(ids of the tree's statements, sorted lines of its f-string parts that carry a format spec)."""
    if tree is None:
        return set(), []
    every = nodes(tree)
    own = {id(n) for n in every if isinstance(n, ast.stmt)}
    return own, sorted(n.lineno for n in every if isinstance(n, ast.FormattedValue) and n.format_spec is not None)


@leave(cst.SimpleStatementLine)
def format_spec_of_tensor(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``f"{loss:.4f}"`` where ``loss`` is a tensor → ``f"{loss.item():.4f}"``."""
    info = ctx.statement
    if info is not None and not _formats_with_spec(ctx, info.node):
        return updated  # the statement (as the cheap ast sees it) formats nothing with a spec
    found = _FormattedParts()
    original.visit(found)
    wrap = [p.format_spec is not None and _is_tensor(ctx, p.expression) for p in found.parts]
    if not any(wrap):
        return updated
    ctx.record(
        "torch.Tensor.__format__", "converted", _("a tensor formatted with a spec: formats its .item(), as torch")
    )
    return updated.visit(_AddItem(wrap))


@call()
def format_call_of_tensor(ctx: RewriteContext, original: cst.Call, updated: cst.Call):
    """``"{:.4f}".format(loss)`` where ``loss`` is a tensor → ``"{:.4f}".format(loss.item())``; None: not such a call."""
    func = original.func
    if not (
        isinstance(func, cst.Attribute)
        and func.attr.value == "format"
        and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString))
        and ":" in cst.Module([]).code_for_node(func.value)
    ):
        return None
    wrap = [not a.star and _is_tensor(ctx, a.value) for a in original.args]
    if not any(wrap):
        return None
    ctx.record(
        "torch.Tensor.__format__", "converted", _("a tensor formatted with a spec: formats its .item(), as torch")
    )
    args = [a.with_changes(value=_with_item(a.value)) if w else a for a, w in zip(updated.args, wrap)]
    return updated.with_changes(args=args)
