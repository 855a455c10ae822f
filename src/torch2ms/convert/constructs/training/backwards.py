"""The forward pass of each ``backward()`` of a block, and where its results must be (flow.py's Flow).

Each ``loss.backward()`` differentiates the statements before it that the loss depends on (its
slice: assignments, and loops or branches that assign to what it needs). Leading statements that
only prepare the batch (torch functions, methods of the batch) stay where they are, so random draws
happen once; the rest run inside its ``forward_fn``. A forward statement two losses share runs in
both forward functions (torch reuses one graph; MindSpore differentiates each function). Statements
that read what a forward computed run after the gradient call that computes it now.
"""

from __future__ import annotations

import ast
import builtins

import libcst as cst

from ....i18n import _
from ...cstutil import Statement
from .amp import inline_autocast
from .analysis import Roles, forward_modules, method_call, self_model, sets_mode
from .errors import NotConvertible
from .flow import (
    LOOPS,
    Backward,
    Flow,
    Holder,
    Holders,
    body_of,
    find_events,
    live_holders,
    loss_text,
    overwrites,
    reads,
    retains_graph,
    writes,
)
from .stores import FETCHES, stored_into, with_filled

_EVENT_CALLS = ("backward", "zero_grad", "step")
_BUILTINS = frozenset(dir(builtins))


def analyse_flow(roles: Roles, container: cst.CSTNode, stack: list[cst.CSTNode]) -> Flow:
    """The general training step of the block ``container`` (a loop, or a def without one)."""
    body, amp = inline_autocast(roles, body_of(container))  # autocast blocks: their statements join the block
    asts = [roles.ast_of(s) for s in body]
    if not body or any(a is None for a in asts):
        raise NotConvertible(_("cannot analyse the block around loss.backward()"))
    stmts: list[ast.stmt] = asts  # type: ignore[assignment]
    scope_node = next((n for n in reversed(stack) if isinstance(n, (cst.FunctionDef, cst.ClassDef))), None)
    scope_ast = (roles.ast_of(scope_node) if scope_node is not None else None) or roles.tree
    holders = Holders(roles, scope_ast)
    events = find_events(roles, body, stmts, holders)
    looped = isinstance(container, LOOPS)
    inner_local = writes(roles.ast_of(container) or stmts[0])
    backwards = []
    for at, a in enumerate(stmts):
        if method_call(a, "backward") is None:
            continue
        back = _backward(roles, stmts, at, inner_local)
        back.holders = live_holders(events, at, looped)
        if not back.holders:
            raise NotConvertible(_("loss.backward() without an optimizer step or a read of the gradients after it"))
        backwards.append(back)
    if not backwards:
        raise NotConvertible(_("loss.backward() is not a statement of its own in this block"))
    outer = _outer(roles, container, stack, backwards, holders, stmts)
    local = writes(roles.ast_of(outer) or stmts[0]) if isinstance(outer, LOOPS) else writes(scope_ast)
    _reuse_prepared(roles, stmts, backwards, inner_local)
    for back in backwards:
        back.params = _params(stmts, back.forward, local)
    carried = {p for back in backwards for p in back.params}  # another backward's forward reads them too
    for back in backwards:
        back.aux = _aux(scope_ast, stmts, back, carried)
    if looped:
        _check_retained(stmts, backwards)
    _place_after(stmts, backwards)
    train = _modules_to_train(roles, scope_ast, holders, stmts, backwards)
    setup_before = outer if isinstance(outer, LOOPS) else body[_first_involved(stmts, backwards, events)]
    if amp is not None and amp.blocks and setup_before in [s for w in amp.blocks for s in body_of(w)]:
        setup_before = next(w for w in amp.blocks if setup_before in body_of(w))
    return Flow(body, stmts, backwards, events, holders.by_key, setup_before, scope_ast, train, amp)


