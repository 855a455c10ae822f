"""``xs.pop()`` inside an expression in a Module's methods (issue 24: guided-diffusion's UNet,
``h = th.cat([h, hs.pop()], dim=1)``): MindSpore 2.10's GRAPH_MODE gives a ``pop`` that is part of a larger
expression the value ``(list, item)`` instead of the item ("Failed calling Concat with
tensors=List[Tensor, Tuple[List[Tensor], Tensor]]", "'Tuple' object has no attribute 'dtype'"), while
``y = xs.pop()`` on its own line compiles as Python runs it. So each such pop is taken out of its statement
into a local assigned just before it, in the order Python evaluates them:

    h = cat([h, hs.pop()], axis=1)      →      _t2m_pop = hs.pop()
                                                h = cat([h, _t2m_pop], axis=1)

Only where the order cannot change: a statement (assignment, augmented assignment, return, expression)
whose pops are not under a lambda, a comprehension, a conditional expression or ``and``/``or`` (they may run
zero or many times), and whose other calls before the pop are not methods of the same list.

A pop on its own line still fails in GRAPH_MODE when the list holds tensors of different shapes and the pop
sits in a loop (the UNet's skip connections: "index 2 is out of bounds for dimension with size 2", a
Transpose perm error). Where the list is a plain local of the method (assigned there from a list, read only
by indexing, ``len``, ``for`` and its own methods: never aliased, passed on, closed over or a parameter), a
pop with no or a literal int index becomes indexing and a rebinding slice, which GRAPH_MODE compiles:

    y = hs.pop()        →      y = hs[-1]
                               hs = hs[:-1]
"""

from __future__ import annotations

import ast
import bisect
import functools
import re

import libcst as cst

from ...analysis.astwalk import nodes
from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext
from ..hooks import leave
from ..plan import Stmt
from .map_lambda import mark_with_parents

_TEXT = re.compile(r"\.pop\(")
_LAZY = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.IfExp, ast.BoolOp)
_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)
NAME = "_t2m_pop"


def _pops(stmt: ast.AST) -> list[ast.Call]:
    """The ``name.pop(...)`` calls of a statement that are part of a larger expression, in evaluation
    order; [] when one of them sits where it may run zero or many times."""
    if not isinstance(stmt, _STATEMENTS) or stmt.value is None:
        return []
    if isinstance(stmt.value, ast.Call) and _is_pop(stmt.value) and not isinstance(stmt, ast.AugAssign):
        return []  # ``y = xs.pop()`` / ``xs.pop()`` alone: GRAPH_MODE compiles it
    found: list[ast.Call] = []

    def walk(node: ast.AST, lazy: bool) -> bool:
        if isinstance(node, ast.Call) and _is_pop(node):
            if lazy:
                return False
            for arg in node.args:  # ``xs.pop(ys.pop())``: the inner one runs first
                if not walk(arg, lazy):
                    return False
            found.append(node)
            return True
        inner = lazy or isinstance(node, _LAZY)
        return all(walk(child, inner) for child in ast.iter_child_nodes(node))

    if not walk(stmt.value, False):
        return []
    # The list read elsewhere in the statement (``f(hs) + hs.pop()``) would see it popped too early.
    lists = [p.func.value.id for p in found]  # type: ignore[attr-defined]
    reads = [n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and n.id in lists]
    return found if len(reads) == len(lists) else []


def _is_pop(call: ast.Call) -> bool:
    return (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "pop"
        and isinstance(call.func.value, ast.Name)
        and not call.keywords
        and len(call.args) <= 1
    )


