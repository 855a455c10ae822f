"""The MindSpore code of a general training step, from a ``Flow`` (flow.py, backwards.py).

Each ``backward()`` gets its own ``forward_fn`` and ``grad_fn = mindspore.value_and_grad(...)`` over
the parameters whose gradient is used after it; each holder's gradient is a tuple that the code
keeps as torch keeps ``.grad``: ``zero_grad()`` → ``grads = None``, ``backward()`` → the gradient call
and ``accumulate_grads``, ``optimizer.step()`` → ``optimizer(grads)``, ``clip_grad_norm_`` → clip the
tuple, ``for p in model.parameters(): ... p.grad`` → ``for p, p_grad in zip(...)``.

PyNative runs it as written; the single fused step (emit.py) stays the form for plain loops.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from typing import Any

import libcst as cst

from ....i18n import N_, _
from ... import generated as gen
from ...changes import MARK
from ...cstutil import Statement, block, code
from ...generated import GeneratedRefs
from .amp import RenameCall
from .analysis import Roles, self_model
from .emit import (
    FORWARD_DOC,
    FORWARD_FN,
    TRAIN_MODE,
    TRAIN_MODE_NOTE,
    Emitted,
    amp_setup,
    clip_code,
    comment_template,
    doc_template,
    expr,
    unbound_guards,
)
from .errors import NotConvertible
from .flow import Backward, Event, Flow, Holder, writes
from .grad_reads import NAMED_READ_LOOP, GradOf
from .step_params import ParameterHoist

GRAD_FN = "{grad_fn} = mindspore.value_and_grad({forward_fn}, None, {weights})\n"
GRAD_FN_AUX = "{grad_fn} = mindspore.value_and_grad({forward_fn}, None, {weights}, has_aux=True)\n"
GRAD_CALL = "{values}, grads = {grad_call}\n"
ACCUMULATE = "{total} = torch2ms.runtime.accumulate_grads({total}, {part})\n"
RESET = "{total} = None  " + MARK + " {text}\n"
READ_LOOP = "zip({weights}, {grads})"
UNSCALE_GRADS = "{grads} = {scaler}.unscale({grads})\n"
FINITE_STEP = """{finite} = torch2ms.runtime.scaler_finite({scaler}, {grads})
if {finite}:
    {opt}({grads})
