"""What one torch training step is made of: which statement of the loop body does what.

``loss.backward()`` sits in a loop body; around it are the forward statements the loss depends on,
``optimizer.step()`` (directly, or under an accumulation ``if``), ``zero_grad()``, gradient clipping,
a GradScaler's calls and autocast blocks. ``analyse_step`` finds them all (or says why it cannot:
``NotConvertible``) and returns a ``StepPlan`` that ``emit.py`` writes MindSpore code from.
"""

from __future__ import annotations

import ast
import builtins
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

import libcst as cst

from ....analysis.astwalk import is_method_call, nodes
from ....analysis.imports import ImportMap
from ....i18n import _
from ...cstutil import Statement, block, code
from ...index import StatementIndex
from .amp import Amp, inline_autocast
from .errors import NotConvertible
from .sampling import data_objects
from .stores import FETCHES, filling_functions, stored_into, with_filled

LOOPS = (cst.For, cst.While)
_BUILTIN_NAMES = frozenset(dir(builtins))
CLIP_NORM = frozenset(
    {"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad_norm"}
)
CLIP_VALUE = frozenset({"torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad.clip_grad_value_"})


@dataclass
class StepPlan:
    """The roles of the statements of one loop body (indices into ``body``)."""

    body: list[Statement]  # the loop body, autocast blocks inlined
    asts: list[ast.stmt]
    backward_at: int
    loss: ast.expr  # what backward() is called on
    opt: str  # the optimizer (source text)
    step_at: int
    step_in_if: bool
    zero_at: list[int]
    clips: list[int]
    fused: bool  # zero_grad every iteration and step right after backward: one TrainStep Cell
    forward: list[int]  # statements of the forward pass (moved into forward_fn)
    after: list[int]  # statements between the forward and backward that are not part of it
    params: list[str]  # forward_fn's parameters: loop locals it reads
    aux: list[str]  # names forward_fn computes that code outside it reads
    outer: cst.CSTNode  # the loop the setup code goes before
    scope_node: cst.CSTNode | None  # the def/class holding the loop (None: module level)
    scope_ast: ast.AST
    scope_names: tuple[str, str] = ("", "")  # (class, function) holding the loop
    scaler: str | None = None
    scaler_calls: list[int] = field(default_factory=list)
    amp: Amp | None = None

    @property
    def loss_src(self) -> str:
        return ast.unparse(self.loss)

    @property
    def loss_name(self) -> str | None:
        return self.loss_src if isinstance(self.loss, ast.Name) else None


