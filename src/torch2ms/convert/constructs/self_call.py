"""``self(x)`` in a Module's method other than forward (issue 24, class 7: a greedy ``generate`` loop,
``logits = self(idx_cond)``): GRAPH_MODE compiles a Cell's call of itself from a method as "The object
is not callable"; ``self.construct(x)`` is the same forward (the converted Cell registers no torch
hooks for ``__call__`` to run) and compiles. Forward itself is left alone (a call of itself there is
a recursion either way), and so are ``__init__`` and anything outside Module classes.
"""

from __future__ import annotations

import ast
import functools
import re

import libcst as cst

from ...analysis.astwalk import nodes
from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext
from ..facts import ModuleFacts
from ..hooks import leave
from ..plan import Stmt
from .map_lambda import mark_with_parents

_TEXT = re.compile(r"\bself\s*\(")
_CANDIDATE = re.compile(r"self\s*\(")  # a literal start the regex engine finds fast: _TEXT only where it matches


def _calls_self(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "self" for n in ast.walk(node))


def _sees(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    if _CANDIDATE.search(source) and _TEXT.search(source):
        mark_with_parents(plan, _calls_self)


CONSTRUCT = Construct("self call", order=57, sees=_sees)


class _ToConstruct(cst.CSTTransformer):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if isinstance(updated.func, cst.Name) and updated.func.value == "self":
            self.count += 1
            return updated.with_changes(func=cst.Attribute(value=cst.Name("self"), attr=cst.Name("construct")))
        return updated

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return True


@functools.lru_cache(maxsize=4)
def _calls_self_anywhere(tree: ast.Module) -> bool:
    """The file calls ``self(...)`` somewhere (one pass over the cached walk)."""
    return any(n.__class__ is ast.Call and isinstance(n.func, ast.Name) and n.func.id == "self" for n in nodes(tree))


def _has_self_calls(facts: ModuleFacts) -> bool:
    return facts.tree is None or _calls_self_anywhere(facts.tree)


@leave(cst.SimpleStatementLine, when=_has_self_calls)
def self_call(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``logits = self(idx)`` in ``generate`` → ``logits = self.construct(idx)``."""
    node = ctx.statement.node if ctx.statement is not None else None
    if node is None or not ctx.in_module_class or not ctx.func_stack:
        return updated
    if ctx.func_stack[-1] in ("forward", "__init__") or len(ctx.func_stack) > 1 or not _calls_self(node):
        return updated
    rewrite = _ToConstruct()
    out = updated.visit(rewrite)
    if rewrite.count:
        ctx.record(
            "torch.nn.Module.__call__",
            "converted",
            _("self(...) in a method becomes self.construct(...): GRAPH_MODE does not compile a Cell calling itself"),
        )
    return out
