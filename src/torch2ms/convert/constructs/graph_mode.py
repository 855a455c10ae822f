"""forward code GRAPH_MODE cannot compile (issue 11, class 8): rewritten where that keeps the
numbers, reported with the line and the reason where it cannot be.

- ``del x`` of a local in forward: GRAPH_MODE has no Delete statement; dropping it changes nothing
  (a later read would have been a NameError in torch).
- A tensor cached on the module in forward (``self.src_mask`` set to None in ``__init__``, built
  in forward when missing, read and used only there): GRAPH_MODE cannot carry a tensor attribute
  assigned in construct (any such assignment makes every read of it untyped). The cache becomes
  a local of construct, recomputed on each call: same outputs.
- A tensor attribute re-cast in place by a method forward calls (``self.attn_mask =
  self.attn_mask.to(dtype=x.dtype, device=x.device)``, CLIP): a local cast of the attribute, the
  same values on every call.
- ``try``/``except`` in forward: GRAPH_MODE rejects the statement; a comment above it says so.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst

from ...analysis.astwalk import nodes
from ...analysis.forward_state import forward_caches, recast_attributes, recasts_anywhere
from ...i18n import N_, _, every_language
from ..changes import MARK
from ..construct import Cache, Construct
from ..context import RewriteContext
from ..hooks import leave

CONSTRUCT = Construct("graph mode", order=40)

_TRY_NOTE = N_(
    "GRAPH_MODE — try/except in construct is not compiled (\"Unsupported statement 'Try'\"): move it out or use an if"
)


def _in_forward(ctx: RewriteContext) -> bool:
    return ctx.in_module_class and bool(ctx.func_stack) and ctx.func_stack[-1] == "forward"


@leave(cst.SimpleStatementLine)
def drop_local_del(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``del x, y`` of locals in forward → nothing."""
    if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Del) or not _in_forward(ctx):
        return updated
    target = updated.body[0].target
    names = target.elements if isinstance(target, cst.Tuple) else [target]
    if not all(isinstance(getattr(e, "value", e), cst.Name) for e in names):
        return updated
    ctx.record("torch.nn.Module.forward", "converted", _("del of a local dropped: GRAPH_MODE has no Delete statement"))
    if any(line.comment for line in updated.leading_lines):
        return updated.with_changes(body=[cst.Pass()])
    return cst.RemovalSentinel.REMOVE


@leave(cst.Try)
def mark_try(ctx: RewriteContext, original: cst.Try, updated: cst.Try):
    marks = {f"{MARK} {text}" for text in every_language(_TRY_NOTE)}
    if not _in_forward(ctx) or any(line.comment and line.comment.value in marks for line in updated.leading_lines):
        return updated
    ctx.record("torch.nn.Module.forward", "review", _("try/except in construct: GRAPH_MODE does not compile it"))
    note = cst.EmptyLine(comment=cst.Comment(f"{MARK} " + _(_TRY_NOTE)))
    return updated.with_changes(leading_lines=[*updated.leading_lines, note])


def class_node(ctx: RewriteContext) -> ast.ClassDef | None:
    tree = ctx.facts.tree
    if tree is None or not ctx.class_stack:
        return None
    memo = _MEMO.of(ctx)
    classes = memo.first_class_by_name
    if classes is None:  # one scan per file: the first class of each name, in walk order
        classes = {}
        for n in nodes(tree):
            if isinstance(n, ast.ClassDef):
                classes.setdefault(n.name, n)
        memo.first_class_by_name = classes
    return classes.get(ctx.class_stack[-1])


@dataclass
class _Memo:
    first_class_by_name: dict[str, ast.ClassDef] | None = None
    recasts_anywhere: bool | None = None  # does any class of the file re-cast an attribute in place
    recasts: dict[int, dict[str, list[str]]] = field(default_factory=dict)  # id(class) → recast_attributes


_MEMO = Cache(_Memo)