def _reuse_prepared(roles: Roles, stmts: list[ast.stmt], backwards: list[Backward], local: set[str]) -> None:
    """A statement an earlier forward_fn already ran is not run again by a later forward_fn when the later
    loss's gradient cannot flow through it: it calls none of the modules that backward differentiates
    and reads nothing that forward recomputes (the noise a GAN draws once for both losses; the generated
    batch the discriminator's loss reads after the generator's step). The later forward_fn takes the
    value the earlier gradient call returned, as torch computed it once (before any step in between)."""
    trains = [set().union(*(_trained_by(roles, h) for h in b.holders)) for b in backwards]
    every = set().union(*trains)
    for k, back in enumerate(backwards[1:], 1):
        modules = trains[k]
        others = every - modules - {None} if None not in modules else set()
        kept: set[str] = set()
        again = []
        for i in back.forward:
            a = stmts[i]
            # torch ran it before the previous backward(): in that forward_fn, or left in the loop
            if i < backwards[k - 1].at and not reads(a) & kept and _only_calls(roles, a, local, others):  # type: ignore[arg-type]
                again.append(i)
                continue
            kept |= writes(a)
        if again and len(again) < len(back.forward):
            back.forward = [i for i in back.forward if i not in again]


def _trained_by(roles: Roles, holder: Holder) -> set[str | None]:
    """The modules whose parameters a holder's gradients are: its module, else the receivers of
    ``.parameters()`` in its optimizer's construction (``SGD(itertools.chain(a.parameters(), b.parameters()))``);
    {None} when unknown."""
    if holder.module:
        return {holder.module}
    for n in ast.walk(roles.tree):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and ast.unparse(n.targets[0]) == holder.key:
            found: set[str | None] = {
                ast.unparse(c.func.value)
                for c in ast.walk(n.value)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "parameters"
            }
            return found or {None}
    return {None}


def _only_calls(roles: Roles, a: ast.stmt, local: set[str], modules: set[str]) -> bool:
    """Calls only torch, methods of values that hold no module (the block's tensors, a numpy ``rng``) and
    these modules (``gen(noise)``): no user function or other module that might reach a parameter the later
    backward differentiates."""
    for n in ast.walk(a):
        if not isinstance(n, ast.Call) or roles.resolve(n.func) or ast.unparse(n.func) in modules:
            continue
        chain = n.func
        while isinstance(chain, ast.Attribute):
            chain = chain.value
        if not isinstance(chain, ast.Name) or chain.id in _BUILTINS:
            continue
        if chain is n.func or chain.id == "self" or (chain.id not in local and chain.id in roles.module_names):
            return False
    return True


def _check_retained(stmts: list[ast.stmt], backwards: list[Backward]) -> None:
    """``backward(retain_graph=True)`` changes no gradient when each step's forward starts afresh (a GAN's
    discriminator and generator losses over one generated batch: each forward_fn recomputes it). A value
    a forward computes and the next iteration's forward reads (a hidden state not detached) carries the
    graph across batches: torch then backpropagates through the earlier batches, a forward_fn cannot."""
    if not any(retains_graph(stmts[b.at]) for b in backwards):
        return
    produced = {name for b in backwards for i in b.forward for name in writes(stmts[i])}
    carried = sorted(
        {
            name
            for b in backwards
            for i in b.forward
            for name in reads(stmts[i]) & produced
            if not any(name in writes(stmts[j]) for j in range(i))  # read before this iteration writes it
        }
    )
    if carried:
        raise NotConvertible(
            _(
                "backward(retain_graph=True) with {names} carried into the next iteration's forward "
                "(torch backpropagates through the earlier batches): port by hand"
            ).format(names=", ".join(carried))
        )


def _backward(roles: Roles, asts: list[ast.stmt], at: int, local: set[str]) -> Backward:
    loss, scaler = loss_text(asts[at])
    forward = forward_slice(roles, asts, at, local)
    if not forward:
        raise NotConvertible(
            _(
                "{loss} is not computed by a model in this block "
                "(built from tensors recorded earlier: MindSpore differentiates a function, not a tape)"
            ).format(loss=ast.unparse(loss))
        )
    return Backward(at, loss, scaler, forward, [], [])


