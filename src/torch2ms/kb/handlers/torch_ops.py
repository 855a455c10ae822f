"""Handlers for torch.* top-level functions (creation, pointwise math, reductions, comparison).

Most handlers first render the call through the entry's own argument rules (``render_by_rules``: renames,
drops, ``unsupported`` checks, as if the entry had no template) and then post-process the
MindSpore source, e.g. cast int32 indices to torch's int64.
"""

from __future__ import annotations

import ast

from ...i18n import _
from ..rewrite import render_by_rules
from ..schema import Entry
from ..source import NOT_LITERAL, literal, paren
from ..transforms import Unsupported, handler

_DROPPED = ("device", "layout", "requires_grad", "pin_memory", "memory_format", "generator")


def _reject_out(entry: Entry, bound: dict[str, str]) -> None:
    out = bound.get("out")
    if out is not None and literal(out) is not None:
        raise Unsupported(_("{api}: out= is not supported; assign the result").format(api=entry.short))


def _is_true(src: str | None) -> bool:
    return src is not None and literal(src) is True


# ---- generic post-processing ----------------------------------------------------------------


@handler
def indices_int64(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """MindSpore returns int32 indices where torch returns int64: cast."""
    return f"{render_by_rules(entry, bound)}.astype(mindspore.int64)"


@handler
def pair_indices_int64(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """(values, int32 indices) → (values, int64 indices), as torch returns."""
    return f"torch2ms.runtime.with_int64_indices({render_by_rules(entry, bound)})"


@handler
def cast_dtype(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """A ``dtype=`` the MindSpore function lacks becomes ``.astype(dtype)`` on the result."""
    b = dict(bound)
    dtype = b.pop("dtype", None)
    src = render_by_rules(entry, b)
    if dtype is None or literal(dtype) is None:
        return src
    return f"{src}.astype({dtype})"


# ---- creation --------------------------------------------------------------------------------


def _size_src(size: str | None) -> str:
    if size is None:
        raise Unsupported(_("a size is required"))
    try:
        node = ast.parse(f"f({size})", mode="eval").body
    except SyntaxError:
        return size
    if len(node.args) == 1 and not node.keywords:  # type: ignore[attr-defined]
        return size  # already an int, tuple, list or shape expression
    return f"({size})"


def _creation_tail(bound: dict[str, str], entry: Entry) -> list[str]:
    _reject_out(entry, bound)
    for k in bound:
        if k not in ("size", "dtype", "out", "fill_value", *_DROPPED):
            raise Unsupported(_("{api}: argument {k!r} is not supported").format(api=entry.short, k=k))
    return [f"dtype={bound['dtype']}"] if bound.get("dtype") not in (None, "None") else []


@handler
def sized(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``torch.zeros(2, 3, dtype=...)`` → ``ops.zeros((2, 3), dtype=...)`` (MindSpore takes the shape as one tuple).

    A 0-d shape (``torch.ones([])``, CLIP's logit scale) fails in MindSpore without a dtype
    ("Select CPU operator[Ones] fail"): torch's default float32 is written out."""
    size = _size_src(bound.get("size"))
    tail = _creation_tail(bound, entry)
    if literal(size) in ((), []) and not tail:
        size, tail = "()", ["mindspore.float32"]
    return f"{entry.ms}({', '.join([size, *tail])})"


@handler
def full(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``ops.full`` returns int64 for any python fill value; torch infers float32/bool/int64."""
    tail = _creation_tail(bound, entry)
    fill = bound.get("fill_value")
    if fill is None:
        raise Unsupported(_("torch.full needs fill_value"))
    if not tail:
        v = literal(fill)
        if isinstance(v, bool):
            tail = ["dtype=mindspore.bool_"]
        elif isinstance(v, int):
            tail = ["dtype=mindspore.int64"]
        elif isinstance(v, float):
            tail = ["dtype=mindspore.float32"]
        else:
            tail = [
                f"dtype=(mindspore.bool_ if isinstance({fill}, bool) else mindspore.int64 "
                f"if isinstance({fill}, int) else {paren(fill)}.dtype if isinstance({fill}, mindspore.Tensor) "
                "else mindspore.float32)"
            ]
    return f"{entry.ms}({_size_src(bound.get('size'))}, {fill}, {', '.join(tail)})"


@handler
def logspace(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``ops.logspace`` needs float start/end and an int base; ``base ** linspace`` needs neither."""
    _creation_tail({k: v for k, v in bound.items() if k not in ("start", "end", "steps", "base")}, entry)
    base = bound.get("base", "10.0")
    src = f"mindspore.ops.pow({base}, mindspore.ops.linspace({bound['start']}, {bound['end']}, {bound['steps']}))"
    dtype = bound.get("dtype")
    if dtype is not None and literal(dtype) is not None:
        src = f"{src}.astype({dtype})"
    return src


# ---- pointwise -----------------------------------------------------------------------------


@handler
def add_alpha(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``torch.add(x, y, alpha=a)`` → ``ops.add(x, y * a)`` (MindSpore has no alpha)."""
    b = dict(bound)
    alpha = b.pop("alpha", None)
    if alpha is not None and literal(alpha) != 1:
        b["other"] = f"{paren(b['other'])} * {paren(alpha)}"
    return render_by_rules(entry, b)


@handler
def round_decimals(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``decimals != 0`` is rejected by the CPU Round kernel: scale, round half-to-even, unscale."""
    b = dict(bound)
    dec = b.pop("decimals", None)
    if dec is None or literal(dec) == 0:
        return render_by_rules(entry, b)
    x = b["input"]
    _reject_out(entry, b)
    return f"(mindspore.ops.round({paren(x)} * 10.0 ** {paren(dec)}) / 10.0 ** {paren(dec)})"


@handler
def bitwise_not(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``ops.invert`` rejects bool tensors; torch's bitwise_not on bool is logical not."""
    _reject_out(entry, bound)
    x = paren(bound["input"])
    return f"(mindspore.ops.logical_not({x}) if {x}.dtype == mindspore.bool_ else mindspore.ops.invert({x}))"


@handler
def xlogy(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """MindSpore's xlogy(0, 0) is nan; torch defines x*log(y) = 0 wherever x == 0 (y not nan)."""
    _reject_out(entry, bound)
    x, y = paren(bound["input"]), paren(bound["other"])
    return f"mindspore.ops.where(({x} == 0) & ~mindspore.ops.isnan({y}), 0.0, mindspore.ops.xlogy({x}, {y}))"


# ---- reductions ----------------------------------------------------------------------------


def _is_int_literal(src: str | None) -> bool:
    v = literal(src)
    return (
        isinstance(v, int) and not isinstance(v, bool) or (isinstance(v, tuple) and all(isinstance(i, int) for i in v))
    )


@handler
def max_min(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.max / torch.min: over all elements, along dim (values, int64 indices), or against another tensor.

    ``max(x)`` → ``ops.max(x)[0]`` (MS returns (value, index)); ``max(x, dim, keepdim)`` →
    ``ops.max(x, dim, keepdims)`` = (values, int64 indices); ``max(x, other)`` → ``ops.maximum``.
    """
    _reject_out(entry, bound)
    fn = entry.ms.rsplit(".", 1)[-1]  # max | min
    binary = "maximum" if fn == "max" else "minimum"
    x = bound["input"]
    other = bound.get("other")
    dim = bound.get("dim")
    keep = bound.get("keepdim")
    if other is not None:
        return f"mindspore.ops.{binary}({x}, {other})"
    if dim is None:
        return f"mindspore.ops.{fn}({x})[0]"
    kd = f", keepdims={keep}" if keep is not None else ""
    if _is_int_literal(dim) or literal(dim) is not NOT_LITERAL:
        return f"mindspore.ops.{fn}({x}, {dim}{kd})"
    # A name: a tensor (binary overload) or an int (dim overload), decided at run time.
    return (
        f"(mindspore.ops.{binary}({x}, {dim}) if isinstance({dim}, mindspore.Tensor) "
        f"else mindspore.ops.{fn}({x}, {dim}{kd}))"
    )


def _ddof(bound: dict[str, str]) -> tuple[str | None, str]:
    """(dim, ddof) from torch's std/var overloads: correction=, unbiased=, or a bool in dim's slot."""
    dim = bound.get("dim")
    unbiased = bound.get("unbiased")
    if dim is not None and isinstance(literal(dim), bool):
        dim, unbiased = None, dim
    corr = bound.get("correction")
    if corr is not None:
        return dim, corr
    if unbiased is not None:
        v = literal(unbiased)
        if v is NOT_LITERAL:
            return dim, f"int(bool({unbiased}))"
        return dim, "1" if v else "0"
    return dim, "1"


@handler
def std_var(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """std / var / std_mean / var_mean: torch's default is unbiased (ddof=1), MindSpore's ddof=0."""
    _reject_out(entry, bound)
    dim, ddof = _ddof(bound)
    parts = [bound["input"]]
    if dim is not None:
        v = literal(dim)
        parts.append(repr(tuple(v)) if isinstance(v, list) else dim)
    parts.append(f"ddof={ddof}")
    if bound.get("keepdim") is not None:
        parts.append(f"keepdims={bound['keepdim']}")
    return f"{entry.ms}({', '.join(parts)})"


@handler
def norm(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.norm with a numeric p is always a *vector* norm (over all elements if dim is None).

    ops.norm on a 2-D input with ord=2 is the spectral matrix norm, so flatten first.
    """
    _reject_out(entry, bound)
    if bound.get("dtype") not in (None, "None"):
        raise Unsupported(_("torch.norm(dtype=) is not supported; cast the input first"))
    x = bound["input"]
    p = bound.get("p", "'fro'")
    pv = literal(p)
    dim = bound.get("dim")
    keep = bound.get("keepdim")
    dv = literal(dim) if dim is not None else None
    kd = f", keepdim={keep}" if keep is not None else ""
    if pv == "nuc":
        return f"mindspore.ops.norm({x}, 'nuc'{', dim=' + repr(tuple(dv)) if dim else ''}{kd})"
    if pv == "fro":
        pv, p = 2, "2"
    if isinstance(pv, str):
        raise Unsupported(_("torch.norm(p={p}) is not supported").format(p=p))
    if dim is None or dv is None:
        if _is_true(keep):
            raise Unsupported(_("torch.norm(dim=None, keepdim=True) is not supported"))
        return f"mindspore.ops.norm({paren(x)}.reshape(-1), {p})"
    if isinstance(dv, (list, tuple)):
        if len(dv) == 1:
            return f"mindspore.ops.norm({x}, {p}, {dv[0]}{kd})"
        if pv == 2:
            return f"mindspore.ops.norm({x}, 'fro', {tuple(dv)!r}{kd})"
        raise Unsupported(_("torch.norm over several dims with p != 2 is not supported"))
    return f"mindspore.ops.norm({x}, {p}, {dim}{kd})"


@handler
def median(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """median(x) → the lower median over all elements; median(x, dim) → (values, int64 indices)."""
    _reject_out(entry, bound)
    x = bound["input"]
    if bound.get("dim") is None:
        return f"{entry.ms}({paren(x)}.reshape(-1), 0)[0]"
    kd = f", keepdims={bound['keepdim']}" if "keepdim" in bound else ""
    return f"{entry.ms}({x}, {bound['dim']}{kd})"


@handler
def aminmax(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch dim=None reduces everything; ops.aminmax's axis defaults to 0."""
    _reject_out(entry, bound)
    x = bound["input"]
    kd = f", keepdims={bound['keepdim']}" if "keepdim" in bound else ""
    if bound.get("dim") in (None, "None"):
        if _is_true(bound.get("keepdim")):
            raise Unsupported(_("torch.aminmax(dim=None, keepdim=True) is not supported"))
        return f"mindspore.ops.aminmax({paren(x)}.reshape(-1), axis=0)"
    return f"mindspore.ops.aminmax({x}, axis={bound['dim']}{kd})"


@handler
def count_nonzero(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """ops.count_nonzero returns int32 by default; torch int64."""
    x = bound["input"]
    dim = bound.get("dim")
    if dim in (None, "None"):
        return f"mindspore.ops.count_nonzero({x}, dtype=mindspore.int64)"
    v = literal(dim)
    if isinstance(v, list):
        dim = repr(tuple(v))
    return f"mindspore.ops.count_nonzero({x}, {dim}, dtype=mindspore.int64)"


@handler
def bincount(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """ops.bincount returns float32 counts; torch int64 (without weights)."""
    src = render_by_rules(entry, bound)
    if bound.get("weights") in (None, "None"):
        return f"{src}.astype(mindspore.int64)"
    return src


@handler
def unique(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """ops.unique does not sort and always returns (output, inverse): sort + unique_consecutive."""
    if bound.get("dim") not in (None, "None"):
        raise Unsupported(_("torch.unique(dim=...) is not supported"))
    if literal(bound.get("sorted", "True")) is not True:
        pass  # torch sorts on CPU anyway
    x = paren(bound["input"])
    inv = literal(bound.get("return_inverse", "False"))
    cnt = literal(bound.get("return_counts", "False"))
    if inv is NOT_LITERAL or cnt is NOT_LITERAL:
        raise Unsupported(_("torch.unique: return_inverse/return_counts must be literals"))
    srt = f"mindspore.ops.sort({x}.reshape(-1))[0]"
    uc = f"mindspore.ops.unique_consecutive({srt}{', return_counts=True' if cnt else ''})"
    if not inv:
        return uc
    if cnt:
        return f"(lambda u, c: (u, mindspore.ops.searchsorted(u, {x}), c))(*{uc})"
    return f"(lambda u: (u, mindspore.ops.searchsorted(u, {x})))({uc})"


# ---- comparison ----------------------------------------------------------------------------


@handler
def kthvalue(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """kthvalue(x, k, dim) = the k-th entry of an ascending sort along dim (MindSpore has no kernel for it)."""
    _reject_out(entry, bound)
    x, k = bound["input"], bound["k"]
    dim = bound.get("dim", "-1")
    keep = _is_true(bound.get("keepdim"))
    if bound.get("keepdim") is not None and literal(bound["keepdim"]) is NOT_LITERAL:
        raise Unsupported(_("torch.kthvalue: keepdim must be a literal"))
    pick = f"mindspore.ops.narrow(t, {dim}, {paren(k)} - 1, 1)"
    if not keep:
        pick = f"{pick}.squeeze({dim})"
    return f"(lambda s: tuple({pick} for t in (s[0], s[1].astype(mindspore.int64))))(mindspore.ops.sort({x}, {dim}))"


@handler
def any_all(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """ops.any/ops.all with an axis are wrong on non-bool input in 2.10: cast to bool first."""
    b = dict(bound)
    b["input"] = f"{paren(b['input'])}.astype(mindspore.bool_)"
    return render_by_rules(entry, b)


def _when(flag: str | None, plain: str, flagged: str) -> str:
    """Source for an optional boolean argument: literal False/absent → plain, True → flagged,
    anything else → a conditional expression decided at run time."""
    if flag is None or literal(flag) is False:
        return plain
    if literal(flag) is True:
        return flagged
    return f"({flagged} if {flag} else {plain})"


@handler
def out_int32(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """searchsorted(out_int32=True) fails on the CPU kernel: compute int64, then cast."""
    b = dict(bound)
    o = b.pop("out_int32", None)
    src = render_by_rules(entry, b)
    return _when(o, src, f"{src}.astype(mindspore.int32)")


@handler
def bucketize(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """bucketize(x, b, right=r) == searchsorted(b, x, right=r)."""
    _reject_out(entry, bound)
    right = bound.get("right")
    src = f"mindspore.ops.searchsorted({bound['boundaries']}, {bound['input']}{', right=' + right if right else ''})"
    o = bound.get("out_int32")
    return _when(o, src, f"{src}.astype(mindspore.int32)")


@handler
def isin(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """isin(x, t) → any(expand_dims(x, -1) == t.reshape(-1), -1) (no ops.isin in 2.10)."""
    x, t = bound["elements"], bound["test_elements"]
    src = f"mindspore.ops.any(mindspore.ops.expand_dims({x}, -1) == {paren(t)}.reshape(-1), -1)"
    inv = bound.get("invert")
    return _when(inv, src, f"mindspore.ops.logical_not({src})")


@handler
def diff(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """ops.diff only accepts n=1: apply it n times (prepend/append only on the first)."""
    b = dict(bound)
    n = b.pop("n", None)
    nv = 1 if n is None else literal(n)
    if not isinstance(nv, int) or isinstance(nv, bool) or nv < 1:
        raise Unsupported(_("torch.diff(n={n}): n must be a positive int literal").format(n=n))
    src = render_by_rules(entry, b)
    axis = b.get("dim", "-1")
    for _step in range(nv - 1):
        src = f"mindspore.ops.diff({src}, 1, {axis})"
    return src