class Roles:
    """What the file tells about its names: which hold optimizers and schedulers, which are torch's."""

    def __init__(self, tree: ast.Module, imap: ImportMap, index: StatementIndex) -> None:
        self.tree, self.imap, self.index = tree, imap, index
        self.optimizers, self.schedulers = _optimizer_names(tree, imap)
        self.opt_modules = _optimizer_modules(tree, imap)  # optimizer → the module whose parameters it trains
        # receivers of ``x.step()`` calls (an optimizer's name the file never builds)
        self.stepped = {ast.unparse(n.func.value) for n in nodes(tree) if _is_step_call(n)}  # type: ignore[attr-defined]
        self.zeroed, self.lr_drivers = _optimizer_facts(tree, self.optimizers)

    @functools.cached_property
    def module_names(self) -> set[str]:
        """Names that hold a module or an optimizer (see ``_module_names``), found once per file."""
        return _module_names(self.tree)

    @functools.cached_property
    def data_functions(self) -> set[str]:
        """Module-level functions that only sample or shape data (``get_batch(split)``): no module, optimizer,
        ``self`` or global state in sight. A forward that starts with a call to one keeps it out of the
        compiled step: the gradients do not depend on it, and compiling data sampling costs time each step."""
        return _data_functions(self.tree, self)

    @functools.cached_property
    def fillers(self) -> dict[str, set[int]]:
        """Module-level functions that fill a parameter item by item (stores.py): name → its positions."""
        return filling_functions(self.tree)

    @functools.cached_property
    def data_objects(self) -> set[str]:
        """Names holding an instance of a data-only class of the file (sampling.py): ``batch_loader.next()``."""
        return data_objects(self.tree, self.resolve, self.module_names)

    def resolve(self, node: ast.AST) -> str | None:
        full = self.imap.resolve(node)
        return full if full and self.imap.is_framework(full) else None

    def opt_module(self, opt: str, scope: ast.AST) -> tuple[str, bool] | None:
        """The module whose parameters optimizer ``opt`` trains, as the function ``scope`` sees it, and
        whether the optimizer keeps their order (built on ``module.parameters()`` itself)."""
        here = self.opt_modules.get(id(scope), {})
        if opt in here:
            return here[opt]
        if opt.startswith("self."):  # an attribute set in another method (``__init__``)
            for found in self.opt_modules.values():
                link = found.get(opt)
                if link is not None and (link[0].startswith("self.") or link[0].split(".")[0] in _bound_in(scope)):
                    return link
            return None
        if scope is not self.tree and opt.split(".")[0] in _bound_in(scope):
            return None  # a parameter or local of the function: not the module-level optimizer
        return self.opt_modules.get(id(self.tree), {}).get(opt)

    @functools.cached_property
    def known_modules(self) -> set[str]:
        """Names (and ``self.x`` attributes) the file shows to hold a torch Module (``_known_modules``)."""
        return _known_modules(self.tree, self.imap)

    def clears_gradients(self, recv: str) -> bool:
        """Is ``recv.zero_grad()`` torch's (a call MindSpore's optimizers and cells lack)? The receiver is built
        by torch.optim, trains a module, is stepped and not a scheduler, or holds a torch module."""
        if recv in self.schedulers or recv in self.lr_drivers:
            return False
        built = recv in self.optimizers or any(recv in found for found in self.opt_modules.values())
        return built or recv in self.stepped or recv in self.known_modules

    def is_optimizer(self, recv: str) -> bool:
        """Is the receiver of a ``.step()`` an optimizer? By what the file does with it, not its name:
        built by torch.optim or zero_grad()-ed: yes; built by torch's lr_scheduler, or by any call given
        an optimizer (``get_linear_schedule_with_warmup(opt, ...)``), or asked for its learning rate: no."""
        if recv in self.optimizers or recv in self.zeroed:
            return True
        return recv not in self.schedulers and recv not in self.lr_drivers

    def ast_of(self, node: cst.CSTNode) -> ast.stmt | None:
        """The statement as ast: the original's when the stages left it alone, else parsed from its code."""
        found = self.index.ast_of(node)
        if found is not None:
            return found
        try:
            body = ast.parse(code(node).strip("\n")).body
        except SyntaxError:
            return None
        return body[0] if len(body) == 1 else None

    def clip(self, a: ast.stmt) -> str | None:
        """The torch clipping function a statement calls (``clip_grad_norm_(...)``), if any."""
        value = a.value if isinstance(a, (ast.Expr, ast.Assign)) else None
        if isinstance(value, ast.Call):
            full = self.resolve(value.func)
            if full in CLIP_NORM or full in CLIP_VALUE:
                return full
        return None


