"""Locals first bound inside a loop and read after it (static, ``ast`` only).

GRAPH_MODE refuses ``for x in xs: out = f(x)`` followed by a read of ``out`` after the loop ("The
local variable 'out' defined in the 'for' loop body cannot be used outside of the loop body"). For
a loop that is a statement of the function's own body (run once per call, in no other loop) and a
name with no binding before it, the name is unbound when the loop starts: defining it as None
there changes nothing that torch could observe (a read of that None was an UnboundLocalError).
"""

from __future__ import annotations

import ast

from .astwalk import nodes

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_scope(node: ast.AST) -> list[ast.AST]:
    """Nodes of one scope: nested functions, classes and comprehensions bind their own names."""
    out: list[ast.AST] = []
    todo = [node]
    while todo:
        cur = todo.pop()
        out.append(cur)
        if cur is not node and isinstance(cur, (*_SCOPES, *_COMPREHENSIONS)):
            continue
        todo.extend(ast.iter_child_nodes(cur))
    return out


def bound_names(node: ast.AST) -> set[str]:
    """Names a statement binds in its own scope (assignments, loop and with targets, imports, defs)."""
    found: set[str] = set()
    for n in _walk_scope(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            found.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            found.add(n.name)
        elif isinstance(n, ast.alias):
            found.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            found.add(n.name)
    return found


def _read_names(stmts: list[ast.stmt]) -> set[str]:
    """Names the statements read, less a comprehension's own targets (``{pn: p for pn, p in ...}``).
    Iterative: deeply nested expressions must not hit the recursion limit."""
    found: set[str] = set()
    todo: list[tuple[ast.AST, frozenset[str]]] = [(s, frozenset()) for s in stmts]
    while todo:
        node, own = todo.pop()
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load) and node.id not in own:
                found.add(node.id)
            continue
        if isinstance(node, _COMPREHENSIONS):
            own = own | {t.id for g in node.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
        todo.extend((child, own) for child in ast.iter_child_nodes(node))
    return found


def _parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = func.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return set(names)


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def loop_locals(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[ast.stmt, list[str]]:
    """Loop statement of ``func``'s own body → the names it binds first and later statements read
    (only loops with such names). A cheap test by line first: most loops bind nothing read after."""
    body, params = func.body, _parameters(func)
    loops = [s for s in body if isinstance(s, _LOOPS)]
    if not loops:
        return {}
    names = [n for n in nodes(func) if isinstance(n, ast.Name)]
    out: dict[ast.stmt, list[str]] = {}
    before: set[str] = set()  # names bound by body[:upto] (and global/nonlocal), folded in when needed
    upto = -1
    for loop in loops:
        end = loop.end_lineno or loop.lineno
        stored = {n.id for n in names if isinstance(n.ctx, ast.Store) and loop.lineno <= n.lineno <= end} - params
        if not stored & {n.id for n in names if isinstance(n.ctx, ast.Load) and n.lineno > end}:
            continue
        i = body.index(loop)
        if upto < 0:
            before, upto = (
                {x for s in body for n in ast.walk(s) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names},
                0,
            )
        before = before.union(*(bound_names(s) for s in body[upto:i]))
        upto = i
        candidates = bound_names(loop) - params - before
        if candidates and (found := sorted(candidates & _read_names(body[i + 1 :]))):
            out[loop] = found
    return out
