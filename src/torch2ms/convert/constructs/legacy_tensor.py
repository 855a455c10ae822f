"""The size form of torch's legacy constructors: ``torch.Tensor(n_in, n_out)``,
``torch.FloatTensor(3)``, ``torch.LongTensor(*shape)``.

They allocate uninitialised memory of that shape (the values are always overwritten by an init
call: ``nn.Parameter(torch.Tensor(i, o))`` then ``xavier_normal_``). The KB maps the data form
(``torch.Tensor([[1, 2]])`` → ``mindspore.Tensor(input_data=..., dtype=float32)``); with two or
more positional arguments, or one whole number, the arguments are sizes: ``mindspore.ops.zeros``
of that shape and the constructor's dtype. One argument of unknown type (``torch.Tensor(out_dim)``,
a parameter of ``__init__``) is sized or data by its value at run time:
``torch2ms.runtime.legacy_tensor(out_dim, dtype)``.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.imports import legacy_type_name
from ...i18n import _
from ...kb.rewrite import rewrite_call
from ...kb.schema import Entry
from ...kb.source import literal
from ..construct import Construct
from ..context import RewriteContext
from ..cstutil import code
from ..hooks import reference, torch_call

CONSTRUCT = Construct("legacy tensor", order=60)

_DATA_TRANSFORM = "torch_ops_shape.tensor_data"


def _legacy_dtype(ctx: RewriteContext, full: str) -> str | None:
    """The MindSpore dtype a legacy constructor's data form writes (None: not a legacy constructor)."""
    entry = ctx.kb.get(full)
    rule = entry.args.get("data") if entry is not None else None
    if rule is None or rule.transform != _DATA_TRANSFORM:
        return None
    res = rewrite_call(entry, ["[0]"], [])  # type: ignore[arg-type]
    return dict(res.kwargs or []).get("dtype") if res.ok else None


# One argument of these kinds is data (a list, a comprehension, a string...), never a size.
_DATA_NODES = (cst.List, cst.Tuple, cst.ListComp, cst.Dict, cst.Set, cst.BaseString, cst.Float)
_SIZE_CALLS = frozenset({"int", "len"})
# Calls whose result mindspore.Tensor takes as data (a list, a tuple, a numpy array); any other call
# (``range(n)``, ``map(...)``, ``zip(...)``, a user's function) may return an iterable it refuses.
_DATA_CALLS = frozenset({"list", "tuple", "array", "asarray", "tolist"})


def _call_name(func: cst.BaseExpression) -> str:
    """The last name of a call's function: ``np.array`` → "array", ``range`` → "range"."""
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _sizes(call: cst.Call) -> list[str] | None:
    """The size arguments: ``(a, b)``, ``(*shape)`` or one whole-number literal; None for data."""
    if not call.args or any(a.keyword is not None for a in call.args):
        return None
    srcs = [("*" if a.star == "*" else "") + code(a.value).strip() for a in call.args]
    if any(a.star == "**" for a in call.args):
        return None
    if len(srcs) >= 2 or call.args[0].star == "*":
        return srcs
    value = literal(srcs[0])
    return srcs if isinstance(value, int) and not isinstance(value, bool) else None


def _one_argument_kind(ctx: RewriteContext, call: cst.Call) -> str:
    """ "size", "data" or "unknown" for the one positional argument of a legacy constructor."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return "data"
    value = call.args[0].value
    if isinstance(value, cst.Name) and value.value in ctx.int_names():
        return "size"
    if isinstance(value, cst.Call):
        if isinstance(value.func, cst.Name) and value.func.value in _SIZE_CALLS:
            return "size"
        return "data" if _call_name(value.func) in _DATA_CALLS else "iterable"
    if isinstance(value, cst.GeneratorExp):
        return "iterable"
    return "data" if isinstance(value, _DATA_NODES) else "unknown"


@torch_call()
def legacy_sizes(ctx: RewriteContext, full: str, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
    """``torch.Tensor(i, o)`` → ``ops.zeros((i, o), ms.float32)``."""
    dtype = _legacy_dtype(ctx, full)  # first: most torch calls are no legacy constructor
    if dtype is None:
        return None
    sizes = _sizes(updated)
    kind = "size" if sizes is not None else _one_argument_kind(ctx, updated)
    if kind == "data":
        return None
    if kind in ("unknown", "iterable"):
        if kind == "unknown":
            ctx.record(full, "converted", _("one argument of unknown type: a size or data, decided at run time"))
        else:
            ctx.record(full, "converted", _("an iterable (range, generator, map...) read into a list at run time"))
        value = updated.args[0].value
        arg = code(value).strip()
        if isinstance(value, cst.GeneratorExp) and not value.lpar:
            arg = f"({arg})"
        return ctx.parse_ms(f"torch2ms.runtime.legacy_tensor({arg}, {dtype})")
    sizes = sizes or [code(updated.args[0].value).strip()]
    ctx.record(full, "converted", _("size form (uninitialised memory in torch): zeros of that shape"))
    return ctx.parse_ms(f"mindspore.ops.zeros(({', '.join(sizes)},), {dtype})")


def _alias_statement(ctx: RewriteContext) -> bool:
    """Is the statement being rewritten ``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor``
    (a name the file's import map binds to that legacy type)?"""
    info = ctx.statement
    node = info.node if info is not None else None
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id in ctx.imap.legacy_aliases
    )


@reference()
def legacy_type_as_dtype(
    ctx: RewriteContext, entry: Entry, original: cst.BaseExpression, updated: cst.BaseExpression
) -> cst.BaseExpression | None:
    """A legacy tensor type where it stands for its dtype: ``x.type(torch.FloatTensor)`` →
    ``x.astype(mindspore.float32)``, ``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`` →
    ``mindspore.float32`` (its calls, ``Tensor(n, 1)``, are converted where they are, through the alias)."""
    if legacy_type_name(entry.torch) is None or ctx.in_type_position(original):
        return None
    if original not in ctx.dtype_nodes and not _alias_statement(ctx):
        return None  # map(torch.LongTensor, rows): a constructor passed as a value (TorchCompat)
    dtype = _legacy_dtype(ctx, entry.torch)
    if dtype is None:
        return None
    ctx.record(entry.torch, "converted", _("a legacy tensor type standing for its dtype: {dtype}").format(dtype=dtype))
    return ctx.parse_ms(dtype)
