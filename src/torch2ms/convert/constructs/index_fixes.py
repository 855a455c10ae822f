"""Index objects torch takes and MindSpore's Tensor indexing rejects, written in a form both take.

``t[range(n), y] = v`` (a ``range`` inside the index): torch reads a range as the sequence of its
integers; MindSpore 2.10's PyNative indexing raises IndexError on the range object (it takes lists).
``list(range(n))`` is the same index for torch, numpy and MindSpore. The plan visits every statement
with such an index (``mark_range_indices``), torch names in it or not.
"""

from __future__ import annotations

import ast

import libcst as cst

from ..construct import Construct
from ..context import RewriteContext
from ..facts import ModuleFacts
from ..hooks import leave
from ..plan import Stmt
from .range_index_facts import mark_range_indices, may_have_range_index, range_index_in


def has_range_index(facts: ModuleFacts) -> bool:
    return facts.tree is not None and may_have_range_index(facts.source) and range_index_in(facts.tree)


def _sees_range_indices(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    if may_have_range_index(source):
        mark_range_indices(plan)


CONSTRUCT = Construct("range index", order=50, sees=_sees_range_indices)


class _RangeAsList(cst.CSTTransformer):
    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.Subscript:
        elements = []
        for e in updated.slice:
            value = e.slice.value if isinstance(e.slice, cst.Index) else None
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "range":
                listed = cst.Call(func=cst.Name("list"), args=[cst.Arg(value)])
                e = e.with_changes(slice=e.slice.with_changes(value=listed))
            elements.append(e)
        return updated.with_changes(slice=elements)


@leave(cst.SimpleStatementLine, when=has_range_index)
def range_index(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``t[range(n), y] = v`` → ``t[list(range(n)), y] = v``."""
    node = ctx.statement.node if ctx.statement is not None else None
    if node is None or not range_index_in(node):
        return updated
    return updated.visit(_RangeAsList())