def _sees(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    if _TEXT.search(source) and _pop_lines(tree):
        safe = _plain_pops(tree)
        mark_with_parents(plan, lambda node: bool(_pops(node)) or _alone(node, safe) is not None)


_OPAQUE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@functools.lru_cache(maxsize=4)
def _pop_lines(tree: ast.Module) -> tuple[int, ...]:
    """The lines of the file's ``name.pop(...)`` calls, in order (one pass over the cached walk)."""
    return tuple(sorted(n.lineno for n in nodes(tree) if isinstance(n, ast.Call) and _is_pop(n)))


def _has_pop(lines: tuple[int, ...], node: ast.AST) -> bool:
    """A pop call starts within the lines of ``node`` (a statement or a def)."""
    end = getattr(node, "end_lineno", None)
    if end is None:
        return True
    i = bisect.bisect_left(lines, node.lineno)  # type: ignore[attr-defined]
    return i < len(lines) and lines[i] <= end


@functools.lru_cache(maxsize=4)
def _plain_pops(tree: ast.Module) -> frozenset[int]:
    """Ids of the ``name.pop()`` / ``name.pop(<int>)`` calls in the methods of the file's classes whose list
    is a plain local of the method (see the module's text)."""
    found: set[int] = set()
    lines = _pop_lines(tree)
    if not lines:
        return frozenset()
    for cls in nodes(tree):
        if isinstance(cls, ast.ClassDef):
            for fn in cls.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and _has_pop(lines, fn):
                    found.update(_plain_pops_of(fn))
    return frozenset(found)


def _plain_pops_of(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[int]:
    own: list[ast.AST] = []
    parents: dict[int, ast.AST] = {}
    bad = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    bad.update(a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None)
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, _OPAQUE):  # a closure sees the list: never rebound
            bad.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
            continue
        own.append(node)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            bad.update(node.names)
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
            stack.append(child)
    assigned: set[str] = set()
    for node in own:
        if isinstance(node, ast.Name):
            use = _use(node, parents.get(id(node)), parents)
            (assigned if use == "assign" else bad if use is None else set()).add(node.id)
    plain = assigned - bad
    return [id(n) for n in own if isinstance(n, ast.Call) and _pop_index(n, plain) is not None]


def _use(name: ast.Name, parent: ast.AST | None, parents: dict[int, ast.AST]) -> str | None:
    """``assign`` (bound to a new list), ``read`` (a use that neither aliases nor passes it on) or None."""
    if isinstance(name.ctx, ast.Store):
        if isinstance(parent, ast.Assign) and parent.targets == [name] and _new_list(parent.value, name.id):
            return "assign"
        return "read" if isinstance(parent, ast.AugAssign) and parent.target is name else None
    if not isinstance(name.ctx, ast.Load) or parent is None:
        return None
    if isinstance(parent, ast.Attribute) and parent.value is name:
        call = parents.get(id(parent))
        return "read" if isinstance(call, ast.Call) and call.func is parent else None
    if isinstance(parent, ast.Subscript) and parent.value is name:
        return "read"
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is name:
        return "read"
    if not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "len"):
        return None
    return "read" if parent.args == [name] and not parent.keywords else None


def _new_list(value: ast.expr, name: str) -> bool:
    if isinstance(value, (ast.List, ast.ListComp)):
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "list":
        return True
    return isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id == name


def _pop_index(call: ast.Call, plain: set[str] | frozenset[str]) -> int | None:
    """The index a pop of a plain list takes (-1 for ``pop()``), None for any other call."""
    if not (_is_pop(call) and call.func.value.id in plain):  # type: ignore[attr-defined]
        return None
    if not call.args:
        return -1
    arg = call.args[0]
    sign = 1
    if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub):
        arg, sign = arg.operand, -1
    if isinstance(arg, ast.Constant) and type(arg.value) is int:
        return sign * arg.value
    return None


def _alone(stmt: ast.AST, safe: frozenset[int]) -> ast.Call | None:
    """The pop of ``y = xs.pop(...)`` / ``xs.pop(...)`` on its own line when its list is a plain local."""
    if isinstance(stmt, ast.Assign):
        target = stmt.targets[0] if len(stmt.targets) == 1 else None
        if not isinstance(target, ast.Name) or not isinstance(stmt.value, ast.Call):
            return None
        owner = getattr(stmt.value.func, "value", None)
        if isinstance(owner, ast.Name) and owner.id == target.id:  # ``xs = xs.pop()``
            return None
    elif not isinstance(stmt, ast.Expr):
        return None
    value = stmt.value
    return value if isinstance(value, ast.Call) and id(value) in safe else None


