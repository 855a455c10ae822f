"""Handlers for kb/data/torch_ops_2.toml and fft_special.toml: more torch.* functions, window
functions, torch.special, torch.fft, torch.linalg, torch.sparse and torch.testing.
"""

from __future__ import annotations

from ..rewrite import render_by_rules
from ..schema import Entry
from ..source import NOT_LITERAL, literal, paren
from ..transforms import handler, transform

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