def forward_slice(roles: Roles, asts: list[ast.stmt], at: int, local: set[str]) -> list[int]:
    """The statements of the forward pass behind ``backward()`` at ``at``; [] when no model computes it."""
    forward = _forward_part(roles, asts, _slice(asts, at, loss_text(asts[at])[0], roles.fillers), local)
    return forward if any(_calls_model(roles, asts[i], local) for i in forward) else []


def _calls_model(roles: Roles, a: ast.stmt, local: set[str]) -> bool:
    """A call of a module or user function (``model(x)``, ``self.net(x)``, ``get_batch()``), not of
    torch or of a method of the block's own values (``torch.cat(losses).sum()``)."""
    for n in ast.walk(a):
        if not isinstance(n, ast.Call) or roles.resolve(n.func):
            continue
        chain = n.func
        while isinstance(chain, ast.Attribute):
            chain = chain.value
        if isinstance(chain, ast.Name) and chain.id not in _BUILTINS and (chain.id == "self" or chain.id not in local):
            return True
    return False


def _touches_gradients(a: ast.stmt) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _EVENT_CALLS
        for n in ast.walk(a)
    ) or any(isinstance(n, ast.Attribute) and n.attr == "grad" for n in ast.walk(a))


def _slice(asts: list[ast.stmt], at: int, loss: ast.expr, fillers: dict[str, set[int]]) -> list[int]:
    """Statements before ``backward()`` the loss depends on (a whole assignment overwrites a name; a statement
    that fills its items changes it: stores.py)."""
    needed = reads(loss)
    out = []
    for i in range(at - 1, -1, -1):
        a = asts[i]
        if not (writes(a) | stored_into(a, fillers)) & needed:
            continue
        if _touches_gradients(a):
            raise NotConvertible(
                _("the loss depends on a statement that also steps or clears gradients (line {line})").format(
                    line=a.lineno
                )
            )
        out.append(i)
        needed = (needed - overwrites(a)) | reads(a)
    return sorted(out)


def _is_prep(roles: Roles, a: ast.stmt, local: set[str]) -> bool:
    """Only torch functions and methods of the block's own values: preparing the batch, no model."""
    local = local | {
        t.id
        for c in ast.walk(a)
        if isinstance(c, ast.comprehension)
        for t in ast.walk(c.target)
        if isinstance(t, ast.Name)
    }
    for n in ast.walk(a):
        if not isinstance(n, ast.Call) or roles.resolve(n.func):
            continue
        root = n.func
        while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if isinstance(n.func, ast.Name) and n.func.id in _BUILTINS:
            continue  # next(it), len(x), iter(loader): fetching the batch
        if not (isinstance(n.func, ast.Attribute) and isinstance(root, ast.Name) and root.id in local):
            return False
    return True


def _forward_part(roles: Roles, asts: list[ast.stmt], slice_idx: list[int], local: set[str]) -> list[int]:
    """The slice without its preparation statements: the leading ones, and later ones that read nothing the
    forward computed and change nothing it read before them (a WGAN-GP's ``alpha = torch.rand(...)`` after
    the discriminator's first outputs: drawn on the host, once, as the leading draws are). A tensor the forward
    fills item by item is made inside it, wherever it is made (stores.py)."""
    out: list[int] = []
    computed: set[str] = set()
    seen: set[str] = set()
    for k, i in enumerate(slice_idx):
        a = asts[i]
        later = set().union(*(writes(asts[j]) | stored_into(asts[j], roles.fillers) for j in slice_idx[k + 1 :]))
        calls = any(isinstance(n, ast.Call) for n in ast.walk(a))
        if _is_prep(roles, a, local) and (not out or calls and not (reads(a) & computed or writes(a) & (seen | later))):
            continue
        out.append(i)
        computed |= writes(a)
        seen |= reads(a) | writes(a)
    return with_filled(asts, slice_idx, out, roles.fillers, FETCHES | roles.data_functions | roles.data_objects)


