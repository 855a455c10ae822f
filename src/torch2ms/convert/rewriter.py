"""The rewrite stage's libcst pass: every torch use in the file, by the KB and the construct hooks.

Canonicalise, then match: every torch reference is resolved to its full name through the file's
imports before the KB is consulted (calls.py); types of method receivers come from the same light
inference ``scan`` uses. Comments and formatting survive because unchanged nodes (and unchanged call
arguments) are reused as they are. Statements the plan marks as having nothing to convert are not
visited at all (index.py). Constructs beyond one call (no_grad blocks, data pipelines,
autograd.Function, in-place statements) plug in through hooks (hooks.py, constructs/).
"""

from __future__ import annotations

from collections import Counter

import libcst as cst

from .calls import method_attribute, method_call, reference, torch_call
from .class_name_guards import class_name_aliases, class_name_classes
from .construct import Constructs
from .context import RewriteContext
from .cstutil import FastDispatch, comment_counts, comments_in
from .hooks import ActiveHooks
from .index import StatementInfo
from .inert import InertExpressions
from .quiet import is_placeholder

_SIMPLE = (cst.SimpleStatementLine, cst.SimpleStatementSuite)
_STATEMENTS = frozenset(
    {
        cst.SimpleStatementLine,
        cst.SimpleStatementSuite,
        cst.FunctionDef,
        cst.ClassDef,
        cst.If,
        cst.For,
        cst.While,
        cst.With,
        cst.Try,
        cst.TryStar,
        cst.Match,
    }
)
# Nodes that hold only punctuation, whitespace and comments: nothing inside them is ever rewritten,
# so their children (mostly whitespace nodes, half of all nodes) are not visited.
_OPAQUE = frozenset(
    {
        cst.Comma,
        cst.Dot,
        cst.AssignEqual,
        cst.Colon,
        cst.Semicolon,
        cst.LeftParen,
        cst.RightParen,
        cst.LeftSquareBracket,
        cst.RightSquareBracket,
        cst.LeftCurlyBrace,
        cst.RightCurlyBrace,
        cst.TrailingWhitespace,
        cst.EmptyLine,
        cst.ParenthesizedWhitespace,
        cst.SimpleWhitespace,
        cst.Newline,
        cst.Comment,
        cst.Integer,
        cst.Float,
        cst.Imaginary,
        cst.SimpleString,
        cst.ImportStar,
        *(
            c
            for c in vars(cst).values()
            if isinstance(c, type)
            and issubclass(c, (cst.BaseBinaryOp, cst.BaseCompOp, cst.BaseBooleanOp, cst.BaseUnaryOp, cst.BaseAugOp))
            and not c.__name__.startswith("Base")
        ),
    }
)
# Nodes the rewrite does not enter when nothing inside them could change (inert.py).
_EXPRESSIONS = frozenset(
    {
        cst.Arg,
        *(
            c
            for c in vars(cst).values()
            if isinstance(c, type) and issubclass(c, cst.BaseExpression) and not c.__name__.startswith("Base")
        ),
    }
)
# Parts of a def/class header, skipped when the header mentions nothing to convert.
_HEADER_PARTS = frozenset({cst.Parameters, cst.Decorator, cst.Annotation, cst.Arg})
_PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def _keep_lost_comments(original: cst.SimpleStatementLine, updated, one_line: bool):
    """A comment inside a rewritten statement (``x,  # type: ignore`` in a multi-line call) that the
    rewrite could not keep in place goes above the statement: a conversion never deletes comments.
    (``one_line``: the statement fits on one line, so its only comments are above it and after it.)"""
    if not isinstance(updated, cst.SimpleStatementLine):
        return updated
    if one_line:
        before = _own_line_comments(original)
        if not before or not Counter(before) - Counter(_own_line_comments(updated)):
            return updated  # none, or all still above and after it (the common case): no walk
    elif not (before_counts := comment_counts(original)) or not before_counts - comment_counts(updated):
        return updated  # every comment is still there (the common case), found without a visitor
    else:
        before = comments_in(original)
    lost = Counter(before) - comment_counts(updated)
    if not lost:
        return updated
    above = [cst.EmptyLine(comment=cst.Comment(c)) for c in lost.elements()]
    return updated.with_changes(leading_lines=[*updated.leading_lines, *above])


