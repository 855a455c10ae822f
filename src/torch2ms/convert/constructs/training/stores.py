"""Statements that fill a tensor item by item (issue 22): ``buf[i] = y``, ``buf[i, :] += y``, ``buf[i][0] = y``,
or a call of a function of the file that does so to its argument (``fill(buf, out)``).

Such a statement changes ``buf`` without binding it: a loss that reads ``buf`` depends on it all the same, so
the forward pass behind ``backward()`` holds it, and the tensor it fills is made inside ``forward_fn`` too.
As a step input (``forward_fn(buf)``) MindSpore refuses the assignment ("Can not modify tensor id of input
tensor"), and the fill left outside the gradient call would not reach the gradients at all.
"""

from __future__ import annotations

import ast
from collections.abc import Set

FETCHES = frozenset({"next", "iter"})  # ``x, y = next(it)``: fetching the batch stays host code


def stored_into(node: ast.AST, fillers: dict[str, set[int]] | None = None) -> set[str]:
    """Names whose items ``node`` assigns (the name or attribute chain each subscript it stores into starts
    with), and the names it passes where a function of ``fillers`` (name → positions of the parameters it fills) fills them."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            root = _root(n.value)
            if root is not None:
                out.add(root)
        elif fillers and isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in fillers:
            for pos in fillers[n.func.id]:
                if pos < len(n.args) and (root := _root(n.args[pos])) is not None:
                    out.add(root)
    return out


def filling_functions(tree: ast.Module) -> dict[str, set[int]]:
    """Module-level functions that fill a parameter item by item (``def fill(buf, out): buf[0] = out``):
    name → the positions of those parameters."""
    out: dict[str, set[int]] = {}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        names = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
        rebound = {
            n.id for s in fn.body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        filled = set().union(*(stored_into(s) for s in fn.body)) - rebound
        positions = {k for k, name in enumerate(names) if name in filled}
        if positions:
            out[fn.name] = positions
    return out


def _root(node: ast.expr) -> str | None:
    """The name or attribute chain whose items are stored into: ``buf`` of ``buf[i][0]``, ``self.buf`` of
    ``self.buf[i]``."""
    while isinstance(node, ast.Subscript):
        node = node.value
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def with_filled(
    asts: list[ast.stmt], slice_idx: list[int], forward: list[int], fillers: dict[str, set[int]], kept: Set[str]
) -> list[int]:
    """``forward`` with the statements of the slice that make or fill a tensor the forward fills (``buf =
    torch.zeros(...)`` ahead of the first model call, where it would be left as preparation): the tensor is
    the forward's own, made inside ``forward_fn``. A statement that fetches the batch (it calls one of
    ``kept``: ``next``, a data function) stays out."""
    forward = sorted(forward)
    filled = set().union(set(), *(stored_into(asts[i], fillers) for i in forward))
    while True:
        joins = [
            i
            for i in slice_idx
            if i not in forward
            and (_binds(asts[i]) | stored_into(asts[i], fillers)) & filled
            and not _calls_any(asts[i], kept)
        ]
        if not joins:
            return forward
        forward = sorted([*forward, *joins])
        filled |= set().union(*(stored_into(asts[i], fillers) for i in joins))


def _binds(a: ast.stmt) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(a):
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Store):
            root = _root(n)
            if root is not None:
                out.add(root)
    return out


def _calls_any(a: ast.stmt, names: Set[str]) -> bool:
    for n in ast.walk(a):
        if isinstance(n, ast.Call):
            func = n.func
            while isinstance(func, (ast.Attribute, ast.Subscript, ast.Call)):
                func = func.func if isinstance(func, ast.Call) else func.value
            if isinstance(func, ast.Name) and func.id in names:
                return True
    return False