def _params(asts: list[ast.stmt], forward: list[int], local: set[str]) -> list[str]:
    """Locals the forward reads before it assigns them: forward_fn's parameters (plain names only)."""
    params: list[str] = []
    _free_reads([asts[i] for i in forward], set(), params)
    return [p for p in params if "." not in p and p in local]


def _free_reads(stmts: list[ast.stmt], assigned: set[str], out: list[str]) -> set[str]:
    """Names read before this code assigns them, in order of execution (branches from the same state)."""
    for a in stmts:
        if isinstance(a, ast.If):
            _note(reads(a.test), assigned, out)
            assigned |= _free_reads(a.body, set(assigned), out) | _free_reads(a.orelse, set(assigned), out)
        elif isinstance(a, (ast.For, ast.AsyncFor)):
            _note(reads(a.iter), assigned, out)
            inner = assigned | writes(a.target)
            assigned |= _free_reads(a.body, inner, out) | _free_reads(a.orelse, set(inner), out)
        elif isinstance(a, ast.While):
            _note(reads(a.test), assigned, out)
            assigned |= _free_reads(a.body, set(assigned), out)
        elif isinstance(a, (ast.With, ast.AsyncWith)):
            for item in a.items:
                _note(reads(item.context_expr), assigned, out)
            assigned |= _free_reads(a.body, assigned | writes(a), out)
        else:
            _note(sorted(reads(a), key=lambda name: _first_use(a, name)), assigned, out)
            assigned |= writes(a)
    return assigned


def _note(names, assigned: set[str], out: list[str]) -> None:
    for name in names:
        if name not in assigned and name not in out:
            out.append(name)


def _first_use(a: ast.stmt, name: str) -> tuple[int, int]:
    found = [(n.lineno, n.col_offset) for n in ast.walk(a) if isinstance(n, ast.Name) and n.id == name]
    return min(found, default=(0, 0))


