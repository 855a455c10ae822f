"""Python-side use of tensors that MindSpore's Tensor does not support the way torch's does.

A torch 0-dim tensor formats like its number (``f"{loss:.4f}"``, ``"{:.4f}".format(loss)``): its
``__format__`` formats ``self.item()``. MindSpore's Tensor refuses any format spec ("unsupported
format string passed to Tensor.__format__"). A tensor (as the light type inference knows it) formatted
with a spec gets ``.item()``, which is what torch formatted; other values are left alone.
"""

from __future__ import annotations

import ast
import string
from bisect import bisect_left
from typing import cast

import libcst as cst

from ...analysis.astwalk import nodes, walk
from ...analysis.infer import TENSOR
from ...i18n import _
from ..construct import Cache, Construct
from ..context import RewriteContext
from ..hooks import call, leave
from ..plan import Stmt


def mark_formatted(plan: list[Stmt], tree: ast.Module | None = None) -> None:
    """Statements formatting a value with a spec (``f"{loss:.4f}"``, ``"{:.4f}".format(loss)``) are
    visited: the value may be a tensor, which MindSpore cannot format that way. ``tree``: the module the
    plan was made from; the lines of its formatting nodes (one walk) rule out most statements unwalked."""
    own, lines = _formatting_lines(tree)
    ends: list[tuple[int, int]] = []  # open compound statements: (index, last nested index)
    for i, info in enumerate(plan):
        while ends and ends[-1][1] < i:
            ends.pop()
        if info.size:  # a def or loop with nothing else to convert is skipped whole: opened when one inside formats
            ends.append((i, i + info.size))
            continue
        if info.interesting:
            continue
        node = info.node
        if id(node) in own:
            at = bisect_left(lines, node.lineno)
            if at == len(lines) or lines[at] > (node.end_lineno or node.lineno):
                continue  # no formatting node within the statement's lines
        if any(_formats(n) for n in walk(node)):
            info.interesting = info.header = True
            for j, _end in ends:
                plan[j].interesting = True


def _formats(n: ast.AST) -> bool:
    spec = isinstance(n, ast.FormattedValue) and n.format_spec is not None
    if spec or not isinstance(n, ast.Call):
        return spec
    if isinstance(n.func, ast.Name):  # format(loss, ".4f")
        return n.func.id == "format" and len(n.args) == 2 and isinstance(n.args[1], ast.Constant)
    return (
        isinstance(n.func, ast.Attribute)
        and n.func.attr == "format"
        and isinstance(n.func.value, ast.Constant)
        and ":" in str(n.func.value.value)
    )


def _formatting_lines(tree: ast.Module | None) -> tuple[set[int], list[int]]:
    """(ids of the tree's statements, sorted lines of its formatting nodes); empty without a tree."""
    if tree is None:
        return set(), []
    own: set[int] = set()
    lines: list[int] = []
    for n in nodes(tree):
        kind = n.__class__
        if kind is ast.FormattedValue or kind is ast.Call:  # the only kinds _formats takes: one test per node
            if _formats(n):
                lines.append(n.lineno)  # type: ignore[attr-defined]
        elif isinstance(n, ast.stmt):
            own.add(id(n))
    return own, sorted(lines)