def analyse_step(roles: Roles, bstmt: cst.SimpleStatementLine, stack: list[cst.CSTNode]) -> StepPlan:
    scope_at = max((i for i, n in enumerate(stack) if isinstance(n, (cst.FunctionDef, cst.ClassDef))), default=-1)
    scope_node = stack[scope_at] if scope_at >= 0 else None
    path = stack[scope_at + 1 :]
    if not path or not isinstance(path[-1], LOOPS):
        raise NotConvertible(_("loss.backward() is not directly inside a for/while loop"))
    loops = [n for n in path if isinstance(n, LOOPS)]
    body = block(path[-1].body) if isinstance(path[-1].body, cst.IndentedBlock) else []
    if not body:
        raise NotConvertible(_("one-line loop body"))
    body, amp = inline_autocast(roles, body)  # R13: `with autocast(...)` blocks join the loop body
    asts = [roles.ast_of(s) for s in body]
    if any(a is None for a in asts):
        raise NotConvertible(_("cannot analyse the loop body"))
    stmts: list[ast.stmt] = asts  # type: ignore[assignment]
    ib = next(i for i, s in enumerate(body) if s is bstmt)
    loss, scaler = _backward_target(stmts, ib)
    step_at, step_in_if, opt = _step(roles, stmts, ib)
    _one_optimizer(roles, stmts, opt)
    zero_at = [i for i, a in enumerate(stmts) if method_call(a, "zero_grad") is not None or helper_zeros(roles, a)]
    between = list(range(ib + 1, step_at))
    clips = [i for i in between if roles.clip(stmts[i]) is not None]
    unscales: list[int] = []
    scaler_calls: list[int] = []  # scaler.unscale_(opt) between backward and step; scaler.update() after
    if scaler is not None:
        opt, unscales, update_at = _scaler_roles(stmts, ib, step_at, step_in_if, scaler)
        scaler_calls = [*unscales, update_at]
    fused = (
        not step_in_if
        and len(clips) + len(unscales) == len(between)
        and len(zero_at) >= 1
        and all(z < ib or z > step_at for z in zero_at)
    )
    if scaler is not None and not fused:
        raise NotConvertible(
            _("GradScaler with gradient accumulation or extra statements before scaler.step(): port by hand")
        )
    fwd = _forward(roles, body, stmts, ib, loss, zero_at, loops, opt, scope_node)
    return StepPlan(
        body,
        stmts,
        ib,
        loss,
        opt,
        step_at,
        step_in_if,
        zero_at,
        clips,
        fused,
        fwd.forward,
        fwd.after,
        fwd.params,
        fwd.aux,
        fwd.outer,
        scope_node,
        fwd.scope_ast,
        _scope_names(stack, scope_at),
        scaler,
        scaler_calls,
        amp,
    )


@dataclass
class _Forward:
    forward: list[int]
    after: list[int]
    params: list[str]
    aux: list[str]
    outer: cst.CSTNode
    scope_ast: ast.AST


def _forward(
    roles: Roles,
    body: list[Statement],
    stmts: list[ast.stmt],
    ib: int,
    loss: ast.expr,
    zero_at: list[int],
    loops: Sequence[cst.CSTNode],
    opt: str,
    scope_node: cst.CSTNode | None,
) -> _Forward:
    """The forward slice (statements before backward the loss depends on), where the setup goes,
    forward_fn's parameters and the names it returns next to the loss."""
    slice_idx = _slice(stmts, ib, loss, set(zero_at), [roles.index.line_of(s) for s in body], roles.fillers)
    outer = _insertion_loop(roles, loops, opt, [stmts[i] for i in slice_idx])
    outer_ast = roles.ast_of(outer)
    if outer_ast is None:
        raise NotConvertible(_("cannot analyse the loop"))
    local = {n.id for n in ast.walk(outer_ast) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    prep = _prep(roles, stmts, slice_idx, local)
    fetches = FETCHES | roles.data_functions | roles.data_objects
    forward = with_filled(stmts, slice_idx, [i for i in slice_idx if i not in prep], roles.fillers, fetches)
    if not forward:
        raise NotConvertible(_("the loss does not come from a forward pass in this loop body"))
    scope_ast = (roles.ast_of(scope_node) if scope_node is not None else None) or roles.tree
    fwd_writes: set[str] = set()
    for i in forward:
        fwd_writes |= writes(stmts[i])
    aux = _aux(scope_ast, [stmts[i] for i in forward], fwd_writes)
    loss_name = ast.unparse(loss) if isinstance(loss, ast.Name) else None
    if loss_name in aux:
        aux.remove(loss_name)
    # statements between the first forward statement and backward that are not part of the
    # forward (metrics on its outputs, logging) run after the step call, in their order
    after = [i for i in range(forward[0] + 1, ib) if i not in slice_idx and i not in zero_at]
    params = _params(stmts, forward, local)
    # `(criterion(model(x), y) + penalty).backward()`: the loss expression reads loop locals too (a compiled
    # step would hold the first batch's `y` as a constant of its graph)
    params += [r for r in reads(loss) if r in local and r not in fwd_writes and r not in params]
    return _Forward(forward, after, params, aux, outer, scope_ast)


def _scope_names(stack: list[cst.CSTNode], scope_at: int) -> tuple[str, str]:
    scope = stack[scope_at] if scope_at >= 0 else None
    fn = scope.name.value if isinstance(scope, cst.FunctionDef) else ""
    cls = next((n.name.value for n in reversed(stack[: max(scope_at, 0)]) if isinstance(n, cst.ClassDef)), "")
    return cls, fn


def _backward_target(asts: list[ast.stmt], ib: int) -> tuple[ast.expr, str | None]:
    """What backward() is called on, and the GradScaler when it is ``scaler.scale(loss).backward()``."""
    bcall = method_call(asts[ib], "backward")
    if bcall is None or bcall.args or bcall.keywords:
        raise NotConvertible(_("backward() with arguments (retain_graph/gradient): port by hand"))
    target = bcall.func.value  # type: ignore[attr-defined]
    scaler = None
    if is_method_call(target, "scale") and len(target.args) == 1 and not target.keywords:
        scaler, target = ast.unparse(target.func.value), target.args[0]
    if any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "scale"
        for n in ast.walk(target)
    ):
        raise NotConvertible(_("loss scaling (GradScaler): use mindspore.amp loss scaling"))
    for a in asts:
        for n in ast.walk(a):
            if isinstance(n, ast.Attribute) and n.attr == "grad":
                raise NotConvertible(_("the loop reads .grad: MindSpore gradients are the value_and_grad tuple"))
    if sum(1 for a in asts if method_call(a, "backward")) > 1:
        raise NotConvertible(_("several backward() calls in one loop body"))
    return target, scaler


