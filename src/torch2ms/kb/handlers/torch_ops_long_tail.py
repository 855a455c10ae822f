"""Handlers for kb/data/torch_ops_long_tail.toml and fft_special.toml: more torch.* functions, window
functions, torch.special, torch.fft, torch.linalg, torch.sparse and torch.testing.
"""

from __future__ import annotations

import ast

from ...i18n import _
from ..rewrite import keyword_args, render_by_rules
from ..schema import Entry
from ..source import NOT_LITERAL, literal, paren
from ..transforms import HANDLERS, Unsupported, handler, transform

# ---- window functions -----------------------------------------------------------------------


@transform
def sym_to_periodic(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """torch.signal.windows' ``sym`` (default True) is the negation of MindSpore's ``periodic``."""
    v = True if value is None else literal(value)
    if v is NOT_LITERAL:
        return {"periodic": f"not {paren(value or '')}"}
    return {"periodic": repr(not v)}


@transform
def length_tensor(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """ops.blackman_window / bartlett_window take the window length as a Tensor, not an int."""
    return {"window_length": f"mindspore.Tensor({value})"}


@handler
def window(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """MindSpore's hann/kaiser windows are float64 whatever ``dtype`` says at length 1: cast to torch's dtype."""
    b = dict(bound)
    dtype = b.pop("dtype", None)
    if dtype is None or literal(dtype) is None:
        dtype = "mindspore.float32"
    return f"{render_by_rules(entry, b)}.astype({dtype})"


@transform
def hamming_alpha(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """general_hamming's ``alpha`` is hamming_window's alpha, with beta = 1 - alpha."""
    alpha = value if value is not None else "0.54"
    return {"alpha": alpha, "beta": f"1 - {paren(alpha)}"}


# ---- in-place functions ---------------------------------------------------------------------
# MindSpore's in-place Tensor methods do not mutate in PyNative, but Tensor.copy_ does, in both
# modes: torch.abs_(x) becomes x.copy_(ops.abs(x)), right as a statement and as an expression.


def _copy_into(bound: dict[str, str], entry: Entry, result: str) -> str:
    target = bound.get(entry.sig_names()[0])
    if target is None:
        raise Unsupported(_("{api} needs its input").format(api=entry.short))
    return f"{paren(target)}.copy_({result})"


@handler
def inplace(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``torch.abs_(x)`` → ``x.copy_(ops.abs(x))``: the out-of-place call copied back into the input."""
    return _copy_into(bound, entry, render_by_rules(entry, bound))


@handler
def inplace_round(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``torch.round_(x, decimals=d)`` → ``x.copy_(<torch.round's rewrite>)``."""
    return _copy_into(bound, entry, HANDLERS["torch_ops.round_decimals"](bound, receiver, entry))


@handler
def inplace_xlogy(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``torch.xlogy_(x, y)`` → ``x.copy_(<torch.xlogy's rewrite>)`` (0 where x == 0, as torch)."""
    return _copy_into(bound, entry, HANDLERS["torch_ops.xlogy"](bound, receiver, entry))


@handler
def inplace_rrelu(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``torch.rrelu_(x)`` → ``x.copy_(<F.rrelu's rewrite>)`` (leaky_relu with the mean slope when not training)."""
    return _copy_into(bound, entry, HANDLERS["nn_functional.rrelu"](bound, receiver, entry))


@handler
def identity_unless_train(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.alpha_dropout(x, p, train=False) and friends are the identity; training has no MindSpore form."""
    if literal(bound.get("train", "False")) is not False:
        raise Unsupported(
            _("{api} with train=True has no MindSpore equivalent (alpha dropout)").format(api=entry.short)
        )
    return bound["input"]


# ---- pooling that returns indices -----------------------------------------------------------

_INT64_INDICES = "torch2ms.runtime.with_int64_indices"


@handler
def max_pool_with_indices(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.max_pool2d_with_indices / 3d: always (values, indices), so return_indices=True is passed."""
    rest = keyword_args(entry, bound, skip=("input", "return_indices"))
    return f"{entry.ms}({', '.join([bound['input'], *rest, 'return_indices=True'])})"


@handler
def adaptive_max_pool_with_indices(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """(values, int64 indices) from ops.adaptive_max_pool2d/3d(return_indices=True) (3-D gives int32)."""
    return f"{_INT64_INDICES}({entry.ms}({bound['input']}, {bound['output_size']}, return_indices=True))"


@handler
def adaptive_max_pool1d(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.adaptive_max_pool1d: (values, int64 indices) through adaptive_max_pool2d on an (N, C, 1, L) view."""
    size = literal(bound["output_size"])
    out = size[0] if isinstance(size, (tuple, list)) and len(size) == 1 else bound["output_size"]
    pooled = (
        f"mindspore.ops.adaptive_max_pool2d({paren(bound['input'])}.expand_dims(-2), (1, {out}), return_indices=True)"
    )
    return f"(lambda v, i: (v.squeeze(-2), i.squeeze(-2).astype(mindspore.int64)))(*{pooled})"


# ---- creation and small math ----------------------------------------------------------------


def _dtype_or(bound: dict[str, str], default: str) -> str:
    dtype = bound.get("dtype")
    return default if dtype is None or literal(dtype) is None else dtype


@handler
def scalar_tensor(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.scalar_tensor is float32 whatever the number (mindspore.tensor(3) would be int64)."""
    return f"mindspore.tensor({bound['s']}, dtype={_dtype_or(bound, 'mindspore.float32')})"


@handler
def inclusive_range(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.range(start, end, step): end INCLUDED, float32 by default (start + i * step, i ≤ (end-start)/step)."""
    start, end = bound.get("start", "0"), bound.get("end")
    if end is None:  # torch.range(5) is range(0, 5)
        start, end = "0", start
    step = bound.get("step", "1")
    count = f"int(({end} - {paren(start)}) // {paren(step)}) + 1"
    ramp = f"mindspore.ops.arange({count}, dtype=mindspore.float64) * {paren(step)} + {paren(start)}"
    return f"({ramp}).astype({_dtype_or(bound, 'mindspore.float32')})"


@handler
def rsub(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.rsub(input, other, alpha) = other - alpha * input."""
    alpha = bound.get("alpha")
    scaled = (
        paren(bound["input"]) if alpha is None or literal(alpha) == 1 else f"{paren(alpha)} * {paren(bound['input'])}"
    )
    return f"{paren(bound['other'])} - {scaled}"


def _powers(x: str, n: str, increasing: bool) -> str:
    exponents = f"mindspore.ops.arange({n})" if increasing else f"mindspore.ops.arange({n} - 1, -1, -1)"
    return f"{paren(x)}.expand_dims(-1) ** {exponents}"


@handler
def vander(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.vander(x, N, increasing) → x[:, None] ** powers (ops.vander has no increasing=)."""
    x = bound["x"]
    n = bound.get("N")
    if n is None or literal(n) is None:
        n = f"{paren(x)}.shape[-1]"
    inc = literal(bound.get("increasing", "False"))
    if inc is NOT_LITERAL:
        raise Unsupported(_("torch.vander(increasing=<expression>): write both branches out"))
    return _powers(x, n, bool(inc))


@handler
def linalg_vander(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.linalg.vander(x, N) → x[..., None] ** arange(N): increasing powers, batched (ops.vander is 1-D only)."""
    x = bound["x"]
    n = bound.get("N")
    if n is None or literal(n) is None:
        n = f"{paren(x)}.shape[-1]"
    return _powers(x, n, True)


@handler
def unravel_index(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.unravel_index(i, shape) → one (i // stride) % size per dimension (literal shape only)."""
    shape = literal(bound["shape"])
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(isinstance(d, int) for d in shape):
        raise Unsupported(_("torch.unravel_index with a non-literal shape: pass the shape as a tuple of ints"))
    i = paren(bound["indices"])
    parts = []
    for k, size in enumerate(shape):
        stride = 1
        for d in shape[k + 1 :]:
            stride *= d
        parts.append(f"{i} // {stride} % {size}" if stride > 1 else f"{i} % {size}")
    return f"({', '.join(parts)},)"


@handler
def broadcast_shapes(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.broadcast_shapes(*shapes): computed here for literal shapes, else from int8 zeros of each shape."""
    srcs = _split_args(bound.get("shapes", ""))
    if any(s.startswith("*") for s in srcs):
        raise Unsupported(_("torch.broadcast_shapes(*shapes): pass the shapes one by one"))
    shapes = [literal(s) for s in srcs]
    if all(isinstance(s, (int, tuple, list)) for s in shapes):
        return repr(_broadcast([(s,) if isinstance(s, int) else tuple(s) for s in shapes]))
    zeros = " + ".join(f"mindspore.ops.zeros({s}, mindspore.int8)" for s in srcs)
    return f"tuple(({zeros}).shape)"


def _split_args(src: str) -> list[str]:
    """The comma-joined sources of a *args parameter, split at top-level commas."""
    node = ast.parse(f"f({src})", mode="eval").body
    assert isinstance(node, ast.Call)
    return [ast.get_source_segment(f"f({src})", a) or "" for a in node.args]


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for k, d in enumerate((1,) * (rank - len(s)) + tuple(s)):
            if d != 1 and out[k] not in (1, d):
                raise Unsupported(_("torch.broadcast_shapes: shapes {shapes} do not broadcast").format(shapes=shapes))
            out[k] = d if d != 1 else out[k]
    return tuple(out)


# ---- linalg and spectral --------------------------------------------------------------------


@handler
def gradient(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.gradient → mindspore.numpy.gradient, as a tuple always (numpy returns a bare tensor for one axis)."""
    args = [bound["input"]]
    spacing = bound.get("spacing")
    if spacing is not None:
        value = literal(spacing)
        if isinstance(value, (list, tuple)):
            args.append(f"*{spacing}")
        elif isinstance(value, (int, float)):
            args.append(spacing)
        else:
            raise Unsupported(_("torch.gradient(spacing=<expression>): pass a number or a list of numbers"))
    if bound.get("dim") is not None:
        args.append(f"axis={bound['dim']}")
    if literal(bound.get("edge_order", "1")) != 1:
        raise Unsupported(_("torch.gradient(edge_order=2): mindspore.numpy.gradient implements edge_order=1 only"))
    call = f"mindspore.numpy.gradient({', '.join(args)})"
    return f"(lambda g: tuple(g) if isinstance(g, (list, tuple)) else (g,))({call})"


@handler
def triangular_solve(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.triangular_solve(b, A, upper, transpose) → (MatrixTriangularSolve(lower, adjoint)(A, b), copy of A)."""
    if literal(bound.get("unitriangular", "False")) is not False:
        raise Unsupported(
            _("triangular_solve(unitriangular=True): use mindspore.scipy.linalg.solve_triangular(unit_diagonal=True)")
        )
    upper, transpose = literal(bound.get("upper", "True")), literal(bound.get("transpose", "False"))
    if not isinstance(upper, bool) or not isinstance(transpose, bool):
        raise Unsupported(_("triangular_solve: upper and transpose must be literal True/False to convert"))
    a, b = bound["A"], bound["input"]
    solve = f"mindspore.ops.MatrixTriangularSolve(lower={not upper}, adjoint={transpose})({a}, {b})"
    return f"({solve}, mindspore.ops.deepcopy({a}))"


@transform
def upper_literal(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """ops.stft's pad_mode is upper case ('REFLECT', 'CONSTANT'); torch's is lower case."""
    v = literal(value)
    if isinstance(v, str):
        return {"pad_mode": repr(v.upper())}
    return {"pad_mode": f"{paren(value or '')}.upper()"}


@transform
def reduction_enum(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """The aten loss functions take reduction as an int (0 none, 1 mean, 2 sum); MindSpore takes the name.

    Omitted, torch.kl_div & co. do NOT reduce (measured in torch 2.14, though the schema says 1).
    """
    names = {0: "'none'", 1: "'mean'", 2: "'sum'"}
    v = 0 if value is None else literal(value)
    if v not in names:
        raise Unsupported(_("{api}: reduction must be a literal 0, 1 or 2 to convert").format(api=entry.short))
    return {"reduction": names[v]}


# ---- sparse ---------------------------------------------------------------------------------


@handler
def csr_tensor(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.sparse_csr_tensor → mindspore.CSRTensor with int32 indices and the (required) shape."""
    size = bound.get("size")
    if size is None or literal(size) is None:
        raise Unsupported(_("torch.sparse_csr_tensor without size: MindSpore's CSRTensor needs the dense shape"))
    crow, col = (f"{paren(bound[n])}.astype(mindspore.int32)" for n in ("crow_indices", "col_indices"))
    values = bound["values"]
    if bound.get("dtype") is not None and literal(bound["dtype"]) is not None:
        values = f"{paren(values)}.astype({bound['dtype']})"
    return f"mindspore.CSRTensor({crow}, {col}, {values}, {size})"


# ---- torch.linalg ---------------------------------------------------------------------------

_SCIPY_LINALG = "mindspore.scipy.linalg"  # not loaded by `import mindspore`: the short name imports it
# LAPACK's info: 0, or the 1-based index of the first zero on U's diagonal (a singular factor).
_LU_INFO = (
    "(lambda z: mindspore.ops.where(z.any(-1), z.astype(mindspore.int32).argmax(-1) + 1, 0).astype(mindspore.int32))"
    "(mindspore.ops.diagonal({lu}, 0, -2, -1) == 0)"
)


@handler
def lu_factor_ex(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.lu_factor_ex → (LU, 1-based pivots, info) from mindspore.scipy.linalg.lu_factor; info from U's diagonal."""
    if literal(bound.get("pivot", "True")) is not True:
        raise Unsupported(_("linalg.lu_factor_ex(pivot=False) has no MindSpore form"))
    info = _LU_INFO.format(lu="lu")
    return f"(lambda lu, piv: (lu, piv + 1, {info}))(*{_SCIPY_LINALG}.lu_factor({bound['A']}))"


@handler
def solve_ex(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.solve_ex → (ops.matrix_solve(A, B), info), info from the LU factors of A as LAPACK reports it."""
    if literal(bound.get("left", "True")) is not True:
        raise Unsupported(_("linalg.solve_ex(left=False) has no MindSpore form: solve the transposed system"))
    info = _LU_INFO.format(lu=f"{_SCIPY_LINALG}.lu_factor(a)[0]")
    return f"(lambda a, b: (mindspore.ops.matrix_solve(a, b), {info}))({bound['A']}, {bound['B']})"


@handler
def polar(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.polar(A) = (U Vᴴ, V S Vᴴ) from the reduced SVD (ops.svd returns S, U, V)."""
    return (
        "(lambda s, u, v: (mindspore.ops.matmul(u, v.swapaxes(-1, -2)), "
        "mindspore.ops.matmul(v * s.expand_dims(-2), v.swapaxes(-1, -2))))"
        f"(*mindspore.ops.svd({bound['A']}, full_matrices=False))"
    )


@handler
def matrix_sqrth(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.matrix_sqrth(A) = V diag(sqrt(w)) Vᴴ from the Eigh primitive."""
    eig = f"mindspore.ops.operations.linalg_ops.Eigh(lower=True)({bound['A']})"
    return f"(lambda w, v: mindspore.ops.matmul(v * mindspore.ops.sqrt(w).expand_dims(-2), v.swapaxes(-1, -2)))(*{eig})"


# ---- torch._foreach_* -----------------------------------------------------------------------


@handler
def foreach(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch._foreach_<op>(ts) → [<MindSpore op>(t) for t in ts] (torch._foreach_exp: ops.exp)."""
    return f"[{entry.ms}(_t) for _t in {bound['tensors']}]"


@handler
def foreach_inplace(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch._foreach_<op>_(ts) → [t.copy_(<MindSpore op>(t)) for t in ts]: each tensor overwritten, the list returned."""
    return f"[_t.copy_({entry.ms}(_t)) for _t in {bound['tensors']}]"


@handler
def reduction_index(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F._Reduction.get_enum(name) → torch's enum value (0 none, 1 mean, 2 sum)."""
    value = {"none": 0, "mean": 1, "elementwise_mean": 1, "sum": 2}.get(literal(bound["reduction"]))
    if value is not None:
        return str(value)
    return f"{{'none': 0, 'mean': 1, 'elementwise_mean': 1, 'sum': 2}}[{bound['reduction']}]"
