"""The MindSpore code of one training step, from a ``StepPlan`` (analysis.py).

Two shapes (bench/train_step_bench.py measured them):

- fused (``zero_grad`` every iteration, ``step`` right after ``backward``, clipping between): a
  ``TrainStep`` Cell whose ``@mindspore.jit`` ``construct`` is forward + gradients + update, one
  compiled graph per step in PyNative and GRAPH_MODE alike;
- general (gradient accumulation, ``step`` under an ``if``): the gradients torch keeps in ``.grad``
  become an explicit tuple: ``zero_grad`` → ``None``, ``backward`` → add, ``step`` → ``optimizer(sum)``.

Written from libcst templates (generated.py): full ``mindspore.`` names, the user's statements and
expressions inserted as nodes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from ....i18n import N_, _
from ... import generated as gen
from ...changes import MARK
from ...cstutil import Statement, block, code
from ...generated import GeneratedRefs
from .amp import Amp, RenameCall
from .analysis import CLIP_VALUE, Roles, StepPlan, forward_modules, method_call, sets_mode, trained_module
from .bindings import maybe_unbound
from .host_code import host_code, host_draws
from .step_params import ParameterHoist

FORWARD_FN = """def {forward_fn}({params}):
    {doc}
    {body}
    return {ret}
"""
FORWARD_DOC = N_("Forward pass and loss of the torch training loop (value_and_grad differentiates it).")
GRAD_FN = "{grad_fn} = mindspore.value_and_grad({forward_fn}, None, {opt}.parameters)\n"
GRAD_FN_AUX = "{grad_fn} = mindspore.value_and_grad({forward_fn}, None, {opt}.parameters, has_aux=True)\n"
REDUCER = (
    "{note}\n"
    "{reducer} = mindspore.nn.DistributedGradReducer({opt}.parameters, mean=True) "
    "if torch2ms.runtime.averaged({opt}.parameters) else mindspore.nn.Identity()\n"
)
REDUCER_NOTE = N_("DDP averaged the gradients across workers: only for the models torch wrapped, and under msrun")
REDUCE = "grads = {reducer}(grads)\n"
AMP_CAST = {
    "float16": 'mindspore.amp.auto_mixed_precision({model}, "O1", dtype=mindspore.float16)',
    "bfloat16": 'mindspore.amp.auto_mixed_precision({model}, "O1", dtype=mindspore.bfloat16)',
}
# measured: no bfloat16 CPU kernels (AdaptiveAvgPool2D, ...) in MindSpore 2.10
AMP_CPU_FALLBACK = '{model} if mindspore.get_context("device_target") == "CPU" else {cast}'
TRAIN_MODE = "{model}.set_train(True)  {note}\n"
TRAIN_MODE_NOTE = N_("a torch module starts in training mode, a MindSpore cell does not")
TRAIN_STEP_CELL = """class {cls}(mindspore.nn.Cell):
    {doc}

    {jit_comment}
    @mindspore.jit
    def construct({params}):
        {got}, grads = {grad_call}
        {reduce}
        {clip}
        {update}
        return {returns}