"""
ADJUST = "{scaler}.adjust({finite})\n"
INLINED = N_("the helper's gradient loop, here with the gradients MindSpore computed")
RECOMPUTED = N_(
    "runs its forward again: torch reused the first forward's graph "
    "(layers with BatchNorm statistics or dropout see one more forward)"
)
KEEP_STATISTICS = "with torch2ms.runtime.statistics_kept({cells}):\n    {call}\n"
KEPT_NOTE = N_(
    "the forward of {cells} runs again here (torch reused the first forward's graph): "
    "BatchNorm statistics are kept as the first forward left them, so they move once per step as in torch"
)


def _aux_values(aux: list[str]) -> list[cst.BaseExpression]:
    """What forward_fn returns next to its loss, as one tuple ``(a, b)`` (``(a,)`` for one): MindSpore's
    ``has_aux`` refuses a forward whose extra outputs are all Python values ("should be multi output, but
    got ..."): ``target_length`` alone, an ``int`` from ``len()``, a ``bool``, ``None``."""
    if not aux:
        return []
    return [
        cst.Tuple(
            [cst.Element(cst.Name(n), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for n in aux[:-1]]
            + [cst.Element(cst.Name(aux[-1]), comma=cst.Comma() if len(aux) == 1 else cst.MaybeSentinel.DEFAULT)]
        )
    ]


class GeneralWriter:
    """Writes one Flow (names are fresh in the file)."""

    def __init__(self, flow: Flow, roles: Roles, refs: GeneratedRefs, fresh: Callable[[str], str]) -> None:
        self.flow, self.roles, self.refs, self.fresh = flow, roles, refs, fresh
        self.out = Emitted(form=N_("one forward_fn per backward(), gradients kept as torch keeps .grad"))
        self.gap = 2 if flow.scope_ast is roles.tree else 1  # blank lines: two at module level
        self.amp_model = ""
        self.finite: dict[str, str] = {}  # GradScaler → the name of its all_finite flag
        self.unscaled: set[str] = set()  # holders unscale_()d before their step

    def write(self) -> Emitted:
        flow = self.flow
        for h in flow.holders.values():
            h.grads = self.fresh(_grads_name(h.key))
        setup: list[Statement] = [
            gen.statement(comment_template(TRAIN_MODE, TRAIN_MODE_NOTE), self.refs, model=expr(m)) for m in flow.train
        ]
        amp = flow.amp
        if amp is not None and amp.model and amp.dtype:
            self.amp_model = self.fresh(f"amp_{amp.model.split('.')[-1]}")
            setup.append(amp_setup(self.refs, amp, self.amp_model))
        setup += [_assign(h.grads, cst.Name("None")) for h in flow.holders.values()]
        setup += self._distinct_cells()
        seen: set[int] = set()
        for back in flow.backwards:
            setup += self._backward(back, seen)
            seen |= set(back.forward)
        for event in flow.events:
            self._event(event)
        if amp is not None:  # each autocast block: what is left of it, unindented
            for w in amp.blocks:
                left = [n for c in block(w.body) for n in self.out.replace.get(id(c), [c])]
                if left:
                    left[0] = left[0].with_changes(leading_lines=[*w.leading_lines, *left[0].leading_lines])
                self.out.replace[id(w)] = left
        for node in {id(e.node): e.node for e in flow.events if e.kind == "zero"}.values():
            resets = [e for e in flow.events if e.node is node]
            if len(resets) > 1:  # model.zero_grad() clearing several holders
                self._event(resets[0])
                first = self.out.replace[id(node)]
                more: list[Statement] = [
                    _assign(e.holder.grads, cst.Name("None")) for e in resets[1:] if e.holder is not None
                ]
                self.out.replace[id(node)] = first + more
        for back in flow.backwards:
            # (a parameter the block binds between the forward's first statement and the call is bound)
            later = set().union(
                *(writes(flow.asts[i]) for i in range(back.forward[0], back.at) if i not in back.forward)
            )
            params = [p for p in back.params if p not in later]
            setup += unbound_guards(self.roles, self.refs, flow.body[back.forward[0]], params)
        self.out.setup = [gen.blank_lines(setup[0], 1), *setup[1:]]
        return self.out

    def _distinct_cells(self) -> list[Statement]:
        """Several models trained by the step (a GAN): GRAPH_MODE refuses their Parameters' shared names."""
        models = list(dict.fromkeys(h.module for h in self.flow.holders.values() if h.module and "(" not in h.module))
        models = [m for m in models if not any(m.startswith(o + ".") for o in models)]  # (model.head is model's)
        if len(models) < 2:
            return []
        owners = ", ".join(f"({m!r}, {m})" for m in models)
        return [gen.statement(f"torch2ms.runtime.distinct_cells({owners})\n", self.refs)]

    def _backward(self, back: Backward, seen: set[int]) -> list[Statement]:
        flow = self.flow
        forward_fn, grad_fn = self.fresh("forward_fn"), self.fresh("grad_fn")
        hoist = ParameterHoist(self.refs, self.fresh)  # model.parameters() in the loss: step_params.py
        body = [hoist.apply(self._amp_call(flow.body[i])) for i in back.forward]
        body[0] = _without_blank_lines(body[0])
        fn = gen.statement(
            doc_template(FORWARD_FN, FORWARD_DOC),
            self.refs,
            forward_fn=cst.Name(forward_fn),
            params=gen.parameters(back.params),
            body=body,
            ret=gen.tuple_of([hoist.apply(r) for r in self._returns(back)]),
        )
        if seen & set(back.forward):
            fn = fn.with_changes(
                leading_lines=[*fn.leading_lines, cst.EmptyLine(comment=cst.Comment(f"{MARK} " + _(RECOMPUTED)))]
            )
        grad = gen.statement(
            GRAD_FN_AUX if back.aux or back.scaler else GRAD_FN,
            self.refs,
            grad_fn=cst.Name(grad_fn),
            forward_fn=cst.Name(forward_fn),
            weights=expr(_weights(back)),
        )
        for i in back.forward:
            self.out.replace[id(flow.body[i])] = []
        self._call(back, grad_fn, _rerun_cells([flow.asts[i] for i in back.forward if i in seen], self.roles))
        fwd = [flow.asts[i] for i in back.forward]
        model = self_model(self.roles, fwd)  # a Trainer's self.model: a Module in its whole class
        self.out.modules += [("", forward_fn, n) for n in [*_callees(self.roles, fwd), *([model] if model else [])]]
        return [*hoist.binds(), gen.blank_lines(fn, self.gap), gen.blank_lines(grad, self.gap)]

    def _amp_call(self, stmt: Statement) -> Statement:
        """Inside an autocast block, the model runs as its O1 mixed-precision version."""
        amp = self.flow.amp
        if self.amp_model and amp is not None and amp.model and id(stmt) in amp.inside:
            return stmt.visit(RenameCall(amp.model, self.amp_model))  # type: ignore[return-value]
        return stmt

    def _returns(self, back: Backward) -> list[cst.BaseExpression]:
        """forward_fn's outputs: the loss (scaled by the GradScaler: the loss stays torch's value, next),
        then what the code around reads."""
        loss = expr(ast.unparse(back.loss))
        scaled = [expr(f"{back.scaler}.scale({ast.unparse(back.loss)})")] if back.scaler else []
        return [*scaled, loss, *_aux_values(back.aux)]

    def _call(self, back: Backward, grad_fn: str, rerun: list[str]) -> None:
        flow = self.flow
        loss = ast.unparse(back.loss)
        names = [expr(self.fresh("scaled_loss"))] if back.scaler else []
        values = gen.tuple_of([*names, expr(loss), *_aux_values(back.aux)], parens=bool(back.aux or back.scaler))
        call = gen.statement(
            GRAD_CALL,
            self.refs,
            values=values,
            grad_call=gen.arguments(cst.Name(grad_fn), [cst.Name(p) for p in back.params]),
        )
        call = _comment(call, f"{MARK} " + _("forward + {loss}.backward()").format(loss=loss))
        if rerun:  # a forward torch ran once: the cells it calls keep the first run's BatchNorm statistics
            call = gen.statement(KEEP_STATISTICS, self.refs, cells=expr(f"[{', '.join(rerun)}]"), call=[call])
            call = _comment(call, f"{MARK} " + _(KEPT_NOTE).format(cells=", ".join(rerun)))
        stmts: list[Statement] = [call]
        offset = "0"
        for h in back.holders:
            part = "grads" if len(back.holders) == 1 else f"grads[{offset}:{offset} + len({h.weights})]"
            offset = f"{offset} + len({h.weights})" if offset != "0" else f"len({h.weights})"
            stmts.append(gen.statement(ACCUMULATE, self.refs, total=cst.Name(h.grads), part=expr(part)))
        original = flow.body[back.at]
        stmts[0] = stmts[0].with_changes(leading_lines=original.leading_lines)
        self.out.replace[id(original)] = stmts + [flow.body[i] for i in back.after]
        for i in back.after:
            self.out.replace.setdefault(id(flow.body[i]), [])

    def _event(self, event: Event) -> None:
        node, h = event.node, event.holder
        text = code(node.with_changes(leading_lines=[])).strip().splitlines()[0]
        new: list[Statement]
        if event.kind in ("unscale", "scaler_step", "update"):
            new = self._scaler_event(event, text)
        elif event.kind == "grad":
            pairs = [(h.weights, h.grads) for h in self.flow.holders.values()]
            if not pairs:
                raise NotConvertible(_("the loop reads .grad but no optimizer step or clipping uses the gradients"))
            new = [node.visit(GradOf(self.refs, pairs, expr))]  # type: ignore[list-item]
        elif h is None:
            return
        elif event.kind == "zero":
            new = [_comment(_assign(h.grads, cst.Name("None")), f"{MARK} {text}")]
        elif event.kind == "step":
            opt = event.opt or text.rsplit(".step(", 1)[0]
            call = cst.SimpleStatementLine([cst.Expr(gen.arguments(expr(opt), [cst.Name(h.grads)]))])
            new = [_comment(call, f"{MARK} {text}")]
            if event.opt and id(node) in self.out.replace:  # a loop over several optimizers: one step each
                self.out.replace[id(node)] += new
                return
        elif event.kind == "clip":
            a = self.roles.ast_of(node)
            assert a is not None
            new = clip_code(self.roles, self.refs, a, h.grads, node)[0]
        elif event.inline is not None:  # helper(model, lr): the helper's loop, written here (helper_updates.py)
            loop = cst.parse_statement(ast.unparse(event.inline))
            new = self._read_loop(loop, h)  # type: ignore[arg-type]
            new[0] = _comment(new[0], f"{MARK} {text}: " + _(INLINED))
        else:
            new = self._read_loop(node, h)
            new[0] = new[0].with_changes(leading_lines=[])
        new[0] = new[0].with_changes(leading_lines=[*node.leading_lines, *new[0].leading_lines])
        self.out.replace[id(node)] = new

    def _scaler_event(self, event: Event, text: str) -> list[Statement]:
        """GradScaler: ``unscale_`` divides the gradient tuple by the scale; ``step`` (unscaling first if
        ``unscale_`` did not) applies it only when every gradient is finite; ``update`` adjusts the scale."""
        scaler, h = event.scaler, event.holder
        finite = self.finite.setdefault(scaler, self.fresh("grads_finite"))
        if event.kind == "update":
            return [
                _comment(
                    gen.statement(ADJUST, self.refs, scaler=expr(scaler), finite=cst.Name(finite)), f"{MARK} {text}"
                )
            ]
        assert h is not None
        unscale = gen.statement(UNSCALE_GRADS, self.refs, grads=cst.Name(h.grads), scaler=expr(scaler))
        if event.kind == "unscale":
            self.unscaled.add(h.key)
            return [_comment(unscale, f"{MARK} {text}")]
        opt = text[text.index("(") + 1 : text.rindex(")")].strip()
        step = gen.statements(
            FINITE_STEP, self.refs, scaler=expr(scaler), grads=cst.Name(h.grads), finite=cst.Name(finite), opt=expr(opt)
        )
        step[-1] = _comment(step[-1], f"{MARK} " + _("{step}: skipped when a gradient is inf/nan").format(step=text))
        return ([] if h.key in self.unscaled else [unscale]) + step

    def _read_loop(self, node: Statement, h: Holder) -> list[Statement]:
        """``for p in model.parameters(): ... p.grad`` → ``for p, p_grad in zip(<the weights>, grads)``;
        ``for name, p in model.named_parameters()`` → ``for (name, p), p_grad in zip(<names, weights>, grads)``.
        A manual update of the parameter itself (``p -= lr * p.grad``, ``p.add_(...)``) sets its data (a
        rebound name would update nothing); ``p.grad = None`` / ``p.grad.zero_()`` in the loop clear the
        gradient tuple after it."""
        assert isinstance(node, cst.For)
        template, target = READ_LOOP, node.target
        if isinstance(target, cst.Tuple):  # named_parameters()
            template = NAMED_READ_LOOP
            target = target.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            inner = target.elements[1].value
        else:
            inner = target
        assert isinstance(inner, cst.Name)
        name = inner.value
        grad = self.fresh(f"{name}_grad")
        it = gen.expression(template, self.refs, weights=expr(h.weights), grads=cst.Name(h.grads))
        clears = _GradClears(name)
        body: Any = node.body.visit(clears)
        reset = _comment(_assign(h.grads, cst.Name("None")), f"{MARK} {clears.found[0]}") if clears.found else None
        if reset is not None and _does_nothing(body):  # only cleared p.grad: the tuple's reset is the loop
            return [reset]
        body = body.visit(_GradToName(name, grad)).visit(_ParamUpdates(name, self.refs))
        pair = cst.Tuple([cst.Element(target), cst.Element(cst.Name(grad))], lpar=[], rpar=[])
        loop = node.with_changes(target=pair, iter=it, body=body)
        return [loop] if reset is None else [loop, reset]


def _does_nothing(body: cst.BaseSuite) -> bool:
    """A loop body left with ``pass`` alone, or ``if p.grad is not None: pass`` (torch's own zero_grad
    spelling) once its gradient clears are gone."""
    stmts = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for s in stmts:
        if isinstance(s, cst.SimpleStatementLine | cst.SimpleStatementSuite):
            if not all(isinstance(b, cst.Pass) for b in s.body):
                return False
        elif not (isinstance(s, cst.If) and s.orelse is None and _does_nothing(s.body)):
            return False
    return True


class _GradToName(cst.CSTTransformer):
    def __init__(self, param: str, grad: str) -> None:
        super().__init__()
        self.param, self.grad = param, grad

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if updated.attr.value == "grad" and isinstance(updated.value, cst.Name) and updated.value.value == self.param:
            return cst.Name(self.grad)
        return updated


class _GradClears(cst.CSTTransformer):
    """Drops ``p.grad = None``, ``p.grad.zero_()``, ``p.grad.data.zero_()`` from a read loop's body (the
    writer clears the whole gradient tuple after the loop); ``found`` keeps their text."""

    def __init__(self, param: str) -> None:
        super().__init__()
        self.param = param
        self.found: list[str] = []

    def _is_grad(self, node: cst.BaseExpression) -> bool:
        while isinstance(node, cst.Attribute) and node.attr.value == "data":
            node = node.value
        return (
            isinstance(node, cst.Attribute)
            and node.attr.value == "grad"
            and isinstance(node.value, cst.Name)
            and node.value.value == self.param
        )

    def _clears(self, stmt: cst.BaseSmallStatement) -> bool:
        if isinstance(stmt, cst.Assign):
            return (
                len(stmt.targets) == 1 and self._is_grad(stmt.targets[0].target) and isinstance(stmt.value, cst.Name)
            ) and stmt.value.value == "None"
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) and not stmt.value.args:
            func = stmt.value.func
            return isinstance(func, cst.Attribute) and func.attr.value == "zero_" and self._is_grad(func.value)
        return False

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        kept = [b for b in updated.body if not self._clears(b)]
        if len(kept) == len(updated.body):
            return updated
        self.found.append(code(cst.SimpleStatementLine(body=[b for b in updated.body if self._clears(b)])).strip())
        return updated.with_changes(body=kept) if kept else cst.RemoveFromParent()

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        if updated.body:
            return updated
        return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])


