"""Handlers for the torch.Tensor methods of tensor_methods_aliases_inplace.toml (issue 14's Tensor share)."""

from __future__ import annotations

from ...i18n import _
from ..rewrite import keyword_args
from ..schema import Entry
from ..source import NOT_LITERAL, literal, paren
from ..transforms import Unsupported, handler


def _receiver(receiver: str | None) -> str:
    """The receiver source (``self`` when called unbound), parenthesised unless atomic."""
    return paren(receiver or "self")


@handler
def bitwise_not(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.bitwise_not()`` → ``ops.invert(x)`` for integers, ``x.logical_not()`` for booleans.

    MindSpore's BitwiseNot has no CPU kernel and its ``~`` on integers is a logical not; ops.invert
    rejects booleans. The dtype test is a constant in GRAPH_MODE, so only one branch is compiled.
    """
    x = _receiver(receiver)
    return f"({x}.logical_not() if {x}.dtype == mindspore.bool_ else mindspore.ops.invert({x}))"


def _is_true(src: str | None) -> bool:
    """A literal True; a non-literal flag is refused by the caller."""
    value = literal(src) if src is not None else False
    if value is NOT_LITERAL:
        raise Unsupported(_("a non-literal flag ({src}): write the two branches out").format(src=src))
    return bool(value)


@handler
def aminmax(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.aminmax(dim=d, keepdim=k)`` → ``x.aminmax(axis=d, keepdims=k)``; without dim, over all elements.

    MindSpore's aminmax without an axis reduces axis 0 only; torch reduces everything (to 0-d,
    or to all-ones dims with keepdim).
    """
    x = _receiver(receiver)
    dim, keep = bound.get("dim"), bound.get("keepdim", "False")
    if dim is not None and literal(dim) is not None:
        return f"{x}.aminmax(axis={dim}, keepdims={keep})"
    if _is_true(keep):
        return f"({x}.min().reshape((1,) * {x}.ndim), {x}.max().reshape((1,) * {x}.ndim))"
    return f"({x}.min(), {x}.max())"


@handler
def bincount(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """MindSpore's bincount returns float32 counts: cast to torch's int64 (or to the weights' dtype)."""
    x = _receiver(receiver)
    weights, minlength = bound.get("weights"), bound.get("minlength", "0")
    if weights is None or literal(weights) is None:
        return f"{x}.bincount(minlength={minlength}).astype(mindspore.int64)"
    w = paren(weights)
    return f"{x}.bincount({w}, minlength={minlength}).astype({w}.dtype)"


@handler
def nanmedian(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.nanmedian()`` → one value; ``x.nanmedian(dim, keepdim)`` → (values, indices).

    MindSpore's ``x.nanmedian()`` returns a (values, indices) pair along axis 0; keepdim is passed
    positionally."""
    x = _receiver(receiver)
    dim = bound.get("dim")
    if dim is None or literal(dim) is None:
        return f"{x}.flatten().nanmedian(0)[0]"
    return f"{x}.nanmedian({dim}, {bound.get('keepdim', 'False')})"


@handler
def dist(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.dist(y, p)``: ops.dist takes only an integer p; inf, -inf, 0 and fractional p are written out."""
    x, y = _receiver(receiver), paren(bound["other"])
    p_src = bound.get("p", "2")
    p = literal(p_src)
    diff = f"({x} - {y}).abs()"
    if p_src.replace(" ", "") in ("float('inf')", 'float("inf")', "math.inf", "numpy.inf", "np.inf") or p == float(
        "inf"
    ):
        return f"{diff}.max()"
    if p_src.replace(" ", "") in ("-float('inf')", '-float("inf")', "-math.inf", "-numpy.inf", "-np.inf") or p == float(
        "-inf"
    ):
        return f"{diff}.min()"
    if p == 0:
        return f"({x} != {y}).sum().astype({x}.dtype)"
    if isinstance(p, (int, float)) and not isinstance(p, bool) and float(p).is_integer() and p > 0:
        return f"mindspore.ops.dist({x}, {y}, {int(p)})"
    if p is NOT_LITERAL:
        raise Unsupported(_("Tensor.dist with a non-literal p: ops.dist takes only an integer p"))
    return f"({diff} ** {p_src}).sum() ** (1 / {p_src})"


@handler
def svd(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.svd(some)`` → (U, S, V): ops.svd returns (S, U, V), with full_matrices = not some."""
    x = _receiver(receiver)
    if not _is_true(bound.get("compute_uv", "True")):
        raise Unsupported(
            _(
                "Tensor.svd(compute_uv=False) returns zero-filled U and V in torch: use ops.svd(x, compute_uv=False) for S"
            )
        )
    full = "" if _is_true(bound.get("some", "True")) else ", full_matrices=True"
    return f"(lambda s, u, v: (u, s, v))(*mindspore.ops.svd({x}{full}))"


# `import mindspore` does not load mindspore.scipy: the short name brings `from mindspore.scipy import linalg`.
_MS_SCIPY_LINALG = "mindspore.scipy.linalg"


@handler
def triangular_solve(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``b.triangular_solve(A, upper, transpose, unitriangular)`` → (solution, a copy of A), as torch returns.

    The solution comes from mindspore.scipy.linalg.solve_triangular."""
    b, a = _receiver(receiver), paren(bound["A"])
    lower = not _is_true(bound.get("upper", "True"))
    trans = 1 if _is_true(bound.get("transpose", "False")) else 0
    unit = _is_true(bound.get("unitriangular", "False"))
    call = f"{_MS_SCIPY_LINALG}.solve_triangular({a}, {b}, trans={trans}, lower={lower}, unit_diagonal={unit})"
    return f"({call}, {a})"


@handler
def lu(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.lu()`` → (LU, pivots) from mindspore.scipy.linalg.lu_factor, pivots made 1-based as in torch."""
    x = _receiver(receiver)
    if not _is_true(bound.get("pivot", "True")):
        raise Unsupported(_("Tensor.lu(pivot=False) has no MindSpore form"))
    if _is_true(bound.get("get_infos", "False")):
        raise Unsupported(_("Tensor.lu(get_infos=True): MindSpore reports no LU info; drop it and check the pivots"))
    return f"(lambda lu, piv: (lu, piv + 1))(*{_MS_SCIPY_LINALG}.lu_factor({x}))"


@handler
def histogram(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.histogram(bins, range=, density=)`` → (hist, bin_edges) from histc and linspace.

    Only an int number of bins: a tensor of edges or ``weight=`` have no histc form.
    """
    x = _receiver(receiver)
    bins = bound["bins"]
    if not isinstance(literal(bins), int) and not bins.strip().isidentifier():
        raise Unsupported(_("Tensor.histogram with a tensor of bin edges: MindSpore's histc takes a bin count"))
    if bound.get("weight") not in (None, "None"):
        raise Unsupported(
            _("Tensor.histogram(weight=...): no weighted histc in MindSpore; use ops.bincount on bucketized x")
        )
    rng = bound.get("range")
    if rng in (None, "None"):
        # histc's default range (0, 0) means the data's min and max, as torch's range=None.
        hist, lo, hi = f"{x}.histc({bins})", f"{x}.min()", f"{x}.max()"
    else:
        bounds = literal(rng)
        if not (isinstance(bounds, (tuple, list)) and len(bounds) == 2):
            raise Unsupported(
                _("Tensor.histogram(range={rng}): histc needs the range as literal numbers").format(rng=rng)
            )
        lo, hi = repr(float(bounds[0])), repr(float(bounds[1]))
        hist = f"{x}.histc({bins}, {lo}, {hi})"
    edges = f"mindspore.ops.linspace({lo}, {hi}, {bins} + 1).astype({x}.dtype)"
    if _is_true(bound.get("density", "False")):
        hist = f"{hist} / ({hist}.sum() * (({hi}) - ({lo})) / {bins})"
    return f"({hist}, {edges})"


@handler
def new(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """Legacy ``x.new(...)``: sizes → zeros, a sequence → a tensor, nothing → an empty tensor, in x's dtype.

    torch leaves the memory of the sizes form uninitialised."""
    x = _receiver(receiver)
    args = bound.get("args")
    if not args:
        return f"mindspore.ops.zeros((0,), {x}.dtype)"
    value = literal(args)
    parts = value if isinstance(value, tuple) and "," in args and not args.strip().startswith("(") else (value,)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in parts):
        return f"mindspore.ops.zeros(({args},), {x}.dtype)"
    if isinstance(value, (list, tuple)):
        return f"mindspore.Tensor({args}, {x}.dtype)"
    raise Unsupported(
        _("Tensor.new({args}): say whether it is a size (ops.zeros) or data (mindspore.Tensor)").format(args=args)
    )


@handler
def put(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.put(index, source, accumulate)`` → a scatter on the flattened tensor."""
    x, idx, src = _receiver(receiver), paren(bound["index"]), paren(bound["source"])
    red = ", 'add'" if _is_true(bound.get("accumulate", "False")) else ""
    return (
        f"mindspore.ops.tensor_scatter_elements({x}.reshape(-1), {idx}.reshape(-1), "
        f"{src}.reshape(-1), 0{red}).reshape({x}.shape)"
    )


@handler
def take_along_dim(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.take_along_dim(i, dim)`` → ``ops.gather_elements(x, dim, i)``; without dim, on the flattened tensors."""
    x, idx = _receiver(receiver), paren(bound["indices"])
    dim = bound.get("dim")
    if dim is None or literal(dim) is None:
        return f"{x}.take({idx}.flatten())"
    return f"mindspore.ops.gather_elements({x}, {dim}, {idx})"


@handler
def bernoulli(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.bernoulli()`` draws with probabilities x; ``x.bernoulli(p)`` with probability p (x's shape and dtype)."""
    x = _receiver(receiver)
    p = bound.get("p")
    prob = x if p is None or literal(p) is None else f"mindspore.ops.full_like({x}, {p})"
    return f"(mindspore.ops.rand_like({x}) < {prob}).astype({x}.dtype)"


@handler
def set_source(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.set_(y)`` makes x share y's storage: converted, x becomes y (``x = y``); ``x.set_()`` empties x."""
    for arg in ("storage_offset", "size", "stride"):
        if bound.get(arg) not in (None, "None", "0"):
            raise Unsupported(
                _("Tensor.set_({arg}=...): MindSpore exposes no storage; build the view with reshape/narrow").format(
                    arg=arg
                )
            )
    source = bound.get("source")
    if source is None or literal(source) is None:
        return f"mindspore.ops.zeros((0,), {_receiver(receiver)}.dtype)"
    return source


@handler
def inplace_dunder(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.__iadd__(y)`` → ``x.copy_(x + y)``: MindSpore's __iadd__ returns the sum without writing it into x.

    ``x += y`` is fine (Python rebinds x); copy_ is an in-place method that mutates."""
    x = _receiver(receiver)
    other = paren(bound["other"])
    op = entry.torch.rsplit(".", 1)[-1][3:-2]  # __iadd__ → add
    forms = {
        "add": f"{x} + {other}",
        "sub": f"{x} - {other}",
        "mul": f"{x} * {other}",
        "truediv": f"{x} / {other}",
        "div": f"{x} / {other}",
        "floordiv": f"{x} // {other}",
        "mod": f"{x} % {other}",
        "pow": f"{x} ** {other}",
        "and": f"{x} & {other}",
        "or": f"{x} | {other}",
        "xor": f"{x} ^ {other}",
        "lshift": f"{x}.bitwise_left_shift({other})",
        "rshift": f"{x}.bitwise_right_shift({other})",
    }
    return f"{x}.copy_({forms[op]})"


def _flag(bound: dict[str, str], name: str, default: str) -> str:
    return bound.get(name, default)


@handler
def quantile(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.quantile(q, dim, keepdim, interpolation=)`` / ``nanquantile`` → torch2ms.runtime.quantile.

    Sort-based: MindSpore's Quantile has no CPU kernel."""
    x = _receiver(receiver)
    ignore_nan = entry.torch.endswith("nanquantile")
    args = [
        x,
        bound["q"],
        _flag(bound, "dim", "None"),
        _flag(bound, "keepdim", "False"),
        _flag(bound, "interpolation", "'linear'"),
        str(ignore_nan),
    ]
    return f"torch2ms.runtime.quantile({', '.join(args)})"


@handler
def scatter_reduce(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.scatter_reduce(dim, index, src, reduce, include_self=)`` → torch2ms.runtime.scatter_reduce.

    n-d scatters: MindSpore's element-wise scatter only replaces or adds."""
    args = [bound["dim"], bound["index"], bound["src"], bound["reduce"], _flag(bound, "include_self", "True")]
    return f"torch2ms.runtime.scatter_reduce({_receiver(receiver)}, {', '.join(args)})"


@handler
def index_reduce(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.index_reduce(dim, index, source, reduce, include_self=)`` → torch2ms.runtime.index_reduce."""
    args = [bound["dim"], bound["index"], bound["source"], bound["reduce"], _flag(bound, "include_self", "True")]
    return f"torch2ms.runtime.index_reduce({_receiver(receiver)}, {', '.join(args)})"


@handler
def stft(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.stft(n_fft, ...)`` → ``ops.stft(x, n_fft, ...)`` with pad_mode upper-cased ('reflect' → 'REFLECT')."""
    parts = [_receiver(receiver)] + keyword_args(entry, bound, skip=("pad_mode",))
    pad_mode = bound.get("pad_mode")
    if pad_mode is not None:
        value = literal(pad_mode)
        parts.append(f"pad_mode={value.upper()!r}" if isinstance(value, str) else f"pad_mode={paren(pad_mode)}.upper()")
    return f"mindspore.ops.stft({', '.join(parts)})"


@handler
def nonzero_static(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.nonzero_static(size=n, fill_value=f)`` → nonzero() padded with rows of f, cut to n rows."""
    x = _receiver(receiver)
    size, fill = bound["size"], bound.get("fill_value", "-1")
    pad = f"mindspore.ops.full(({size}, {x}.ndim), {fill}, dtype=mindspore.int64)"
    return f"mindspore.ops.concat(({x}.nonzero(), {pad}), 0)[:{size}]"


@handler
def new_empty_strided(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.new_empty_strided(size, stride)`` → zeros of that size, in x's dtype unless ``dtype=`` is given.

    MindSpore allocates contiguous tensors; torch's values are uninitialised."""
    x = _receiver(receiver)
    dtype = bound.get("dtype")
    return f"mindspore.ops.zeros(tuple({bound['size']}), {dtype if dtype not in (None, 'None') else f'{x}.dtype'})"
