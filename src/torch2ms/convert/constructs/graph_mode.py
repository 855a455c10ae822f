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
- ``map(lambda t: f(t, self.heads), xs)`` in a compiled method: GRAPH_MODE's Map cannot take a
  lambda with free variables ("The Map operator don't support Closure with free variable yet"); the
  list comprehension ``[f(t, self.heads) for t in xs]`` gives the same values and compiles.
- ``nonlocal`` and ``yield`` in a compiled method, ``del`` of anything but a local, a ``global`` the
  method assigns (GRAPH_MODE reads its compile-time value and drops the assignment, silently): no
  equivalent statement; a comment above it says so, and the report names the line.

The compiled methods are forward and every method it reaches through ``self.name(...)``
(analysis/forward_state.graph_methods); ``del`` of a local is dropped in any method of a Cell.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from ...analysis.astwalk import nodes
from ...analysis.forward_state import forward_caches, graph_methods, recast_attributes, recasts_anywhere
from ...i18n import N_, _, every_language
from ..changes import MARK
from ..construct import Cache, Construct
from ..context import RewriteContext
from ..hooks import leave
from ..plan import Stmt, header_nodes


def _graph_statement(node: ast.AST) -> bool:
    """A statement (or an expression in its header) that a hook of this construct rewrites or marks."""
    if isinstance(node, (ast.Delete, ast.Nonlocal, ast.Global, ast.Try)):
        return True
    return isinstance(node, (ast.Yield, ast.YieldFrom)) or (_is_map_lambda(node))


def _is_map_lambda(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "map"
        and len(node.args) >= 2
        and isinstance(node.args[0], ast.Lambda)
    )


_GRAPH_WORDS = re.compile(r"\b(?:del|nonlocal|global|try|yield|map)\b")


def _sees_graph_statements(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    """Statements with ``del``, ``nonlocal``, ``global``, ``try``, ``yield`` or ``map(lambda ...)`` inside a
    function are visited (and the statements around them)."""
    if not _GRAPH_WORDS.search(source):
        return
    expressions = "map(" in source or "yield" in source  # else only statement kinds count: no walk inside
    ends: list[tuple[int, int, bool]] = []  # open compound statements: (index, last nested index, is a def)
    for i, info in enumerate(plan):
        while ends and ends[-1][1] < i:
            ends.pop()
        in_function = any(is_def for _, _, is_def in ends)
        node = info.node
        if in_function and (
            _graph_statement(node)
            or (
                expressions
                and any(_graph_statement(n) for root in header_nodes(node) for n in ast.walk(root) if n is not node)
            )
        ):
            info.interesting = info.header = True
            for j, _, _ in ends:
                plan[j].interesting = True
        if info.size:
            ends.append((i, i + info.size, isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))))


CONSTRUCT = Construct("graph mode", order=40, sees=_sees_graph_statements)

_TRY_NOTE = N_(
    "GRAPH_MODE — try/except in construct is not compiled (\"Unsupported statement 'Try'\"): move it out or use an if"
)


def _in_forward(ctx: RewriteContext) -> bool:
    """In a method GRAPH_MODE compiles (forward, a method forward calls) or in a function nested in one."""
    if not ctx.in_module_class or not ctx.func_stack:
        return False
    cls = class_node(ctx)
    memo = _MEMO.of(ctx)
    if cls is not None and id(cls) not in memo.graph_methods:
        memo.graph_methods[id(cls)] = graph_methods(cls)
    compiled = memo.graph_methods.get(id(cls), frozenset({"forward"})) if cls is not None else {"forward"}
    return ctx.func_stack[0] in compiled


def _local_names(target: cst.BaseExpression) -> bool:
    """``del x`` / ``del x, y`` / ``del (x, y)``: only plain local names."""
    if isinstance(target, cst.Name):
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return all(_local_names(e.value) for e in target.elements)
    return False


