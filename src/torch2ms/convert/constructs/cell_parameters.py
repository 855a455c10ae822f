"""``self.parameters()`` read where GRAPH_MODE compiles (issue 24: guided-diffusion's ``checkpoint(self._forward,
(x,), self.parameters(), flag)`` in forward, whisper's ``next(self.parameters()).dtype`` property): MindSpore
compiles no ``Cell.get_parameters()`` call inside construct ("the method or function
'mindspore.nn.cell.Cell.get_parameters' is not supported in 'construct'"), but it reads a class attribute in
Python while it compiles. The class gains ``_t2m_parameters = torch2ms.runtime.CellParameters()`` (a
descriptor: the tuple of the cell's current parameters, runtime/cells.py) and, in forward, the methods
forward calls and the properties:

- ``next(self.parameters())`` → ``self._t2m_parameters[0]``;
- ``self.parameters()`` anywhere else (a loop, ``sum(p.numel() for p in ...)``, an argument) →
  ``self._t2m_parameters``: the same parameters in the same order, a tuple where torch gives a generator,
  which every consumer of it there iterates alike.

``self.parameters(...)`` with arguments and the other methods (``__init__``, an optimizer's setup) keep the
KB's ``get_parameters()``.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.astwalk import nodes
from ...i18n import _
from ..construct import Cache, Construct
from ..context import RewriteContext
from ..hooks import call, leave

CONSTRUCT = Construct("parameters in forward", order=61)

ATTRIBUTE = "_t2m_parameters"


class _State:
    def __init__(self) -> None:
        self.compiled: frozenset[str] | None = None  # names of the methods GRAPH_MODE compiles
        self.classes: set[str] = set()  # classes that read the attribute


_STATE = Cache(_State)


def _reached(tree: ast.Module) -> frozenset[str]:
    """Every method name GRAPH_MODE may compile in this file: ``forward``, the properties (forward may read
    them) and what they reach through ``self.name`` (called, or passed on as a callable), followed across
    the file's classes (a base class's method that a subclass's forward calls is compiled too)."""
    methods: dict[str, list[ast.FunctionDef]] = {}
    properties: list[str] = []
    for cls in ast.walk(tree):
        for f in cls.body if isinstance(cls, ast.ClassDef) else ():
            if isinstance(f, ast.FunctionDef):
                methods.setdefault(f.name, []).append(f)
                if any(isinstance(d, ast.Name) and d.id == "property" for d in f.decorator_list):
                    properties.append(f.name)
    reached: set[str] = set()
    todo = ["forward", *properties]
    while todo:
        name = todo.pop()
        if name in reached or name not in methods:
            continue
        reached.add(name)
        todo.extend(
            n.attr
            for f in methods[name]
            for n in nodes(f)
            if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id == "self"
            and n.attr in methods
            and n.attr != "__init__"
        )
    return frozenset(reached)


def _compiled(ctx: RewriteContext) -> frozenset[str]:
    state = _STATE.of(ctx)
    if state.compiled is None:
        tree = ctx.facts.tree
        state.compiled = _reached(tree) if tree is not None else frozenset()
    return state.compiled


def _self_parameters(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Call)
        and not node.args
        and isinstance(node.func, cst.Attribute)
        and isinstance(node.func.value, cst.Name)
        and node.func.value.value == "self"
        and node.func.attr.value == "parameters"
    )


def _applies(ctx: RewriteContext) -> bool:
    if not ctx.in_module_class or not ctx.func_stack:
        return False
    compiled = _compiled(ctx)
    return any(f in compiled for f in ctx.func_stack)


def _attribute() -> cst.Attribute:
    return cst.Attribute(value=cst.Name("self"), attr=cst.Name(ATTRIBUTE))


@call()
def parameters_in_forward(ctx: RewriteContext, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
    if _self_parameters(original):
        if not _applies(ctx):
            return None
    elif not (
        isinstance(original.func, cst.Name)
        and original.func.value == "next"
        and len(original.args) == 1
        and not original.args[0].keyword
        and not original.args[0].star
        and _self_parameters(original.args[0].value)
        and _applies(ctx)
    ):
        return None
    _STATE.of(ctx).classes.add(ctx.class_stack[-1])
    ctx.record(
        "torch.nn.Module.parameters",
        "converted",
        _("self.parameters() where GRAPH_MODE compiles: self._t2m_parameters, a tuple of the cell's parameters"),
    )
    if _self_parameters(original):
        return _attribute()
    return cst.Subscript(value=_attribute(), slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))])


@leave(cst.ClassDef)
def parameters_attribute(ctx: RewriteContext, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
    """The class that reads ``self._t2m_parameters`` declares it first in its body (after a docstring)."""
    state = _STATE.of(ctx)
    name = original.name.value
    if name not in state.classes or not isinstance(updated.body, cst.IndentedBlock):
        return updated
    state.classes.discard(name)
    line = cst.SimpleStatementLine(
        [
            cst.Assign(
                targets=[cst.AssignTarget(cst.Name(ATTRIBUTE))],
                value=cst.Call(ctx.parse_ms("torch2ms.runtime.CellParameters")),
            )
        ]
    )
    body = list(updated.body.body)
    at = 0
    if body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr):
        if isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            at = 1
    nxt = body[at] if at < len(body) else None
    if isinstance(nxt, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and not nxt.leading_lines:
        body[at] = nxt.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    body.insert(at, line)
    return updated.with_changes(body=updated.body.with_changes(body=body))
