"""Gradient contexts, other context managers and decorators with no MindSpore meaning.

``with torch.no_grad(): body`` → ``body``: MindSpore differentiates only inside grad functions, so
outside them every block already runs without a graph. ``with torch.serialization.safe_globals([...]):
body`` → ``body`` too: MindSpore checkpoints are not pickles, there is nothing to allow-list.
``@torch.no_grad()``, ``@torch.jit.ignore`` and friends are dropped. Which torch names these are is
KB data (entry ``role``).
"""

from __future__ import annotations

import libcst as cst

from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext
from ..cstutil import block
from ..hooks import leave, skip, torch_call

CONSTRUCT = Construct("grad context", order=30)


def grad_contexts(ctx: RewriteContext) -> frozenset[str]:
    """Context managers whose ``with`` header goes, the block kept."""
    return ctx.kb.with_role("grad-context") | ctx.kb.with_role("drop-context")


def _dropped_note(ctx: RewriteContext, name: str) -> str:
    entry = ctx.kb.get(name)
    if entry is not None and entry.role == "drop-context":
        return entry.note_shown  # why this context means nothing in MindSpore
    return _("block kept without a context: MindSpore differentiates only inside grad functions")


def dropped_decorators(ctx: RewriteContext) -> frozenset[str]:
    return ctx.kb.with_role("grad-context") | ctx.kb.with_role("drop-decorator")


def callee(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.func if isinstance(node, cst.Call) else node


@torch_call()
def keep_context_call(ctx: RewriteContext, full: str, original: cst.Call, updated: cst.Call) -> cst.Call | None:
    """``torch.no_grad()`` itself: the with statement or decorator around it goes as a whole."""
    return updated if full in grad_contexts(ctx) else None


@leave(cst.With)
def unwrap_grad_context(ctx: RewriteContext, original: cst.With, updated: cst.With):
    """``with torch.no_grad(): body`` → ``body``; other context managers of the same with stay."""
    keep = [item for item in updated.items if ctx.resolve(callee(item.item)) not in grad_contexts(ctx)]
    if len(keep) == len(updated.items):
        return updated
    dropped = [ctx.resolve(callee(i.item)) for i in updated.items if i not in keep]
    for name in dropped:
        ctx.record(name or "torch.no_grad", "converted", _dropped_note(ctx, name or "torch.no_grad"))
    if keep:
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(items=keep)
    if isinstance(updated.body, cst.SimpleStatementSuite):  # `with torch.no_grad(): y = f(x)`
        suite = updated.body
        line = cst.SimpleStatementLine(suite.body, updated.leading_lines, suite.trailing_whitespace)
        return cst.FlattenSentinel([line])
    body = block(updated.body)
    assert isinstance(updated.body, cst.IndentedBlock)
    header = updated.body.header.comment  # `with torch.no_grad():  # comment` keeps its comment
    above = [cst.EmptyLine(comment=header)] if header is not None else []
    if body:
        body[0] = body[0].with_changes(leading_lines=[*updated.leading_lines, *above, *body[0].leading_lines])
    return cst.FlattenSentinel(body)


@skip(cst.Decorator)
def dropped_decorator(ctx: RewriteContext, node: cst.Decorator) -> bool:
    """Decorators dropped whole (torch.jit.*, no_grad) are not references to convert."""
    return ctx.resolve(callee(node.decorator)) in dropped_decorators(ctx)


@leave(cst.FunctionDef)
def drop_decorators(ctx: RewriteContext, original: cst.FunctionDef, fn: cst.FunctionDef) -> cst.FunctionDef:
    keep = []
    for d in fn.decorators:
        name = ctx.resolve(callee(d.decorator))
        if name in dropped_decorators(ctx):
            ctx.record(name, "converted", _("decorator has no meaning in MindSpore; removed"))
        else:
            keep.append(d)
    if len(keep) == len(fn.decorators):
        return fn
    lines = []
    for d in fn.decorators:
        if d not in keep:  # its comments stay: those above it and the one after it on its line
            lines += [line for line in d.leading_lines if line.comment]
            if d.trailing_whitespace.comment is not None:
                lines.append(cst.EmptyLine(comment=d.trailing_whitespace.comment))
    if lines:
        fn = fn.with_changes(leading_lines=[*fn.leading_lines, *lines])
    return fn.with_changes(decorators=keep)
