"""Training loops (R11, R13, R17), a construct stage on the libcst tree.

The per-call KB cannot express ``loss.backward(); optimizer.step()``: MindSpore has no ``.grad``, a
gradient is the value of ``mindspore.value_and_grad(forward_fn, ...)``. This stage restructures each
loop that calls ``backward()`` while it is still torch code: the forward statements move into
``forward_fn``, the backward/step/zero_grad/clip/GradScaler statements become a ``TrainStep`` Cell
call or an explicit gradient tuple (emit.py), and the rewrite stage converts the user's statements
inside afterwards. A loop the rules cannot express keeps its torch statements and gets a
``# torch2ms: not converted — training loop: ...`` mark.

Modules: analysis.py (which statement does what), amp.py (autocast blocks), emit.py (the code).
"""

from __future__ import annotations

import ast

import libcst as cst

from ....analysis.astwalk import nodes
from ....i18n import _
from ...construct import Construct
from ...cstutil import Statement
from ...index import StatementIndex
from ...state import FileState
from .analysis import Roles, analyse_step, method_call
from .backwards import analyse_flow
from .emit import StepWriter
from .errors import NotConvertible
from .general import GeneralWriter
from .skeleton import skeleton

NAME = "training"


def applies(state: FileState) -> bool:
    """Any ``x.backward()`` statement (a text check first: cheap)."""
    if "backward" not in state.source:
        return False
    assert state.tree is not None
    return any(
        isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Attribute)
        and n.value.func.attr == "backward"
        for n in nodes(state.tree)
    )


def run(state: FileState) -> None:
    if not applies(state):
        return
    assert state.module is not None and state.tree is not None and state.imap is not None
    assert state.index is not None
    found = _Collector()
    state.module.visit(found)
    roles = Roles(state.tree, state.imap, state.index)
    edits = _Edits()
    for stmts, stack in _by_block(found.backwards):
        if len(stmts) == 1 and _fused(state, roles, stmts[0], stack, edits):
            continue
        _general(state, roles, stmts, stack, edits)
    _leftover_zero_grads(state, roles, found, edits)
    if edits.replace or edits.before:
        state.module = state.module.visit(_Splice(edits.replace, edits.before, state.index))
        state.restructured = True


CONSTRUCT = Construct("training", order=220, stage=run, whole_file=applies)


class _Edits:
    """Statements to replace (by identity) and statements to put before others."""

    def __init__(self) -> None:
        self.replace: dict[int, list[Statement]] = {}
        self.before: dict[int, list[Statement]] = {}


def _by_block(backwards: list[tuple[cst.SimpleStatementLine, list[cst.CSTNode]]]):
    """The backward() statements grouped by the block (loop, def) that holds them, in order."""
    groups: dict[int, tuple[list[cst.SimpleStatementLine], list[cst.CSTNode]]] = {}
    for stmt, stack in backwards:
        key = id(stack[-1]) if stack else 0
        groups.setdefault(key, ([], stack))[0].append(stmt)
    return list(groups.values())


def _fused(state: FileState, roles: Roles, stmt, stack, edits: _Edits) -> bool:
    """One backward() in a plain loop: forward + backward + step as one TrainStep Cell (emit.py)."""
    assert state.index is not None
    line = state.index.line_of(stmt)
    try:
        plan = analyse_step(roles, stmt, stack)
        written = StepWriter(plan, roles, state.generated, state.fresh_name).write(state.data_parallel)
    except NotConvertible:
        return False
    if plan.amp is not None and plan.amp.model and plan.amp.dtype:
        state.record("torch.autocast", "converted", "mindspore.amp.auto_mixed_precision(model, 'O1')", line)
    edits.replace.update(written.replace)
    edits.before.setdefault(id(plan.outer), []).extend(written.setup)
    state.assumed_modules += written.modules
    state.record("torch.Tensor.backward", "converted", _("training loop → {form}").format(form=_(written.form)), line)
    if written.eager is not None:
        note = _("the step runs uncompiled: it reaches host code ({what}, line {line})")
        state.record("torch.Tensor.backward", "review", note.format(what=written.eager[0], line=written.eager[1]), line)
    elif written.draws:
        note = _("the step runs uncompiled: it draws with {draws} (a compiled graph would freeze the draw)")
        state.record("torch.Tensor.backward", "converted", note.format(draws=", ".join(written.draws)), line)
    state.record(
        "torch.optim.Optimizer.step", "converted", _("training loop → {form}").format(form=f"{plan.opt}(grads)"), line
    )
    return True


