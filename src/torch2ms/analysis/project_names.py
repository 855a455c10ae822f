"""Torch names one project file gets from another: ``from .parts import *`` and re-exports.

A model split over files (``parts.py`` imports ``torch.nn as nn``; ``model.py`` does
``from .parts import *`` and subclasses ``nn.Module``) has no torch import of its own in
``model.py``: read alone, it uses no torch API. Across the project, each module exports the torch
names bound at its top level (``__all__`` limits a star import, as in Python; names with a leading
underscore are not star-exported), and a module importing from another gets them: by ``*``, or by
name (``from .utils import F``). Chains (``models/__init__.py`` star-importing each model file)
are followed to a fixed point. Static: ``ast`` only.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import PurePath

from .astwalk import nodes
from .imports import ImportMap

Bindings = dict[str, str]  # local name → full torch name


def module_name(rel: str | PurePath) -> str:
    """``pkg/parts.py`` → ``pkg.parts``; ``pkg/__init__.py`` → ``pkg``."""
    parts = list(PurePath(rel).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _all_names(tree: ast.Module) -> set[str] | None:
    """A literal ``__all__`` (list or tuple of strings), else None."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                return {e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return None


def top_level_imports(tree: ast.Module) -> ast.Module:
    """What :func:`project_bindings` reads of a module (its top-level imports and ``__all__``): a caller
    walking a whole tree keeps this instead of every file's syntax tree (memory would grow with the tree)."""
    keep: list[ast.stmt] = [
        n
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets))
    ]
    return ast.Module(body=keep, type_ignores=[])


def _own_torch_names(tree: ast.Module, local_roots: frozenset[str]) -> Bindings:
    """Torch names bound by the module's own top-level imports."""
    top = ast.Module(body=[n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[])
    imap = ImportMap.from_tree(top, local_roots)
    return {k: v for k, v in imap.names.items() if imap.is_framework(v)}


def _targets(node: ast.ImportFrom, module: str, is_package: bool, modules: set[str]) -> str | None:
    """The project module an import-from statement reads, if it is one."""
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        target = ".".join([*base, node.module] if node.module else base)
        return target if target in modules else None
    if not node.module:
        return None
    package = module.split(".")[:-1] if not is_package else module.split(".")
    for candidate in (node.module, ".".join([*package, node.module])):
        if candidate in modules:
            return candidate  # absolute, or a sibling of a script run from its own folder
    return None


def project_bindings(
    trees: Mapping[str, tuple[ast.Module, bool]], local_roots: frozenset[str] = frozenset()
) -> dict[str, Bindings]:
    """Per module (dotted name → (tree, is_package)): the torch names it gets from other project
    modules, by star import or by name, not bound by its own imports."""
    own = {m: _own_torch_names(t, local_roots) for m, (t, _) in trees.items()}
    visible = {m: dict(b) for m, b in own.items()}  # what each module binds at top level
    names = set(trees)
    links: dict[str, list[tuple[str, list[tuple[str, str]] | None]]] = {}
    for m, (tree, is_package) in trees.items():
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                target = _targets(node, m, is_package, names)
                if target is None or target == m:
                    continue
                star = any(a.name == "*" for a in node.names)
                pairs = None if star else [(a.name, a.asname or a.name) for a in node.names]
                links.setdefault(m, []).append((target, pairs))
    exported = {m: _all_names(t) for m, (t, _) in trees.items()}
    changed = True
    while changed:  # chains of star imports and re-exports
        changed = False
        for m, deps in links.items():
            for target, pairs in deps:
                src = visible[target]
                if pairs is None:
                    allowed = exported[target]
                    got = {
                        k: v for k, v in src.items() if (k in allowed if allowed is not None else not k.startswith("_"))
                    }
                else:
                    got = {local: src[name] for name, local in pairs if name in src}
                for k, v in got.items():
                    if k not in own[m] and visible[m].get(k) != v:
                        visible[m][k] = v
                        changed = True
    return {m: {k: v for k, v in visible[m].items() if k not in own[m]} for m in trees}


# A module's reads of other project modules (``imported_names``): whether it is a package's
# ``__init__``, its import-from statements (any depth), its ``import x [as y]`` bindings (local →
# dotted name) and the attributes read on each plain name (``y.X``).
ModuleUses = tuple[bool, list[ast.ImportFrom], dict[str, str], dict[str, set[str]]]


def module_uses(tree: ast.Module, is_package: bool) -> ModuleUses:
    """What ``imported_names`` reads of one module (kept instead of its tree)."""
    froms: list[ast.ImportFrom] = []
    aliases: dict[str, str] = {}
    attrs: dict[str, set[str]] = {}
    for n in nodes(tree):  # ast.walk's order, one cached walk per tree
        if isinstance(n, ast.ImportFrom):
            froms.append(n)
        elif isinstance(n, ast.Import):
            aliases.update({a.asname: a.name for a in n.names if a.asname})
            aliases.update({a.name: a.name for a in n.names if not a.asname and "." not in a.name})
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            attrs.setdefault(n.value.id, set()).add(n.attr)
    return is_package, froms, aliases, attrs


def imported_names(uses: Mapping[str, ModuleUses]) -> dict[str, set[str]]:
    """Per project module: the names other project modules import from it (``from m import X``,
    ``from .m import X``, ``import m`` then ``m.X``; ``"*"``: a star import takes them all)."""
    modules = set(uses)
    out: dict[str, set[str]] = {m: set() for m in modules}
    for m, (is_package, froms, aliases, attrs) in uses.items():
        bound = {local: target for local, target in aliases.items() if target in modules}
        for node in froms:
            target = _targets(node, m, is_package, modules)
            if target is None or target == m:
                continue
            for a in node.names:
                if f"{target}.{a.name}" in modules:  # from pkg import sub: a module, read as sub.X
                    bound[a.asname or a.name] = f"{target}.{a.name}"
                else:
                    out[target].add(a.name)
        for local, target in bound.items():
            if target != m:
                out[target] |= attrs.get(local, set())
    return out