"""
JIT_COMMENT = N_("One compiled graph per step in PyNative too (MS_JIT=0 runs it op by op for debugging).")
EAGER_COMMENT = N_(
    "Not compiled (no @mindspore.jit): the step reaches host code ({what}, line {line}) that a graph cannot run."
)
HOST_COMMENT = N_(
    "Runs uncompiled: the step draws with {draws} (host code: a compiled graph cannot call it each step)."
)
SKIPS_UNREAD = "torch2ms.runtime.StepSkippingUnread"
SKIPS_UNREAD_COMMENT = N_(
    "A parameter this forward leaves out gets no gradient in torch and its optimizer skips it: so does this step."
)
UNSCALE = """{loss} = {scaler}.unscale({loss})
grads = {scaler}.unscale(grads)
{finite} = torch2ms.runtime.scaler_finite({scaler}, grads)
"""
SCALED_UPDATE = """if {finite}:
    {opt}(grads)
{scaler}.adjust({finite})
"""
UNBOUND_GUARD = "{name} = {name} if {key} in locals() else None  {note}\n"
UNBOUND_NOTE = N_("torch binds it on some paths only; forward_fn takes it as an argument")
GRADS_SUM = "{sum} = None  {note}\n"
GRADS_SUM_NOTE = N_("gradients since the last zero_grad() (torch keeps them in .grad)")
ACCUMULATE = """{values}, grads = {grad_call}  {note}
{reduce}
{sum} = grads if {sum} is None else tuple(s + g for s, g in zip({sum}, grads))
"""
ACCUMULATE_NOTE = N_("forward + loss.backward()")
CLIP_TOTAL = (
    "{total} = mindspore.ops.vector_norm(mindspore.ops.stack("
    "[mindspore.ops.vector_norm(g, {p}) for g in {grads}]), {p})\n"
)
CLIP_NORM = "{grads} = mindspore.ops.clip_by_norm({grads}, {max_norm})\n"
CLIP_NORM_TYPE = "{grads} = mindspore.ops.clip_by_norm({grads}, {max_norm}, norm_type={p})\n"
CLIP_VALUE_T = "{grads} = mindspore.ops.clip_by_value({grads}, -({v}), {v})\n"


def expr(src: str) -> cst.BaseExpression:
    """A user expression the analysis holds as text (``ast.unparse``), as a node."""
    return cst.parse_expression(src)


@dataclass
class Emitted:
    """What one training step becomes: statements replaced, statements put before the loop."""

    replace: dict[int, list[Statement]] = field(default_factory=dict)  # id(statement) → new ones
    setup: list[Statement] = field(default_factory=list)  # before the outer loop
    form: str = ""
    modules: list[tuple[str, str, str]] = field(default_factory=list)  # (class, function, name) called as a model
    eager: tuple[str, int] | None = None  # the host code that keeps the step uncompiled (class 10)
    draws: list[str] = field(default_factory=list)  # the host random draws that keep it uncompiled


class StepWriter:
    """Writes one StepPlan (names are fresh in the file; written statements derive from their origin)."""

    def __init__(self, plan: StepPlan, roles: Roles, refs: GeneratedRefs, fresh: Callable[[str], str]) -> None:
        self.plan, self.roles, self.refs, self.fresh = plan, roles, refs, fresh
        self.gap = 2 if plan.scope_node is None else 1  # blank lines: two at module level, one inside a def
        self.out = Emitted()

    def write(self, distributed: bool) -> Emitted:
        plan, out = self.plan, self.out
        forward_fn, grad_fn = self.fresh("forward_fn"), self.fresh("grad_fn")
        amp = plan.amp
        amp_model = self.fresh(f"amp_{amp.model.split('.')[-1]}") if amp and amp.model and amp.dtype else None
        setup = self._forward_fn(forward_fn, grad_fn, amp_model)
        reducer = None
        if distributed:  # DDP all-reduced (averaged) the gradients inside backward()
            reducer = self.fresh("grad_reducer")
            setup += gen.statements(
                comment_template(REDUCER, REDUCER_NOTE), self.refs, reducer=cst.Name(reducer), opt=expr(plan.opt)
            )
        if amp_model is not None and amp is not None:
            setup = [self._amp_setup(amp, amp_model), gen.blank_lines(setup[0], self.gap), *setup[1:]]
        if not sets_mode(plan.scope_ast, min(plan.asts[i].lineno for i in plan.forward)):
            fwd = [plan.asts[i] for i in plan.forward]
            model = trained_module(self.roles, plan.opt, plan.scope_ast, fwd)
            models = list(dict.fromkeys([model, *forward_modules(self.roles, fwd)] if model else []))
            if models:
                modes = [
                    gen.statement(comment_template(TRAIN_MODE, TRAIN_MODE_NOTE), self.refs, model=expr(m))
                    for m in models
                ]
                setup = [*modes, gen.blank_lines(setup[0], self.gap), *setup[1:]]
        out.modules += self._called_modules(forward_fn)
        for i in [*plan.forward, *plan.after]:
            out.replace[id(plan.body[i])] = []
        reduce = gen.statements(REDUCE, self.refs, reducer=cst.Name(reducer)) if reducer else []
        if plan.fused:
            call = self._fused(setup, grad_fn, reduce)
        else:
            call = self._general(setup, grad_fn, reduce)
        backward = plan.body[plan.backward_at]
        call[0] = call[0].with_changes(leading_lines=backward.leading_lines)
        out.replace[id(backward)] = call + [plan.body[i] for i in plan.after]
        if amp:  # each autocast block: what is left of it, unindented
            for w in amp.blocks:
                left = [n for c in block(w.body) for n in out.replace.get(id(c), [c])]
                if left:
                    left[0] = left[0].with_changes(leading_lines=[*w.leading_lines, *left[0].leading_lines])
                out.replace[id(w)] = left
        setup += unbound_guards(self.roles, self.refs, plan.body[plan.forward[0]], plan.params)
        out.setup = _flush_blank_lines(setup)
        return out

    # ---- pieces --------------------------------------------------------------------------------

    def _called_modules(self, forward_fn: str) -> list[tuple[str, str, str]]:
        """(class, function, name) the step shows to hold a Module: names the forward calls, here and in
        forward_fn, and the ``self.<attr>`` it trains (a Trainer's ``self.model``, whose ``train()`` /
        ``eval()`` are then a Cell's ``set_train`` although the class never calls ``self.model.parameters()``)."""
        plan = self.plan
        cls, fn = plan.scope_names
        fwd = [plan.asts[i] for i in plan.forward]
        found = []
        for a in fwd:
            for n in ast.walk(a):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not self.roles.resolve(n.func):
                    found += [(cls, fn, n.func.id), (cls, forward_fn, n.func.id)]
        model = trained_module(self.roles, plan.opt, plan.scope_ast, fwd)
        if cls and model and model.startswith("self."):
            found.append((cls, fn, model))
        return found

    def _forward_fn(self, forward_fn: str, grad_fn: str, amp_model: str | None) -> list[Statement]:
        plan = self.plan
        amp = plan.amp
        body = []
        for i in plan.forward:
            stmt = plan.body[i]
            if amp_model and amp and amp.model and id(stmt) in amp.inside:
                stmt = stmt.visit(RenameCall(amp.model, amp_model))  # type: ignore[assignment]
            body.append(stmt)
        loss = expr(f"{plan.scaler}.scale({plan.loss_src})" if plan.scaler else plan.loss_src)
        # model.parameters() in the loss (an L2 penalty): a tuple bound before the loop, which a graph compiles
        hoist = ParameterHoist(self.refs, self.fresh)
        body, loss = [hoist.apply(stmt) for stmt in body], hoist.apply(loss)
        binds = hoist.binds()
        ret = gen.tuple_of([loss, *map(cst.Name, plan.aux)])
        params = gen.parameters(plan.params)
        fn = gen.statement(
            doc_template(FORWARD_FN, FORWARD_DOC),
            self.refs,
            forward_fn=cst.Name(forward_fn),
            params=params,
            body=body,
            ret=ret,
        )
        grad = gen.statement(
            GRAD_FN_AUX if plan.aux else GRAD_FN,
            self.refs,
            grad_fn=cst.Name(grad_fn),
            forward_fn=cst.Name(forward_fn),
            opt=expr(plan.opt),
        )
        return [*binds, gen.blank_lines(fn, self.gap) if binds else fn, gen.blank_lines(grad, self.gap)]

    def _host_draws(self) -> list[str]:
        """The host random streams the step reaches (host_code.host_draws)."""
        return host_draws(self.roles.tree, self.roles.imap, [self.plan.asts[i] for i in self.plan.forward])

    def _amp_setup(self, amp: Amp, name: str) -> Statement:
        return amp_setup(self.refs, amp, name)

    def _fused(self, setup: list[Statement], grad_fn: str, reduce: list[Statement]) -> list[Statement]:
        plan = self.plan
        cls_name, step_name = self.fresh("TrainStep"), self.fresh("train_step")
        clip: list[Statement] = []
        clip_out: list[str] = []
        for i in plan.clips:
            stmts, outs = self.clip_code(plan.asts[i], "grads", plan.body[i])
            clip += stmts
            clip_out += outs
        first = plan.loss_name or "loss"
        opt_name = plan.opt
        if plan.opt.split(".")[0] == "self":  # inside construct, self is the TrainStep Cell
            opt_name = self.fresh(plan.opt.split(".")[-1])
            setup.append(_assign(opt_name, expr(plan.opt)))
        update: list[Statement] = [_call_statement(opt_name, "grads")]
        if plan.scaler is not None:  # R13: torch's GradScaler step as MindSpore's documented loss-scaling step
            clip, update = self._scaled(setup, first, opt_name, clip)
        doc = cst.SimpleString(
            '"""'
            + _("Forward, loss.backward() and {opt}.step() of the torch loop as one Cell.").format(opt=plan.opt)
            + '"""'
        )
        got = gen.names_tuple([first, *plan.aux], parens=bool(plan.aux))
        cell = gen.statement(
            self._step_cell(),
            self.refs,
            cls=cst.Name(cls_name),
            doc=[cst.SimpleStatementLine([cst.Expr(doc)])],
            params=gen.parameters(["self", *plan.params]),
            got=got,
            grad_call=gen.arguments(cst.Name(grad_fn), [cst.Name(p) for p in plan.params]),
            reduce=reduce,
            clip=clip,
            update=update,
            returns=gen.names_tuple([first, *plan.aux, *clip_out]),
        )
        setup.append(gen.blank_lines(cell, self.gap))
        step_args = [cst.Arg(cst.Name(opt_name))] if self.out.draws else []  # StepSkippingUnread(optimizer)
        instance = _assign(step_name, cst.Call(cst.Name(cls_name), step_args))
        setup.append(gen.blank_lines(instance, self.gap))
        for i in [*plan.clips, plan.step_at, *plan.zero_at, *plan.scaler_calls]:
            self.out.replace[id(plan.body[i])] = []
        self.out.form = N_("one TrainStep Cell (value_and_grad + optimizer)")
        lhs = gen.names_tuple([plan.loss_name or "_", *plan.aux, *clip_out])
        call = cst.SimpleStatementLine(
            [
                cst.Assign(
                    [cst.AssignTarget(lhs)],
                    gen.arguments(cst.Name(step_name), [cst.Name(p) for p in plan.params]),
                )
            ]
        )
        return [gen.with_comment(call, f"{MARK} " + _("forward, loss.backward(), {opt}.step()").format(opt=plan.opt))]

    def _step_cell(self) -> str:
        """The TrainStep template: compiled, or (class 10) eager where the step reaches host code."""
        plan = self.plan
        found = host_code(self.roles.tree, self.roles.imap, [plan.asts[i] for i in plan.forward])
        if found is None:
            if draws := self._host_draws():  # host random streams: drawn per step only when uncompiled
                self.out.draws = draws
                uncompiled = (
                    "# " + _(HOST_COMMENT).format(draws=", ".join(draws)) + "\n    # " + _(SKIPS_UNREAD_COMMENT)
                )
                return TRAIN_STEP_CELL.replace("{jit_comment}\n    @mindspore.jit", uncompiled).replace(
                    "(mindspore.nn.Cell)", f"({SKIPS_UNREAD})", 1
                )
            return TRAIN_STEP_CELL.replace("{jit_comment}", "# " + _(JIT_COMMENT))  # a comment holds no node
        self.out.eager = found
        comment = f"{MARK} " + _(EAGER_COMMENT).format(what=found[0], line=found[1])
        return TRAIN_STEP_CELL.replace("{jit_comment}", "# " + comment.removeprefix("# ")).replace(
            "    @mindspore.jit\n", ""
        )

    def _scaled(
        self, setup: list[Statement], first: str, opt_name: str, clip: list[Statement]
    ) -> tuple[list[Statement], list[Statement]]:
        """GradScaler: unscale, check all_finite, step only when finite, adjust the scale."""
        plan = self.plan
        scaler = plan.scaler
        assert scaler is not None
        finite, scaler_name = self.fresh("grads_finite"), scaler
        if scaler.split(".")[0] == "self":
            scaler_name = self.fresh(scaler.split(".")[-1])
            setup.append(_assign(scaler_name, expr(scaler)))
        unscale = gen.statements(
            UNSCALE, self.refs, loss=cst.Name(first), scaler=expr(scaler_name), finite=cst.Name(finite)
        )
        unscale[1] = gen.with_comment(unscale[1], f"{MARK} {scaler}.unscale_({plan.opt})")
        update = gen.statements(
            SCALED_UPDATE, self.refs, finite=cst.Name(finite), opt=expr(opt_name), scaler=expr(scaler_name)
        )
        update[0] = gen.with_comment(
            update[0],
            f"{MARK} "
            + _("{scaler}.step({opt}) skips the step when a gradient is inf/nan").format(scaler=scaler, opt=plan.opt),
        )
        halve = _("{scaler}.update(): halve the scale on overflow").format(scaler=scaler)
        update[1] = gen.with_comment(update[1], f"{MARK} {halve}")
        return [*unscale, *clip], update

    def _general(self, setup: list[Statement], grad_fn: str, reduce: list[Statement]) -> list[Statement]:
        plan = self.plan
        grads_sum = self.fresh("grads_sum")
        setup.append(gen.statement(comment_template(GRADS_SUM, GRADS_SUM_NOTE), self.refs, sum=cst.Name(grads_sum)))
        values = gen.names_tuple([plan.loss_name or "_", *plan.aux], parens=bool(plan.aux))
        call = gen.statements(
            comment_template(ACCUMULATE, ACCUMULATE_NOTE),
            self.refs,
            values=values,
            grad_call=gen.arguments(cst.Name(grad_fn), [cst.Name(p) for p in plan.params]),
            reduce=reduce,
            sum=cst.Name(grads_sum),
        )
        for i in plan.zero_at:
            self.out.replace[id(plan.body[i])] = [_reset(grads_sum, plan.body[i])]
        for i in plan.clips:
            self.out.replace[id(plan.body[i])] = self.clip_code(plan.asts[i], grads_sum, plan.body[i])[0]
        self._general_step(plan.body[plan.step_at], grads_sum)
        self.out.form = N_("gradients accumulated in a tuple between zero_grad() calls")
        return call

    def _general_step(self, node: Statement, grads_sum: str) -> None:
        """``optimizer.step()`` (directly or inside the accumulation ``if``) → ``optimizer(grads_sum)``."""
        opt = self.plan.opt
        if isinstance(node, cst.If):
            for s in node.body.body:  # type: ignore[union-attr]
                sa = self.roles.ast_of(s)
                if sa is None:
                    continue
                c = method_call(sa, "step")
                if c is not None and ast.unparse(c.func.value) == opt:  # type: ignore[attr-defined]
                    self.out.replace[id(s)] = [_step(opt, grads_sum)]
                elif method_call(sa, "zero_grad") is not None:
                    self.out.replace[id(s)] = [_reset(grads_sum, s)]
                elif self.roles.clip(sa) is not None:
                    self.out.replace[id(s)] = self.clip_code(sa, grads_sum, s)[0]
            return
        self.out.replace[id(node)] = [_step(opt, grads_sum)]

    def clip_code(self, a: ast.stmt, grads: str, node: cst.CSTNode) -> tuple[list[Statement], list[str]]:
        return clip_code(self.roles, self.refs, a, grads, node)


def unbound_guards(roles: Roles, refs: GeneratedRefs, first: Statement, params: list[str]) -> list[Statement]:
    """``hidden = hidden if "hidden" in locals() else None`` for each of forward_fn's parameters that
    some path to the forward's first statement leaves unbound (the call reads it; torch did not)."""
    at = roles.index.origin_of(first)
    names = maybe_unbound(roles.tree, at, params) if at is not None else []
    guard = comment_template(UNBOUND_GUARD, UNBOUND_NOTE)
    return [gen.statement(guard, refs, name=cst.Name(n), key=cst.SimpleString(f'"{n}"')) for n in names]


def amp_setup(refs: GeneratedRefs, amp: Amp, name: str) -> Statement:
    """The model with MindSpore's O1 mixed precision (torch autocast's op lists: fp16 for conv/matmul-type
    ops, fp32 for reductions and losses). It shares the model's parameters."""
    assert amp.model is not None
    cast = gen.expression(AMP_CAST[amp.dtype], refs, model=expr(amp.model))
    note = f"{MARK} {amp.header} → " + _("O1 mixed precision")
    if amp.dtype == "bfloat16":
        cast = gen.expression(AMP_CPU_FALLBACK, refs, model=expr(amp.model), cast=cast)
        note += _("; float32 on CPU (MindSpore 2.10 has no bfloat16 CPU kernels for most layers)")
    elif amp.device != "cpu":
        cast = gen.expression(AMP_CPU_FALLBACK, refs, model=expr(amp.model), cast=cast)
        note += _("; dropped on CPU: float32 there, as torch's CUDA autocast does nothing on a CPU")
    if amp.enabled:
        if amp.dtype == "bfloat16" or amp.device != "cpu":
            cast = cast.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        cast = cst.IfExp(test=expr(amp.enabled), body=cast, orelse=expr(amp.model))
    stmt = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], cast)])
    return gen.with_comment(stmt, note)