def _sees_formatted(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    if ("{" in source and ":" in source) or "format(" in source:
        mark_formatted(plan, tree)


CONSTRUCT = Construct("python side", order=110, sees=_sees_formatted)


def _with_item(node: cst.BaseExpression) -> cst.BaseExpression:
    """``x`` → ``x.item()`` (parenthesised when it is not atomic)."""
    if not isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        node = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(cst.Attribute(node, cst.Name("item")))


def _is_tensor(ctx: RewriteContext, node: cst.BaseExpression) -> bool:
    return ctx.receiver_type(node) == TENSOR


class _FormattedParts(cst.CSTVisitor):
    """The ``{expr:spec}`` parts of the f-strings of a statement, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[cst.FormattedStringExpression] = []

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> bool:
        self.parts.append(node)
        return True


class _AddItem(cst.CSTTransformer):
    def __init__(self, wrap: list[str]) -> None:
        super().__init__()
        self.wrap, self.at = wrap, 0

    def leave_FormattedStringExpression(self, original, updated):
        i, self.at = self.at, self.at + 1
        how = self.wrap[i] if i < len(self.wrap) else ""
        if how == "item":
            return updated.with_changes(expression=_with_item(updated.expression))
        if how == "float" and not _visibly_number(updated.expression):  # another rewrite may have made it one
            call = cst.Call(cst.Name("float"), [cst.Arg(updated.expression.with_changes(lpar=[], rpar=[]))])
            return updated.with_changes(expression=call)
        return updated


# Presentation types that format a float: what torch's 0-dim tensor formats (its item()), what a Python
# int or float formats the same after float(), and what a MindSpore tensor refuses.
_FLOAT_SPECS = frozenset("eEfFgG%")
# Calls whose result is a Python number already.
_NUMBER_CALLS = frozenset({"float", "int", "len", "round", "abs", "sum", "max", "min", "item"})


def _float_spec(part: cst.FormattedStringExpression) -> bool:
    """A literal format spec ending in a float presentation type (``.4f``, ``>8.2e``, ``.1%``)."""
    spec = part.format_spec
    if not spec or not all(isinstance(s, cst.FormattedStringText) for s in spec):
        return False
    text = "".join(cast("cst.FormattedStringText", s).value for s in spec)
    return bool(text) and text[-1] in _FLOAT_SPECS


def _visibly_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.Subscript) and isinstance(node.value, (cst.ListComp, cst.List)):
        items = [node.value.elt] if isinstance(node.value, cst.ListComp) else [e.value for e in node.value.elements]
        return all(_visibly_number(e) for e in items)
    if isinstance(node, cst.Call):
        func = node.func
        name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        return name in _NUMBER_CALLS
    return False


def _how(ctx: RewriteContext, part: cst.FormattedStringExpression) -> str:
    """How a ``{expr:spec}`` part is fixed: "item" (a tensor), "float" (a value of unknown type formatted as a
    float: a 0-dim tensor then formats as torch's does, a number as it did), "" (left alone)."""
    if part.format_spec is None:
        return ""
    kind = ctx.receiver_type(part.expression)
    if kind == TENSOR:
        return "item"
    if kind is None and _float_spec(part) and not _visibly_number(part.expression):
        return "float"
    return ""


def _formats_with_spec(ctx: RewriteContext, stmt: ast.stmt) -> bool:
    """Does the statement hold an f-string part with a format spec? Answered for the file's own
    statements from the lines of its spec'd parts, found in one walk (a part lies within the lines
    of its statement; statements a stage wrote are walked one by one)."""
    memo = _SPEC_LINES.of(ctx)
    if not memo:
        memo.append(_spec_lines(ctx.facts.tree))
    own, lines = memo[0]
    if id(stmt) in own:
        at = bisect_left(lines, stmt.lineno)
        if at == len(lines) or lines[at] > (stmt.end_lineno or stmt.lineno):
            return False
    return any(isinstance(n, ast.FormattedValue) and n.format_spec is not None for n in walk(stmt))


_SPEC_LINES: Cache[list[tuple[set[int], list[int]]]] = Cache(list)  # the file's _spec_lines, once computed


def _spec_lines(tree: ast.Module | None) -> tuple[set[int], list[int]]:
    """(ids of the tree's statements, sorted lines of its f-string parts that carry a format spec)."""
    if tree is None:
        return set(), []
    every = nodes(tree)
    own = {id(n) for n in every if isinstance(n, ast.stmt)}
    return own, sorted(n.lineno for n in every if isinstance(n, ast.FormattedValue) and n.format_spec is not None)


@leave(cst.SimpleStatementLine)
def format_spec_of_tensor(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``f"{loss:.4f}"`` where ``loss`` is a tensor → ``f"{loss.item():.4f}"``; where its type is not visible
    (``f"{losses['train']:.4f}"``, a loss a training step returns) → ``f"{float(losses['train']):.4f}"``."""
    info = ctx.statement
    if info is not None and not _formats_with_spec(ctx, info.node):
        return updated  # the statement (as the cheap ast sees it) formats nothing with a spec
    found = _FormattedParts()
    original.visit(found)
    wrap = [_how(ctx, p) for p in found.parts]
    if not any(wrap):
        return updated
    ctx.record(
        "torch.Tensor.__format__", "converted", _("a tensor formatted with a spec: formats its .item(), as torch")
    )
    return updated.visit(_AddItem(wrap))


@call()
def format_call_of_tensor(ctx: RewriteContext, original: cst.Call, updated: cst.Call):
    """``"{:.4f}".format(loss)`` where ``loss`` is a tensor → ``"{:.4f}".format(loss.item())``; None: not such a call."""
    func = original.func
    if not (
        isinstance(func, cst.Attribute)
        and func.attr.value == "format"
        and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString))
        and ":" in cst.Module([]).code_for_node(func.value)
    ):
        return None
    specs = _field_specs(cst.Module([]).code_for_node(func.value))
    wrap = [_how_arg(ctx, a, i, specs) for i, a in enumerate(original.args)]
    if not any(wrap):
        return None
    ctx.record(
        "torch.Tensor.__format__", "converted", _("a tensor formatted with a spec: formats its .item(), as torch")
    )
    return updated.with_changes(args=[_wrapped(a, how) for a, how in zip(updated.args, wrap)])


@call()
def format_builtin_of_tensor(ctx: RewriteContext, original: cst.Call, updated: cst.Call):
    """``format(loss, ".4f")``: as ``f"{loss:.4f}"``; None: not such a call."""
    if not (isinstance(original.func, cst.Name) and original.func.value == "format" and len(original.args) == 2):
        return None
    value, spec = original.args
    if value.star or value.keyword or spec.keyword or not isinstance(spec.value, cst.SimpleString):
        return None
    text = spec.value.evaluated_value
    if not isinstance(text, str):
        return None
    how = _how_value(ctx, value.value, text)
    if not how:
        return None
    ctx.record(
        "torch.Tensor.__format__", "converted", _("a tensor formatted with a spec: formats its .item(), as torch")
    )
    return updated.with_changes(args=[_wrapped(updated.args[0], how), updated.args[1]])


def _field_specs(code_text: str) -> dict[int | str, list[str]] | None:
    """The format specs of a format string's fields by argument (position or keyword name):
    ``"{:.4f} {n}"`` → {0: [".4f"], "n": [""]}; None where the string's fields are not plain (``{0.x}``,
    ``{a[0]}``, a nested spec, a malformed string)."""
    try:
        text = ast.literal_eval(code_text)
        fields = list(string.Formatter().parse(text)) if isinstance(text, str) else None
    except (ValueError, SyntaxError):
        return None
    if fields is None:
        return None
    out: dict[int | str, list[str]] = {}
    auto = 0
    for _literal, name, spec, _conversion in fields:
        if name is None:
            continue
        if "{" in (spec or "") or any(c in name for c in ".["):
            return None
        key: int | str
        if name == "":
            key, auto = auto, auto + 1
        else:
            key = int(name) if name.isdigit() else name
        out.setdefault(key, []).append(spec or "")
    return out


def _how_value(ctx: RewriteContext, node: cst.BaseExpression, *specs: str) -> str:
    """As ``_how`` for a value formatted with these specs: "item" (a tensor, some spec), "float" (unknown type,
    every spec a float presentation type), ""."""
    if not any(specs):
        return ""
    kind = ctx.receiver_type(node)
    if kind == TENSOR:
        return "item"
    floats = all(sp and sp[-1] in _FLOAT_SPECS for sp in specs)
    return "float" if kind is None and floats and not _visibly_number(node) else ""


def _how_arg(ctx: RewriteContext, arg: cst.Arg, at: int, specs: dict[int | str, list[str]] | None) -> str:
    if arg.star:
        return ""
    if specs is None:  # fields this rule cannot read: a tensor formats its item() where any spec is in sight
        return "item" if _is_tensor(ctx, arg.value) else ""
    key: int | str = arg.keyword.value if arg.keyword is not None else at
    return _how_value(ctx, arg.value, *specs.get(key, []))


def _wrapped(arg: cst.Arg, how: str) -> cst.Arg:
    if how == "item":
        return arg.with_changes(value=_with_item(arg.value))
    if how == "float" and not _visibly_number(arg.value):
        return arg.with_changes(value=cst.Call(cst.Name("float"), [cst.Arg(arg.value.with_changes(lpar=[], rpar=[]))]))
    return arg
