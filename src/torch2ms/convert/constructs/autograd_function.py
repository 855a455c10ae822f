"""``torch.autograd.Function`` subclasses → MindSpore Cells with ``bprop`` (R12).

torch keeps what the backward needs on a ``ctx`` object; MindSpore's custom gradient is a Cell's
``bprop(self, *inputs, out, dout)``, which gets the forward's inputs, its output and the output
gradient, and returns one gradient per input. So:

* ``forward(ctx, x, ...)`` → ``construct(self, x, ...)`` without the ``ctx`` bookkeeping;
* ``backward(ctx, g)`` → ``bprop(self, x, ..., out, g)``: what the forward put on ``ctx``
  (``save_for_backward``, ``ctx.k = v``) is recomputed from the inputs by replaying the forward's
  statements (``setup_context(ctx, inputs, output)`` for new-style Functions), then the backward
  body runs with ``ctx.saved_tensors`` / ``ctx.k`` read from those locals; ``needs_input_grad[i]``
  is True (MindSpore asks for every input's gradient); the result is always a tuple of one
  gradient per input (``None`` for a non-differentiable input is accepted as it is);
* ``F.apply(x, ...)`` → ``F()(x, ...)``: a Cell built where it is called works in PyNative and in
  GRAPH_MODE; omitted defaults are passed explicitly because GRAPH_MODE requires bprop to take
  exactly the arguments the call passed.

A gradient-checkpoint Function (guided-diffusion's ``CheckpointFunction``, torch's old reentrant
checkpoint: the forward stores the function it runs on ``ctx``, the backward runs it again and
differentiates it with ``torch.autograd.grad``/``backward``) computes exactly the gradients of a plain
call; its backward only trades compute for memory. It becomes a Cell whose ``construct`` is the
forward (``*args`` included) and has no ``bprop``: MindSpore differentiates the call itself, in both
modes (for the memory saving: ``mindspore.recompute`` / ``Cell.recompute()``).

A Function the rules cannot express (``ctx.mark_dirty``, higher-order backward, ``*args``) is
kept as torch code and marked in place, and so are its ``apply`` calls.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as cst_matchers

from ...i18n import N_, _
from .. import generated as gen
from ..changes import MARK
from ..construct import Cache, Construct
from ..context import RewriteContext
from ..cstutil import Statement, block
from ..cstutil import dotted as _dotted
from ..hooks import attribute, call, leave, skip

CONSTRUCT = Construct("autograd.Function", order=10)

FUNCTION = "torch.autograd.Function"
# ctx methods with no MindSpore meaning (MindSpore gives integer outputs no gradient and always
# passes a materialised dout): dropped.
_CTX_DROP = frozenset({"mark_non_differentiable", "set_materialize_grads"})
_CTX_SAVE = frozenset({"save_for_backward", "save_for_forward"})
_CTX_SAVED = frozenset({"saved_tensors", "saved_variables"})
# Backward code that needs a differentiable backward graph: MindSpore's bprop is not differentiated.
_HIGHER_ORDER = ("create_graph", "enable_grad", "autograd.grad", "set_grad_enabled")


@dataclass
class FunctionInfo:
    """What the ``ast`` pass knows about one Function subclass."""

    name: str
    params: list[str] = field(default_factory=list)  # forward's inputs, after ctx
    defaults: dict[str, str] = field(default_factory=dict)  # param → default source
    problem: str | None = None  # why it cannot be converted (None: convertible)
    recompute: bool = False  # a gradient checkpoint: the backward only recomputes the forward
    node: ast.ClassDef | None = None
    imported: bool = False  # defined in another project file: its signature is not known here


def infos(ctx: RewriteContext) -> dict[str, FunctionInfo]:
    """The file's Function subclasses by name; computed once per transformer, empty (and cheap)
    when no class in the file subclasses torch.autograd.Function."""
    cached = _INFOS.of(ctx)
    if cached:
        return cached[0]
    names = {c for c, bases in ctx.facts.torch_bases.items() if FUNCTION in bases}
    found: dict[str, FunctionInfo] = {}
    if names:
        for stmt in ctx.facts.plan:
            if isinstance(stmt.node, ast.ClassDef) and stmt.node.name in names:
                found[stmt.node.name] = analyse(stmt.node)
    cached.append(found)
    return found


_INFOS: Cache[list[dict[str, FunctionInfo]]] = Cache(list)  # the file's infos(), once computed


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def _is_static(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def analyse(cls: ast.ClassDef) -> FunctionInfo:
    """Signature of the forward and, when the rules cannot convert the class, the reason."""
    info = FunctionInfo(cls.name, node=cls)
    methods = _methods(cls)
    fwd, bwd = methods.get("forward"), methods.get("backward")
    if fwd is None or bwd is None:
        info.problem = _("needs both a forward and a backward staticmethod")
        return info
    if not (_is_static(fwd) and _is_static(bwd)):
        info.problem = _("forward/backward are not staticmethods")
        return info
    setup = methods.get("setup_context")
    if setup is None and is_recompute(fwd, bwd):
        info.recompute = True
        info.params = [a.arg for a in fwd.args.args[1:]]
        info.problem = _ctx_problem(fwd, {fwd.args.args[0].arg}, callables=frozenset(_stored_inputs(fwd)))
        return info
    fns = [fwd, bwd, *([setup] if setup else [])]
    varargs = next((fn for fn in fns if _has_varargs(fn)), None)
    if varargs is not None:
        info.problem = _("{function} takes *args/**kwargs or keyword-only arguments").format(function=varargs.name)
        return info
    args = fwd.args.args if setup else fwd.args.args[1:]
    if not args:
        info.problem = _("forward takes no inputs")
        return info
    info.params = [a.arg for a in args]
    defaults = fwd.args.defaults
    for a, d in zip(args[len(args) - len(defaults) :], defaults):
        info.defaults[a.arg] = ast.unparse(d)
    ctx_names = {fn.args.args[0].arg for fn in (bwd, setup or fwd) if fn.args.args}
    info.problem = next((p for fn in fns if (p := _ctx_problem(fn, ctx_names))), None) or _backward_problem(
        fwd, bwd, setup
    )
    return info


_DIFFERENTIATES = ("autograd.grad(", "autograd.backward(", ".backward(")


def is_recompute(fwd: ast.FunctionDef, bwd: ast.FunctionDef) -> bool:
    """A gradient checkpoint: the forward keeps one of its inputs on ctx (``ctx.run_function = fn``) and
    calls it; the backward calls it again and differentiates what it gives (autograd.grad/backward)."""
    if not (fwd.args.args and bwd.args.args) or not any(k in ast.unparse(bwd) for k in _DIFFERENTIATES):
        return False
    fctx, bctx = fwd.args.args[0].arg, bwd.args.args[0].arg
    stored = _stored_inputs(fwd)

    def called(fn: ast.FunctionDef, ctx: str) -> set[str]:
        out = set()
        for n in ast.walk(fn):
            f = n.func if isinstance(n, ast.Call) else None
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == ctx:
                out.add(f.attr)
            elif isinstance(f, ast.Name):
                out |= {a for a, p in stored.items() if p == f.id}
        return out

    return bool(called(fwd, fctx) & called(bwd, bctx) & set(stored))


def _stored_inputs(fwd: ast.FunctionDef) -> dict[str, str]:
    """ctx attributes the forward sets to one of its inputs (``ctx.run_function = run_function``) → the input."""
    fctx = fwd.args.args[0].arg
    params = {a.arg for a in fwd.args.args[1:]}
    return {
        t.attr: n.value.id
        for n in ast.walk(fwd)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in params
        for t in n.targets
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == fctx
    }


def _has_varargs(fn: ast.FunctionDef) -> bool:
    a = fn.args
    return bool(a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs)


def _ctx_problem(fn: ast.FunctionDef, ctx_names: set[str], callables: frozenset[str] = frozenset()) -> str | None:
    """ctx used in a way a bprop cannot replay: mark_dirty, other ctx methods, ctx passed around
    (``callables``: attributes that hold a function the forward was given, called as ``ctx.fn(...)``)."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ctx_names:
            if n.attr == "mark_dirty":
                return _("ctx.mark_dirty (an in-place forward) has no MindSpore bprop equivalent")
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id in ctx_names
            and n.func.attr not in _CTX_SAVE | _CTX_DROP | callables
        ):
            return _("ctx.{method}() has no MindSpore bprop equivalent").format(method=n.func.attr)
    # ctx itself passed around (helper(ctx, ...)): its state cannot be followed.
    attr_values = {id(n.value) for n in ast.walk(fn) if isinstance(n, ast.Attribute)}
    if any(
        isinstance(n, ast.Name) and n.id in ctx_names and id(n) not in attr_values
        for n in ast.walk(fn)
        if n is not fn.args.args[0]
    ):
        return _("ctx is used as a value (passed to a helper?); its state cannot be followed")
    return None