def _aux(scope: ast.AST, asts: list[ast.stmt], back: Backward, carried: set[str]) -> list[str]:
    """Names the forward computes that the code around reads (returned next to the loss), in order.
    Reads inside this forward's own statements do not count (they stay locals of forward_fn) unless
    the name is carried to a forward_fn call (a parameter of this one or another one's): a name bound on one
    path only (``topi`` in the branch without teacher forcing) is no return value that may be unbound."""
    own = {id(asts[i]) for i in back.forward}
    read = set().union(*(_visible_reads(n) for n in _pruned(scope, own))) | carried
    loss = ast.unparse(back.loss)
    order: list[str] = []
    for i in back.forward:
        for n in ast.walk(asts[i]):
            text = ast.unparse(n) if isinstance(n, (ast.Name, ast.Attribute)) else ""
            if text in writes(asts[i]) and text in read and text != loss and text not in order and "." not in text:
                order.append(text)
    return order


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _visible_reads(node: ast.AST) -> set[str]:
    """What ``node`` reads of the code around it: a function defined in it reads its own parameters and
    locals (``def show(xs): for i in ...: print(xs[i])`` reads no ``i`` of the training loop's; returned from
    forward_fn, a loop variable stops GRAPH_MODE's compile: "defined in the 'for' loop body")."""
    if not any(isinstance(n, _FUNCTIONS) for n in ast.walk(node)):
        return reads(node)
    inner = set().union(set(), *(_visible_reads(c) for c in ast.iter_child_nodes(node)))
    if not isinstance(node, _FUNCTIONS):
        return inner
    args = node.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    declared = {name for n in ast.walk(node) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    body = node.body if isinstance(node.body, list) else [node.body]
    local = (params | set().union(set(), *(writes(s) for s in body))) - declared
    return {r for r in inner if r.split(".")[0] not in local}


def _pruned(node: ast.AST, skip: set[int]) -> list[ast.AST]:
    """The statements and expressions directly under ``node``'s statements, the subtrees in ``skip`` left
    out (each returned node is whole: reads() of it sees no skipped statement)."""
    out: list[ast.AST] = []
    for _field, value in ast.iter_fields(node):
        children = value if isinstance(value, list) else [value]
        for child in children:
            if not isinstance(child, ast.AST) or id(child) in skip:
                continue
            if isinstance(child, ast.stmt) and any(id(n) in skip for n in ast.walk(child)):
                out += _pruned(child, skip)
            else:
                out.append(child)
    return out


def _place_after(asts: list[ast.stmt], backwards: list[Backward]) -> None:
    """A statement that reads what a forward statement computed (which now runs inside a forward_fn,
    at the gradient call of the first backward that needs it) runs right after that call."""
    first: dict[int, Backward] = {}
    for back in backwards:
        for i in back.forward:
            first.setdefault(i, back)
    moved: dict[int, Backward] = {}
    for s in range(len(asts)):
        if s in first or any(s == b.at for b in backwards):
            continue
        for f, back in [*first.items(), *moved.items()]:
            if f < s < back.at and reads(asts[s]) & writes(asts[f]):
                moved[s] = back
                back.after.append(s)
                break


def _outer(
    roles: Roles,
    container: cst.CSTNode,
    stack: list[cst.CSTNode],
    backwards: list[Backward],
    holders: Holders,
    asts: list[ast.stmt],
) -> cst.CSTNode:
    """Where the setup goes: before the outermost loop that builds neither the model nor its optimizer
    (a block that is no loop: the block itself)."""
    if not isinstance(container, LOOPS):
        return container
    needed = {h.key.split(".")[0] for h in holders.by_key.values()}
    for back in backwards:
        for i in back.forward:
            needed |= {n.func.id for n in ast.walk(asts[i]) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    scope_at = max((i for i, n in enumerate(stack) if isinstance(n, (cst.FunctionDef, cst.ClassDef))), default=-1)
    for lp in [n for n in stack[scope_at + 1 :] if isinstance(n, LOOPS)] + [container]:
        la = roles.ast_of(lp)
        if la is not None and not writes(la) & needed:
            return lp
    raise NotConvertible(_("the model or its optimizer is created inside the training loop"))


def _first_involved(asts: list[ast.stmt], backwards: list[Backward], events: list) -> int:
    """The first statement of a loop-less block that takes part in the step (the setup goes before it)."""
    firsts = [min(b.forward) for b in backwards] + [e.top for e in events]
    return min(firsts)


def _modules_to_train(
    roles: Roles, scope: ast.AST, holders: Holders, asts: list[ast.stmt], backwards: list[Backward]
) -> list[str]:
    """The modules the optimizers train, when the code never sets their mode (torch modules start in
    training mode, MindSpore cells do not)."""
    if sets_mode(scope, min(asts[i].lineno for b in backwards for i in b.forward)):
        return []
    called = forward_modules(roles, [asts[i] for b in backwards for i in b.forward])
    modules = [h.module for h in holders.by_key.values() if h.module]
    if modules:
        return list(dict.fromkeys([*modules, *called]))  # type: ignore[list-item]
    for back in backwards:
        for i in back.forward:
            for n in ast.walk(asts[i]):
                if (
                    isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Name)
                    and not roles.resolve(n.func)
                    and n.func.id not in vars(builtins)  # range(...) in the forward is no model
                ):
                    return list(dict.fromkeys([n.func.id, *called]))  # decoder(...) as well as encoder(...)
    model = self_model(roles, [asts[i] for b in backwards for i in b.forward])  # a Trainer's self.model(x)
    return list(dict.fromkeys([model, *called])) if model else called


__all__ = ["analyse_flow", "Statement"]
