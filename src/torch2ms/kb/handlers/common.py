"""Transforms and handlers shared by several namespaces."""

from __future__ import annotations

import ast
from collections.abc import Callable

from ...i18n import _
from ..schema import Entry
from ..source import NOT_LITERAL, is_int, literal
from ..transforms import Unsupported, handler, registry_name, transform


def rule_key(entry: Entry, fn: Callable[..., dict[str, str]]) -> str:
    """The MindSpore keyword of the entry's argument rule that uses transform ``fn``."""
    name = registry_name(fn)
    rule = next(r for r in entry.args.values() if r.transform == name)
    return rule.ms or rule.torch


def spatial_dims(entry: Entry) -> int:
    for d in (1, 2, 3):
        if f"{d}d" in entry.torch:
            return d
    return 2


@transform
def conv_padding(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """torch ``padding`` (int, tuple, 'same', 'valid') → MindSpore ``pad_mode`` + ``padding``.

    MindSpore's default pad_mode is 'same' (TF-style) and its 2-D padding tuple is
    (top, bottom, left, right), so torch's (h, w) becomes (h, h, w, w); no padding is pad_mode='valid'.
    """
    v = literal(value) if value is not None else 0
    dims = spatial_dims(entry)
    if v is NOT_LITERAL:
        return _run_time_padding(str(value), dims)
    if isinstance(v, str):
        if v not in ("same", "valid"):
            raise Unsupported(_("padding={v!r} is not a torch padding mode").format(v=v))
        return {"pad_mode": repr(v)}
    if "Transpose" not in entry.torch and (v == 0 or isinstance(v, (tuple, list)) and v and not any(v)):
        return {"pad_mode": "'valid'"}  # no padding: MindSpore's own word for it (its default is 'same')
    if isinstance(v, int):
        return {"pad_mode": "'pad'", "padding": repr(v)}
    if isinstance(v, (tuple, list)) and all(isinstance(i, int) for i in v):
        v = tuple(v)
        if len(v) == 1 or dims == 1:
            return {"pad_mode": "'pad'", "padding": repr(v[0])}
        if len(v) == dims:
            return {"pad_mode": "'pad'", "padding": repr(tuple(p for p in v for _ in (0, 1)))}
    raise Unsupported(_("padding={value} has no MindSpore form").format(value=value))


def _run_time_padding(value: str, dims: int) -> dict[str, str]:
    """A padding that is not a literal: a tuple display of ``dims`` expressions is laid out here
    ((p, q) → (p, p, q, q)); arithmetic is an int; any other expression (a name that may hold an
    int, a tuple or 'same') is laid out at run time by torch2ms.runtime."""
    try:
        node = ast.parse(value.strip(), mode="eval").body
    except SyntaxError:
        node = None
    if isinstance(node, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        items = [ast.unparse(e) for e in node.elts]
        if len(items) == 1 or dims == 1:
            return {"pad_mode": "'pad'", "padding": items[0]}
        if len(items) == dims:
            return {"pad_mode": "'pad'", "padding": "(" + ", ".join(p for p in items for _ in (0, 1)) + ")"}
    if isinstance(node, (ast.BinOp, ast.UnaryOp)) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int"
    ):
        return {"pad_mode": "'pad'", "padding": value}
    return {
        "pad_mode": f"torch2ms.runtime.conv_pad_mode({value})",
        "padding": f"torch2ms.runtime.conv_padding({value}, {dims})",
    }


@transform
def pool_padding(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """Pooling padding: MindSpore needs pad_mode='pad' for any padding or ceil_mode."""
    v = literal(value) if value is not None else 0
    if v is NOT_LITERAL:
        return {"pad_mode": "'pad'", "padding": value}  # type: ignore[dict-item]
    return {"pad_mode": "'pad'", "padding": repr(tuple(v) if isinstance(v, list) else v)}


@transform
def stride_default_kernel(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """torch pooling stride defaults to kernel_size; MindSpore's defaults to 1."""
    if value is None or literal(value) is None:
        return {"stride": bound.get("kernel_size", "1")}
    return {"stride": value}


@transform
def one_minus(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """BatchNorm momentum: MindSpore weighs the old running value, torch the new batch value."""
    src = value if value is not None else entry.sig_defaults().get("momentum", "0.1")
    v = literal(src)
    if v is None:
        raise Unsupported(_("momentum=None (cumulative moving average) has no MindSpore form"))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return {rule_key(entry, one_minus): repr(round(1.0 - v, 12))}
    return {rule_key(entry, one_minus): f"1 - ({src})"}


@transform
def to_tuple(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """An int-or-sequence shape argument MindSpore only takes as a tuple."""
    v = literal(value)
    key = rule_key(entry, to_tuple)
    if isinstance(v, int):
        return {key: f"({v},)"}
    if isinstance(v, (list, tuple)):
        return {key: repr(tuple(v))}
    if is_int(value):
        return {key: f"({value},)"}
    return {key: f"(tuple({value}) if isinstance({value}, (list, tuple)) else ({value},))"}


@transform
def to_int32(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """Class-index labels: several MindSpore losses accept only int32."""
    return {rule_key(entry, to_int32): f"{value}.astype(mindspore.int32)"}


@transform
def dim_tuple(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """A dim given as a list becomes a tuple: MindSpore reductions reject lists in graph mode."""
    v = literal(value)
    key = rule_key(entry, dim_tuple)
    if isinstance(v, list):
        return {key: repr(tuple(v))}
    return {key: value}  # type: ignore[dict-item]


@handler
def tensor_size(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.size()`` → ``x.shape``; ``x.size(i)`` → ``x.shape[i]`` (MindSpore's ``size`` is numel)."""
    dim = bound.get("dim")
    if dim is None:
        return f"{receiver}.shape"
    return f"{receiver}.shape[{dim}]"