INPLACE_UPDATES = {"add_": "add", "sub_": "sub", "mul_": "mul", "div_": "div"}


class _ParamUpdates(cst.CSTTransformer):
    """``p -= v`` / ``p.data -= v`` / ``p.data = v`` / ``p.add_(v)`` on the loop's parameter →
    ``assign_data(p, p - v)`` / ``assign_data(p, v)`` / ``assign_data(p, p.add(v))``: in MindSpore
    ``p -= v`` makes a new tensor named p and the in-place rewrite (``p = p.add(v)``) does too, and
    ``set_data`` / ``p.data = v`` change the Parameter where a compiled value_and_grad does not see it
    (runtime/training.py: ``ops.assign``)."""

    def __init__(self, param: str, refs: GeneratedRefs) -> None:
        super().__init__()
        self.param, self.refs = param, refs

    def _set(self, value: cst.BaseExpression) -> cst.Expr:
        call = gen.expression("torch2ms.runtime.assign_data({p}, {v})", self.refs, p=cst.Name(self.param), v=value)
        return cst.Expr(call)

    def _mine(self, target: cst.BaseExpression) -> bool:
        """``p`` or ``p.data``."""
        if isinstance(target, cst.Attribute) and target.attr.value == "data":
            target = target.value
        return isinstance(target, cst.Name) and target.value == self.param

    def leave_AugAssign(self, original: cst.AugAssign, updated: cst.AugAssign) -> cst.BaseSmallStatement:
        if not self._mine(updated.target):
            return updated
        op = _BINARY.get(type(updated.operator))
        if op is None:
            return updated
        value = cst.BinaryOperation(cst.Name(self.param), op(), _parens(updated.value))
        return self._set(value)

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.BaseSmallStatement:
        target = updated.targets[0].target if len(updated.targets) == 1 else None
        if target is None or not isinstance(target, cst.Attribute) or not self._mine(target):
            return updated  # ``p.data = v`` only: ``p = v`` rebinds the name in torch too
        return self._set(updated.value)

    def leave_Expr(self, original: cst.Expr, updated: cst.Expr) -> cst.BaseSmallStatement:
        call = updated.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return updated
        func = call.func
        if not (isinstance(func.value, cst.Name) and func.value.value == self.param):
            return updated
        method = INPLACE_UPDATES.get(func.attr.value)
        if method is None:
            return updated
        return self._set(call.with_changes(func=func.with_changes(attr=cst.Name(method))))


