"""Locals first bound inside a loop and read after it (static, ``ast`` only).

GRAPH_MODE refuses ``for x in xs: out = f(x)`` followed by a read of ``out`` after the loop ("The
local variable 'out' defined in the 'for' loop body cannot be used outside of the loop body"). For
a loop that is a statement of the function's own body (run once per call, in no other loop) and a
name with no binding before it, the name is unbound when the loop starts: defining it as None
there changes nothing that torch could observe (a read of that None was an UnboundLocalError).
"""

from __future__ import annotations

import ast

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


def loop_locals_read_after(func: ast.FunctionDef | ast.AsyncFunctionDef, loop: ast.stmt) -> list[str]:
    """Names ``loop`` (a for/while statement of ``func``'s own body) binds first and the statements
    after it read; empty when the loop is nested in another statement."""
    body = func.body
    at = next((i for i, s in enumerate(body) if s is loop), None)
    if at is None or not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        return []
    before = _parameters(func).union(*(bound_names(s) for s in body[:at]))
    declared = {
        name for s in body for n in ast.walk(s) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names
    }
    candidates = bound_names(loop) - before - declared
    return sorted(candidates & _read_names(body[at + 1 :]))
