"""Module attributes MindSpore's Cell treats differently from torch's Module.

A registered buffer assigned a new tensor (``self.freqs_cis = precompute(...)``) is registered again.
Objects a Module keeps as plain attributes that MindSpore would register as sub-cells:

``self.opt = torch.optim.Adam(self.parameters(), ...)`` in a Module's ``__init__`` (a layer that
trains itself, as in the forward-forward example): a MindSpore optimizer is a Cell, so the
assignment would register it as a child and rename the parameters it holds (``weight`` →
``opt.weight``). The converted statement stores it with ``torch2ms.runtime.plain_attribute``.
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from dataclasses import dataclass, field

import libcst as cst

from ...analysis.astwalk import nodes
from ...analysis.buffers import registered_buffers
from ...i18n import _
from ..construct import Cache, Construct
from ..context import RewriteContext
from ..hooks import leave

CONSTRUCT = Construct("module attributes", order=80)


def _optimizer_class(ctx: RewriteContext, value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call):
        return False
    full = ctx.resolve(value.func) or ""
    entry = ctx.kb.get(full)
    return (
        entry is not None
        and entry.kind == "class"
        and entry.torch.startswith("torch.optim.")
        and not entry.torch.startswith("torch.optim.lr_scheduler.")
        and entry.status != "no-equivalent"
    )


@leave(cst.SimpleStatementLine)
def optimizer_attribute(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``self.opt = Adam(...)`` in a Module → ``plain_attribute(self, "opt", optim.Adam(...))``."""
    if not ctx.in_module_class or len(original.body) != 1 or len(updated.body) != 1:
        return updated
    before, after = original.body[0], updated.body[0]
    if not (isinstance(before, cst.Assign) and isinstance(after, cst.Assign) and len(before.targets) == 1):
        return updated
    target = before.targets[0].target
    if not (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == "self"
        and _optimizer_class(ctx, before.value)
    ):
        return updated
    ctx.record("torch.optim.Optimizer", "converted", _("kept off the Cell's sub-cells (plain_attribute)"))
    call = cst.Call(
        func=ctx.parse_ms("torch2ms.runtime.plain_attribute"),
        args=[cst.Arg(cst.Name("self")), cst.Arg(cst.SimpleString(f'"{target.attr.value}"')), cst.Arg(after.value)],
    )
    return updated.with_changes(body=[cst.Expr(call)])


@dataclass
class _Buffers:
    """Per file: every class by name and every register_buffer line (one walk), each class's buffers."""

    classes_by_name: dict[str, list[ast.ClassDef]] | None = None
    register_buffer_lines: list[int] = field(default_factory=list)
    by_class: dict[str, dict[str, ast.expr | None]] = field(default_factory=dict)


_BUFFERS = Cache(_Buffers)


def _class_buffers(ctx: RewriteContext) -> dict[str, ast.expr | None]:
    """The current class's registered buffers (analysis/buffers.py), once per class."""
    cls = ctx.class_stack[-1]
    memo = _BUFFERS.of(ctx)
    if cls not in memo.by_class:
        if memo.classes_by_name is None:  # one walk per file: every class by name, every register_buffer line
            classes: dict[str, list[ast.ClassDef]] = {}
            lines: list[int] = []
            for n in nodes(ctx.facts.tree) if ctx.facts.tree else ():
                if isinstance(n, ast.ClassDef):
                    classes.setdefault(n.name, []).append(n)
                elif isinstance(n, ast.Attribute) and n.attr == "register_buffer":
                    lines.append(n.lineno)
            memo.classes_by_name = classes
            memo.register_buffer_lines = sorted(lines)
        found = memo.classes_by_name.get(cls, [])
        # two classes of that name: which one this is is not known
        one = len(found) == 1 and _registers_buffers(found[0], memo.register_buffer_lines)
        memo.by_class[cls] = registered_buffers(found[0]) if one else {}
    return memo.by_class[cls]


