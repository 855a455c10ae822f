"""A runnable training-step skeleton where the converter cannot restructure the step itself.

MindSpore has no ``loss.backward()``: a gradient is the value of ``value_and_grad(forward_fn, ...)``.
When the forward pass behind a loss cannot be found (a loss built from tensors recorded by earlier
calls, as in REINFORCE; a closure for ``optimizer.step(closure)``; gradients read in ways with no
MindSpore form), each ``loss.backward()`` becomes a ``forward_fn`` that returns the loss, its gradient
call, and the optimizer steps of the block apply those gradients. It runs (the gradients are zero until
the marked ``forward_fn`` computes the loss from the model), and the mark says what a person must do:
no ``backward()`` is left on a MindSpore tensor.
"""

from __future__ import annotations

import ast

import libcst as cst

from ....i18n import N_, _
from ... import generated as gen
from ...changes import MARK
from ...cstutil import Statement, block, code
from ...state import FileState
from .analysis import Roles, method_call
from .backwards import forward_slice
from .emit import comment_template, doc_template
from .errors import NotConvertible
from .flow import Holder, Holders, nested_statements, writes

SKELETON = """def {forward_fn}():
    {doc}
    return {loss}
"""
SKELETON_DOC = N_("The forward pass that computes the loss from the model's inputs (write it here).")
SKELETON_FORWARD = """def {forward_fn}():
    {doc}
    {body}
    return {loss}
"""
GRADS = "{loss_value}, {grads} = mindspore.value_and_grad({forward_fn}, None, {weights})()\n"
SKELETON_FORWARD_DOC = N_(
    "The forward pass again (a copy of the statements above): check it computes the loss from the model."
)
NO_WEIGHTS = "{grads} = ()  {note}\n"
NO_WEIGHTS_NOTE = N_("no optimizer found for this loss: pass its parameters to value_and_grad")


def skeleton(
    state: FileState,
    roles: Roles,
    stmts: list[cst.SimpleStatementLine],
    stack: list[cst.CSTNode],
    reason: str,
    replace: dict[int, list[Statement]],
) -> None:
    """Each backward() of the block → forward_fn + gradient call; the block's optimizer steps use them."""
    assert state.index is not None and state.module is not None
    body = block(stack[-1].body) if stack else list(state.module.body)  # type: ignore[attr-defined]
    scope = next((n for n in reversed(stack) if isinstance(n, cst.FunctionDef)), None)
    holders = Holders(roles, (roles.ast_of(scope) if scope is not None else None) or roles.tree)
    steps = _steps(roles, body, holders)
    grads = state.fresh_name("grads")
    asts = [roles.ast_of(s) for s in body]
    local = writes(roles.ast_of(stack[-1]) or roles.tree) if stack else set()
    for stmt in stmts:
        line = state.index.line_of(stmt)
        a = roles.ast_of(stmt)
        call = method_call(a, "backward") if a is not None else None
        loss = ast.unparse(call.func.value) if call is not None else "loss"  # type: ignore[attr-defined]
        weights = steps[0][1].weights if steps else _zeroed(roles, body, holders)
        forward = _forward_copy(roles, body, asts, stmt, local)
        new = _step_skeleton(state, loss, weights, grads, reason, forward)
        new[0] = new[0].with_changes(leading_lines=[*stmt.leading_lines, *new[0].leading_lines])
        replace[id(stmt)] = new
        state.record(
            N_("training loop"),  # a construct, not a torch name: the report shows it translated
            "not-converted",
            _("{reason}; runnable skeleton: write forward_fn").format(reason=reason),
            line,
        )
    for node in _zero_grads(roles, body):  # MindSpore gradients start from zero in every call
        replace[id(node)] = []
    for node, _holder in steps:
        text = code(node.with_changes(leading_lines=[])).strip()
        opt = text.rsplit(".step(", 1)[0]
        stepped = cst.SimpleStatementLine([cst.Expr(gen.arguments(cst.parse_expression(opt), [cst.Name(grads)]))])
        replace[id(node)] = [gen.with_comment(stepped.with_changes(leading_lines=node.leading_lines), f"{MARK} {text}")]


def _forward_copy(
    roles: Roles, body: list[Statement], asts: list[ast.stmt | None], stmt: cst.CSTNode, local: set[str]
) -> list[Statement]:
    """Copies of the forward statements behind this backward() (they also stay where they are)."""
    at = next((i for i, s in enumerate(body) if s is stmt), None)
    if at is None or any(a is None for a in asts):
        return []
    try:
        forward = forward_slice(roles, asts, at, local)  # type: ignore[arg-type]
    except NotConvertible:
        return []
    return [body[i].deep_clone().with_changes(leading_lines=[]) for i in forward]


def _step_skeleton(
    state: FileState, loss: str, weights: str | None, grads: str, reason: str, forward: list[Statement]
) -> list[Statement]:
    forward_fn = state.fresh_name("forward_fn")
    note = cst.EmptyLine(
        comment=cst.Comment(
            f"{MARK} "
            + _(
                "not converted — training step: {reason}. Skeleton: MindSpore differentiates a function "
                "(no {loss}.backward()): compute {loss} inside {forward_fn} from the model's inputs"
            ).format(reason=reason, loss=loss, forward_fn=forward_fn)
        )
    )
    template = (
        doc_template(SKELETON, SKELETON_DOC) if not forward else doc_template(SKELETON_FORWARD, SKELETON_FORWARD_DOC)
    )
    fn = gen.statement(
        template, state.generated, forward_fn=cst.Name(forward_fn), loss=cst.parse_expression(loss), body=forward
    )
    fn = fn.with_changes(leading_lines=[note])
    if weights is None:
        return [
            fn,
            gen.statement(comment_template(NO_WEIGHTS, NO_WEIGHTS_NOTE), state.generated, grads=cst.Name(grads)),
        ]
    value = state.fresh_name("loss_value")
    call = gen.statement(
        GRADS,
        state.generated,
        loss_value=cst.Name(value),
        grads=cst.Name(grads),
        forward_fn=cst.Name(forward_fn),
        weights=cst.parse_expression(weights),
    )
    return [fn, call]


def _zero_grads(roles: Roles, body: list[Statement]) -> list[Statement]:
    return [
        node
        for stmt in body
        for node in [stmt, *nested_statements(stmt)]
        if (a := roles.ast_of(node)) is not None and method_call(a, "zero_grad") is not None
    ]


def _zeroed(roles: Roles, body: list[Statement], holders: Holders) -> str | None:
    """The parameters a ``zero_grad()`` of the block clears (when no step is in sight)."""
    for node in _zero_grads(roles, body):
        c = method_call(roles.ast_of(node), "zero_grad")  # type: ignore[arg-type]
        return holders.of_receiver(ast.unparse(c.func.value)).weights  # type: ignore[union-attr]
    return None


def _steps(roles: Roles, body: list[Statement], holders: Holders) -> list[tuple[Statement, Holder]]:
    """``optimizer.step()`` statements of the block (branches included), with the optimizer's holder."""
    out = []
    for stmt in body:
        for node in [stmt, *nested_statements(stmt)]:
            a = roles.ast_of(node)
            c = method_call(a, "step") if a is not None else None
            if c is None or c.args or c.keywords:
                continue
            recv = ast.unparse(c.func.value)  # type: ignore[attr-defined]
            if recv in roles.optimizers or (roles.is_optimizer(recv) and recv not in roles.schedulers):
                out.append((node, holders.of_optimizer(recv)))
    return out