def _backward_problem(fwd: ast.FunctionDef, bwd: ast.FunctionDef, setup: ast.FunctionDef | None) -> str | None:
    if len(bwd.args.args) < 2:
        return _("backward takes no output gradient")
    if setup is not None and len(setup.args.args) != 3:
        return _("setup_context must take (ctx, inputs, output)")
    bwd_ctx = bwd.args.args[0].arg
    reads_state = any(
        isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == bwd_ctx
        and n.attr != "needs_input_grad"
        for n in ast.walk(bwd)
    )
    if reads_state and setup is None:
        body = fwd.body[:-1] if fwd.body and isinstance(fwd.body[-1], ast.Return) else fwd.body
        if any(isinstance(n, ast.Return) for s in body for n in ast.walk(s)):
            return _("the forward returns from inside a block, so what it saves on ctx cannot be replayed in bprop")
    if any(k in ast.unparse(bwd) for k in _HIGHER_ORDER):
        return _(
            "backward builds a differentiable graph (create_graph / enable_grad); "
            "MindSpore's bprop is not differentiated again"
        )
    if any(isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)) for b in bwd.body for n in ast.walk(b)):
        return _("backward defines nested functions; convert by hand")
    return None


# ---- the class ---------------------------------------------------------------------------------


def has_functions(facts) -> bool:
    return any(FUNCTION in bases for bases in facts.torch_bases.values())


