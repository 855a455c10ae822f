"""One flat walk per tree, shared by every analysis that reads a whole module.

A dozen passes (imports, inference, plan, re-exports, training, checkpoints, data pipelines) each
used to ``ast.walk`` the module; the generator costs far more than iterating a list. The trees are
never mutated after parsing, so the list stays valid for the tree's lifetime.
"""

from __future__ import annotations

import ast

from ..kb.source import dotted as dotted  # the one helper, kept importable from here

_ATTR = "_torch2ms_nodes"


def nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node under ``tree`` in ``ast.walk`` order, computed once per tree."""
    below = getattr(tree, _ATTR, None)
    if below is None:
        below = walk(tree)[1:]
        # Without the root: a list holding the tree that holds the list would be a reference cycle,
        # and every converted module's tree would wait for the cyclic garbage collector.
        setattr(tree, _ATTR, below)
    return [tree, *below]


def forget(tree: ast.AST) -> None:
    """Drop the cached walk of a tree that was edited in place (the next nodes() walks it again)."""
    tree.__dict__.pop(_ATTR, None)


# Fields that never hold a node (names, numbers, flags): not looked at. ``Constant.value`` may be
# any Python object and is skipped by class below.
_LEAF_FIELDS = frozenset(
    {
        "id",
        "attr",
        "arg",
        "module",
        "level",
        "asname",
        "kind",
        "type_comment",
        "conversion",
        "is_async",
        "simple",
        "name",
    }
)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
_TYPE_ALIAS = getattr(ast, "TypeAlias", None)  # Python 3.12+: its ``name`` is a Name node


def walk(tree: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(tree))``, same order, without a generator step per node and without looking
    at fields that hold strings or numbers: about 1.8x faster."""
    out = [tree]
    append = out.append
    fields_of = _CHILD_FIELDS
    for node in out:  # the list grows while it is read: breadth-first, like ast.walk's deque
        kind = node.__class__
        fields = fields_of.get(kind)
        if fields is None:
            fields = _child_fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        append(item)
            elif isinstance(value, ast.AST):
                append(value)
    return out


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes, computed once per class."""
    fields = _CHILD_FIELDS[kind] = tuple(
        f
        for f in kind._fields  # type: ignore[attr-defined]
        if not (f in _LEAF_FIELDS and kind is not _TYPE_ALIAS or kind is ast.Constant and f == "value")
    )
    return fields


def depth(tree: ast.AST) -> int:
    """How many levels below ``tree`` its deepest node lies (what a recursive walk over
    ``ast.iter_child_nodes`` finds); the walk made on the way is cached as ``nodes(tree)`` reads it."""
    return walked_depth(tree)


def walked_depth(tree: ast.AST) -> int:
    """How many levels below ``tree`` its deepest node lies, counted while the walk ``nodes(tree)`` caches
    is made: one pass for both (a file's depth is checked before the converter walks it). In breadth-first
    order a level ends where the list stood when its first node was reached. Its child loop is ``walk``'s,
    inlined: a call per node would cost what the single pass saves."""
    out = [tree]
    append = out.append
    fields_of = _CHILD_FIELDS
    deepest, level_end = 0, 1
    for i, node in enumerate(out):
        if i == level_end:  # the first node one level deeper: that level is all in the list now
            deepest += 1
            level_end = len(out)
        kind = node.__class__
        fields = fields_of.get(kind)
        if fields is None:
            fields = _child_fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        append(item)
            elif isinstance(value, ast.AST):
                append(value)
    if getattr(tree, _ATTR, None) is None:
        setattr(tree, _ATTR, out[1:])  # (without the root: see nodes)
    return deepest


def bound_names(tree: ast.AST) -> set[str]:
    """Every name the code uses or binds (names, defs, arguments): generated names avoid them."""
    used: set[str] = set()
    for n in nodes(tree):
        if isinstance(n, ast.Name):
            used.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            used.add(n.name)
        elif isinstance(n, ast.arg):
            used.add(n.arg)
    return used


def fresh_name(used: set[str], base: str) -> str:
    """``base``, or ``base_2``, ``base_3``...: the first not in ``used`` (then added to it)."""
    name, i = base, 2
    while name in used:
        name, i = f"{base}_{i}", i + 1
    used.add(name)
    return name


def is_method_call(node: ast.AST, attr: str) -> bool:
    """``<anything>.attr(...)``."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr
