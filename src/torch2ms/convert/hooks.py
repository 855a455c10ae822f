"""How a construct module plugs into the rewrite stage: hooks registered per kind of node.

A construct (no_grad blocks, data pipelines, autograd.Function, ...) is one module of plain
functions, each registered with a decorator, the way pyupgrade's plugins register per AST node::

    @leave(cst.For, when=has_data_pipeline)
    def loader_loop(ctx: RewriteContext, original: cst.For, updated: cst.For) -> cst.For:
        ...

Hook kinds and when the rewrite stage calls them (rewriter.py):

- ``leave(NodeType)``: after the KB rules rewrote the node and its children; returns the node that
  replaces it (``updated`` when nothing changes). Classes and defs: before their marks are
  attached (the hook may add marks); other statements: after.
- ``torch_call``: a call of a resolved torch name, before the KB entry is applied; returns the
  replacement, or None to let the KB decide.
- ``call``: any other call, before the Tensor/Module method rules; None: not this hook's.
- ``attribute``: an attribute that is not a torch name, before the Tensor attribute rules; None: not
  this hook's.
- ``reference``: a torch name used as a value (a base class, ``isinstance`` argument), before the KB
  entry is applied; None: let the KB decide.
- ``skip(NodeType)``: return True to leave the node (and everything in it) untouched.

``when`` is a predicate on the file's facts, evaluated once per file: a construct whose facts are
absent costs nothing. Every hook belongs to the construct its module declares (construct.py): the
construct's ``gate`` turns all its hooks off for a file, and its ``order`` orders the hooks of several
constructs on one kind of node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .construct import Construct, Constructs
from .facts import ModuleFacts

Gate = Callable[[ModuleFacts], bool]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Hook:
    kind: str  # leave | torch_call | call | attribute | reference | skip
    node_type: type | None
    fn: Callable[..., Any]
    when: Gate | None


REGISTRY: list[Hook] = []


def _register(kind: str, node_type: type | None, when: Gate | None) -> Callable[[F], F]:
    def deco(fn: F) -> F:
        REGISTRY.append(Hook(kind, node_type, fn, when))
        return fn

    return deco


def leave(node_type: type, when: Gate | None = None) -> Callable[[F], F]:
    return _register("leave", node_type, when)


def skip(node_type: type, when: Gate | None = None) -> Callable[[F], F]:
    return _register("skip", node_type, when)


def torch_call(when: Gate | None = None) -> Callable[[F], F]:
    return _register("torch_call", None, when)


def call(when: Gate | None = None) -> Callable[[F], F]:
    return _register("call", None, when)


def attribute(when: Gate | None = None) -> Callable[[F], F]:
    return _register("attribute", None, when)


def reference(when: Gate | None = None) -> Callable[[F], F]:
    return _register("reference", None, when)


class ActiveHooks:
    """The hooks whose construct applies to one file, by kind (and node type), in the constructs' order."""

    def __init__(self, facts: ModuleFacts, constructs: Constructs) -> None:
        # The construct modules registered their hooks when the package found them (constructs/).
        self.by_node: dict[tuple[str, type], list[Callable[..., Any]]] = {}
        self.by_kind: dict[str, list[Callable[..., Any]]] = {}
        gates: dict[int, bool] = {}
        for hook, owner in ordered(constructs):
            if id(owner) not in gates:
                gates[id(owner)] = owner.gate is None or owner.gate(facts)
            if not gates[id(owner)] or (hook.when is not None and not hook.when(facts)):
                continue
            if hook.node_type is not None:
                self.by_node.setdefault((hook.kind, hook.node_type), []).append(hook.fn)
            else:
                self.by_kind.setdefault(hook.kind, []).append(hook.fn)

    def leave(self, node_type: type) -> list[Callable[..., Any]]:
        return self.by_node.get(("leave", node_type), [])

    def skip(self, node_type: type) -> list[Callable[..., Any]]:
        return self.by_node.get(("skip", node_type), [])

    def kind(self, kind: str) -> list[Callable[..., Any]]:
        return self.by_kind.get(kind, [])


def ordered(constructs: Constructs) -> list[tuple[Hook, Construct]]:
    """Every registered hook with its construct, by the construct's place (then registration order).
    A hook whose module declares no construct is a mistake, named here."""
    if _ORDERED and _ORDERED[0] is constructs and _ORDERED[1] == len(REGISTRY):
        return _ORDERED[2]
    place = {id(c): i for i, c in enumerate(constructs.all)}
    out: list[tuple[int, int, Hook, Construct]] = []
    for i, hook in enumerate(REGISTRY):
        owner = constructs.owner(hook.fn.__module__)
        if owner is None:
            raise LookupError(f"hook {hook.fn.__qualname__} in {hook.fn.__module__}: its module declares no CONSTRUCT")
        out.append((place[id(owner)], i, hook, owner))
    out.sort(key=lambda t: (t[0], t[1]))
    _ORDERED[:] = [constructs, len(REGISTRY), [(h, c) for _, _, h, c in out]]
    return _ORDERED[2]


_ORDERED: list[Any] = []  # [the constructs, how many hooks were registered, the hooks ordered]: built once
