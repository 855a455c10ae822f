"""A learning rate set by hand in a param group: ``for g in optimizer.param_groups: g['lr'] = lr`` or
``optimizer.param_groups[0]['lr'] = lr`` (warm-up and cosine schedules written out in a loop).

MindSpore's experimental optimizers keep each group's lr as a Parameter that the compiled step reads;
assigning a number in its place after the step was compiled changes nothing (the graph kept the
Parameter): the model trains on at the first lr. The assignment becomes
``torch2ms.runtime.set_group_lr(g, lr)``, which sets the Parameter's value.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...i18n import _
from ...kb.source import literal
from ..construct import Construct
from ..context import RewriteContext
from ..cstutil import code
from ..facts import ModuleFacts
from ..hooks import leave

CONSTRUCT = Construct("param group lr", order=125)


def _mentions_groups(facts: ModuleFacts) -> bool:
    return "param_groups" in (facts.source or "")


def _group_names(ctx: RewriteContext) -> frozenset[str]:
    """Names bound by ``for g in <...>.param_groups`` anywhere in the file."""
    cached = ctx.caches.get(_group_names)
    if cached is None:
        tree = ctx.facts.tree
        cached = frozenset(
            n.target.id
            for n in (ast.walk(tree) if tree is not None else ())
            if isinstance(n, (ast.For, ast.comprehension))
            and isinstance(n.target, ast.Name)
            and isinstance(n.iter, ast.Attribute)
            and n.iter.attr == "param_groups"
        )
        ctx.caches[_group_names] = cached
    return cached  # type: ignore[return-value]


def _is_group(ctx: RewriteContext, node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value in _group_names(ctx)
    return (
        isinstance(node, cst.Subscript)
        and isinstance(node.value, cst.Attribute)
        and node.value.attr.value == "param_groups"
    )


@leave(cst.SimpleStatementLine, when=_mentions_groups)
def group_lr_assignment(
    ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
) -> cst.SimpleStatementLine:
    """``g['lr'] = value`` → ``torch2ms.runtime.set_group_lr(g, value)``."""
    if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Assign):
        return updated
    assign = updated.body[0]
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return updated
    index = target.slice[0].slice
    if not isinstance(index, cst.Index) or literal(code(index.value).strip()) != "lr":
        return updated
    if not _is_group(ctx, target.value):
        return updated
    ctx.record(
        "torch.optim.Optimizer.param_groups",
        "converted",
        _("a param group's lr set by hand: set on its Parameter, which the compiled step reads"),
    )
    group, value = code(target.value).strip(), code(assign.value).strip()
    call = ctx.parse_ms(f"torch2ms.runtime.set_group_lr({group}, {value})")
    return updated.with_changes(body=[cst.Expr(call)])