@skip(cst.IndentedBlock, when=has_functions)
def recompute_backward(ctx: RewriteContext, node: cst.IndentedBlock) -> bool:
    """A gradient checkpoint's backward is dropped (convert_class): its body is not converted nor marked."""
    if not (ctx.class_stack and ctx.func_stack and ctx.func_stack[-1] == "backward"):
        return False
    info = infos(ctx).get(ctx.class_stack[-1])
    return info is not None and info.recompute and info.problem is None


@leave(cst.ClassDef, when=has_functions)
def convert_class(ctx: RewriteContext, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
    """The class after the main pass converted its expressions (its base is already ``nn.Cell``)."""
    info = infos(ctx).get(original.name.value)
    if info is None:
        return updated
    if info.problem is not None:
        return _keep(ctx, original, updated, info.problem)
    if info.recompute:
        return _recompute(ctx, updated)
    try:
        return _rewrite(ctx, updated, info)
    except _Unsupported as exc:  # a safety net: analyse() refuses these cases up front
        info.problem = str(exc)
        return _keep(ctx, original, updated, str(exc))


class _Unsupported(Exception):
    pass


def _keep(ctx: RewriteContext, original: cst.ClassDef, updated: cst.ClassDef, why: str) -> cst.ClassDef:
    """Unconvertible: the torch base comes back, the class is marked, the torch import stays."""
    info = infos(ctx).get(original.name.value)
    # The base class rename recorded while visiting the bases: the class is kept as torch code after all.
    start = ctx.scope_starts[-1] if ctx.scope_starts else 0
    ctx.changes[start:] = [c for c in ctx.changes[start:] if not (c.api == FUNCTION and info is not None)]
    for base in original.bases:
        name = _dotted(base.value)
        if name:
            ctx.still_needed.add(name.split(".", 1)[0])
    ctx.mark(FUNCTION, _("{why}; kept as torch code").format(why=why))
    return updated.with_changes(bases=original.bases)


def _fresh(want: str, taken: set[str]) -> str:
    name = want
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def _all_names(cls: ast.ClassDef) -> set[str]:
    out = {n.id for n in ast.walk(cls) if isinstance(n, ast.Name)}
    out |= {n.arg for n in ast.walk(cls) if isinstance(n, ast.arg)}
    return out


@dataclass
class _Names:
    """The names the Cell's methods use in place of ctx: its attributes become locals."""

    fwd_ctx: str | None  # None for a new-style Function (setup_context holds ctx)
    bwd_ctx: str
    grads: list[str]  # backward's output-gradient parameters
    local: dict[str, str]  # ctx.k → ctx_k
    saved: str  # what save_for_backward kept
    out: str  # bprop's output parameter
    dout: str  # bprop's output-gradient parameter
    n: int  # forward's inputs


def _names(info: FunctionInfo, fwd: cst.FunctionDef, bwd: cst.FunctionDef, setup: cst.FunctionDef | None) -> _Names:
    assert info.node is not None
    taken = _all_names(info.node)
    fwd_ctx = None if setup is not None else fwd.params.params[0].name.value
    bwd_ctx = bwd.params.params[0].name.value
    grads = [p.name.value for p in bwd.params.params[1:]]
    if not grads:
        raise _Unsupported(_("backward takes no output gradient"))
    # ctx attributes become locals: ctx.scale → ctx_scale (the same name in every method).
    attrs = sorted(
        {
            a.attr
            for a in ast.walk(info.node)
            if isinstance(a, ast.Attribute)
            and isinstance(a.value, ast.Name)
            and a.value.id in {fwd_ctx, bwd_ctx, _first_arg(setup)}
            and a.attr not in _CTX_SAVED | _CTX_SAVE | _CTX_DROP | {"needs_input_grad"}
        }
    )
    local = {a: _fresh(f"ctx_{a}", taken) for a in attrs}
    saved = _fresh("saved", taken)
    out = _fresh("out", taken)
    # The backward's own gradient name is bprop's dout unless the replayed forward could rebind it.
    fwd_names = {
        n.id
        for fn in _methods(info.node).values()
        if fn.name in ("forward", "setup_context")
        for n in ast.walk(fn)
        if isinstance(n, ast.Name)
    }
    dout = grads[0] if len(grads) == 1 and grads[0] not in {*info.params, *fwd_names} else _fresh("dout", taken)
    return _Names(fwd_ctx, bwd_ctx, grads, local, saved, out, dout, len(info.params))


def _rewrite(ctx: RewriteContext, cls: cst.ClassDef, info: FunctionInfo) -> cst.ClassDef:
    assert info.node is not None
    body = block(cls.body)
    defs = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
    fwd, bwd, setup = defs["forward"], defs["backward"], defs.get("setup_context")
    names = _names(info, fwd, bwd, setup)
    construct = _construct(info, fwd, setup, names)
    bprop = _bprop(info, fwd, bwd, setup, names)
    new_body: list[Statement] = []
    for s in body:
        if s is fwd:
            new_body.append(construct)
        elif s is bwd:
            new_body.append(bprop)
        elif s is setup:
            continue  # replayed inside bprop
        elif isinstance(s, cst.FunctionDef) and s.name.value in ("jvp", "vmap"):
            ctx.record(
                f"{FUNCTION}.{s.name.value}",
                "review",
                _("forward-mode / vmap rule kept as is: MindSpore only uses bprop"),
            )
            new_body.append(s)
        else:
            new_body.append(s)
    note = _("forward → construct, backward → bprop(inputs, out, dout)")
    if info.defaults:
        note += "; " + _("apply() calls pass every default explicitly")
    base = next((c for c in reversed(ctx.changes_in_scope()) if c.api == FUNCTION), None)
    if base is not None:  # the base class rename the main pass recorded: one change per class
        base.note = note
    else:
        ctx.record(FUNCTION, "converted", note)
    return cls.with_changes(body=cls.body.with_changes(body=new_body))


RECOMPUTE_NOTE = N_(
    "gradient checkpointing: torch's backward only ran the forward again to save memory; MindSpore "
    "differentiates this construct directly (same gradients; mindspore.recompute / Cell.recompute() save the memory)"
)


def _recompute(ctx: RewriteContext, cls: cst.ClassDef) -> cst.ClassDef:
    """A gradient checkpoint: construct is the forward without ctx (its attributes become locals), no bprop."""
    body = block(cls.body)
    fwd = next(s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == "forward")
    fctx = fwd.params.params[0].name.value
    original = infos(ctx)[cls.name.value].node
    assert original is not None
    taken = _all_names(original)
    attrs = sorted(
        {
            a.attr
            for a in ast.walk(_methods(original)["forward"])
            if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == fctx
        }
        - _CTX_SAVED
        - _CTX_SAVE
        - _CTX_DROP
    )
    local = {a: _fresh(f"ctx_{a}", taken) for a in attrs}
    rewriter = _CtxRewriter(
        fctx, _fresh("saved", taken), local, len(fwd.params.params) - 1, keep_saves=False, keep_attrs=True
    )
    note = cst.EmptyLine(comment=cst.Comment(f"{MARK} " + _(RECOMPUTE_NOTE)))
    # the dropped backward's comments are the user's: they stay, above construct (nothing is lost)
    dropped = [s for s in body if isinstance(s, cst.FunctionDef) and s.name.value in ("backward", "jvp", "vmap")]
    kept = [
        cst.EmptyLine(comment=cst.Comment(c.value))
        for d in dropped
        for c in cst_matchers.findall(d, cst_matchers.Comment())
        if isinstance(c, cst.Comment)
    ]
    construct = fwd.with_changes(
        name=cst.Name("construct"),
        decorators=_no_static(fwd.decorators),
        params=fwd.params.with_changes(params=[cst.Param(cst.Name("self")), *_commas(list(fwd.params.params[1:]))]),
        body=rewriter.visit_block(fwd.body),
        leading_lines=[*fwd.leading_lines, note, *kept],
    )
    new_body: list[Statement] = []
    for s in body:
        if s is fwd:
            new_body.append(construct)
        elif not (isinstance(s, cst.FunctionDef) and s.name.value in ("backward", "jvp", "vmap")):
            new_body.append(s)
    text = _("gradient checkpoint: forward → construct, backward dropped (MindSpore differentiates the call)")
    base = next((c for c in reversed(ctx.changes_in_scope()) if c.api == FUNCTION), None)
    if base is not None:
        base.note = text
    else:
        ctx.record(FUNCTION, "converted", text)
    return cls.with_changes(body=cls.body.with_changes(body=new_body))


def _construct(
    info: FunctionInfo, fwd: cst.FunctionDef, setup: cst.FunctionDef | None, names: _Names
) -> cst.FunctionDef:
    """construct: the forward without its ctx bookkeeping."""
    assert info.node is not None
    fwd_params = list(fwd.params.params) if setup is not None else list(fwd.params.params[1:])
    keep_attrs = _reads_ctx(info.node, "forward", names.fwd_ctx)
    rewriter = _CtxRewriter(names.fwd_ctx, names.saved, names.local, names.n, keep_saves=False, keep_attrs=keep_attrs)
    return fwd.with_changes(
        name=cst.Name("construct"),
        decorators=_no_static(fwd.decorators),
        params=fwd.params.with_changes(params=[cst.Param(cst.Name("self")), *_commas(fwd_params)]),
        body=rewriter.visit_block(fwd.body),
    )


def _bprop(
    info: FunctionInfo, fwd: cst.FunctionDef, bwd: cst.FunctionDef, setup: cst.FunctionDef | None, names: _Names
) -> cst.FunctionDef:
    """bprop: replay what the forward left on ctx, then the backward body."""
    assert info.node is not None
    replay = _replay(info, fwd, setup, names) if _reads_state(info.node, names.bwd_ctx) else []
    if len(names.grads) > 1:
        targets = gen.names_tuple(names.grads)
        replay.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(targets)], cst.Name(names.dout))]))
    elif names.grads[0] != names.dout:
        replay.append(_assign(names.grads[0], cst.Name(names.dout)))
    rewriter = _CtxRewriter(
        names.bwd_ctx, names.saved, names.local, names.n, keep_saves=True, keep_attrs=True, n_inputs=names.n
    )
    bwd_body = rewriter.visit_block(bwd.body)
    return bwd.with_changes(
        name=cst.Name("bprop"),
        decorators=_no_static(bwd.decorators),
        params=gen.parameters(["self", *info.params, names.out, names.dout]),
        body=bwd_body.with_changes(body=[*replay, *bwd_body.body]),
    )