def clip_code(
    roles: Roles, refs: GeneratedRefs, a: ast.stmt, grads: str, node: cst.CSTNode
) -> tuple[list[Statement], list[str]]:
    """clip_grad_norm_/clip_grad_value_ on the gradient tuple (torch's formula: max_norm/(total+1e-6))."""
    full = roles.clip(a)
    call = a.value  # type: ignore[attr-defined]
    names = (
        ["parameters", "clip_value", "foreach"]
        if full in CLIP_VALUE
        else ["parameters", "max_norm", "norm_type", "error_if_nonfinite", "foreach"]
    )
    got = {names[i]: ast.unparse(v) for i, v in enumerate(call.args)}
    got.update({k.arg: ast.unparse(k.value) for k in call.keywords if k.arg})
    orig = code(node).strip().splitlines()[-1]
    g = cst.Name(grads)
    if full in CLIP_VALUE:
        stmt = gen.statement(CLIP_VALUE_T, refs, grads=g, v=expr(got["clip_value"]))
        return [gen.with_comment(stmt, f"{MARK} {orig}")], []
    p = expr(got.get("norm_type", "2.0"))
    out: list[Statement] = []
    outs: list[str] = []
    if isinstance(a, ast.Assign):  # total = clip_grad_norm_(...): the norm before clipping
        target = ast.unparse(a.targets[0])
        out.append(gen.statement(CLIP_TOTAL, refs, total=expr(target), p=p, grads=g))
        outs.append(target)
    template = CLIP_NORM_TYPE if "norm_type" in got else CLIP_NORM
    stmt = gen.statement(template, refs, grads=g, max_norm=expr(got["max_norm"]), p=p)
    out.append(gen.with_comment(stmt, f"{MARK} {orig}"))
    return out, outs


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)])


