"""Handlers for kb/data/torch_ops_2.toml and fft_special.toml: more torch.* functions, window
functions, torch.special, torch.fft, torch.linalg, torch.sparse and torch.testing.
"""

from __future__ import annotations

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
        raise Unsupported(f"{entry.short} needs its input")
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
        raise Unsupported(f"{entry.short} with train=True has no MindSpore equivalent (alpha dropout)")
    return bound["input"]


# ---- pooling that returns indices -----------------------------------------------------------

_INT64_INDICES = "(lambda v, i: (v, i.astype(mindspore.int64)))"


@handler
def max_pool_with_indices(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.max_pool2d_with_indices / 3d: always (values, indices), so return_indices=True is passed."""
    rest = keyword_args(entry, bound, skip=("input", "return_indices"))
    return f"{entry.ms}({', '.join([bound['input'], *rest, 'return_indices=True'])})"


@handler
def adaptive_max_pool_with_indices(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """(values, int64 indices) from ops.adaptive_max_pool2d/3d(return_indices=True) (3-D gives int32)."""
    return f"{_INT64_INDICES}(*{entry.ms}({bound['input']}, {bound['output_size']}, return_indices=True))"


@handler
def adaptive_max_pool1d(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.adaptive_max_pool1d: (values, int64 indices) through adaptive_max_pool2d on an (N, C, 1, L) view."""
    size = literal(bound["output_size"])
    out = size[0] if isinstance(size, (tuple, list)) and len(size) == 1 else bound["output_size"]
    pooled = (
        f"mindspore.ops.adaptive_max_pool2d({paren(bound['input'])}.expand_dims(-2), (1, {out}), return_indices=True)"
    )
    return f"(lambda v, i: (v.squeeze(-2), i.squeeze(-2).astype(mindspore.int64)))(*{pooled})"
