"""A slice of a Module's own ``nn.Sequential`` / ``nn.ModuleList`` taken inside a method (issue 24:
guided-diffusion's ResBlock, ``in_rest, in_conv = self.in_layers[:-1], self.in_layers[-1]``,
``out_rest = self.out_layers[1:]``). MindSpore's ``SequentialCell``/``CellList`` answer a slice with a new
container that renames the parameters it holds after their place in the slice (``2.weight``): GRAPH_MODE
builds it while it compiles, and a model with two such blocks stops with "duplicate parameter name";
PyNative renames the model's parameters as it runs. The slice becomes a tuple of the same cells,
``tuple(self.layers)[1:]`` (GRAPH_MODE iterates and indexes it, no cell is built, names stay torch's), and
calling it, directly or through a local it was assigned to, becomes
``torch2ms.runtime.call_cells(cells, x)``: each cell in turn, as ``nn.Sequential.forward`` does.
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
from ..facts import ModuleFacts
from ..hooks import leave
from ..plan import Stmt
from .map_lambda import mark_with_parents

_TEXT = re.compile(r"self\.[\w.]+\[[^\]\n]*:")
_CONTAINERS = ("torch.nn.Sequential", "torch.nn.ModuleList")


def _is_slice(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Slice)
        and isinstance(node.value, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
    )


def _sliced_locals(tree: ast.Module) -> set[str]:
    """Names a slice of a ``self`` attribute is assigned to (``rest, last = self.layers[1:], ...``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
            while pairs:
                target, value = pairs.pop()
                if isinstance(target, ast.Name) and _is_slice(value):
                    out.add(target.id)
                elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
                    pairs += zip(target.elts, value.elts)
    return out


def _sees(source: str, tree: ast.Module, plan: list[Stmt]) -> None:
    if not _TEXT.search(source):
        return
    names = _sliced_locals(tree)  # their calls become call_cells(...): those statements are visited too

    def wanted(root: ast.AST) -> bool:
        return any(
            _is_slice(n) or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names)
            for n in ast.walk(root)
        )

    mark_with_parents(plan, wanted)


CONSTRUCT = Construct("sequential slice", order=64, sees=_sees)


def _containers(ctx: RewriteContext) -> set[str]:
    """``self.<attr>`` paths of the current class that hold an nn.Sequential / nn.ModuleList (or a class of
    this file derived from one)."""
    if not ctx.class_stack:
        return set()
    cls = ctx.class_stack[-1]
    out = {a for a, t in ctx.facts.layer_attrs.get(cls, {}).items() if t in _CONTAINERS}
    for attr, subs in ctx.facts.sub_modules.get(cls, {}).items():
        if subs and all(any(b in _CONTAINERS for b in ctx.facts.torch_bases.get(s, [])) for s in subs):
            out.add(attr)
    return out


def _attr_path(node: cst.BaseExpression) -> str | None:
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name) and node.value == "self" and parts:
        return ".".join(reversed(parts))
    return None


def _container_slice(node: cst.BaseExpression, containers: set[str]) -> bool:
    return (
        isinstance(node, cst.Subscript)
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Slice)
        and _attr_path(node.value) in containers
    )


class _Slices(cst.CSTTransformer):
    """``self.layers[a:b]`` → ``tuple(self.layers)[a:b]``; a call of such a slice, or of a local assigned
    one, → ``call_cells(...)``."""

    def __init__(self, containers: set[str], ctx: RewriteContext) -> None:
        super().__init__()
        self.containers = containers
        self.ctx = ctx  # call_cells is parsed (and imported) only where a slice is called
        self.locals: set[str] = set()
        self.changed = 0

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            if _container_slice(value, self.containers):
                self.locals.add(target.value)
            else:
                self.locals.discard(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
            if len(target.elements) == len(value.elements):
                for t, v in zip(target.elements, value.elements):
                    self._bind(t.value, v.value)

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        if not _container_slice(original, self.containers):
            return updated
        self.changed += 1
        return updated.with_changes(value=cst.Call(cst.Name("tuple"), [cst.Arg(updated.value)]))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = original.func
        direct = _container_slice(func, self.containers)
        if not direct and not (isinstance(func, cst.Name) and func.value in self.locals):
            return updated
        self.changed += 1
        call = self.ctx.parse_ms("torch2ms.runtime.call_cells")
        return updated.with_changes(func=call, args=[cst.Arg(updated.func), *updated.args])


def _self_slice(node: ast.AST) -> bool:
    """``self.<attr>[a:b]`` (also ``[a:b,]``) in any spelling: a superset of what ``_container_slice`` finds."""
    if not isinstance(node, ast.Subscript):
        return False
    index = node.slice
    if not (
        isinstance(index, ast.Slice)
        or isinstance(index, ast.Tuple)
        and any(isinstance(e, ast.Slice) for e in index.elts)
    ):
        return False
    value = node.value
    if not isinstance(value, ast.Attribute):
        return False
    while isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, ast.Name) and value.id == "self"


@functools.lru_cache(maxsize=4)
def _slice_lines(tree: ast.Module) -> tuple[int, ...]:
    """The lines of the file's ``self.<attr>[a:b]`` slices, in order."""
    return tuple(sorted(n.lineno for n in nodes(tree) if n.__class__ is ast.Subscript and _self_slice(n)))


def _has_self_slices(facts: ModuleFacts) -> bool:
    """The file slices a ``self`` attribute somewhere (most do not: then no method is visited again)."""
    return facts.tree is None or bool(_slice_lines(facts.tree))


def _slices_in(ctx: RewriteContext, original: cst.FunctionDef) -> bool:
    """The def being left holds such a slice (or that cannot be told: a def no stage registered)."""
    info = ctx.index.get(original) if ctx.index is not None else None
    fn = info.node if info is not None else None
    tree = ctx.facts.tree
    if tree is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.end_lineno is None:
        return True
    lines = _slice_lines(tree)
    i = bisect.bisect_left(lines, min([fn.lineno, *(d.lineno for d in fn.decorator_list)]))
    return i < len(lines) and lines[i] <= fn.end_lineno


@leave(cst.FunctionDef, when=_has_self_slices)
def sequential_slice(ctx: RewriteContext, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
    """In a Module's method: slices of its own Sequential/ModuleList become tuples of the same cells."""
    if not ctx.in_module_class or not _slices_in(ctx, original):
        return updated
    containers = _containers(ctx)
    if not containers:
        return updated
    slices = _Slices(containers, ctx)
    out = updated.visit(slices)
    if not slices.changed:
        return updated
    ctx.record(
        "torch.nn.Sequential.__getitem__",
        "converted",
        _("slice of a Sequential/ModuleList taken as a tuple of its cells: MindSpore builds a renaming container"),
    )
    assert isinstance(out, cst.FunctionDef)
    return out
