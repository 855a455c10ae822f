"""Python-side use of tensors that MindSpore's Tensor does not support the way torch's does.

A torch 0-dim tensor formats like its number (``f"{loss:.4f}"``, ``"{:.4f}".format(loss)``): its
``__format__`` formats ``self.item()``. MindSpore's Tensor refuses any format spec ("unsupported
format string passed to Tensor.__format__"). A tensor (as the light type inference knows it) formatted
with a spec gets ``.item()``, which is what torch formatted; other values are left alone.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.astwalk import nodes
from ...analysis.infer import TENSOR
from ...i18n import _
from ..context import RewriteContext
from ..hooks import call, leave


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
    """Does the statement hold an f-string part with a format spec? A file with none answers for all
    of its own statements at once (statements a stage wrote are looked at one by one)."""
    memo = ctx.memo.get("format_specs")
    if memo is None:
        tree = ctx.facts.tree
        found = tree is not None and any(
            isinstance(n, ast.FormattedValue) and n.format_spec is not None for n in nodes(tree)
        )
        own = set() if found or tree is None else {id(n) for n in nodes(tree) if isinstance(n, ast.stmt)}
        memo = ctx.memo["format_specs"] = own
    if id(stmt) in memo:  # type: ignore[operator]
        return False
    return any(isinstance(n, ast.FormattedValue) and n.format_spec is not None for n in ast.walk(stmt))


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