def _replay(
    info: FunctionInfo, fwd: cst.FunctionDef, setup: cst.FunctionDef | None, names: _Names
) -> list[cst.BaseStatement]:
    """What the forward (or setup_context) stored on ctx, recomputed from bprop's inputs and out."""
    replay: list[cst.BaseStatement] = []
    if setup is not None:
        sp = [p.name.value for p in setup.params.params]
        if len(sp) != 3:
            raise _Unsupported(_("setup_context must take (ctx, inputs, output)"))
        inputs = [cst.Element(cst.Name(p), comma=_COMMA) for p in info.params]
        if len(inputs) > 1:
            inputs[-1] = inputs[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        else:
            inputs[-1] = inputs[-1].with_changes(comma=cst.Comma())  # (x,)
        replay.append(_assign(sp[1], cst.Tuple(inputs)))
        replay.append(_assign(sp[2], cst.Name(names.out)))
        rewriter = _CtxRewriter(sp[0], names.saved, names.local, names.n, keep_saves=True, keep_attrs=True)
        replay += rewriter.visit_block(setup.body).body
    else:
        stmts = list(fwd.body.body)  # type: ignore[union-attr]
        if any(_has_return(s) for s in stmts[:-1]) or (stmts and _has_return(stmts[-1]) and not _is_return(stmts[-1])):
            raise _Unsupported(_("the forward returns from inside a block, so what it saves cannot be replayed"))
        if stmts and _is_return(stmts[-1]):
            stmts = stmts[:-1]
        block = fwd.body.with_changes(body=stmts or [cst.SimpleStatementLine([cst.Pass()])])
        rewriter = _CtxRewriter(names.fwd_ctx, names.saved, names.local, names.n, keep_saves=True, keep_attrs=True)
        replay += rewriter.visit_block(block).body
    if replay:
        note = cst.EmptyLine(comment=cst.Comment(f"{MARK} " + _(REPLAY_NOTE)))
        replay[0] = replay[0].with_changes(leading_lines=[note])
    return replay


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)])