@leave(cst.SimpleStatementLine)
def drop_local_del(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``del x, y`` of locals in any method of a Cell → nothing; another ``del`` in a compiled method is marked."""
    if len(updated.body) != 1 or not ctx.in_module_class or not ctx.func_stack:
        return updated
    stmt = updated.body[0]
    if isinstance(stmt, cst.Nonlocal) and _in_forward(ctx):
        return _marked(ctx, updated, _NONLOCAL_NOTE, _("nonlocal in construct: GRAPH_MODE does not compile it"))
    if isinstance(stmt, cst.Global) and _in_forward(ctx) and _assigns(ctx, {n.name.value for n in stmt.names}):
        return _marked(ctx, updated, _GLOBAL_NOTE, _("assignment to a global in construct: GRAPH_MODE loses it"))
    if not isinstance(stmt, cst.Del):
        return updated
    if not _local_names(stmt.target):
        if not _in_forward(ctx):
            return updated
        return _marked(ctx, updated, _DEL_NOTE, _("del of an attribute or item in construct: GRAPH_MODE has no Delete"))
    ctx.record("torch.nn.Module.forward", "converted", _("del of a local dropped: GRAPH_MODE has no Delete statement"))
    if any(line.comment for line in updated.leading_lines):
        return updated.with_changes(body=[cst.Pass()])
    return cst.RemovalSentinel.REMOVE


_NONLOCAL_NOTE = N_(
    "GRAPH_MODE — nonlocal in construct is not compiled (\"Unsupported statement 'Nonlocal'\"): "
    "return the value from the inner function instead"
)
_DEL_NOTE = N_(
    "GRAPH_MODE — del of an attribute or item in construct is not compiled (\"Unsupported statement 'Delete'\"): "
    "build a new value instead"
)
_GLOBAL_NOTE = N_(
    "GRAPH_MODE — a global assigned in construct: the graph reads the value it had at compile time and the "
    "assignment is lost (no error): keep the state in a Parameter or outside construct"
)


def _assigns(ctx: RewriteContext, names: set[str]) -> bool:
    """Does the function being converted (the innermost def of the class's method) assign one of ``names``?"""
    cls = class_node(ctx)
    scope: ast.AST | None = cls
    for fn in ctx.func_stack:
        scope = (
            next((n for n in ast.walk(scope) if isinstance(n, ast.FunctionDef) and n.name == fn), None)
            if scope is not None
            else None
        )
    if scope is None:
        return True  # not found: say so rather than stay silent
    for n in ast.walk(scope):
        targets = (
            n.targets
            if isinstance(n, ast.Assign)
            else [n.target]
            if isinstance(n, (ast.AugAssign, ast.AnnAssign))
            else []
        )
        if any(isinstance(t, ast.Name) and t.id in names for t in targets):
            return True
    return False


_YIELD_NOTE = N_(
    "GRAPH_MODE — a generator (yield) in construct is not compiled (\"Unsupported expression 'Yield'\"): "
    "return a list or tuple instead"
)


def _marked(ctx: RewriteContext, updated: Any, note: str, reason: str) -> Any:
    """The statement with ``note`` above it (once) and ``reason`` in the report."""
    marks = {f"{MARK} {text}" for text in every_language(note)}
    if any(line.comment and line.comment.value in marks for line in updated.leading_lines):
        return updated
    ctx.record("torch.nn.Module.forward", "review", reason)
    line = cst.EmptyLine(comment=cst.Comment(f"{MARK} " + _(note)))
    return updated.with_changes(leading_lines=[*updated.leading_lines, line])


_COMPAT_NOTE = N_(
    "GRAPH_MODE — torch2ms.runtime.TorchCompat applies torch's argument rules at run time and does not compile "
    "inside construct: there, call the MindSpore function with the arguments written out"
)


def _compat_functions(ctx: RewriteContext, node: cst.CSTNode) -> list[tuple[str, bool]]:
    """(torch name, called at once) of each ``TorchCompat("torch...")`` of a KB *function* in ``node``."""
    found: list[tuple[str, bool]] = []
    callees: set[int] = set()  # TorchCompat(...) nodes already seen as called at once

    class _Find(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            func = n.func
            called = isinstance(func, cst.Call)
            if called:
                callees.add(id(func))
            elif id(n) in callees:
                return
            call = func if isinstance(func, cst.Call) else n
            head = call.func
            name = head.attr.value if isinstance(head, cst.Attribute) else getattr(head, "value", "")
            if name != "TorchCompat" or not call.args or not isinstance(call.args[0].value, cst.SimpleString):
                return
            torch_name = call.args[0].value.evaluated_value
            entry = ctx.kb.get(torch_name) if isinstance(torch_name, str) else None
            if entry is not None and entry.kind == "function":
                found.append((entry.torch, called))

    node.visit(_Find())
    return found


@leave(cst.SimpleStatementLine)
def mark_compat_function(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """A torch function run through TorchCompat where construct calls it (in a compiled method), or kept as a
    value (``self.act = F.gelu``: construct will call it): GRAPH_MODE cannot compile TorchCompat's call."""
    memo = _MEMO.of(ctx)
    new = ctx.changes[memo.changes_seen :]
    memo.changes_seen = len(ctx.changes)
    if not any("TorchCompat" in c.note for c in new) or not ctx.in_module_class or not ctx.func_stack:
        return updated  # the statement wrote no TorchCompat (its rewrite says so in the report)
    compiled = _in_forward(ctx)
    found = [torch for torch, called in _compat_functions(ctx, updated) if compiled or not called]
    if not found:
        return updated
    reason = _("{api} runs through TorchCompat, which GRAPH_MODE does not compile inside construct").format(
        api=", ".join(dict.fromkeys(found))
    )
    updated = _marked(ctx, updated, _COMPAT_NOTE, reason)
    memo.changes_seen = len(ctx.changes)  # this mark's own line names TorchCompat too
    return updated


@leave(cst.Try)
def mark_try(ctx: RewriteContext, original: cst.Try, updated: cst.Try):
    if not _in_forward(ctx):
        return updated
    return _marked(ctx, updated, _TRY_NOTE, _("try/except in construct: GRAPH_MODE does not compile it"))


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
    graph_methods: dict[int, frozenset[str]] = field(default_factory=dict)  # id(class) → methods GRAPH_MODE compiles
    changes_seen: int = 0  # the report's changes already looked at for a TorchCompat


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
def mark_generator(ctx: RewriteContext, original: cst.FunctionDef, updated: cst.FunctionDef):
    """A compiled method (or a function in one) that yields."""
    if "yield" not in (ctx.facts.source or "yield"):
        return updated
    ctx.func_stack.append(original.name.value)  # the def itself: is it compiled
    try:
        compiled = _in_forward(ctx)
    finally:
        ctx.func_stack.pop()
    if not compiled or not _yields(original):
        return updated
    return _marked(ctx, updated, _YIELD_NOTE, _("yield in construct: GRAPH_MODE does not compile a generator"))


def _yields(fn: cst.FunctionDef) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Yield(self, n: cst.Yield) -> None:
            found.append(n)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is fn  # a nested def's yield is its own

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

    fn.visit(_Find())
    return bool(found)


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