def _call_statement(func: str, arg: str) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Expr(gen.arguments(expr(func), [cst.Name(arg)]))])


def _step(opt: str, grads_sum: str) -> Statement:
    return gen.with_comment(_call_statement(opt, grads_sum), f"{MARK} {opt}.step()")


def _reset(grads_sum: str, zero_grad: cst.CSTNode) -> Statement:
    """``grads_sum = None  # torch2ms: optimizer.zero_grad()`` (the statement without its comments above)."""
    text = code(zero_grad.with_changes(leading_lines=[])).strip()  # type: ignore[attr-defined]
    return gen.with_comment(_assign(grads_sum, cst.Name("None")), f"{MARK} {text}")


def _flush_blank_lines(stmts: list[Statement]) -> list[Statement]:
    """Blank lines of written statements carry no indentation (no trailing spaces in nested blocks)."""
    out = []
    if stmts:  # one blank line before the written block
        stmts[0] = gen.blank_lines(stmts[0], 1)
    for st in stmts:
        lines = [ln.with_changes(indent=False) if ln.comment is None else ln for ln in st.leading_lines]
        out.append(st.with_changes(leading_lines=lines))
    return out


def comment_template(template: str, note: str) -> str:
    """``template`` with its ``{note}`` placeholder made the mark ``note``, in the current language (a
    comment holds no node, so the text goes in before the template is parsed)."""
    return template.replace("{note}", f"{MARK} " + _(note))


def doc_template(template: str, doc: str) -> str:
    """``template`` with its ``{doc}`` placeholder made the docstring ``doc`` in the current language
    (generated code is the user's code: it speaks the language of the run)."""
    return template.replace("{doc}", '"""' + _(doc) + '"""')
