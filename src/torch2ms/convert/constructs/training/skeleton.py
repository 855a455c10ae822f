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
from .flow import Holder, Holders, nested_statements, reads, writes

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
GRADS_AUX = "{loss_value}, {grads} = mindspore.value_and_grad({forward_fn}, None, {weights}, has_aux=True)()\n"
SKELETON_FORWARD_DOC = N_(
    "The forward pass again (a copy of the statements above): check it computes the loss from the model."
)
SKELETON_MOVED_DOC = N_(
    "The forward pass, moved here from the loop so that it runs once per step: check it computes the loss."
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
    used: dict[int, int] = {}  # a forward statement behind several backward() stays where it is
    for stmt in stmts:
        for i in _forward_at(roles, body, asts, stmt, local)[1]:
            used[i] = used.get(i, 0) + 1
    shared = {i for i, k in used.items() if k > 1}
    for stmt in stmts:
        line = state.index.line_of(stmt)
        a = roles.ast_of(stmt)
        call = method_call(a, "backward") if a is not None else None
        loss = ast.unparse(call.func.value) if call is not None else "loss"  # type: ignore[attr-defined]
        weights = steps[0][1].weights if steps else _zeroed(roles, body, holders)
        at, idx = _forward_at(roles, body, asts, stmt, local)
        forward = [body[i].deep_clone().with_changes(leading_lines=[]) for i in idx]
        bound = _movable(asts, idx, at, shared) if weights is not None and at is not None else None
        for i in idx if bound is not None else []:
            replace[id(body[i])] = []  # the forward runs once, in forward_fn (BatchNorm statistics, RNN state)
        new = _step_skeleton(state, loss, weights, grads, reason, forward, bound)
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


def _forward_at(
    roles: Roles, body: list[Statement], asts: list[ast.stmt | None], stmt: cst.CSTNode, local: set[str]
) -> tuple[int | None, list[int]]:
    """(index of this backward() in the block, indices of the forward statements behind it)."""
    at = next((i for i, s in enumerate(body) if s is stmt), None)
    if at is None or any(a is None for a in asts):
        return at, []
    try:
        return at, forward_slice(roles, asts, at, local)  # type: ignore[arg-type]
    except NotConvertible:
        return at, []


def _movable(asts: list[ast.stmt | None], idx: list[int], at: int, shared: set[int]) -> list[str] | None:
    """The plain names the forward statements bind, when they can move into forward_fn (which then returns
    them): none behind another backward() too, none of their names read by a statement between them and
    backward(); None when they must stay (and run twice)."""
    if not idx or shared & set(idx) or max(idx) >= at:
        return None
    bound = sorted({n for i in idx for n in writes(asts[i]) if "." not in n and n != "_"})  # type: ignore[arg-type]
    between = [asts[i] for i in range(min(idx), at) if i not in idx]
    if any(reads(a) & set(bound) for a in between if a is not None):  # type: ignore[arg-type]
        return None
    return bound


def _step_skeleton(
    state: FileState,
    loss: str,
    weights: str | None,
    grads: str,
    reason: str,
    forward: list[Statement],
    bound: list[str] | None = None,
) -> list[Statement]:
    """forward_fn and its gradient call; `bound`: the forward moved into forward_fn, which returns the loss
    and these names (value_and_grad's aux) to the loop."""
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
    doc = SKELETON_FORWARD_DOC if bound is None else SKELETON_MOVED_DOC
    template = doc_template(SKELETON, SKELETON_DOC) if not forward else doc_template(SKELETON_FORWARD, doc)
    aux = [n for n in bound or [] if n != loss]
    returned = cst.parse_expression(", ".join([loss, *aux]))
    fn = gen.statement(template, state.generated, forward_fn=cst.Name(forward_fn), loss=returned, body=forward)
    fn = fn.with_changes(leading_lines=[note])
    if weights is None:
        return [
            fn,
            gen.statement(comment_template(NO_WEIGHTS, NO_WEIGHTS_NOTE), state.generated, grads=cst.Name(grads)),
        ]
    value = state.fresh_name("loss_value") if bound is None or loss not in bound else loss
    got = cst.parse_expression(f"({', '.join([value, *aux])})") if aux else cst.Name(value)
    call = gen.statement(
        GRADS_AUX if aux else GRADS,
        state.generated,
        loss_value=got,
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
