"""einops' ``rearrange`` / ``reduce`` / ``repeat`` / ``parse_shape`` and its ``Rearrange`` /
``Reduce`` layers, for MindSpore tensors, in PyNative and GRAPH_MODE.

einops has no MindSpore backend. Here a pattern is turned into a *recipe* (reshape, reduce,
transpose, broadcast, reshape) by plain Python; ``mindspore.ops.constexpr`` makes GRAPH_MODE
evaluate it at compile time from the pattern and the static input shape, so the compiled network
holds only the few tensor ops the recipe names.
"""

from __future__ import annotations

from typing import Any

from mindspore import nn, ops
from mindspore.ops import constexpr

__all__ = ["rearrange", "reduce", "repeat", "parse_shape", "Rearrange", "Reduce"]

_REDUCTIONS = ("sum", "mean", "max", "min", "prod")
_ELLIPSIS = "…"  # one token for "..." while parsing


class EinopsError(ValueError):
    """A pattern or axis length einops would refuse too."""


def _parse_side(text: str) -> list[list[str] | str]:
    """``b (h p1) ... 1`` → [["b"], ["h", "p1"], "…", []]: one group per dim, a bare ``...`` as
    the string "…" (it may stand for several dims); an anonymous ``1`` is an empty group, other
    numbers stay as text (anonymous axes of that length)."""
    groups: list[list[str] | str] = []
    current: list[str] | None = None
    for token in text.replace("...", f" {_ELLIPSIS} ").replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            if current is not None:
                raise EinopsError("nested parentheses")
            current = []
        elif token == ")":
            if current is None:
                raise EinopsError("unbalanced parentheses")
            groups.append(current)
            current = None
        else:
            axes = [] if token == "1" else [token]
            if current is None:
                groups.append(_ELLIPSIS if token == _ELLIPSIS else axes)
            else:
                current.extend(axes)
    if current is not None:
        raise EinopsError("unbalanced parentheses")
    return groups


def _expand_ellipsis(groups: list[list[str] | str], count: int) -> list[list[str]]:
    """Replace ``…`` by the ``count`` axes it covers (``…0``, ``…1``, ...): a bare ``...`` is one
    dim per axis, ``(...)`` one merged dim."""
    names = [f"{_ELLIPSIS}{i}" for i in range(count)]
    out: list[list[str]] = []
    for g in groups:
        if isinstance(g, str):  # the bare "…"
            out.extend([n] for n in names)
        elif _ELLIPSIS not in g:
            out.append(g)
        else:
            i = g.index(_ELLIPSIS)
            out.append(g[:i] + names + g[i + 1 :])
    return out


def _left_lengths(groups: list[list[str]], shape: tuple[int, ...], known: dict[str, int]) -> dict[str, int]:
    """Length of every elementary axis of the input side, from the input shape and the given lengths."""
    if len(groups) != len(shape):
        raise EinopsError(f"pattern has {len(groups)} dims, input has {len(shape)}")
    lengths = dict(known)
    for group, dim in zip(groups, shape):
        unknown = [a for a in group if a not in lengths]
        product = 1
        for a in group:
            product *= lengths.get(a, 1)
        if len(unknown) > 1:
            raise EinopsError(f"cannot infer the lengths of {unknown} from one dim")
        if unknown:
            if product == 0 or dim % product:
                raise EinopsError(f"dim {dim} does not divide by {product}")
            lengths[unknown[0]] = dim // product
        elif product != dim:
            raise EinopsError(f"dim {dim} is not {product}")
    return lengths


def _sides(pattern: str, rank: int) -> tuple[list[list[str]], list[list[str]]]:
    if pattern.count("->") != 1:
        raise EinopsError(f"pattern {pattern!r} needs exactly one '->'")
    left_text, right_text = pattern.split("->")
    left, right = _parse_side(left_text), _parse_side(right_text)
    left_dots = sum(_ELLIPSIS in g for g in left)
    if left_dots > 1 or (left_dots == 0 and any(_ELLIPSIS in g for g in right)):
        raise EinopsError("'...' must appear once on the left side")
    if left_dots and _ELLIPSIS not in left:
        raise EinopsError("'...' cannot be inside parentheses on the left side")
    count = rank - (len(left) - 1) if left_dots else 0
    if count < 0:
        raise EinopsError(f"input has {rank} dims, pattern needs at least {len(left) - 1}")
    return _expand_ellipsis(left, count), _expand_ellipsis(right, count)


def _number_axes(groups: list[list[str]], lengths: dict[str, int], side: str) -> list[list[str]]:
    """Numbers (``(h 2)``, ``h w -> h w 3``) become anonymous axes of that length, never matched
    across the arrow (as in einops)."""
    out = []
    for k, g in enumerate(groups):
        named = []
        for j, a in enumerate(g):
            if a.isdigit():
                lengths[f"#{side}{k}.{j}"] = int(a)
                a = f"#{side}{k}.{j}"
            named.append(a)
        out.append(named)
    return out


