"""Objects of the file that only serve data: makemore's ``InfiniteDataLoader`` (``batch_loader.next()``).

A forward that starts by drawing its batch from such an object keeps that line in the loop (analysis.py's
``_prep``), as it does for a data-only function: the gradients do not depend on it, and inside the compiled
step MindSpore cannot compile its ``try``/``next()`` (``Unsupported statement 'Try'``).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable

_BUILTIN_NAMES = frozenset(dir(builtins))
_BANNED_NODES = (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Lambda)


def data_objects(tree: ast.Module, resolve: Callable[[ast.AST], str | None], module_names: set[str]) -> set[str]:
    """Names bound (``x = C(...)``) to an instance of a data-only class of the file: no base class, no
    decorator, only methods, whose calls are the framework's, builtins or methods of values, and that
    read no name holding a module or an optimizer."""
    classes = [c for c in tree.body if isinstance(c, ast.ClassDef)]
    defs = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    instances = _instances(tree, {c.name for c in classes})
    data = {c.name for c in classes if _data_only(c, resolve, defs, module_names - set(instances))}
    return {name for name, cls in instances.items() if cls in data}


def _instances(tree: ast.Module, classes: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name):
            if n.value.func.id in classes:
                out.update({t.id: n.value.func.id for t in n.targets if isinstance(t, ast.Name)})
    return out


def _data_only(cls: ast.ClassDef, resolve: Callable[[ast.AST], str | None], defs: set[str], banned: set[str]) -> bool:
    if cls.bases or cls.keywords or cls.decorator_list:
        return False
    body = [s for s in cls.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or not all(isinstance(s, ast.FunctionDef) and not s.decorator_list for s in body):
        return False
    for n in ast.walk(cls):
        if isinstance(n, _BANNED_NODES):
            return False
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in banned:
            return False
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not resolve(n.func):
            if n.func.id not in _BUILTIN_NAMES or n.func.id in defs:
                return False
    return True