_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
REPLAY_NOTE = N_("recomputed from the inputs (bprop gets inputs, out and dout; there is no ctx)")


def _first_arg(fn: cst.FunctionDef | None) -> str | None:
    return fn.params.params[0].name.value if fn is not None and fn.params.params else None


def _reads_ctx(cls: ast.ClassDef, method: str, ctx: str | None) -> bool:
    """Does the method read a ctx attribute (not just set it)?"""
    fn = _methods(cls).get(method)
    if fn is None or ctx is None:
        return False
    return any(
        isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == ctx
        and isinstance(n.ctx, ast.Load)
        and n.attr not in _CTX_SAVE | _CTX_DROP
        for n in ast.walk(fn)
    )


def _reads_state(cls: ast.ClassDef, ctx: str) -> bool:
    """Does the backward read anything the forward stored (saved tensors, attributes)?"""
    fn = _methods(cls)["backward"]
    return any(
        isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == ctx
        and n.attr != "needs_input_grad"
        for n in ast.walk(fn)
    )


def _has_return(stmt: cst.CSTNode) -> bool:
    found = False

    class V(cst.CSTVisitor):
        def visit_Return(self, node) -> bool:
            nonlocal found
            found = True
            return False

        def visit_FunctionDef(self, node) -> bool:
            return False

    stmt.visit(V())
    return found