def _step(roles: Roles, asts: list[ast.stmt], ib: int) -> tuple[int, bool, str]:
    """Where ``optimizer.step()`` is after backward (directly or under an ``if``), and the optimizer."""
    for i in range(ib + 1, len(asts)):
        c = method_call(asts[i], "step")
        if c is not None and roles.is_optimizer(ast.unparse(c.func.value)):  # type: ignore[attr-defined]
            return i, False, ast.unparse(c.func.value)  # type: ignore[attr-defined]
        if isinstance(asts[i], ast.If):
            for s in asts[i].body:  # type: ignore[attr-defined]
                c = method_call(s, "step")
                if c is not None and roles.is_optimizer(ast.unparse(c.func.value)):  # type: ignore[attr-defined]
                    return i, True, ast.unparse(c.func.value)  # type: ignore[attr-defined]
    raise NotConvertible(_("no optimizer.step() after loss.backward() in the same loop body"))


def _one_optimizer(roles: Roles, asts: list[ast.stmt], opt: str) -> None:
    """The single TrainStep updates one optimizer: a loop that steps another one too (``enc_opt.step();
    dec_opt.step()`` after one backward) is the general step's (which follows each optimizer's gradients)."""
    for a in asts:
        for n in ast.walk(a):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "step"
                and not n.args
                and ast.unparse(n.func.value) != opt
                and roles.is_optimizer(ast.unparse(n.func.value))
            ):
                raise NotConvertible(_("several optimizers step in this loop: one update per optimizer"))


def _scaler_roles(
    asts: list[ast.stmt], ib: int, step_at: int, step_in_if: bool, scaler: str
) -> tuple[str, list[int], int]:
    """``scaler.step(opt)`` → the optimizer; ``scaler.unscale_(opt)`` before it; ``scaler.update()`` after."""
    c = None if step_in_if else method_call(asts[step_at], "step")
    if c is None or ast.unparse(c.func.value) != scaler or len(c.args) != 1:  # type: ignore[attr-defined]
        raise NotConvertible(
            _("{scaler}.scale(loss).backward() without {scaler}.step(optimizer) right after: port by hand").format(
                scaler=scaler
            )
        )
    opt = ast.unparse(c.args[0])
    unscales = [
        i
        for i in range(ib + 1, step_at)
        if (u := method_call(asts[i], "unscale_")) is not None and ast.unparse(u.func.value) == scaler  # type: ignore[attr-defined]
    ]
    update_at = next(
        (
            i
            for i in range(step_at + 1, len(asts))
            if (u := method_call(asts[i], "update")) is not None
            and ast.unparse(u.func.value) == scaler  # type: ignore[attr-defined]
            and not u.args
        ),
        None,
    )
    if update_at is None:
        raise NotConvertible(
            _("{scaler}.step() without {scaler}.update(): port the loss scaling by hand").format(scaler=scaler)
        )
    return opt, unscales, update_at


