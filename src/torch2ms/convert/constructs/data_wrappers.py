"""Datasets wrapped before a DataLoader reads them, and loader arguments passed as ``**dict`` (issue 23 §2.2).

A ``Subset``, a ``random_split`` part or a ``ConcatDataset`` yields the samples of the dataset it wraps:
its columns (and whether samples are dicts) are that dataset's, so ``train_set, val_set =
random_split(SegData(...), ...)`` gives the loaders over them the class's own column names.
``DataLoader(train_set, shuffle=True, **loader_args)`` with ``loader_args = dict(batch_size=..., ...)``
(or a ``{...}`` literal) assigned once and never changed is read as if the keywords were written out.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ...analysis.astwalk import nodes

SPLIT = "torch.utils.data.random_split"
SUBSET = "torch.utils.data.Subset"
CONCAT = "torch.utils.data.ConcatDataset"


def kwargs_dicts(tree: ast.Module) -> dict[str, list[tuple[str, ast.expr]]]:
    """Names assigned once to ``dict(k=v, ...)`` or ``{"k": v, ...}`` and never changed after."""
    found: dict[str, list[tuple[str, ast.expr]] | None] = {}
    for node in nodes(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            found[name] = None if name in found else _literal_kwargs(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            found[node.target.id] = None
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if isinstance(node.value, ast.Name):
                found[node.value.id] = None
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            if node.func.attr in ("update", "pop", "setdefault", "clear", "popitem"):
                found[node.func.value.id] = None
    return {k: v for k, v in found.items() if v is not None}


def _literal_kwargs(value: ast.expr) -> list[tuple[str, ast.expr]] | None:
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" and not value.args:
        if all(k.arg for k in value.keywords):
            return [(k.arg, k.value) for k in value.keywords]  # type: ignore[misc]
    if isinstance(value, ast.Dict) and all(
        isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys
    ):
        return [(k.value, v) for k, v in zip(value.keys, value.values)]  # type: ignore[union-attr]
    return None


def wrapped_kinds(facts, assigns: list[ast.Assign], canon: Callable[[ast.expr], str | None]) -> None:
    """The names a wrapper call (or a plain ``ds = base``) is assigned to get the kind of the dataset it
    wraps (in source order, so a wrapper of a wrapper follows)."""
    for node in sorted(assigns, key=lambda n: (n.lineno, n.col_offset)):
        call = node.value
        if isinstance(call, ast.Name):  # ds = base
            kind = _kind_of(facts, call)
            if kind is not None and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                facts.kinds.setdefault(node.targets[0].id, kind)
            continue
        assert isinstance(call, ast.Call)
        full = canon(call.func)
        if full not in (SPLIT, SUBSET, CONCAT) or not call.args:
            continue
        inner = call.args[0]
        sources = inner.elts if full == CONCAT and isinstance(inner, (ast.List, ast.Tuple)) else [inner]
        kinds = {_kind_of(facts, s) for s in sources}
        if len(kinds) != 1 or None in kinds:
            continue
        kind = kinds.pop()
        target = node.targets[0]
        names = target.elts if full == SPLIT and isinstance(target, (ast.Tuple, ast.List)) else [target]
        for t in names:
            if isinstance(t, ast.Name):
                facts.kinds[t.id] = kind  # type: ignore[index]


def _kind_of(facts, node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        kind = facts.kinds.get(node.id)
        return kind if kind and kind.startswith("class:") else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in facts.classes:
        return f"class:{node.func.id}"
    return None