def _split(pop: ast.Call, target: str | None) -> list[cst.SimpleStatementLine]:
    """``target = xs.pop(i)`` as ``target = xs[i]`` and ``xs = <xs without item i>``."""
    xs = pop.func.value.id  # type: ignore[attr-defined]
    i = _pop_index(pop, {xs})
    assert i is not None
    rest = {-1: f"{xs}[:-1]", 0: f"{xs}[1:]"}.get(i, f"{xs}[:{i}] + {xs}[{i + 1}:]")
    lines = [f"{target} = {xs}[{i}]"] if target is not None else []
    lines.append(f"{xs} = {rest}")
    return [cst.parse_statement(line) for line in lines]  # type: ignore[misc]


CONSTRUCT = Construct("list pop in expression", order=63, sees=_sees)


class _Hoist(cst.CSTTransformer):
    """Replaces each ``name.pop(...)`` by a fresh local, collecting the assignments in evaluation order."""

    def __init__(self, taken: set[str]) -> None:
        super().__init__()
        self.taken = taken
        self.assigns: list[cst.SimpleStatementLine] = []

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == "pop"
            and isinstance(func.value, cst.Name)
            and len(updated.args) <= 1
            and not any(a.keyword or a.star for a in updated.args)
        ):
            return updated
        name = NAME
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        self.assigns.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], updated)]))
        return cst.Name(name)


@leave(cst.SimpleStatementLine)
def hoist_pop(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``h = cat([h, hs.pop()])`` → ``_t2m_pop = hs.pop()`` then ``h = cat([h, _t2m_pop])`` in Module methods."""
    node = ctx.statement.node if ctx.statement is not None else None
    if node is None or not ctx.in_module_class or not ctx.func_stack or len(updated.body) != 1:
        return updated
    tree = ctx.facts.tree
    if tree is not None and not _has_pop(_pop_lines(tree), node):
        return updated  # no pop in the statement (most): nothing to walk
    safe = _plain_pops(tree) if tree is not None else frozenset()
    alone = _alone(node, safe)
    if alone is not None:
        return _split_alone(ctx, node, alone, updated)
    pops = _pops(node)
    if not pops:
        return updated
    taken = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    hoist = _Hoist(taken)
    body = updated.body[0]
    value = getattr(body, "value", None)
    if value is None:
        return updated
    new_value = value.visit(hoist)
    if len(hoist.assigns) != len(pops):
        return updated  # the converted statement no longer shows the same pops: leave it
    ctx.record(
        "list.pop",
        "converted",
        _("list.pop() inside an expression taken onto its own line: GRAPH_MODE gives (list, item) for it there"),
    )
    assigns: list[cst.SimpleStatementLine] = []
    for pop, assign in zip(pops, hoist.assigns):
        if id(pop) in safe:
            _record_split(ctx)
            target = assign.body[0].targets[0].target  # type: ignore[attr-defined]
            assigns.extend(_split(pop, target.value))
        else:
            assigns.append(assign)
    first = assigns[0].with_changes(leading_lines=updated.leading_lines)
    last = updated.with_changes(body=[body.with_changes(value=new_value)], leading_lines=[])
    return cst.FlattenSentinel([first, *assigns[1:], last])


def _record_split(ctx: RewriteContext) -> None:
    ctx.record(
        "list.pop",
        "converted",
        _("list.pop() of a local list written as indexing and a slice: GRAPH_MODE mis-pops lists of tensors"),
    )


def _split_alone(ctx: RewriteContext, node: ast.AST, pop: ast.Call, updated: cst.SimpleStatementLine):
    body = updated.body[0]
    value = getattr(body, "value", None)
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "pop"):
        return updated  # rewritten into something else already: leave it
    target = node.targets[0].id if isinstance(node, ast.Assign) else None  # type: ignore[attr-defined]
    lines = _split(pop, target)
    _record_split(ctx)
    return cst.FlattenSentinel([lines[0].with_changes(leading_lines=updated.leading_lines), *lines[1:]])