def _slice(
    asts: list[ast.stmt], ib: int, target: ast.expr, skip: set[int], lines: list[int], fillers: dict[str, set[int]]
) -> list[int]:
    """The statements before backward the loss depends on (assignments only; ``buf[i] = y`` changes ``buf``)."""
    needed = set(reads(target))
    out = []
    for i in range(ib - 1, -1, -1):
        if i in skip:
            continue
        if (writes(asts[i]) | stored_into(asts[i], fillers)) & needed:
            if not isinstance(asts[i], (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                raise NotConvertible(_("the loss depends on a compound statement (line {line})").format(line=lines[i]))
            out.append(i)
            needed |= set(reads(asts[i]))
    return sorted(out)


# Builtins that fetch or reshape a batch on the host (``next(it)``, ``next(iter(loader))``, ``tuple(batch)``).
_FETCH_BUILTINS = frozenset({"next", "iter", "len", "list", "tuple", "zip", "map", "enumerate", "int", "float"})


def _prep(roles: Roles, asts: list[ast.stmt], slice_idx: list[int], local: set[str]) -> set[int]:
    """Leading slice statements that only reshape/move the batch (no module or user call):
    they stay in the loop instead of moving into forward_fn."""
    prep: set[int] = set()
    for i in slice_idx:
        ok = True
        for n in ast.walk(asts[i]):
            if isinstance(n, ast.Call):
                if roles.resolve(n.func) or (isinstance(n.func, ast.Name) and n.func.id in roles.data_functions):
                    continue
                if isinstance(n.func, ast.Name) and n.func.id in _FETCH_BUILTINS:
                    continue  # x, y = next(it): fetching the batch is host code (an iterator is no graph input)
                root = n.func
                while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                    root = root.func if isinstance(root, ast.Call) else root.value
                if not (
                    isinstance(n.func, ast.Attribute)
                    and isinstance(root, ast.Name)
                    and (root.id in local or root.id in roles.data_objects)
                ):
                    ok = False
        if not ok or set(reads(asts[i])) & (roles.module_names - roles.data_objects):
            break
        prep.add(i)
    return prep


# Methods only a module (or an optimizer) has: their receivers are never data.
_MODULE_METHODS = frozenset(
    {
        "parameters",
        "named_parameters",
        "train",
        "eval",
        "state_dict",
        "load_state_dict",
        "zero_grad",
        "modules",
        "children",
        "apply",
        "buffers",
        "step",
    }
)


def _module_names(tree: ast.Module) -> set[str]:
    """Names that hold a module or an optimizer: receivers of module-only methods, and names bound to a
    class the file defines."""
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    names = {
        n.func.value.id
        for n in nodes(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in _MODULE_METHODS
        and isinstance(n.func.value, ast.Name)
    }
    for n in nodes(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name):
            if n.value.func.id in classes:
                names |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return names


def _data_functions(tree: ast.Module, roles: Roles) -> set[str]:
    """See ``Roles.data_functions``: every call inside is torch's, a builtin's or a method of a value."""
    defs = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    banned = roles.module_names | {"self"}
    found: set[str] = set()
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.decorator_list:
            continue
        ok = not set(reads(fn)) & banned
        for n in ast.walk(fn):
            if isinstance(n, (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Lambda)):
                ok = False
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not roles.resolve(n.func):
                ok = ok and n.func.id in _BUILTIN_NAMES and n.func.id not in defs
        if ok:
            found.add(fn.name)
    return found


def _insertion_loop(roles: Roles, loops: Sequence[cst.CSTNode], opt: str, fwd: list[ast.stmt]) -> cst.CSTNode:
    """The outermost loop that neither builds the optimizer nor the modules the forward calls."""
    needed = {opt.split(".")[0]}
    for a in fwd:
        for n in ast.walk(a):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                needed.add(n.func.id)
    for lp in loops:
        la = roles.ast_of(lp)
        if la is not None and not (writes(la) & needed):
            return lp
    raise NotConvertible(_("{opt} or the model is created inside the loop").format(opt=opt))


def _params(asts: list[ast.stmt], forward: list[int], local: set[str]) -> list[str]:
    """Loop locals the forward reads before it assigns them: forward_fn's parameters."""
    params: list[str] = []
    assigned: set[str] = set()
    for i in forward:
        for r in reads(asts[i]):
            if r in local and r not in assigned and r not in params:
                params.append(r)
        assigned |= writes(asts[i])
    return params


def _aux(scope: ast.AST, fwd: list[ast.stmt], fwd_writes: set[str]) -> list[str]:
    """Names the forward computes that the enclosing function reads (returned next to the loss).
    Reads anywhere in the function count, the forward's own included: ``outputs`` read by the loss
    statement comes back too, and stays available to the loop as it was in torch."""
    read = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    order: list[str] = []
    for a in fwd:
        for n in ast.walk(a):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in read and n.id not in order:
                order.append(n.id)
    return [n for n in order if n in fwd_writes]


def sets_mode(scope: ast.AST | None, before: int | None = None) -> bool:
    """Does the function call ``x.train()`` / ``x.eval()`` itself? With ``before`` (the first line of
    the training step): on a line above it and outside nested functions and classes, so that the call
    decides the mode the first step runs in (``model.eval()`` only after training, or ``model.train()``
    at the end of each epoch, leaves the first epoch in torch's default training mode)."""
    if scope is None:
        return True
    nodes = ast.walk(scope) if before is None else _own_nodes(scope)
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("train", "eval")
        and not n.args[1:]
        and (before is None or n.lineno < before)
        for n in nodes
    )


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a scope, not those of the functions, lambdas and classes defined in it."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        n = todo.pop()
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        out.append(n)
        todo.extend(ast.iter_child_nodes(n))
    return out


def trained_module(roles: Roles, opt: str, scope: ast.AST, fwd: list[ast.stmt]) -> str | None:
    """The module the optimizer trains (``optim.SGD(model.parameters())`` → ``model``); failing that, the
    first module the forward calls, in evaluation order (``criterion(model(x), y)`` → ``model``)."""
    link = roles.opt_module(opt, scope)
    if link is not None:
        return link[0]
    methods = _method_names(roles.tree)
    for a in fwd:
        for n in post_order(a):
            if isinstance(n, ast.Call) and not roles.resolve(n.func):
                if isinstance(n.func, ast.Name) and n.func.id[:1].islower() and n.func.id not in _BUILTIN_NAMES:
                    return n.func.id
                if _self_call(n, methods):
                    return ast.unparse(n.func)
    return None


def self_model(roles: Roles, fwd: list[ast.stmt]) -> str | None:
    """The first ``self.<attr>(...)`` the forward calls, in evaluation order, that is no method of a class of
    the file: a Trainer's model (``self.model``), never its own ``self.get_batch()``."""
    methods = _method_names(roles.tree)
    for a in fwd:
        for n in post_order(a):
            if isinstance(n, ast.Call) and not roles.resolve(n.func) and _self_call(n, methods):
                return ast.unparse(n.func)
    return None


def _self_call(n: ast.Call, methods: set[str]) -> bool:
    func = n.func
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and func.attr not in methods
    )


def _method_names(tree: ast.Module) -> set[str]:
    """Names of the methods the file's classes define (``self.<name>(...)`` calls one of them, not a module)."""
    return {
        f.name
        for c in nodes(tree)
        if isinstance(c, ast.ClassDef)
        for f in c.body
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def forward_modules(roles: Roles, fwd: list[ast.stmt]) -> list[str]:
    """Every module the forward calls by name (``decoder(x, h)`` beside ``encoder(x)``, ``netD(netG(z))``), in
    evaluation order: a name the file uses as a module (``Roles.module_names``) whose mode the file never sets
    (no ``name.train()`` / ``name.eval()`` anywhere: a frozen network put in eval mode stays as it is)."""
    moded = {
        n.func.value.id
        for n in nodes(roles.tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("train", "eval")
        and isinstance(n.func.value, ast.Name)
    }
    found = [
        n.func.id
        for a in fwd
        for n in post_order(a)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in roles.module_names
        and n.func.id not in moded
        and not roles.resolve(n.func)
    ]
    return list(dict.fromkeys(found))


def post_order(node: ast.AST):
    """Nodes children first: the order in which calls are evaluated."""
    for child in ast.iter_child_nodes(node):
        yield from post_order(child)
    yield node


def reads(node: ast.AST) -> list[str]:
    """Names read, in source order (a comprehension's own variables are not the loop's)."""
    inner = _comprehension_names(node)
    names = sorted(
        (n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in inner),
        key=lambda n: (n.lineno, n.col_offset),
    )
    return list(dict.fromkeys(n.id for n in names))


def writes(node: ast.AST) -> set[str]:
    inner = _comprehension_names(node)
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and id(n) not in inner
    }


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _comprehension_names(node: ast.AST) -> set[int]:
    """The Name nodes of variables a comprehension binds (``t`` in ``[t.to(d) for t in batch]``): they live
    in the comprehension's scope, not the loop's."""
    out: set[int] = set()
    for comp in ast.walk(node):
        if isinstance(comp, _COMPREHENSIONS):
            bound = {n.id for g in comp.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            out |= {id(n) for n in ast.walk(comp) if isinstance(n, ast.Name) and n.id in bound}
    return out


def method_call(s: ast.stmt, attr: str) -> ast.Call | None:
    """``<recv>.<attr>(...)`` as a whole expression statement."""
    if (
        isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Attribute)
        and s.value.func.attr == attr
    ):
        return s.value
    return None


def _optimizer_names(tree: ast.Module, imap: ImportMap) -> tuple[set[str], set[str]]:
    opts, scheds = set(), set()
    for n in nodes(tree):
        if not isinstance(n, ast.Assign):
            continue
        for t in n.targets:
            for name, value in _bound_calls(t, n.value):
                full = imap.resolve(value.func) or ""
                if not imap.is_framework(full):
                    continue
                if full.startswith("torch.optim.lr_scheduler."):
                    scheds.add(name)
                elif full.startswith("torch.optim.") and full.count(".") == 2:
                    opts.add(name)
    return opts, scheds


def _bound_calls(target: ast.expr, value: ast.expr) -> list[tuple[str, ast.Call]]:
    """(name, call) of ``x = f()``; of each ``a, b = f(), g()``; ``opts[k]`` of ``opts = [f(), g()]`` (several
    optimizers kept in a list: optimizer_lists.py)."""
    if isinstance(value, ast.Call):
        return [(ast.unparse(target), value)]
    if not isinstance(value, (ast.List, ast.Tuple)):
        return []
    if isinstance(target, ast.Tuple) and len(target.elts) == len(value.elts):
        return [(ast.unparse(t), v) for t, v in zip(target.elts, value.elts) if isinstance(v, ast.Call)]
    if isinstance(target, (ast.Name, ast.Attribute)):
        return [(f"{ast.unparse(target)}[{k}]", v) for k, v in enumerate(value.elts) if isinstance(v, ast.Call)]
    return []


# Methods and attributes only a learning-rate scheduler has.
_SCHEDULER_ONLY = frozenset({"get_last_lr", "get_lr", "last_epoch", "base_lrs"})


def _optimizer_facts(tree: ast.Module, optimizers: set[str]) -> tuple[set[str], set[str]]:
    """(receivers of ``.zero_grad()``; names that drive an optimizer's learning rate: bound to a call
    given an optimizer, or asked for scheduler-only attributes)."""
    zeroed = {ast.unparse(n.func.value) for n in nodes(tree) if is_method_call(n, "zero_grad")}  # type: ignore[attr-defined]
    known = optimizers | zeroed
    drivers: set[str] = set()
    for n in nodes(tree):
        if isinstance(n, ast.Attribute) and n.attr in _SCHEDULER_ONLY:
            drivers.add(ast.unparse(n.value))
        elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            given = [*n.value.args, *(k.value for k in n.value.keywords)]
            if any(ast.unparse(a) in known for a in given if isinstance(a, (ast.Name, ast.Attribute))):
                drivers |= {ast.unparse(t) for t in n.targets}
    return zeroed, drivers - known


def _optimizer_modules(tree: ast.Module, imap: ImportMap) -> dict[int, dict[str, tuple[str, bool]]]:
    """Per function (id of its ast; the module: id of the tree): ``opt = torch.optim.SGD(model.parameters(),
    ...)`` → {"opt": "model"}; also an optimizer a module makes for itself (``model.configure_optimizers(cfg)``)."""
    out: dict[int, dict[str, tuple[str, bool]]] = {}
    modules = _known_modules(tree, imap)
    scopes: list[ast.AST] = [tree]
    scopes += [n for n in nodes(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in scopes:
        found = out.setdefault(id(scope), {})
        for n in _own_statements(scope):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Call):
                module = _trained_module(n.value, imap, modules)
                if module is not None:
                    found[ast.unparse(n.targets[0])] = module
    return out


def _is_step_call(node: ast.AST) -> TypeGuard[ast.Call]:
    return is_method_call(node, "step")


def _bound_in(scope: ast.AST) -> set[str]:
    args = scope.args if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} if args else set()
    return names | {n.id for n in ast.walk(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _own_statements(scope: ast.AST):
    """Statements of a function (or module) outside its nested functions and classes."""
    todo = list(getattr(scope, "body", []))
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield n
        for part in ("body", "orelse", "finalbody", "handlers"):
            todo += getattr(n, part, [])


# Methods only a torch Module has (not an optimizer's, nor a trainer's ``train()``).
_MODULE_ONLY = frozenset(
    {"parameters", "named_parameters", "modules", "named_modules", "children", "named_children", "buffers", "apply"}
)


def _known_modules(tree: ast.Module, imap: ImportMap) -> set[str]:
    """Names (and ``self.x`` attributes) the file shows to hold a torch Module: receivers of Module-only
    methods, or bound to a torch.nn class or to a class of the file whose base is one."""
    nn_classes = {
        n.name
        for n in tree.body
        if isinstance(n, ast.ClassDef) and any((imap.resolve(b) or "").startswith("torch.nn.") for b in n.bases)
    }
    out: set[str] = set()
    for n in nodes(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MODULE_ONLY:
            out.add(ast.unparse(n.func.value))
        elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            func = n.value.func
            built = (imap.resolve(func) or "").startswith("torch.nn.") or (
                isinstance(func, ast.Name) and func.id in nn_classes
            )
            if built:
                out |= {ast.unparse(t) for t in n.targets}
    return out


def _trained_module(call: ast.Call, imap: ImportMap, modules: set[str]) -> tuple[str, bool] | None:
    full = imap.resolve(call.func) or ""
    if full.startswith("torch.optim.") and full.count(".") == 2:
        first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "params"), None)
        if (
            isinstance(first, ast.Call)
            and isinstance(first.func, ast.Attribute)
            and first.func.attr == "parameters"
            and not first.args
        ):
            return ast.unparse(first.func.value), True
    elif (
        isinstance(call.func, ast.Attribute)
        and "optim" in call.func.attr
        and not imap.resolve(call.func)
        and ast.unparse(call.func.value) in modules
    ):
        return ast.unparse(call.func.value), False  # a module's own optimizer (its parameter groups: another order)
    return None


def helper_zeros(roles: Roles, a: ast.stmt) -> list[str]:
    """``reset_grad()`` where the file's ``def reset_grad(): d_optimizer.zero_grad(); g_optimizer.zero_grad()``
    only clears gradients: the receivers it clears ([] for any other statement). The helper is looked up
    by name among the file's functions (a method called on ``self`` too); it must be the only one so named."""
    if not (isinstance(a, ast.Expr) and isinstance(a.value, ast.Call)) or a.value.args or a.value.keywords:
        return []
    func = a.value.func
    if isinstance(func, ast.Name):
        name, method = func.id, False
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        name, method = func.attr, True
    else:
        return []
    defs = [n for n in ast.walk(roles.tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    if len(defs) != 1 or len(defs[0].args.args) != int(method) or defs[0].args.vararg or defs[0].args.kwarg:
        return []
    body = [s for s in defs[0].body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    receivers = []
    for s in body:
        zero = method_call(s, "zero_grad")
        if zero is None:
            return []
        receivers.append(ast.unparse(zero.func.value))  # type: ignore[attr-defined]
    return receivers
