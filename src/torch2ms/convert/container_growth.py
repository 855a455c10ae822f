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
import functools

import libcst as cst

from ..analysis.astwalk import nodes
from ..kb.source import dotted as ast_dotted
from .context import RewriteContext, _functions
from .cstutil import code, dotted

_GROW = frozenset({"append", "extend", "insert"})


def grows(ctx: RewriteContext, original: cst.Call) -> bool:
    """The container built by ``original`` may get cells later (or that cannot be told)."""
    info, tree = ctx.statement, ctx.facts.tree
    if info is None or tree is None:
        return True
    stmt = info.node
    same = _Same(original)
    if _inside_container(stmt, same):
        return False  # nn.Sequential(a, nn.Sequential(b)): the inner one has no name to grow by
    if isinstance(stmt, ast.Return) and stmt.value is not None and same(stmt.value):
        return False  # ``return nn.Sequential(*layers)``: built whole; a later append fails loudly at a strict load
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return True
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if len(targets) != 1 or stmt.value is None or not same(stmt.value):
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


class _Same:
    """Is an ``ast`` expression the call ``original`` (the same code)? The call's text is generated and
    parsed once, and only for a call with as many arguments."""

    def __init__(self, original: cst.Call) -> None:
        self.original = original
        self.args = len(original.args)
        self.func = dotted(original.func)
        self._text: str | None = None

    def __call__(self, value: ast.expr) -> bool:
        if not isinstance(value, ast.Call) or len(value.args) + len(value.keywords) != self.args:
            return False  # (the unparsed texts differ)
        if self.func is not None and (func := ast_dotted(value.func)) is not None and func != self.func:
            return False  # another callee (the unparsed texts differ)
        if self._text is None:
            try:
                self._text = ast.unparse(ast.parse(code(self.original).strip(), mode="eval").body)
            except SyntaxError:
                self._text = ""
        return bool(self._text) and ast.unparse(value) == self._text


def _container_name(func: ast.expr) -> str:
    """The text of a callee, as far as its end tells whether it names a Sequential/ModuleList."""
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ast.unparse(func)


def _inside_container(stmt: ast.stmt, same: _Same) -> bool:
    """``original`` is (in) an argument of another Sequential/ModuleList call of the statement."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and _container_name(node.func).endswith(("Sequential", "ModuleList")):
            inner = [*node.args, *(k.value for k in node.keywords)]
            if any(same(n) for a in inner for n in ast.walk(a) if isinstance(n, ast.Call)):
                return True
    return False


@functools.lru_cache(maxsize=4)
def _classes(tree: ast.Module) -> dict[str, list[ast.ClassDef]]:
    """The file's classes by name (one walk per tree)."""
    out: dict[str, list[ast.ClassDef]] = {}
    for n in nodes(tree):
        if isinstance(n, ast.ClassDef):
            out.setdefault(n.name, []).append(n)
    return out


def _class_node(tree: ast.Module, cls: str) -> ast.ClassDef | None:
    found = _classes(tree).get(cls, [])
    return found[0] if len(found) == 1 else None


def _function_node(tree: ast.Module, ctx: RewriteContext) -> ast.AST | None:
    cls = ctx.class_stack[-1] if ctx.class_stack else ""
    found = _functions(tree).get((cls, ctx.func_stack[-1]), [])
    return found[0] if len(found) == 1 else None


def _changed(scope: ast.AST, name: str) -> bool:
    """``name`` grows in ``scope``, or becomes another name's value (an alias that may grow elsewhere)."""
    return name in _changed_names(scope)


@functools.lru_cache(maxsize=16)
def _changed_names(scope: ast.AST) -> frozenset[str]:
    """Every name that grows in ``scope`` or is another name's value there (one walk per scope)."""
    out: set[str] = set()
    for node in nodes(scope):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _GROW:
                out.add(ast.unparse(func.value))
        elif isinstance(node, ast.AugAssign):
            out.add(ast.unparse(node.target))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Name, ast.Attribute)):
            out.add(ast.unparse(node.value))  # an alias that may grow elsewhere
    return frozenset(out)