def plan(kind: str, pattern: str, shape: tuple[int, ...], axes: tuple[tuple[str, int], ...]) -> tuple:
    """The ops that turn a tensor of ``shape`` into the pattern's output:
    (first reshape, axes to reduce, permutation, shape before broadcast, broadcast shape, last reshape);
    None (or ``()``) where a step is not needed."""
    shape = tuple(shape)
    left, right = _sides(pattern, len(shape))
    known = dict(axes)
    left, right = _number_axes(left, known, "<"), _number_axes(right, known, ">")
    lengths = _left_lengths(left, shape, known)
    left_axes = [a for g in left for a in g]
    right_axes = [a for g in right for a in g]
    if len(set(left_axes)) != len(left_axes) or len(set(right_axes)) != len(right_axes):
        raise EinopsError(f"an axis is repeated in {pattern!r}")
    missing = set(right_axes) - set(left_axes)
    if kind != "repeat" and missing:
        raise EinopsError(f"{sorted(missing)} on the right only: that needs repeat")
    if kind == "rearrange" and set(left_axes) - set(right_axes):
        raise EinopsError(f"{sorted(set(left_axes) - set(right_axes))} on the left only: that needs reduce")
    if kind == "repeat" and set(left_axes) - set(right_axes):
        raise EinopsError("repeat cannot drop axes")
    for a in missing:
        if a not in known:
            raise EinopsError(f"the length of new axis {a!r} must be given")
        lengths[a] = known[a]
    init = tuple(lengths[a] for a in left_axes)
    reduced = tuple(i for i, a in enumerate(left_axes) if a not in right_axes)
    kept = [a for a in left_axes if a in right_axes]
    perm = tuple(kept.index(a) for a in right_axes if a in kept)
    current = tuple(lengths[a] for a in right_axes if a in kept)
    expand = bcast = None
    if missing:
        expand = tuple(lengths[a] if a in kept else 1 for a in right_axes)
        bcast = current = tuple(lengths[a] for a in right_axes)
    final = tuple(_product(lengths[a] for a in g) for g in right)
    return (
        None if init == shape else init,
        reduced,
        None if perm == tuple(range(len(perm))) else perm,
        expand,
        bcast,
        None if final == current else final,
    )


def _product(values: Any) -> int:
    out = 1
    for v in values:
        out *= v
    return out


_recipe = constexpr(plan)


def _reduce(x: Any, axis: tuple[int, ...], reduction: str) -> Any:
    if reduction == "sum":
        return x.sum(axis=axis)
    if reduction == "mean":
        return x.mean(axis=axis)
    if reduction == "max":
        return x.max(axis=axis)
    if reduction == "min":
        return x.min(axis=axis)
    for a in sorted(axis, reverse=True):  # Tensor.prod takes one dim at a time
        x = x.prod(a)
    return x


def _apply(x: Any, recipe: tuple, reduction: str) -> Any:
    init, reduced, perm, expand, bcast, final = recipe
    if init is not None:
        x = x.reshape(init)
    if reduced:
        x = _reduce(x, reduced, reduction)
    if perm is not None:
        x = ops.transpose(x, perm)
    if expand is not None:
        x = ops.broadcast_to(x.reshape(expand), bcast)
    if final is not None:
        x = x.reshape(final)
    return x


def _stacked(tensor: Any) -> Any:
    """einops takes a list of tensors as one tensor with a new first axis."""
    if isinstance(tensor, (list, tuple)):
        return ops.stack(tensor)
    return tensor


def rearrange(tensor: Any, pattern: str, **axes_lengths: int) -> Any:
    """``einops.rearrange``: reorder, merge and split axes."""
    x = _stacked(tensor)
    return _apply(x, _recipe("rearrange", pattern, x.shape, tuple(axes_lengths.items())), "")


def reduce(tensor: Any, pattern: str, reduction: str, **axes_lengths: int) -> Any:
    """``einops.reduce`` with 'sum', 'mean', 'max', 'min' or 'prod'."""
    x = _stacked(tensor)
    return _apply(x, _recipe("reduce", pattern, x.shape, tuple(axes_lengths.items())), reduction)


def repeat(tensor: Any, pattern: str, **axes_lengths: int) -> Any:
    """``einops.repeat``: new axes (lengths given by name or as numbers) broadcast and merged."""
    x = _stacked(tensor)
    return _apply(x, _recipe("repeat", pattern, x.shape, tuple(axes_lengths.items())), "")


def shape_names(pattern: str, shape: tuple[int, ...]) -> dict[str, int]:
    """The named dims of ``shape`` by ``pattern`` (``_`` skips one)."""
    groups = _sides(f"{pattern} -> ", len(shape))[0]
    if len(groups) != len(shape):
        raise EinopsError(f"pattern has {len(groups)} dims, input has {len(shape)}")
    return {g[0]: d for g, d in zip(groups, shape) if g and g[0] != "_" and not g[0].startswith(_ELLIPSIS)}


_shape_names = constexpr(shape_names)  # GRAPH_MODE: at compile time (it cannot raise EinopsError in a graph)


def parse_shape(tensor: Any, pattern: str) -> dict[str, int]:
    """``einops.parse_shape``: named dims of a tensor (``_`` skips one)."""
    return _shape_names(pattern, tensor.shape)


class Rearrange(nn.Cell):
    """``einops.layers.torch.Rearrange`` as a Cell (no parameters)."""

    def __init__(self, pattern: str, **axes_lengths: int) -> None:
        super().__init__()
        self.pattern = pattern
        self.axes = tuple(axes_lengths.items())

    def construct(self, x: Any) -> Any:
        return _apply(x, _recipe("rearrange", self.pattern, x.shape, self.axes), "")


class Reduce(nn.Cell):
    """``einops.layers.torch.Reduce`` as a Cell (no parameters)."""

    def __init__(self, pattern: str, reduction: str, **axes_lengths: int) -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise EinopsError(f"reduction {reduction!r}: one of {', '.join(_REDUCTIONS)}")
        self.pattern = pattern
        self.reduction = reduction
        self.axes = tuple(axes_lengths.items())

    def construct(self, x: Any) -> Any:
        return _apply(x, _recipe("reduce", self.pattern, x.shape, self.axes), self.reduction)