def _registers_buffers(cls: ast.ClassDef, lines: list[int]) -> bool:
    """Does ``.register_buffer`` occur in the class (decorators included)? Known from the lines of the
    file's ``register_buffer`` attributes: a class spans whole lines, so no walk of the class is needed."""
    first = min([cls.lineno, *(d.lineno for d in cls.decorator_list)])
    at = bisect_left(lines, first)
    return at < len(lines) and lines[at] <= (cls.end_lineno or cls.lineno)


@leave(cst.SimpleStatementLine)
def buffer_reassignment(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``self.freqs_cis = tensor`` where the class registered that buffer: torch replaces the
    buffer, MindSpore's Cell raises "Buffer already exists" → ``self.register_buffer(name, tensor)``
    with the persistence it was registered with. Not in forward (GRAPH_MODE compiles no
    registration there)."""
    if not ctx.in_module_class or not ctx.func_stack or ctx.func_stack[-1] in ("forward", "construct"):
        return updated
    if len(original.body) != 1 or len(updated.body) != 1 or not isinstance(updated.body[0], cst.Assign):
        return updated
    before = original.body[0]
    if not isinstance(before, cst.Assign) or len(before.targets) != 1:
        return updated
    target = before.targets[0].target
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"):
        return updated
    name, buffers = target.attr.value, _class_buffers(ctx)
    if name not in buffers or (isinstance(before.value, cst.Name) and before.value.value == "None"):
        return updated  # MindSpore takes None for a buffer, as torch
    args = [cst.Arg(cst.SimpleString(f'"{name}"')), cst.Arg(updated.body[0].value)]
    persistent = buffers[name]
    if persistent is not None:
        tight = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
        value = cst.parse_expression(ast.unparse(persistent))
        args.append(cst.Arg(value, keyword=cst.Name("persistent"), equal=tight))
    ctx.record(
        "torch.nn.Module.register_buffer", "converted", _("a registered buffer reassigned: register_buffer again")
    )
    call = cst.Call(func=cst.Attribute(cst.Name("self"), cst.Name("register_buffer")), args=args)
    return updated.with_changes(body=[cst.Expr(call)])


_SPARSE_CONVERSIONS = frozenset({"to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr"})


def _sparse_buffer(call: cst.BaseExpression) -> cst.Call | None:
    """``self.register_buffer(name, x.to_sparse(), ...)`` → the call, else None."""
    if not (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "register_buffer"
        and isinstance(call.func.value, cst.Name)
        and call.func.value.value == "self"
        and len(call.args) >= 2
    ):
        return None
    value = call.args[1].value
    sparse = (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in _SPARSE_CONVERSIONS
    )
    return call if sparse else None


@leave(cst.SimpleStatementLine)
def sparse_buffer(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``self.register_buffer("heads", mask.to_sparse(), persistent=False)``: a MindSpore buffer must
    be a dense Tensor (a COOTensor is refused), so the sparse tensor is kept as a plain attribute
    (``plain_attribute``): read as ``self.heads`` as before, never in a checkpoint."""
    if not ctx.in_module_class or len(original.body) != 1 or len(updated.body) != 1:
        return updated
    before, after = original.body[0], updated.body[0]
    if not (isinstance(before, cst.Expr) and isinstance(after, cst.Expr) and _sparse_buffer(before.value)):
        return updated
    call = after.value
    if not isinstance(call, cst.Call) or len(call.args) < 2:
        return updated
    ctx.record("torch.nn.Module.register_buffer", "converted", _("a sparse buffer kept as a plain attribute"))
    args = [cst.Arg(cst.Name("self")), *call.args[:2]]  # persistent=: a plain attribute is never saved
    helper = cst.Call(
        func=ctx.parse_ms("torch2ms.runtime.plain_attribute"),
        args=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args],
    )
    return updated.with_changes(body=[cst.Expr(helper)])