class _ToLocal(cst.CSTTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        super().__init__()
        self.names = names

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if isinstance(updated.value, cst.Name) and updated.value.value == "self" and updated.attr.value in self.names:
            return cst.Name(self.names[updated.attr.value])
        return updated


def _attributes_made_local(ctx: RewriteContext, method: str) -> tuple[list[str], list[str]]:
    """(attributes cached in forward, attributes re-cast in place) of the method being left."""
    cls = class_node(ctx)
    if cls is None:
        return [], []
    cached = forward_caches(cls) if method == "forward" else []
    memo = _MEMO.of(ctx)
    if memo.recasts_anywhere is None:  # most files re-cast nothing: their classes are not looked at
        memo.recasts_anywhere = ctx.facts.tree is not None and recasts_anywhere(ctx.facts.tree)
    key = id(cls)  # one look at the class, not one per method
    if key not in memo.recasts:
        memo.recasts[key] = recast_attributes(cls) if memo.recasts_anywhere else {}
    recasts = memo.recasts[key]
    recast = [a for a in recasts.get(method, []) if a not in cached]
    return cached, recast


def _record_locals(ctx: RewriteContext, cached: list[str], recast: list[str]) -> cst.EmptyLine:
    """The report's lines and the note above the locals."""
    for a in cached:
        ctx.record(
            "torch.nn.Module.forward",
            "converted",
            _(
                "self.{attribute} cached in forward becomes a local: GRAPH_MODE cannot carry a tensor attribute "
                "assigned in construct"
            ).format(attribute=a),
        )
    for a in recast:
        ctx.record(
            "torch.nn.Module.forward",
            "converted",
            _(
                "self.{attribute} re-cast in place (dtype/device) becomes a local cast: GRAPH_MODE cannot carry "
                "a tensor attribute assigned in construct"
            ).format(attribute=a),
        )
    notes = []
    if cached:
        notes.append(
            _(
                "GRAPH_MODE — {attributes}: cached on the module in torch; a local here (recomputed each call, "
                "same outputs)"
            ).format(attributes=", ".join("self." + a for a in cached))
        )
    if recast:
        notes.append(
            _("GRAPH_MODE — {attributes}: re-cast on the module in torch; a local cast here (same values)").format(
                attributes=", ".join("self." + a for a in recast)
            )
        )
    return cst.EmptyLine(comment=cst.Comment(f"{MARK} " + "; ".join(notes)))


@leave(cst.FunctionDef)
def cached_attributes(ctx: RewriteContext, original: cst.FunctionDef, updated: cst.FunctionDef):
    """``self.mask`` built lazily in forward, or re-cast in place by any method → a local."""
    method = original.name.value
    if not ctx.in_module_class or ctx.func_stack or method == "__init__":
        return updated
    if not isinstance(updated.body, cst.IndentedBlock):
        return updated
    cached, recast = _attributes_made_local(ctx, method)
    attrs = [*cached, *recast]
    if not attrs:
        return updated
    taken = _names(updated)
    names = {a: a if a not in taken else f"{a}_cached" for a in attrs}
    body = updated.body.visit(_ToLocal(names))
    assert isinstance(body, cst.IndentedBlock)
    first = [
        cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(names[a]))], cst.parse_expression(f"self.{a}"))])
        for a in attrs
    ]
    stmts = list(body.body)
    at = 1 if stmts and _is_docstring(stmts[0]) else 0
    first[0] = first[0].with_changes(leading_lines=[_record_locals(ctx, cached, recast)])
    return updated.with_changes(body=body.with_changes(body=[*stmts[:at], *first, *stmts[at:]]))


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _names(node: cst.CSTNode) -> set[str]:
    """Variable names used in a function (not attribute names after a dot, nor keywords)."""
    found: set[str] = set()

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:  # a keyword's name is no variable
            n.value.visit(self)
            return False

    node.visit(_Collect())
    return found