_BINARY: dict[type, type] = {
    cst.SubtractAssign: cst.Subtract,
    cst.AddAssign: cst.Add,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
}


def _parens(value: cst.BaseExpression) -> cst.BaseExpression:
    """A value that binds weaker than the operator it lands beside keeps its meaning in parentheses."""
    if isinstance(value, cst.BinaryOperation | cst.BooleanOperation | cst.IfExp | cst.UnaryOperation):
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return value


def _weights(back: Backward) -> str:
    """The parameters differentiated: one holder's, or several joined (the tuple is split after)."""
    if len(back.holders) == 1:
        return back.holders[0].weights
    return "[" + ", ".join(f"*{h.weights}" for h in back.holders) + "]"


def _grads_name(key: str) -> str:
    """The gradient tuple's name for a holder: ``netD`` → grads_netD, ``self.G`` → grads_G, a module held in
    a container (``models['net']``, ``nets[0]``) → grads_models_net / grads_nets_0."""
    last = key.split(".")[-1]
    word = "_".join(w for w in "".join(c if c.isalnum() or c == "_" else " " for c in last).split() if w)
    return f"grads_{word}" if word else "grads"


def _callees(roles: Roles, asts: list[ast.stmt]) -> list[str]:
    return list(
        dict.fromkeys(
            n.func.id
            for a in asts
            for n in ast.walk(a)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not roles.resolve(n.func)
        )
    )


def _rerun_cells(asts: list[ast.stmt], roles: Roles) -> list[str]:
    """What the statements a forward_fn runs again call by name (``netG``, ``self.G``): the cells among
    them keep their BatchNorm statistics across that second run (the runtime skips what is no Cell).
    Names the statements themselves assign are left out: outside the forward_fn they are not its values."""
    stored = {n.split(".")[0] for a in asts for n in writes(a)}
    found: dict[str, None] = {}
    for a in asts:
        for n in ast.walk(a):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute) and not roles.resolve(n.func):
                text = ast.unparse(n.func)
                root: ast.expr = n.func
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id not in stored and root.id not in vars(builtins):
                    found.setdefault(text, None)
    return list(found)


def _without_blank_lines(stmt: Statement) -> Statement:
    """The first statement of a function body: its comments stay, blank lines above them go."""
    lines = list(stmt.leading_lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    return stmt.with_changes(leading_lines=lines)


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)])


def _comment(stmt: Statement, text: str) -> Statement:
    return gen.with_comment(stmt, text)
