"""Which names are bound on every path to a statement (a conservative definite-assignment check).

forward_fn takes the loop locals the forward reads as arguments, so the converted loop reads them at
the call. torch read them only where the script's own branches had bound them: word_language_model's
``hidden`` is assigned under ``if args.model != 'Transformer'`` and read only on that branch of the
forward. A name not bound on every path to the loop gets a guard before it (emit.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor)
_WITHS = (ast.With, ast.AsyncWith)


def maybe_unbound(tree: ast.Module, at: ast.stmt, names: list[str]) -> list[str]:
    """Of ``names``, those that some path from the start of ``at``'s scope to ``at`` leaves unbound;
    none when ``at`` is not a statement of ``tree`` (nothing is known)."""
    bound = _bound_before(tree.body, at, set())
    return [] if bound is None else [n for n in names if n not in bound]


def _bound_before(stmts: list[ast.stmt], at: ast.stmt, bound: set[str]) -> set[str] | None:
    """Names bound on every path to ``at`` when it sits in ``stmts`` (or below); None if it does not."""
    bound = set(bound)
    for s in stmts:
        if s is at:
            return bound
        if any(n is at for n in ast.walk(s)):
            return _inside(s, at, bound)
        bound |= _always_binds(s)
    return None


def _inside(s: ast.stmt, at: ast.stmt, bound: set[str]) -> set[str] | None:
    """Names bound on every path to ``at``, a statement nested in the compound statement ``s``."""
    if isinstance(s, _SCOPES):  # a new scope: its arguments, not the enclosing names
        a = s.args
        bound = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None}
    elif isinstance(s, ast.ClassDef):
        bound = set()
    elif isinstance(s, _LOOPS):
        bound = bound | _names(s.target)
    elif isinstance(s, _WITHS):
        bound = bound | {n for item in s.items if item.optional_vars for n in _names(item.optional_vars)}
    for block in _blocks(s):
        found = _bound_before(block, at, bound)
        if found is not None:
            return found
    return None


def _always_binds(s: ast.stmt) -> set[str]:
    """Names a statement binds whichever way it runs (an ``if`` only those both branches bind)."""
    if isinstance(s, (ast.Assign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.Expr)):
        return _names(s)
    if isinstance(s, ast.AnnAssign):
        return _names(s.target) if s.value is not None else set()
    if isinstance(s, (*_SCOPES, ast.ClassDef)):
        return {s.name}
    if isinstance(s, _WITHS):
        return _block_binds(s.body) | {n for i in s.items if i.optional_vars for n in _names(i.optional_vars)}
    if isinstance(s, ast.If):
        return _block_binds(s.body) & _block_binds(s.orelse) if s.orelse else set()
    return set()  # loops may run zero times, a try may stop anywhere


def _block_binds(stmts: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for s in stmts:
        out |= _always_binds(s)
    return out


def _blocks(s: ast.stmt) -> Iterator[list[ast.stmt]]:
    for part in ("body", "orelse", "finalbody"):
        stmts = getattr(s, part, None)
        if isinstance(stmts, list):
            yield stmts
    for handler in getattr(s, "handlers", []):
        yield handler.body
    for case in getattr(s, "cases", []):
        yield case.body


def _names(node: ast.AST) -> set[str]:
    """Names a statement or target stores (imports: the name each binds)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
