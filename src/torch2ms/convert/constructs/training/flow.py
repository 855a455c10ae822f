"""Gradients as torch keeps them, followed through one block of statements (the general training step).

torch accumulates a gradient in each parameter's ``.grad``: ``backward()`` adds to it, ``zero_grad()``
(on an optimizer or on a module) clears it, ``optimizer.step()``, ``clip_grad_norm_`` and
``for p in model.parameters(): ... p.grad`` read it. MindSpore's gradient is the value of
``value_and_grad(forward_fn, None, weights)``. Here each set of parameters whose ``.grad`` the block
uses is a ``Holder`` (a module's parameters, or an optimizer's when its module is unknown), and each
``backward()`` is a ``Backward``: the forward statements its loss depends on (they move into its own
``forward_fn``), and the holders whose gradient is used after it before being cleared.

This covers what the fused single-step form (analysis.py) refuses: several ``backward()`` calls
and several optimizers (a GAN), a step in a function with no loop, a loss held in an attribute
(``self.loss``), forward statements that are loops or branches, gradients read in ``p.grad``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst

from ....analysis.astwalk import is_method_call
from ....i18n import _
from ...cstutil import Statement, block
from ...index import children
from .amp import Amp
from .analysis import Roles, helper_zeros, method_call
from .errors import NotConvertible
from .grad_reads import check_header, grad_attributes, is_direct_read, named_loop_parameter
from .helper_updates import helper_read_loop
from .optimizer_lists import listed_name, optimizer_loop

LOOPS = (cst.For, cst.While)
USES = ("step", "clip", "read", "unscale", "scaler_step")


@dataclass
class Holder:
    """Parameters whose torch ``.grad`` the block uses: their MindSpore list and the gradient tuple's name."""

    key: str  # the module's source text (``netD``), else the optimizer's
    weights: str  # MindSpore source of the parameter list (``netD.trainable_params()``)
    module: str | None
    grads: str = ""  # the name of the accumulated gradient tuple (set by the writer)


@dataclass
class Event:
    """A statement that uses or clears gradients: zero / step / clip / read (``p.grad`` loop)."""

    node: Statement
    kind: str  # zero | step | clip | read | unscale | scaler_step | update
    holder: Holder | None  # None: the GradScaler's update()
    top: int  # index of the body statement that holds it
    nested: bool  # inside a branch: may not run
    scaler: str = ""  # the GradScaler of unscale_ / step / update
    inline: ast.For | None = None  # read: a helper's gradient loop, for the call that runs it (helper_updates.py)
    opt: str = ""  # zero / step of one optimizer of a loop over several (optimizer_lists.py)


@dataclass
class Backward:
    """One ``backward()`` call and the forward pass its loss comes from."""

    at: int
    loss: ast.expr
    scaler: str | None  # scaler.scale(loss).backward(): the GradScaler
    forward: list[int]  # body indices moved into its forward_fn
    params: list[str]  # forward_fn's parameters (locals it reads before writing)
    aux: list[str]  # names the forward computes that other code reads (returned next to the loss)
    holders: list[Holder] = field(default_factory=list)
    after: list[int] = field(default_factory=list)  # body statements that read its results: run after it


@dataclass
class Flow:
    body: list[Statement]
    asts: list[ast.stmt]
    backwards: list[Backward]
    events: list[Event]
    holders: dict[str, Holder]
    setup_before: cst.CSTNode  # the statement the setup code goes before
    scope_ast: ast.AST
    train: list[str]  # modules a torch script would train (set_train before the first step)
    amp: Amp | None = None  # the block's autocast blocks (inlined into body)


def loss_text(a: ast.stmt) -> tuple[ast.expr, str | None]:
    """What ``<loss>.backward()`` is called on, and the GradScaler of ``scaler.scale(loss).backward()``
    (no gradient argument: it needs a person; ``retain_graph`` changes no gradient, see ``retains_graph``)."""
    call = method_call(a, "backward")
    assert call is not None
    if call.args or any(k.arg != "retain_graph" for k in call.keywords):
        raise NotConvertible(_("backward() with arguments (retain_graph/gradient): port by hand"))
    target = call.func.value  # type: ignore[attr-defined]
    if is_method_call(target, "scale") and len(target.args) == 1 and not target.keywords:
        return target.args[0], ast.unparse(target.func.value)
    if any(is_method_call(n, "scale") for n in ast.walk(target)):
        raise NotConvertible(_("loss scaling inside the loss expression: use scaler.scale(loss).backward()"))
    return target, None