def _is_return(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Return)


def _no_static(decorators) -> list[cst.Decorator]:
    return [d for d in decorators if not (isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod")]


def _commas(params: list[cst.Param]) -> list[cst.Param]:
    out = []
    for i, p in enumerate(params):
        last = i == len(params) - 1
        out.append(
            p.with_changes(
                comma=cst.MaybeSentinel.DEFAULT if last else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
        )
    return out


class _CtxRewriter(cst.CSTTransformer):
    """Rewrites ``ctx`` uses inside one method body.

    keep_saves: ``ctx.save_for_backward(a, b)`` → ``saved = (a, b)`` (else removed);
    keep_attrs: ``ctx.k = v`` → ``ctx_k = v`` (else removed); reads of ``ctx.k`` → ``ctx_k``;
    n_inputs: set in the backward, whose returns become a tuple of exactly that many gradients.
    """

    def __init__(
        self,
        ctx: str | None,
        saved: str,
        local: dict[str, str],
        n: int,
        *,
        keep_saves: bool,
        keep_attrs: bool,
        n_inputs: int | None = None,
    ) -> None:
        super().__init__()
        self.ctx, self.saved, self.local, self.n = ctx, saved, local, n
        self.keep_saves, self.keep_attrs, self.n_inputs = keep_saves, keep_attrs, n_inputs

    def visit_block(self, block: cst.BaseSuite) -> cst.IndentedBlock:
        if self.ctx is None and self.n_inputs is None:
            return block  # type: ignore[return-value]
        new = block.visit(self)
        return new  # type: ignore[return-value]

    def _is_ctx(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Name) and node.value == self.ctx

    def visit_FunctionDef(self, node) -> bool:
        return False  # nested functions keep their own names

    def leave_SimpleStatementLine(self, original, updated):
        body = []
        for before, s in zip(original.body, updated.body):
            if (
                isinstance(s, cst.Expr)
                and isinstance(s.value, cst.Call)
                and isinstance(s.value.func, cst.Attribute)
                and self._is_ctx(s.value.func.value)
            ):
                method = s.value.func.attr.value
                if method in _CTX_SAVE and self.keep_saves:
                    elems = [
                        cst.StarredElement(a.value) if a.star == "*" else cst.Element(a.value) for a in s.value.args
                    ]
                    value = (
                        cst.Tuple(elems) if len(elems) != 1 else cst.Tuple([elems[0].with_changes(comma=cst.Comma())])
                    )
                    body.append(cst.Assign([cst.AssignTarget(cst.Name(self.saved))], value))
                continue  # save (not kept) / mark_non_differentiable / set_materialize_grads
            if (
                isinstance(before, cst.Assign)
                and not self.keep_attrs
                and all(self._ctx_target(x.target) for x in before.targets)
            ):
                continue  # ctx.k = v in the construct: only the bprop needs it
            body.append(s)
        if not body:
            if updated.leading_lines and any(line.comment for line in updated.leading_lines):
                return updated.with_changes(body=[cst.Pass()])
            return cst.RemovalSentinel.REMOVE
        return updated.with_changes(body=body)

    def _ctx_target(self, target: cst.BaseExpression) -> bool:
        if isinstance(target, cst.Attribute):
            return self._is_ctx(target.value)
        if isinstance(target, (cst.Tuple, cst.List)):
            return all(self._ctx_target(e.value) for e in target.elements)
        return False

    def leave_Subscript(self, original, updated):
        # ctx.needs_input_grad[i] → True: MindSpore asks for every input's gradient.
        if (
            isinstance(original.value, cst.Attribute)
            and self._is_ctx(original.value.value)
            and original.value.attr.value == "needs_input_grad"
        ):
            return cst.Name("True")
        return updated

    def leave_Attribute(self, original, updated):
        if not self._is_ctx(original.value):
            return updated
        attr = original.attr.value
        if attr in _CTX_SAVED:
            return cst.Name(self.saved)
        if attr == "needs_input_grad":
            flags = [cst.Element(cst.Name("True"), comma=_COMMA) for _ in range(self.n)]
            # (True,) for one input, (True, True) for two
            flags[-1] = flags[-1].with_changes(comma=cst.Comma() if self.n == 1 else cst.MaybeSentinel.DEFAULT)
            return cst.Tuple(flags)
        if attr in self.local:
            return cst.Name(self.local[attr])
        return updated

    def leave_IndentedBlock(self, original, updated):
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated

    def leave_Return(self, original, updated):
        if self.n_inputs is None or updated.value is None:
            return updated
        value = updated.value
        if isinstance(value, cst.Tuple):
            elems = list(value.elements)
            # torch accepts extra trailing Nones; MindSpore wants exactly one gradient per input.
            while (
                len(elems) > self.n_inputs and isinstance(elems[-1].value, cst.Name) and elems[-1].value.value == "None"
            ):
                elems.pop()
            if len(elems) == 1:
                elems = [elems[0].with_changes(comma=cst.Comma())]
            elif elems:
                elems[-1] = elems[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(value=value.with_changes(elements=elems))
        if self.n_inputs == 1:
            return updated.with_changes(value=cst.Tuple([cst.Element(value, comma=cst.Comma())]))
        return updated


# ---- call sites -----------------------------------------------------------------------------------


def _function_of(ctx: RewriteContext, node: cst.BaseExpression) -> FunctionInfo | None:
    """``F.apply`` where F is a convertible Function class of this file."""
    if not (isinstance(node, cst.Attribute) and node.attr.value == "apply" and isinstance(node.value, cst.Name)):
        return None
    name = node.value.value
    info = infos(ctx).get(name)
    if info is not None:
        return info if info.problem is None else None
    # `from .ops import RoundSTE` … RoundSTE.apply(x): a class imported from the project and called
    # through apply is an autograd Function (Module.apply is called on instances, never classes);
    # its own file converts the class.
    full = ctx.imap.names.get(name)
    if (
        full is not None
        and not ctx.imap.is_framework(full)
        and name[:1].isupper()
        and name not in ctx.facts.module_classes
    ):
        return FunctionInfo(name, imported=True)
    return None


@call()
def apply_call(ctx: RewriteContext, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
    """``F.apply(x, y)`` → ``F()(x, y, <defaults>)``; None when the call is not a Function's apply."""
    if not (isinstance(original.func, cst.Attribute) and original.func.attr.value == "apply"):
        return None
    info = _function_of(ctx, original.func)
    if info is None:
        return None
    assert isinstance(original.func, cst.Attribute) and isinstance(original.func.value, cst.Name)
    cell = cst.Call(cst.Name(original.func.value.value))
    args = list(updated.args)
    if info.imported:
        ctx.record(
            f"{FUNCTION}.apply",
            "review",
            f"{info.name} is imported: assumed a torch.autograd.Function "
            "(converted in its own file); GRAPH_MODE needs every forward argument passed, defaults too",
        )
        return updated.with_changes(func=cell)
    if info.recompute:
        ctx.record(f"{FUNCTION}.apply", "converted", f"{info.name}.apply(...) → {info.name}()(...)")
        return updated.with_changes(func=cell)
    if any(a.star for a in args):
        ctx.record(
            f"{FUNCTION}.apply", "review", "*args in an apply() call: GRAPH_MODE needs every forward argument passed"
        )
        return updated.with_changes(func=cell)
    positional = [a for a in args if a.keyword is None]
    by_name = {a.keyword.value: a for a in args if a.keyword is not None}
    new: list[cst.Arg] = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in positional]
    for p in info.params[len(positional) :]:
        if p in by_name:
            new.append(cst.Arg(by_name[p].value))
        elif p in info.defaults:
            new.append(cst.Arg(cst.parse_expression(info.defaults[p])))
        else:
            ctx.record(f"{FUNCTION}.apply", "review", _("apply() call without '{argument}'").format(argument=p))
            return updated.with_changes(func=cell)
    new = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in new[:-1]] + new[-1:]
    ctx.record(f"{FUNCTION}.apply", "converted", f"{info.name}.apply(...) → {info.name}()(...)")
    return updated.with_changes(func=cell, args=new)


@attribute()
def apply_reference(ctx: RewriteContext, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression | None:
    """``fn = F.apply`` (a value, not called here) → ``fn = F()``."""
    if original.attr.value != "apply" or ctx.is_call_func(original):
        return None
    info = _function_of(ctx, original)
    if info is None:
        return None
    note = f"{info.name}.apply → {info.name}()"
    if info.imported or info.defaults:
        ctx.record(
            f"{FUNCTION}.apply", "review", note + ": in GRAPH_MODE its calls must pass every argument, defaults too"
        )
    else:
        ctx.record(f"{FUNCTION}.apply", "converted", note)
    return cst.Call(cst.Name(info.name))
