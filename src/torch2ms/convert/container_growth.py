"""Does a Sequential/ModuleList get cells after it is built (issue 24)?

Converted code is the user's code: ``nn.Sequential(a, b)`` that is never changed stays ``nn.SequentialCell``
and ``nn.ModuleList([...])`` stays ``nn.CellList``. Only a container that cells arrive in later
(``.append``/``.extend``/``.insert``/``+=`` in the same class or function) needs torch2ms.runtime's
ModuleList/Sequential, which names those cells by their path as torch's state dict keys them. A
container passed to a function or returned stays native: cells rarely arrive after it leaves, and if one
does, its shifted name fails MindSpore's strict load loudly. When the container cannot be tracked to one
name (nested in another expression, assigned to several names, aliased), it is the runtime one.
"""

from __future__ import annotations

import ast

import libcst as cst

from .context import RewriteContext, _functions
from .cstutil import code

_GROW = frozenset({"append", "extend", "insert"})


def grows(ctx: RewriteContext, original: cst.Call) -> bool:
    """The container built by ``original`` may get cells later (or that cannot be told)."""
    info, tree = ctx.statement, ctx.facts.tree
    if info is None or tree is None:
        return True
    stmt = info.node
    if _inside_container(stmt, original):
        return False  # nn.Sequential(a, nn.Sequential(b)): the inner one has no name to grow by
    if isinstance(stmt, ast.Return) and stmt.value is not None and _same(stmt.value, original):
        return False  # ``return nn.Sequential(*layers)``: built whole; a later append fails loudly at a strict load
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return True
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if len(targets) != 1 or stmt.value is None or not _same(stmt.value, original):
        return True  # nested in another expression, returned, passed, or assigned to several names
    name = ast.unparse(targets[0])
    scope: ast.AST | None
    if isinstance(targets[0], ast.Attribute) and name.startswith("self.") and name.count(".") == 1:
        scope = _class_node(tree, ctx.class_stack[-1]) if ctx.class_stack else None
    elif isinstance(targets[0], ast.Name):
        scope = _function_node(tree, ctx) if ctx.func_stack else tree
    else:
        return True
    return scope is None or _changed(scope, name)


def _same(value: ast.expr, original: cst.Call) -> bool:
    try:
        return ast.unparse(value) == ast.unparse(ast.parse(code(original).strip(), mode="eval").body)
    except SyntaxError:
        return False


def _inside_container(stmt: ast.stmt, original: cst.Call) -> bool:
    """``original`` is (in) an argument of another Sequential/ModuleList call of the statement."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(("Sequential", "ModuleList")):
            inner = [*node.args, *(k.value for k in node.keywords)]
            if any(_same(n, original) for a in inner for n in ast.walk(a) if isinstance(n, ast.Call)):
                return True
    return False


def _class_node(tree: ast.Module, cls: str) -> ast.ClassDef | None:
    found = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls]
    return found[0] if len(found) == 1 else None


def _function_node(tree: ast.Module, ctx: RewriteContext) -> ast.AST | None:
    cls = ctx.class_stack[-1] if ctx.class_stack else ""
    found = _functions(tree).get((cls, ctx.func_stack[-1]), [])
    return found[0] if len(found) == 1 else None


def _changed(scope: ast.AST, name: str) -> bool:
    """``name`` grows in ``scope``, or becomes another name's value (an alias that may grow elsewhere)."""
    for node in ast.walk(scope):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _GROW and ast.unparse(func.value) == name:
                return True
        elif isinstance(node, ast.AugAssign) and ast.unparse(node.target) == name:
            return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if ast.unparse(node.value) == name:
                return True  # an alias that may grow elsewhere
    return False