def _leftover_zero_grads(state: FileState, roles: Roles, found: _Collector, edits: _Edits) -> None:
    """``optimizer.zero_grad()`` outside the loops the stage rewrote: before the loop (gradient accumulation,
    a zero_grad after each step), in a helper (``def reset_grad(): d_opt.zero_grad(); g_opt.zero_grad()``),
    in a Trainer's method. MindSpore's optimizers and cells have no such method (AttributeError) and keep no
    gradients to clear: the rewritten loops start from none (``grads_sum = None`` before the loop), so the
    statement goes. Loops holding a backward() are the loop stage's (converted, or kept as a skeleton)."""
    assert state.index is not None
    stage_loops = {id(n) for _stmt, stack in found.backwards for n in stack if isinstance(n, (cst.For, cst.While))}
    for stmt, stack in found.zero_grads:
        if id(stmt) in edits.replace or any(id(n) in stage_loops for n in stack):
            continue
        a = roles.ast_of(stmt)
        call = method_call(a, "zero_grad") if a is not None else None
        if call is None or not roles.clears_gradients(ast.unparse(call.func.value)):  # type: ignore[attr-defined]
            continue
        edits.replace[id(stmt)] = []
        state.record(
            "torch.optim.Optimizer.zero_grad",
            "converted",
            _("dropped: MindSpore keeps no gradients on the parameters to clear"),
            state.index.line_of(stmt),
        )


def _general(state: FileState, roles: Roles, stmts, stack, edits: _Edits) -> None:
    """Several backward() calls, a step without a loop, gradients read in p.grad: general.py; what
    that cannot express gets a runnable skeleton with the part a person must write marked."""
    assert state.index is not None
    lines = [state.index.line_of(s) for s in stmts]
    container = stack[-1] if stack else None
    try:
        if not isinstance(container, (cst.For, cst.While, cst.FunctionDef)):
            raise NotConvertible(_("loss.backward() is not directly inside a loop or a function"))
        flow = analyse_flow(roles, container, stack)
        written = GeneralWriter(flow, roles, state.generated, state.fresh_name).write()
    except NotConvertible as exc:
        skeleton(state, roles, stmts, stack, str(exc), edits.replace)
        return
    edits.replace.update(written.replace)
    edits.before.setdefault(id(flow.setup_before), []).extend(written.setup)
    cls = next((n.name.value for n in reversed(stack) if isinstance(n, cst.ClassDef)), "")
    scope = next((n.name.value for n in reversed(stack) if isinstance(n, cst.FunctionDef)), "")
    for _cls, fn, name in written.modules:  # names the forward calls are modules, here and in forward_fn
        state.assumed_modules += [(cls, fn, name), (cls, scope, name)]
    for line in lines:
        state.record(
            "torch.Tensor.backward", "converted", _("training step → {form}").format(form=_(written.form)), line
        )


def _function_backward(node: cst.CSTNode, stack: list[cst.CSTNode]) -> bool:
    """``@staticmethod def backward(ctx, ...)`` directly in a class: a torch.autograd.Function's backward."""
    return (
        isinstance(node, cst.FunctionDef)
        and node.name.value == "backward"
        and bool(stack)
        and isinstance(stack[-1], cst.ClassDef)
        and any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators)
    )