def retains_graph(a: ast.stmt) -> bool:
    """``loss.backward(retain_graph=...)`` (any value but a literal False/None)."""
    call = method_call(a, "backward")
    return call is not None and any(
        k.arg == "retain_graph" and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in call.keywords
    )


def dotted_names(node: ast.AST, ctx: type) -> set[str]:
    """Names and attribute chains (``self.loss``) in a load or store context (a comprehension's own
    variables are its business)."""
    out: set[str] = set()
    inner = {
        t.id
        for c in ast.walk(node)
        if isinstance(c, ast.comprehension)
        for t in ast.walk(c.target)
        if isinstance(t, ast.Name)
    }
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in inner:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ctx):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ctx):
            text = _chain(n)
            if text:
                out.add(text)
    return out


def _chain(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def reads(node: ast.AST) -> set[str]:
    got = dotted_names(node, ast.Load)
    for n in ast.walk(node):  # ``x += y`` reads x too
        if isinstance(n, ast.AugAssign):
            got |= dotted_names(n.target, ast.Store)
    return got


def writes(node: ast.AST) -> set[str]:
    return dotted_names(node, ast.Store) | dotted_names(node, ast.Del)


def overwrites(node: ast.stmt) -> set[str]:
    """Names a plain assignment replaces whole (an earlier value of them is not needed)."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {t for tg in targets for t in dotted_names(tg, ast.Store)} - reads(node)
    return set()


def nested_statements(stmt: Statement) -> list[Statement]:
    """A compound statement's nested statements, depth first."""
    out: list[Statement] = []
    for child in children(stmt):
        out.append(child)  # type: ignore[arg-type]
        out += nested_statements(child)  # type: ignore[arg-type]
    return out


def body_of(container: cst.CSTNode) -> list[Statement]:
    return block(container.body)  # type: ignore[attr-defined]


# ---- holders and events ----------------------------------------------------------------------


class Holders:
    """The holders of one block, by key: an optimizer built on ``model.parameters()`` shares the
    model's holder, so ``model.zero_grad()`` and ``optimizer.step()`` meet."""

    def __init__(self, roles: Roles, scope: ast.AST) -> None:
        self.roles, self.scope = roles, scope
        self.by_key: dict[str, Holder] = {}

    def _get(self, key: str, weights: str, module: str | None) -> Holder:
        if key not in self.by_key:
            self.by_key[key] = Holder(key, weights, module)
        return self.by_key[key]

    def of_module(self, module: str) -> Holder:
        return self._get(module, f"{module}.trainable_params()", module)

    def of_optimizer(self, opt: str) -> Holder:
        opt = listed_name(opt, [self.scope, self.roles.tree])  # opts[0] of opts = [opt1, opt2]: opt1
        link = self.roles.opt_module(opt, self.scope)
        if link is None:
            return self._get(opt, f"{opt}.parameters", None)
        holder = self.of_module(link[0])
        if not link[1]:  # same parameters in the optimizer's own order (param groups): follow it
            holder.weights = f"{opt}.parameters"
        return holder

    def of_receiver(self, recv: str) -> Holder:
        """``x.zero_grad()``: an optimizer's (x has ``step()`` called, or is built as one) or a module's."""
        named = listed_name(recv, [self.scope, self.roles.tree])  # opts[0] of opts = [opt1, opt2]: opt1
        for r in dict.fromkeys([recv, named]):
            if r in self.roles.optimizers or self.roles.opt_module(r, self.scope) or r in self.roles.stepped:
                return self.of_optimizer(named)
        recv = named
        return self.of_module(recv)


def parameters_of(node: ast.expr | None) -> str | None:
    """``model.parameters()`` → ``model``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "parameters":
        return ast.unparse(node.func.value)
    return None


def _scaler_event(holders: Holders, a: ast.stmt, scalers: set[str]) -> Event | None:
    """``scaler.unscale_(opt)``, ``scaler.step(opt)``, ``scaler.update()`` (node/top filled by the caller)."""
    for kind, attr in (("unscale", "unscale_"), ("scaler_step", "step"), ("update", "update")):
        call = method_call(a, attr)
        if call is None or ast.unparse(call.func.value) not in scalers:  # type: ignore[attr-defined]
            continue
        scaler = ast.unparse(call.func.value)  # type: ignore[attr-defined]
        if kind == "update":
            return Event(None, kind, None, 0, False, scaler)  # type: ignore[arg-type]
        if len(call.args) != 1 or call.keywords:
            raise NotConvertible(
                _("{call}() without one optimizer argument: port by hand").format(call=f"{scaler}.{attr}")
            )
        return Event(None, kind, holders.of_optimizer(ast.unparse(call.args[0])), 0, False, scaler)  # type: ignore[arg-type]
    return None


def _statement_event(roles: Roles, holders: Holders, a: ast.stmt) -> tuple[str, Holder] | None:
    zero = method_call(a, "zero_grad")
    if zero is not None:
        return "zero", holders.of_receiver(ast.unparse(zero.func.value))  # type: ignore[attr-defined]
    step = method_call(a, "step")
    if step is not None:
        recv = ast.unparse(step.func.value)  # type: ignore[attr-defined]
        if recv in roles.optimizers or (roles.is_optimizer(recv) and recv not in roles.schedulers):
            if step.args or step.keywords:
                raise NotConvertible(
                    _("{opt}.step(closure): re-evaluating the loss inside step() has no MindSpore form").format(
                        opt=recv
                    )
                )
            return "step", holders.of_optimizer(recv)
        return None
    if roles.clip(a) is not None:
        call = a.value  # type: ignore[attr-defined]
        module = parameters_of(call.args[0] if call.args else None)
        if module is None:
            raise NotConvertible(_("gradient clipping of parameters other than model.parameters(): port by hand"))
        return "clip", holders.of_module(module)
    return None


def _read_loop(a: ast.stmt, holders: Holders) -> Holder | None:
    """``for p in model.parameters(): ... p.grad ...`` (or ``for name, p in model.named_parameters()``):
    the loop reads the model's gradients."""
    named = named_loop_parameter(a)
    if (named is not None or isinstance(a, ast.For)) and "grad" in ast.dump(a):
        param = named[1] if named is not None else a.target.id if isinstance(a.target, ast.Name) else None  # type: ignore[attr-defined]
        grad_attributes(a, param)  # a write to a gradient: refused with its reason (a clear of p.grad is not)
    if named is not None:
        module, name = named
    elif isinstance(a, ast.For) and isinstance(a.target, ast.Name) and parameters_of(a.iter) is not None:
        module, name = parameters_of(a.iter), a.target.id  # type: ignore[assignment]
    else:
        return None
    if not any(isinstance(n, ast.Attribute) and n.attr == "grad" and _chain(n) == f"{name}.grad" for n in ast.walk(a)):
        return None
    return holders.of_module(module)


def _clears_only(a: ast.stmt) -> bool:
    """``for p in model.parameters(): p.grad = None`` (``p.grad.zero_()``, ``p.grad.data.zero_()``, under
    ``if p.grad is not None:``): a loop whose body does nothing but clear its parameter's gradient."""
    named = named_loop_parameter(a)
    param = named[1] if named is not None else getattr(getattr(a, "target", None), "id", None)
    return isinstance(a, ast.For) and param is not None and not a.orelse and _clear_block(a.body, param)


def _clear_block(body: list[ast.stmt], param: str) -> bool:
    def grad(node: ast.expr) -> bool:
        while isinstance(node, ast.Attribute) and node.attr == "data":
            node = node.value
        return isinstance(node, ast.Attribute) and node.attr == "grad" and _chain(node) == f"{param}.grad"

    for s in body:
        if isinstance(s, ast.If):
            if s.orelse or not _clear_block(s.body, param):
                return False
        elif isinstance(s, ast.Assign):
            none = isinstance(s.value, ast.Constant) and s.value.value is None
            if not (none and len(s.targets) == 1 and grad(s.targets[0])):
                return False
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            f = s.value.func
            if not (isinstance(f, ast.Attribute) and f.attr == "zero_" and not s.value.args and grad(f.value)):
                return False
        elif not isinstance(s, ast.Pass):
            return False
    return True


def find_events(roles: Roles, body: list[Statement], asts: list[ast.stmt], holders: Holders) -> list[Event]:
    """Every statement of the block that clears, reads or applies gradients (branches included)."""
    events: list[Event] = []
    scalers = {s for a in asts if method_call(a, "backward") is not None for s in [loss_text(a)[1]] if s}
    for top, (stmt, a) in enumerate(zip(body, asts)):
        skip: set[int] = set()  # statements inside a ``p.grad`` loop: the loop is the event
        for node in [stmt, *nested_statements(stmt)]:
            na = a if node is stmt else roles.ast_of(node)
            if na is None or id(node) in skip:
                continue
            listed = optimizer_loop(na, [holders.scope, roles.tree], roles.resolve)
            if listed is not None:  # for o in opts: o.step() — one event per optimizer
                kind = "zero" if listed[0] == "zero_grad" else "step"
                events += [Event(node, kind, holders.of_optimizer(r), top, node is not stmt, opt=r) for r in listed[1]]
                skip |= {id(n) for n in nested_statements(node)}
                continue
            inline = helper_read_loop(roles, na)
            holder = _read_loop(inline or na, holders)
            if holder is not None:
                # a loop that only clears p.grad stands for zero_grad() (on an optimizer over the module too)
                kind = "zero" if inline is None and _clears_only(na) else "read"
                events.append(Event(node, kind, holder, top, node is not stmt, inline=inline))
                skip |= {id(n) for n in nested_statements(node)}
                continue
            check_header(na)
            if is_direct_read(node, na):  # model.fc.weight.grad: grad_reads.py
                events.append(Event(node, "grad", None, top, node is not stmt))
            if isinstance(na, (ast.Expr, ast.Assign)):
                scaled = _scaler_event(holders, na, scalers)
                if scaled is not None:
                    events.append(Event(node, scaled.kind, scaled.holder, top, node is not stmt, scaled.scaler))
                    continue
                found = _statement_event(roles, holders, na)
                if found is not None and events and events[-1].node is node:
                    raise NotConvertible(_("a gradient read in a statement that also uses the gradients"))
                if found is not None:
                    events.append(Event(node, found[0], found[1], top, node is not stmt))
                else:
                    cleared = helper_zeros(roles, na)
                    events += [Event(node, "zero", holders.of_receiver(r), top, node is not stmt) for r in cleared]
    return _module_zero_clears_optimizers(events, holders)


def _module_zero_clears_optimizers(events: list[Event], holders: Holders) -> list[Event]:
    """``model.zero_grad()`` clears the gradients of every parameter of the model: also those of an
    optimizer whose module is unknown and that nothing else clears, and those of its sub-modules' holders
    (``opt1`` over ``model.features``, ``opt2`` over ``model.head``: two optimizers, one loss)."""
    cleared = {e.holder.key for e in events if e.kind == "zero" and e.holder is not None}
    orphans = [h for h in holders.by_key.values() if h.module is None and h.key not in cleared]
    out: list[Event] = []
    for e in events:
        out.append(e)
        if e.kind == "zero" and e.holder is not None and e.holder.module is not None:
            inner = [h for h in holders.by_key.values() if h.module and h.module.startswith(e.holder.module + ".")]
            out += [Event(e.node, "zero", h, e.top, e.nested) for h in [*orphans, *inner]]
    return out


def live_holders(events: list[Event], at: int, looped: bool) -> list[Holder]:
    """Holders whose gradient is used after ``backward()`` at ``at`` before an unconditional zero_grad
    (in a loop the scan wraps around to the start of the body: the next iteration's zero_grad)."""
    order = [e for e in events if e.top > at] + ([e for e in events if e.top < at] if looped else [])
    live: list[Holder] = []
    settled: set[str] = set()
    for e in order:
        if e.holder is None or e.holder.key in settled:
            continue
        if e.kind in USES:
            live.append(e.holder)
            settled.add(e.holder.key)
        elif e.kind == "zero" and not e.nested:
            settled.add(e.holder.key)
    return live
