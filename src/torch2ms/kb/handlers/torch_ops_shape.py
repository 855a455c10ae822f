"""Handlers for torch.* shape/indexing, linear algebra, random and dtype entries (torch_ops_shape.toml)."""

from __future__ import annotations

import ast

from ...i18n import _
from ..rewrite import keyword_args
from ..schema import Entry
from ..source import NOT_LITERAL, literal, paren
from ..transforms import Unsupported, handler, transform


def _split_args(src: str) -> list[str]:
    """Split a comma-joined argument source (a ``*args`` binding) into its parts."""
    call = ast.parse(f"f({src})", mode="eval").body
    return [ast.unparse(a) for a in call.args]  # type: ignore[attr-defined]


@handler
def star_call(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``ms(*args, **kw)`` for a signature with one ``*name`` parameter (rand(*size), meshgrid(*tensors)).

    The starred arguments pass positionally; a single list/tuple literal is unpacked when the
    MindSpore function wants separate tensors (``ms_sig`` starts with ``*``).
    """
    star = next(p.lstrip("*") for p in entry.sig if p.startswith("*"))
    parts: list[str] = []
    if star in bound:
        src = bound[star]
        items = _split_args(src)
        if len(items) == 1 and entry.ms_sig and entry.ms_sig[0].startswith("*") and not items[0].startswith("*"):
            node = ast.parse(items[0], mode="eval").body
            if isinstance(node, (ast.List, ast.Tuple)):
                src = ", ".join(ast.unparse(e) for e in node.elts)
            elif not isinstance(node, ast.Constant):
                # one argument: a sequence of tensors, or a lone tensor (meshgrid(*axis_pos) of one axis)
                one = items[0] if isinstance(node, (ast.Name, ast.Attribute)) else None
                src = f"*({one} if isinstance({one}, (list, tuple)) else ({one},))" if one else f"*{items[0]}"
        parts.append(src)
    parts += keyword_args(entry, bound, skip=(star,))
    return f"{entry.ms}({', '.join(parts)})"


@handler
def matmul_chain(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """chain_matmul(a, b, c) / linalg.multi_dot([a, b, c]) → nested mindspore.ops.matmul."""
    src = bound.get("matrices") or bound.get("tensors") or ""
    items = _split_args(src)
    if len(items) == 1:
        node = ast.parse(items[0], mode="eval").body
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise Unsupported(_("{api} of a non-literal sequence: write the matmuls out").format(api=entry.short))
        items = [ast.unparse(e) for e in node.elts]
    out = items[0]
    for it in items[1:]:
        out = f"mindspore.ops.matmul({out}, {it})"
    return out


@handler
def unflatten(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.unflatten(x, dim, sizes) → a reshape that splits dimension dim into sizes."""
    x, d, sizes = paren(bound["input"]), bound["dim"], bound["sizes"]
    return f"mindspore.ops.reshape({x}, {x}.shape[:{d}] + tuple({sizes}) + {x}.shape[{d}:][1:])"


@handler
def select(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.select(x, dim, i) → ops.narrow to index i along dim, then ops.squeeze(dim)."""
    x, d, i = paren(bound["input"]), bound["dim"], paren(bound["index"])
    v = literal(bound["index"])
    start = i if isinstance(v, int) and v >= 0 else f"{i} % {x}.shape[{d}]"
    return f"mindspore.ops.squeeze(mindspore.ops.narrow({x}, {d}, {start}, 1), {d})"


@handler
def masked_fill(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.masked_fill(x, mask, value) → ops.masked_fill, an int value made a tensor of x's dtype."""
    x, mask, value = bound["input"], bound["mask"], bound["value"]
    v = literal(value)
    if isinstance(v, int) and not isinstance(v, bool):
        # MaskedFill on CPU rejects an int value for a float tensor; cast to the tensor's dtype.
        value = f"mindspore.Tensor({v}, {paren(x)}.dtype)"
    return f"mindspore.ops.masked_fill({x}, {mask}, {value})"


@handler
def scatter(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.scatter(input, dim, index, src|value) → ops.tensor_scatter_elements; of the reduce modes only 'add'."""
    x, d, idx = bound["input"], bound["dim"], bound["index"]
    src = bound.get("src")
    value = bound.get("value")
    if src is not None and value is None and literal(src) is not NOT_LITERAL:
        value, src = src, None
    if value is not None:
        upd = f"mindspore.ops.full({paren(idx)}.shape, {value}, dtype={paren(x)}.dtype)"
    elif src is not None:
        # MindSpore needs src exactly index-shaped; torch reads only that corner of src.
        upd = f"{paren(src)}[tuple(slice(0, n) for n in {paren(idx)}.shape)]"
    else:
        raise Unsupported(_("torch.scatter needs src or value"))
    reduce = literal(bound.get("reduce", "None"))
    if reduce is None:
        return f"mindspore.ops.tensor_scatter_elements({x}, {idx}, {upd}, {d})"
    if reduce == "add":
        return f"mindspore.ops.tensor_scatter_elements({x}, {idx}, {upd}, {d}, 'add')"
    raise Unsupported(
        _("torch.scatter(reduce={reduce}) has no MindSpore CPU form; only 'add'").format(reduce=bound.get("reduce"))
    )


@handler
def tensor_scatter(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """x.scatter(dim, index, src|value) / x.scatter_(...) → as torch.scatter: Tensor.scatter with a scalar
    (ScatterValue) has no CPU kernel in MindSpore 2.10, so the scalar is filled and tensor_scatter_elements runs."""
    return scatter({**bound, "input": receiver or bound.get("input", "")}, None, entry)


@handler
def scatter_reduce(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.scatter_reduce → ops.tensor_scatter_elements(..., 'add'): only reduce='sum' with include_self=True."""
    x, d, idx, src = bound["input"], bound["dim"], bound["index"], bound["src"]
    red = literal(bound.get("reduce"))
    if red != "sum":
        raise Unsupported(
            _(
                "scatter_reduce: only reduce='sum' maps (tensor_scatter_elements 'add'); "
                "'prod'/'mean'/'amax'/'amin' have no MindSpore CPU kernel"
            )
        )
    inc = literal(bound.get("include_self", "True"))
    if inc is not True:
        raise Unsupported(_("scatter_reduce(include_self=False) has no MindSpore form"))
    return f"mindspore.ops.tensor_scatter_elements({x}, {idx}, {src}, {d}, 'add')"


@handler
def index_add(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """ops.index_add writes into its input and wants int32 indices: copy first, cast."""
    x, d, idx, src = paren(bound["input"]), bound["dim"], paren(bound["index"]), bound["source"]
    alpha = bound.get("alpha")
    if alpha is not None and literal(alpha) != 1:
        src = f"{paren(src)} * {paren(alpha)}"
    return f"mindspore.ops.index_add({x}.copy(), {idx}.astype(mindspore.int32), {src}, {d})"


@handler
def take_along_dim(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.take_along_dim(x, i, dim) → ops.gather_elements(x, dim, i); without dim, on the flattened tensors."""
    x, idx = paren(bound["input"]), paren(bound["indices"])
    d = bound.get("dim")
    if d is None or literal(d) is None:
        return f"mindspore.ops.gather_elements({x}.reshape(-1), 0, {idx}.reshape(-1))"
    return f"mindspore.ops.gather_elements({x}, {d}, {idx})"


@handler
def where(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.where(c, x, y) → ops.where(c, x, y); torch.where(c) → one index tensor per dimension, as nonzero."""
    c = bound["condition"]
    if "input" not in bound and "other" not in bound:
        return f"tuple(mindspore.ops.nonzero({c}).T)"
    if "input" not in bound or "other" not in bound:
        raise Unsupported(_("torch.where needs both input and other (or neither)"))
    return f"mindspore.ops.where({c}, {bound['input']}, {bound['other']})"


@handler
def nonzero(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.nonzero(x) → ops.nonzero(x); as_tuple=True → one index tensor per dimension."""
    if "out" in bound:
        raise Unsupported(_("out= is not supported; assign the result."))
    as_tuple = literal(bound.get("as_tuple", "False"))
    if as_tuple is False:
        return f"mindspore.ops.nonzero({bound['input']})"
    if as_tuple is True:
        return f"tuple(mindspore.ops.nonzero({bound['input']}).T)"
    raise Unsupported(_("nonzero(as_tuple=<expression>): write the two branches out"))


@handler
def diag(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.diag is two functions: 1-D → diagonal matrix, 2-D → its diagonal."""
    x = paren(bound["input"])
    k = bound.get("diagonal", "0")
    return f"(mindspore.ops.diagflat({x}, {k}) if {x}.ndim == 1 else mindspore.ops.diagonal({x}, {k}))"


@handler
def meshgrid(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.meshgrid(*tensors) → ops.meshgrid(*tensors, indexing='ij'): MindSpore's default is 'xy'."""
    return star_call(bound, receiver, entry)


@handler
def linalg_svd(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.svd → (U, S, Vh); mindspore.ops.svd returns (S, U, V)."""
    fm = bound.get("full_matrices", "True")
    return f"(lambda s, u, v: (u, s, v.mT))(*mindspore.ops.svd({bound['A']}, full_matrices={fm}))"


@handler
def svd(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.svd → (U, S, V); mindspore.ops.svd returns (S, U, V)."""
    if literal(bound.get("compute_uv", "True")) is not True:
        raise Unsupported(_("torch.svd(compute_uv=False) returns zero U/V; use mindspore.ops.svd(x, compute_uv=False)"))
    some = literal(bound.get("some", "True"))
    fm = "False" if some is True else ("True" if some is False else f"not {paren(bound['some'])}")
    return f"(lambda s, u, v: (u, s, v))(*mindspore.ops.svd({bound['input']}, full_matrices={fm}))"


def _uplo_lower(bound: dict[str, str]) -> str:
    v = literal(bound.get("UPLO", "'L'"))
    if v == "L":
        return "True"
    if v == "U":
        return "False"
    return f"{paren(bound['UPLO'])} == 'L'"


@handler
def eigh(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.eigh / eigvalsh → the Eigh primitive (loaded with mindspore; mindspore.scipy is not)."""
    only = "compute_eigenvectors=False, " if entry.torch.endswith("eigvalsh") else ""
    return f"mindspore.ops.operations.linalg_ops.Eigh({only}lower={_uplo_lower(bound)})({bound['A']})"


# `import mindspore` does not load mindspore.scipy: the short name brings `from mindspore.scipy import linalg`.
_MS_SCIPY_LINALG = "mindspore.scipy.linalg"


@handler
def matrix_rank(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.matrix_rank(A) → the singular values above torch's default tolerance, counted."""
    if any(k in bound for k in ("atol", "rtol", "tol", "hermitian")):
        raise Unsupported(
            _("matrix_rank with atol/rtol/hermitian: compare mindspore.ops.svd(A, compute_uv=False) to your tolerance")
        )
    a = paren(bound["A"])
    return (
        "(lambda s: (s > s.max(-1, keepdims=True) * max(" + a + ".shape[-2:]) * "
        "(1.1920928955078125e-07 if s.dtype == mindspore.float32 else 2.220446049250313e-16)).sum(-1))"
        f"(mindspore.ops.svd({a}, compute_uv=False))"
    )


@handler
def randint(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.randint(high, size) / (low, high, size) → ops.randint(low, high, size), low 0 when omitted."""
    b = dict(bound)
    if "size" not in b:
        if "high" in b and "low" in b:
            b["size"], b["high"], b["low"] = b["high"], b["low"], "0"
        else:
            raise Unsupported(_("torch.randint needs high and size"))
    elif "high" not in b and "low" in b:  # randint(high, size=...): the one bound first is high
        b["high"], b["low"] = b["low"], "0"
    if "high" not in b:
        raise Unsupported(_("torch.randint needs high"))
    lo = b.get("low", "0")
    rest = keyword_args(entry, b, skip=("low", "high", "size"))
    return f"mindspore.ops.randint({', '.join([lo, b['high'], b['size']] + rest)})"


@handler
def randint_like(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.randint_like(input, high) or (input, low, high); keeps the input's dtype like torch."""
    b = dict(bound)
    if "high" not in b:
        b["high"], b["low"] = b["low"], "0"
    x = paren(b["input"])
    dtype = b.get("dtype")
    out = f"mindspore.ops.randint_like({b['input']}, {b.get('low', '0')}, {b['high']}, dtype=mindspore.int64)"
    return f"{out}.astype({dtype if dtype else x + '.dtype'})"


@handler
def normal(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.normal(mean, std[, size]) → mindspore.ops.normal(shape, mean, stddev)."""
    mean, std = bound.get("mean", "0.0"), bound.get("std", "1.0")
    size = bound.get("size")
    if size is None:
        m, s = literal(mean), literal(std)
        if m is NOT_LITERAL:
            # ops.normal broadcasts shape with the mean and stddev shapes.
            shape = f"{paren(mean)}.shape"
        elif s is NOT_LITERAL:
            shape = f"{paren(std)}.shape"
        else:
            raise Unsupported(_("torch.normal(float, float) needs size"))
        size = shape
    else:
        v = literal(size)
        if isinstance(v, list):
            size = repr(tuple(v))
    extra = ""
    if "dtype" in bound:
        extra = f".astype({bound['dtype']})"
    return f"mindspore.ops.normal({size}, {mean}, {std}){extra}"


@handler
def finfo(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.finfo / iinfo(dtype) → the runtime helper of that name (numpy's finfo / iinfo of the matching dtype)."""
    fn = entry.torch.rsplit(".", 1)[-1]
    return f"torch2ms.runtime.{fn}({bound.get('type', '')})"


@handler
def bernoulli(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.bernoulli(input) draws with probabilities ``input``; ops.bernoulli's p defaults to 0.5."""
    x = bound["input"]
    p = bound.get("p")
    if literal(p) is None:
        p = None
    return f"mindspore.ops.bernoulli({x}, p={p if p is not None else x})"


_LEGACY_DTYPES = {
    "Tensor": "float32",
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64",
    "IntTensor": "int32",
    "ShortTensor": "int16",
    "CharTensor": "int8",
    "ByteTensor": "uint8",
    "BoolTensor": "bool_",
}


@transform
def tensor_data(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """torch.FloatTensor(data) → mindspore.Tensor(input_data=data, dtype=mindspore.float32).

    A transform, not a handler, so that ``torch.Tensor`` used as a value (annotations,
    isinstance) converts cleanly to ``mindspore.Tensor``.
    """
    dtype = "mindspore." + _LEGACY_DTYPES[entry.torch.rsplit(".", 1)[-1]]
    v = literal(value)
    if isinstance(v, int) and not isinstance(v, bool):
        raise Unsupported(
            _("{api}(<sizes>) allocates uninitialised memory: use mindspore.ops.zeros((sizes), {dtype})").format(
                api=entry.short, dtype=dtype
            )
        )
    return {"input_data": value, "dtype": dtype}  # type: ignore[dict-item]


@handler
def atleast(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.atleast_2d(x) / atleast_2d(x, y) → ops.atleast_2d(x) / ops.atleast_2d([x, y])."""
    items = _split_args(bound["tensors"])
    fn = entry.ms
    if len(items) == 1:
        return f"{fn}({items[0]})"
    return f"{fn}([{', '.join(items)}])"


@handler
def solve_triangular(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.solve_triangular(A, B, upper) → MatrixTriangularSolve(lower=not upper)(A, B); left=True only."""
    if literal(bound.get("left", "True")) is not True:
        raise Unsupported(_("solve_triangular(left=False) has no MindSpore form: transpose the system"))
    if literal(bound.get("unitriangular", "False")) is not False:
        raise Unsupported(
            _("solve_triangular(unitriangular=True): use mindspore.scipy.linalg.solve_triangular(unit_diagonal=True)")
        )
    if "upper" not in bound:
        raise Unsupported(_("solve_triangular needs upper="))
    up = literal(bound["upper"])
    lower = "False" if up is True else ("True" if up is False else f"not {paren(bound['upper'])}")
    return f"mindspore.ops.MatrixTriangularSolve(lower={lower})({bound['A']}, {bound['B']})"


@handler
def linalg_cond(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.cond(A) → largest / smallest singular value (the 2-norm condition number only)."""
    if literal(bound.get("p", "None")) not in (None, 2):
        raise Unsupported(_("linalg.cond: only the 2-norm (p=None or 2) maps, via the singular values"))
    return f"(lambda s: s[..., 0] / s[..., -1])(mindspore.ops.svd({bound['A']}, compute_uv=False))"


@handler
def linalg_lu(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.lu(A) → (P, L, U) from mindspore.scipy.linalg.lu, P cast to L's dtype."""
    if literal(bound.get("pivot", "True")) is not True:
        raise Unsupported(_("linalg.lu(pivot=False) has no MindSpore form"))
    return f"(lambda p, l, u: (p.astype(l.dtype), l, u))(*{_MS_SCIPY_LINALG}.lu({bound['A']}))"


@handler
def lu_factor(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.lu_factor(A) → (LU, pivots) from mindspore.scipy.linalg.lu_factor, pivots made 1-based as in torch."""
    if literal(bound.get("pivot", "True")) is not True:
        raise Unsupported(_("linalg.lu_factor(pivot=False) has no MindSpore form"))
    return f"(lambda lu, piv: (lu, piv + 1))(*{_MS_SCIPY_LINALG}.lu_factor({bound['A']}))"


@handler
def put(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.put(input, index, source, accumulate) → a scatter on the flattened tensor."""
    x, idx, src = paren(bound["input"]), paren(bound["index"]), paren(bound["source"])
    acc = literal(bound.get("accumulate", "False"))
    if acc not in (True, False):
        raise Unsupported(_("torch.put(accumulate=<expression>): write the two branches out"))
    red = ", 'add'" if acc else ""
    return (
        f"mindspore.ops.tensor_scatter_elements({x}.reshape(-1), {idx}.reshape(-1), "
        f"{src}.reshape(-1), 0{red}).reshape({x}.shape)"
    )


@handler
def lu_solve(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """linalg.lu_solve(LU, pivots, B) → ops.lu_solve(B, LU, pivots); left=True and adjoint=False only."""
    if literal(bound.get("left", "True")) is not True or literal(bound.get("adjoint", "False")) is not False:
        raise Unsupported(_("linalg.lu_solve(left=False / adjoint=True) has no MindSpore form"))
    return f"mindspore.ops.lu_solve({bound['B']}, {bound['LU']}, {bound['pivots']})"