class _Collector(cst.CSTVisitor):
    """Statements calling ``.backward()``, with the compound statements around them."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[cst.CSTNode] = []
        self.backwards: list[tuple[cst.SimpleStatementLine, list[cst.CSTNode]]] = []
        self.zero_grads: list[tuple[cst.SimpleStatementLine, list[cst.CSTNode]]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.SimpleStatementLine):
            if len(node.body) == 1 and isinstance(node.body[0], cst.Expr):
                call = node.body[0].value
                if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
                    if call.func.attr.value == "backward":
                        self.backwards.append((node, list(self.stack)))
                    elif call.func.attr.value == "zero_grad":
                        self.zero_grads.append((node, list(self.stack)))
            return False
        if isinstance(node, cst.BaseCompoundStatement):
            self.stack.append(node)  # (on_leave pops it)
            # an autograd.Function's backward is its gradient rule (autograd_function.py), never a step
            return not _function_backward(node, self.stack[:-1])
        return not isinstance(node, (cst.BaseExpression, cst.BaseSmallStatement))  # statements only

    def on_leave(self, original: cst.CSTNode) -> None:
        if isinstance(original, cst.BaseCompoundStatement):
            self.stack.pop()


class _Splice(cst.CSTTransformer):
    """Replace statements (by identity) with lists of statements, and put the setup code before
    loops; every statement written (or rebuilt around a replaced one) is registered in the index."""

    def __init__(
        self,
        replace: dict[int, list[Statement]],
        before: dict[int, list[Statement]],
        index: StatementIndex,
    ) -> None:
        super().__init__()
        self.replace, self.before, self.index = replace, before, index
        self.pending: list[cst.EmptyLine] = []  # comments of a removed statement, for the next one
        self.attach: dict[int, list[cst.EmptyLine]] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.pending and isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.attach[id(node)], self.pending = self.pending, []  # comments of a removed statement above
        # Only statements are replaced: never walk into expressions or inside simple statements.
        return not isinstance(node, (cst.SimpleStatementLine, cst.BaseExpression))

    def on_leave(self, original, updated):  # type: ignore[override]
        updated = super().on_leave(original, updated)
        if isinstance(original, cst.BaseCompoundStatement) and updated is not original:
            self.index.derive(updated, original, exact=True)  # its body changed, its own lines did not
        key = id(original)
        if key in self.attach:
            updated = updated.with_changes(leading_lines=[*self.attach.pop(key), *updated.leading_lines])
        if key not in self.replace and key not in self.before:
            return updated
        replacement = self.replace.get(key)
        if replacement is not None:
            replacement = self._keep_comments(updated, replacement)
        new = [*self.before.get(key, []), *(replacement if replacement is not None else [updated])]
        for stmt in new:
            self.index.derive_tree(stmt, original)
        if not new:
            return cst.RemovalSentinel.REMOVE
        if len(new) == 1:
            return new[0]
        return cst.FlattenSentinel(new)

    def _keep_comments(self, old: cst.CSTNode, replacement: list[Statement]) -> list[Statement]:
        """The comments of a replaced statement stay: above its first replacement, or, when it is
        removed, above the next statement (or at the end of its block)."""
        lines = [ln for ln in getattr(old, "leading_lines", ()) if ln.comment is not None]
        trailing = getattr(old, "trailing_whitespace", None)
        if trailing is not None and trailing.comment is not None:
            lines.append(cst.EmptyLine(comment=trailing.comment))
        if not lines:
            return replacement
        if not replacement:
            self.pending += lines
            return replacement
        first = replacement[0]
        have = {ln.comment.value for ln in first.leading_lines if ln.comment is not None}
        lines = [ln for ln in lines if ln.comment is not None and ln.comment.value not in have]
        return [first.with_changes(leading_lines=[*first.leading_lines, *lines]), *replacement[1:]]

    def leave_Module(self, original, updated):
        if self.pending:
            updated, self.pending = updated.with_changes(footer=[*self.pending, *updated.footer]), []
        return updated

    def leave_IndentedBlock(self, original, updated):
        if self.pending:  # the block's last statement was removed: its comments close the block
            updated, self.pending = updated.with_changes(footer=[*self.pending, *updated.footer]), []
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated
