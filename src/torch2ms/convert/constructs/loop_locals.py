"""A local first set in a loop of a Module method and read after the loop (issue 11, class 8).

``for x_t in x.split(1, dim=1): out = self.cell(x_t)`` then ``for _ in range(future): out =
self.cell(out)``: GRAPH_MODE refuses the read of ``out`` after the first loop unless ``out`` is
defined before it. The converter writes ``out = None`` above the loop when that is provably
invisible (analysis/loop_locals.py: the loop is a statement of the method's own body and nothing
binds the name before it), so PyNative behaves as torch and GRAPH_MODE compiles.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.loop_locals import loop_locals
from ...i18n import _
from ..changes import MARK
from ..construct import Construct
from ..context import RewriteContext
from ..hooks import leave
from .graph_mode import class_node

CONSTRUCT = Construct("loop locals", order=70)


def _method_and_loop(ctx: RewriteContext, original: cst.CSTNode) -> tuple[ast.FunctionDef, ast.stmt] | None:
    """The original method (of a Module class, not __init__) and the loop statement in its body."""
    if not ctx.in_module_class or len(ctx.func_stack) != 1 or ctx.func_stack[0] == "__init__":
        return None
    cls = class_node(ctx)
    line = ctx.index.line_of(original)
    method = next(
        (
            f
            for f in (cls.body if cls is not None else [])
            if isinstance(f, ast.FunctionDef) and f.name == ctx.func_stack[0]
        ),
        None,
    )
    loop = next((s for s in (method.body if method is not None else []) if s.lineno == line), None)
    return (method, loop) if method is not None and loop is not None else None


def _predefine(ctx: RewriteContext, original: cst.For | cst.While, updated: cst.For | cst.While):
    found = _method_and_loop(ctx, original)
    names = loop_locals(found[0]).get(found[1], []) if found is not None else []
    if not names:
        return updated
    note = f"{MARK} " + _(
        "GRAPH_MODE — {names}: set in the loop below and read after it; defined before it (the loop sets it)"
    ).format(names=", ".join(names))
    inits = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(n))], cst.Name("None"))]) for n in names]
    inits[0] = inits[0].with_changes(leading_lines=[*updated.leading_lines, cst.EmptyLine(comment=cst.Comment(note))])
    for name in names:
        ctx.record(
            "torch.nn.Module.forward",
            "converted",
            _("{name} set in a loop and read after it: defined as None before the loop for GRAPH_MODE").format(
                name=name
            ),
        )
    return cst.FlattenSentinel([*inits, updated.with_changes(leading_lines=[])])


@leave(cst.For)
def predefine_for_locals(ctx: RewriteContext, original: cst.For, updated: cst.For):
    """``out`` set in a for loop and read after it → ``out = None`` above the loop."""
    return _predefine(ctx, original, updated)


@leave(cst.While)
def predefine_while_locals(ctx: RewriteContext, original: cst.While, updated: cst.While):
    """``out`` set in a while loop and read after it → ``out = None`` above the loop."""
    return _predefine(ctx, original, updated)