def _own_line_comments(stmt: cst.SimpleStatementLine) -> list[str]:
    """The comments above a statement and after it (a subset of ``comments_in(stmt)``)."""
    found = [ln.comment.value for ln in stmt.leading_lines if ln.comment is not None]
    if stmt.trailing_whitespace.comment is not None:
        found.append(stmt.trailing_whitespace.comment.value)
    return found


class Rewriter(FastDispatch, cst.CSTTransformer):
    def __init__(self, ctx: RewriteContext, constructs: Constructs) -> None:
        super().__init__()
        self.ctx = ctx
        self.hooks = ActiveHooks(ctx.facts, constructs)
        self._header_quiet = False
        self._attr_depth = 0
        # ids of the MindSpore names construct stages wrote (None: none, the common case)
        self._generated = ctx.generated.refs if ctx.generated else None
        # A construct whose hooks act on the project's own names (a data pipeline's): the file is visited whole.
        whole = any(c.whole_expressions is not None and c.whole_expressions(ctx.facts) for c in constructs.all)
        self._inert = None if whole else InertExpressions(ctx.imap, ctx.kb, self._generated)
        self._skipped: cst.CSTNode | None = None  # the inert node just skipped (its leave does nothing)

    # ---- statements: skip those with nothing to convert, know each change's line ---------------

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind in _OPAQUE:
            return False
        if kind is cst.Name:  # its only children are parentheses: not rebuilding it saves a node copy
            if self._inert is not None and not self._inert.live(node):
                self._skipped = node
                return False
            super().on_visit(node)
            return False
        if kind in _STATEMENTS:
            go = self._enter_statement(node, kind)
            if go is None:  # a quiet statement's placeholder: nothing in it, no hook may change it
                self._skipped = node
                return False
            return super().on_visit(node) and go
        if self._generated is not None and id(node) in self._generated:
            return False  # a MindSpore name a construct stage wrote: leave_Attribute shortens it
        if kind in _HEADER_PARTS and self._header_quiet:
            super().on_visit(node)  # keeps visit_/leave_ hooks paired (leave_ always runs)
            return False
        for hook in self.hooks.skip(kind):
            if hook(self.ctx, node):
                super().on_visit(node)
                return False
        inert = self._inert
        if inert is not None and (not inert.live(node) if kind in _EXPRESSIONS else inert.known_inert(node)):
            self._skipped = node  # nothing inside it to convert: neither its hooks nor its children run
            return False
        return super().on_visit(node)

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
        kind = type(original)
        if kind in _OPAQUE:
            return updated  # no hooks for punctuation and whitespace
        if original is self._skipped:
            self._skipped = None
            return updated
        result = super().on_leave(original, updated)
        if kind in _STATEMENTS:
            self.ctx.statements.pop()
        return result

    def _enter_statement(self, node: cst.CSTNode, kind: type) -> bool | None:
        """Whether to visit inside the statement; None: a placeholder of quiet.py (neither it nor its
        leave hooks are visited: half of a model zoo's statements, and render puts their text back)."""
        info: StatementInfo | None = self.ctx.index.get(node)
        if info is None:
            # Not in the index: a statement no stage registered. Visit it whole, on its parent's line.
            self.ctx.statements.append(self.ctx.statement)
            self._header_quiet = False
            return True
        if not info.interesting and kind is cst.SimpleStatementLine and is_placeholder(info.node):
            self._header_quiet = False  # (as entering any simple statement does)
            return None
        self.ctx.statements.append(info)
        # A def/class header with nothing to convert: its parameters, decorators, bases are skipped
        # (statements of the body set it back when entered).
        self._header_quiet = kind in (cst.FunctionDef, cst.ClassDef) and not info.header
        return info.interesting

    # ---- marks: comments above the statement that holds what a person must do ----------------

    def _open(self, node: cst.CSTNode) -> bool:
        self.ctx.markers.append([])
        return True

    def _close(self, original: cst.CSTNode, updated):
        notes = self.ctx.markers.pop()
        if not notes or not hasattr(updated, "leading_lines"):
            return updated
        existing = {line.comment.value for line in updated.leading_lines if line.comment}
        new = [cst.EmptyLine(comment=cst.Comment(n)) for n in dict.fromkeys(notes) if n not in existing]
        if not new:
            return updated
        return updated.with_changes(leading_lines=[*updated.leading_lines, *new])

    def _hooks_after_marks(self, original: cst.CSTNode, updated):
        updated = self._close(original, updated)
        for hook in self.hooks.leave(type(original)):
            if not isinstance(updated, cst.CSTNode) or type(updated) is not type(original):
                break  # a hook replaced or removed the statement
            updated = hook(self.ctx, original, updated)
        if isinstance(original, cst.SimpleStatementLine) and updated is not original:
            updated = _keep_lost_comments(original, updated, self.ctx.in_one_line_statement())
        return updated

    visit_SimpleStatementLine = visit_If = visit_For = visit_While = visit_With = visit_Try = _open
    # (one handler for six node types: libcst's typed stubs expect one signature per type)
    leave_SimpleStatementLine = leave_If = leave_For = leave_While = leave_With = leave_Try = _hooks_after_marks  # type: ignore[assignment]

    # ---- isinstance narrowing: inside `if isinstance(m, nn.BatchNorm2d):`, m is a BatchNorm ----

    def visit_If_body(self, node: cst.If) -> None:
        aliases = self.ctx.class_name_aliases[-1] if self.ctx.class_name_aliases else {}
        guards = class_name_classes(self.ctx.kb, node.test, aliases)
        self.ctx.narrowed.append({**guards, **self.ctx.isinstance_classes(node.test)})

    def leave_If_body(self, node: cst.If) -> None:
        self.ctx.narrowed.pop()

    def leave_IndentedBlock(self, original, updated):
        # A block whose statements all became no-ops still needs one statement.
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated

    # ---- classes and functions -------------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        ctx = self.ctx
        ctx.markers.append([])
        ctx.class_stack.append(node.name.value)
        ctx.class_has_bases.append(bool(node.bases))
        ctx.scope_starts.append(len(ctx.changes))
        return True

    def leave_ClassDef(self, original, updated):
        ctx = self.ctx
        ctx.class_stack.pop()
        ctx.class_has_bases.pop()
        for hook in self.hooks.leave(cst.ClassDef):
            updated = hook(ctx, original, updated)
        ctx.scope_starts.pop()
        return self._close(original, updated)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        ctx = self.ctx
        ctx.markers.append([])
        ctx.func_stack.append(node.name.value)
        ctx.scope_starts.append(len(ctx.changes))
        ctx.class_name_aliases.append(class_name_aliases(node))
        return True

    def leave_FunctionDef(self, original, updated):
        ctx = self.ctx
        ctx.func_stack.pop()
        ctx.class_name_aliases.pop()
        for hook in self.hooks.leave(cst.FunctionDef):
            updated = hook(ctx, original, updated)
        if ctx.in_module_class and original.name.value == "forward":
            updated = updated.with_changes(name=cst.Name("construct"))
            ctx.record("torch.nn.Module.forward")
        ctx.scope_starts.pop()
        return self._close(original, updated)

    # ---- imports are settled by the imports stage -------------------------------------------

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    # ---- references and calls ----------------------------------------------------------------

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        # A resolved torch chain is handled whole in leave_Attribute / leave_Call.
        return self.ctx.resolve(node) is None

    def visit_Attribute_attr(self, node: cst.Attribute) -> None:
        self._attr_depth += 1  # ``ms.nn.Dense``: the ``nn`` after a dot is no reference to torch.nn

    def leave_Attribute_attr(self, node: cst.Attribute) -> None:
        self._attr_depth -= 1

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        ctx = self.ctx
        generated = ctx.generated.full_name(original)
        if generated is not None:
            return ctx.parse_ms(generated)
        full = ctx.resolve(original)
        if full is not None:
            return reference(ctx, self.hooks, full, original, updated)
        for hook in self.hooks.kind("attribute"):
            special = hook(ctx, original, updated)
            if special is not None:
                return special
        return method_attribute(ctx, original, updated)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if original in self.ctx.assign_targets:
            return updated  # `scaled_dot_product_attention = None` rebinds the name: no reference to torch
        full = self.ctx.imap.names.get(original.value)
        if full and self.ctx.imap.is_framework(full) and "." in full and not self._attr_depth:
            return reference(self.ctx, self.hooks, full, original, updated)
        return updated

    # Base classes, annotations and isinstance/issubclass arguments name the class itself.
    def visit_ClassDef_bases(self, node) -> None:
        self.ctx.type_depth += 1
        self.ctx.in_bases = True

    def leave_ClassDef_bases(self, node) -> None:
        self.ctx.type_depth -= 1
        self.ctx.in_bases = False

    # An assignment target or a class pattern names a torch object without using its value.
    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        self.ctx.in_target += 1
        self.ctx.assign_targets.add(node.target)
        return True

    def leave_AssignTarget(self, original, updated):
        self.ctx.in_target -= 1
        return updated

    def visit_AugAssign_target(self, node) -> None:
        self.ctx.in_target += 1

    def leave_AugAssign_target(self, node) -> None:
        self.ctx.in_target -= 1

    def visit_MatchClass(self, node) -> bool:
        self.ctx.in_pattern += 1
        return True

    def leave_MatchClass(self, original, updated):
        self.ctx.in_pattern -= 1
        return updated

    def visit_Annotation(self, node) -> bool:
        self.ctx.type_depth += 1
        return True

    def leave_Annotation(self, original, updated):
        self.ctx.type_depth -= 1
        return updated

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        self.ctx.assign_targets.add(node.target)
        return True

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self.ctx.assign_targets.add(node.target)
        return True

    def visit_Call(self, node: cst.Call) -> bool:
        # Remember callee nodes so references know they are being called.
        self.ctx.call_funcs.add(node.func)
        if isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "issubclass") and len(node.args) == 2:
            cls = node.args[1].value
            self.ctx.type_nodes.add(cls)
            if isinstance(cls, (cst.Tuple, cst.List)):
                self.ctx.type_nodes.update(e.value for e in cls.elements)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "type" and len(node.args) == 1:
            arg = node.args[0].value  # x.type(torch.FloatTensor) / x.type(dtype=Tensor)
            self.ctx.dtype_nodes.update((arg.body, arg.orelse) if isinstance(arg, cst.IfExp) else (arg,))
        if node.args and self.ctx.resolve(node.func) in _PARAMETER:
            data = next((a.value for a in node.args if a.keyword is None or a.keyword.value == "data"), None)
            if isinstance(data, cst.Call):
                self.ctx.parameter_data.add(data)
        return True

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        ctx = self.ctx
        ctx.call_funcs.discard(original.func)
        full = ctx.resolve(original.func)
        if full is not None:
            return torch_call(ctx, self.hooks, full, original, updated)
        for hook in self.hooks.kind("call"):
            special = hook(ctx, original, updated)
            if special is not None:
                return special
        if isinstance(original.func, cst.Attribute):
            return method_call(ctx, original, updated)
        return updated
