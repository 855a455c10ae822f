"""Attributes a Module caches on itself in forward (static, ``ast`` only).

``self.src_mask = None`` in ``__init__``, then in ``forward``: ``if self.src_mask is None or ...:
self.src_mask = <built from the input>`` and ``self.encoder(x, mask=self.src_mask)``. GRAPH_MODE
cannot carry such a tensor attribute (convert/constructs/graph_mode.py makes it a local).
"""

from __future__ import annotations

import ast

from .astwalk import nodes


def self_attr(node: ast.AST) -> str | None:
    """``self.x`` → "x"."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def forward_caches(cls: ast.ClassDef) -> list[str]:
    """Attributes set to None in __init__, assigned in forward from values that do not read them,
    and used by no other method."""
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    init, forward = methods.get("__init__"), methods.get("forward")
    if init is None or forward is None:
        return []
    none_attrs = {
        name
        for n in nodes(init)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is None
        for t in n.targets
        if (name := self_attr(t))
    }
    out = []
    for attr in sorted(none_attrs):
        writes = [
            n for n in nodes(forward) if isinstance(n, ast.Assign) and any(self_attr(t) == attr for t in n.targets)
        ]
        elsewhere = any(
            self_attr(n) == attr for name, f in methods.items() if name not in ("__init__", "forward") for n in nodes(f)
        )
        reads_itself = any(self_attr(n) == attr for w in writes for n in nodes(w.value))
        if writes and not elsewhere and not reads_itself:
            out.append(attr)
    return out


# Tensor methods that only change a tensor's dtype, device or layout, never its values.
_CASTS = frozenset({"to", "type", "float", "double", "half", "bfloat16", "cpu", "cuda", "contiguous"})


def _cast_of(node: ast.AST, attr: str) -> bool:
    """``self.attr.to(...)`` / ``.type(dtype)`` / ``.float()``... of the attribute itself."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CASTS):
        return False
    if node.func.attr == "type" and not (node.args or node.keywords):
        return False  # x.type() is the type's name, not a cast
    return self_attr(node.func.value) == attr


def _recast(value: ast.AST, attr: str) -> bool:
    """A value that is the attribute re-cast: a cast, or ``cast if self.attr is not None else None``."""
    if isinstance(value, ast.IfExp):
        branches = (value.body, value.orelse)
        plain = all(
            _cast_of(b, attr) or self_attr(b) == attr or (isinstance(b, ast.Constant) and b.value is None)
            for b in branches
        )
        return plain and any(_cast_of(b, attr) for b in branches)
    return _cast_of(value, attr)


def has_recasts(tree: ast.AST) -> bool:
    """Whether any statement of ``tree`` re-casts a self attribute in place (one pass over the
    shared walk: most files have none, and recast_attributes need not look at their classes)."""
    assigns = [n for n in nodes(tree) if n.__class__ is ast.Assign]
    return any((attr := self_attr(n.targets[0])) is not None and _recast(n.value, attr) for n in assigns)


def recasts_anywhere(tree: ast.AST) -> bool:
    """Whether any assignment of ``tree`` re-casts a self attribute, whichever of its targets that is:
    without one, ``recast_attributes`` of every class in it is empty."""
    assigns = [n for n in nodes(tree) if n.__class__ is ast.Assign]
    return any(
        (attr := self_attr(t)) is not None and _recast(n.value, attr)
        for n in assigns
        for t in n.targets  # type: ignore[attr-defined]
    )


def recast_attributes(cls: ast.ClassDef) -> dict[str, list[str]]:
    """Method → attributes it only re-casts in place (``self.mask = self.mask.to(dtype=x.dtype)``,
    CLIP's attention): no other method but ``__init__`` writes them. Same values on every call, so
    a local cast of the attribute gives torch's outputs."""
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    writes: dict[str, list[tuple[str, ast.AST | None]]] = {}
    for name, f in methods.items():
        for n in nodes(f):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
            value = n.value if isinstance(n, ast.Assign) else None
            for t in targets:
                if (attr := self_attr(t)) and name != "__init__":
                    writes.setdefault(attr, []).append((name, value))
    out: dict[str, list[str]] = {}
    for attr, where in sorted(writes.items()):
        owners = {name for name, _ in where}
        if len(owners) == 1 and all(v is not None and _recast(v, attr) for _, v in where):
            out.setdefault(owners.pop(), []).append(attr)
    return out


def graph_methods(cls: ast.ClassDef) -> frozenset[str]:
    """The methods of a Module class that GRAPH_MODE compiles: ``forward`` and every method it
    reaches through ``self.name(...)`` calls, transitively (a helper called from forward is
    compiled with it)."""
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    reached: set[str] = set()
    todo = ["forward"] if "forward" in methods else []
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        for n in nodes(methods[name]):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "self"
                and n.func.attr in methods
            ):
                todo.append(n.func.attr)
    return frozenset(reached)
