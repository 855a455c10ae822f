"""Recognise the usual data-pipeline pitfalls from the numbers alone (numpy only, no frameworks).

The torch pipeline is the reference: every function reads "MindSpore differs from torch because …".
Each returns a :class:`Finding` (or ``None`` when that aspect agrees).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .pitfalls import fix, title

ERROR, WARN, INFO = "error", "warn", "info"


@dataclass
class Finding:
    level: str  # error: pipelines disagree; warn: agree now but fragile; info: expected difference
    pitfall: str  # key of pitfalls.PITFALLS
    message: str
    column: str | None = None
    evidence: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return title(self.pitfall)

    @property
    def fix(self) -> str:
        return fix(self.pitfall)

    def to_dict(self) -> dict:
        return {"level": self.level, "pitfall": self.pitfall, "title": self.title, "column": self.column,
                "message": self.message, "fix": self.fix, "evidence": list(self.evidence)}


def _fmt(v: Sequence[float]) -> str:
    return "[" + ", ".join(f"{x:.4g}" for x in v) + "]"


def channel_stats(x: np.ndarray, axis: int | None = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and std (float64) along ``axis``; ``None``: one value for the whole array."""
    x = np.asarray(x, dtype=np.float64)
    if axis is None or x.ndim < 2:
        return np.array([x.mean()]), np.array([x.std()])
    axes = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    return x.mean(axis=axes), x.std(axis=axes)


# ------------------------------------------------------------------------------------------------
# Batches per epoch

def diagnose_batch_count(n_torch: int | None, n_ms: int | None, *, bs_torch: int | None = None,
                         bs_ms: int | None = None, drop_last: bool | None = None,
                         drop_remainder: bool | None = None) -> Finding | None:
    if n_torch is None or n_ms is None or n_torch == n_ms:
        return None
    msg = f"batches per epoch: torch {n_torch}, MindSpore {n_ms}"
    if bs_torch is not None and bs_ms is not None and bs_torch != bs_ms:
        return Finding(ERROR, "batch_size", f"{msg}; batch size torch {bs_torch}, MindSpore {bs_ms}")
    if abs(n_torch - n_ms) == 1:
        dropper = "MindSpore drops" if n_ms < n_torch else "torch drops"
        ev = []
        if drop_last is not None or drop_remainder is not None:
            ev.append(f"DataLoader drop_last={drop_last}, batch drop_remainder={drop_remainder}")
        return Finding(ERROR, "drop_last", f"{msg}: off by one, {dropper} the last partial batch", evidence=ev)
    return Finding(ERROR, "values", f"{msg}: the pipelines do not see the same number of samples")


# ------------------------------------------------------------------------------------------------
# Shapes and layout

def layout_permutation(t_shape: Sequence[int], m_shape: Sequence[int]) -> tuple[int, ...] | None:
    """Axes to transpose the MindSpore batch by to get the torch layout (NHWC → NCHW and the like)."""
    t, m = tuple(t_shape), tuple(m_shape)
    if len(t) != len(m) or t == m or sorted(t) != sorted(m) or len(t) < 3:
        return None
    if len(t) == 4 and m == (t[0], t[2], t[3], t[1]):
        return (0, 3, 1, 2)  # the usual case, checked first because H == W makes argsort ambiguous
    if len(t) == 3 and m == (t[1], t[2], t[0]):
        return (2, 0, 1)
    used: list[int] = []
    for d in t:  # any permutation that maps the sizes onto each other
        used.append(next(i for i, s in enumerate(m) if s == d and i not in used))
    return tuple(used)


def diagnose_shapes(t_shape: Sequence[int], m_shape: Sequence[int], column: str | None = None) -> Finding | None:
    t, m = tuple(t_shape), tuple(m_shape)
    if t == m:
        return None
    msg = f"shape torch {t}, MindSpore {m}"
    if len(t) != len(m):
        return Finding(ERROR, "layout" if len(t) >= 3 else "values", f"{msg}: different rank", column)
    perm = layout_permutation(t, m)
    if perm is not None:
        extra = " (MindSpore NHWC, torch NCHW)" if perm == (0, 3, 1, 2) else f" (transpose {perm})"
        return Finding(ERROR, "layout", f"{msg}: same sizes, transposed{extra}", column)
    if t[0] != m[0] and t[1:] == m[1:]:
        return Finding(ERROR, "batch_size", f"{msg}: batch size differs", column)
    return Finding(ERROR, "resize_size", f"{msg}: per-sample size differs", column)


# ------------------------------------------------------------------------------------------------
# Values: per-channel statistics seen as MindSpore ≈ a·torch + b

def _near(x: np.ndarray, y: float, rel: float) -> bool:
    return bool(np.all(np.abs(x - y) <= rel * abs(y)))


def diagnose_affine(t_mean: np.ndarray, t_std: np.ndarray, m_mean: np.ndarray, m_std: np.ndarray,
                    atol: float = 1e-3, column: str | None = None) -> Finding | None:
    """Per-channel stats that disagree, read as ``ms = a * torch + b`` (a = std ratio) and named."""
    t_mean, t_std, m_mean, m_std = (np.asarray(v, np.float64) for v in (t_mean, t_std, m_mean, m_std))
    dm, ds = np.abs(m_mean - t_mean).max(), np.abs(m_std - t_std).max()
    if dm <= atol and ds <= atol:
        return None
    a = m_std / np.where(t_std == 0, 1.0, t_std)
    b = m_mean - a * t_mean
    ev = [f"torch mean {_fmt(t_mean)} std {_fmt(t_std)}", f"MindSpore mean {_fmt(m_mean)} std {_fmt(m_std)}",
          f"MindSpore ≈ a·torch + b per channel: a {_fmt(a)}, b {_fmt(b)}"]
    head = f"per-channel |Δmean| {dm:.3g}, |Δstd| {ds:.3g}"
    spread = float(np.abs(b).max())
    if _near(a, 255.0, 0.05) and spread < 0.05 * 255:
        return Finding(ERROR, "to_tensor", f"{head}: MindSpore values are ×255 (0–255 scale)", column, ev)
    if _near(a, 1 / 255, 0.05):
        return Finding(ERROR, "to_tensor", f"{head}: MindSpore values are ÷255: scaled twice", column, ev)
    if _near(a, 1.0, 0.02):
        return Finding(ERROR, "normalize", f"{head}: same spread, per-channel offset {_fmt(b)}: Normalize mean "
                       "differs or Normalize runs before the scaling to [0, 1]", column, ev)
    if np.all((a > 0.8) & (a < 1.25)) and spread < 0.1:
        # same centre, different spread: resampling (antialias or kernel) rather than arithmetic
        kind = "sharper (no antialias)" if np.all(a > 1) else "smoother"
        return Finding(ERROR, "decode_pil" if np.all(a > 1) else "interpolation",
                       f"{head}: MindSpore images are {kind}: std ratio {_fmt(a)}", column, ev)
    if np.all((a > 0) & (a < 1)) and np.all((b >= -0.05) & (b <= 1.05)):
        return Finding(ERROR, "normalize", f"{head}: MindSpore values are not normalised: torch used "
                       f"Normalize(mean≈{_fmt(b)}, std≈{_fmt(a)}), MindSpore did not", column, ev)
    if np.all((a / 255 > 0) & (a / 255 < 1)) and np.all((b / 255 >= -0.05) & (b / 255 <= 1.05)):
        return Finding(ERROR, "to_tensor", f"{head}: MindSpore values are neither scaled nor normalised: "
                       f"torch used ToTensor + Normalize(mean≈{_fmt(b / 255)}, std≈{_fmt(a / 255)})", column, ev)
    if np.all(a > 1) and np.all(b <= 0):
        return Finding(ERROR, "normalize", f"{head}: MindSpore normalises and torch does not (or MindSpore "
                       f"normalises twice): mean≈{_fmt(-b / a)}, std≈{_fmt(1 / a)}", column, ev)
    return Finding(ERROR, "values", f"{head}: per-channel affine difference", column, ev)


# ------------------------------------------------------------------------------------------------
# Values: paired samples (same order, same shape)

def _best_shift(t: np.ndarray, m: np.ndarray) -> tuple[tuple[int, int], float] | None:
    """The 1-px (dy, dx) shift of the last two axes under which MindSpore equals torch best."""
    if t.ndim < 3 or min(t.shape[-2:]) < 3:
        return None
    best = None
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy == dx == 0:
                continue
            ts = t[..., max(dy, 0):t.shape[-2] + min(dy, 0), max(dx, 0):t.shape[-1] + min(dx, 0)]
            ms = m[..., max(-dy, 0):m.shape[-2] + min(-dy, 0), max(-dx, 0):m.shape[-1] + min(-dx, 0)]
            d = float(np.abs(ts.astype(np.float64) - ms).max())
            if best is None or d < best[1]:
                best = ((dy, dx), d)
    return best


def diagnose_pixels(t: np.ndarray, m: np.ndarray, atol: float = 1e-3, column: str | None = None) -> Finding | None:
    """Same shape, same order: name the cause of a large max |Δ| (crop shift, antialias, kernel)."""
    t64, m64 = np.asarray(t, np.float64), np.asarray(m, np.float64)
    d = float(np.abs(t64 - m64).max())
    if d <= atol:
        return None
    head = f"max |Δ| {d:.3g} on paired samples"
    shift = _best_shift(t64, m64)
    if shift is not None and shift[1] <= max(atol, 1e-3 * d):
        (dy, dx), r = shift
        return Finding(ERROR, "center_crop", f"{head}: MindSpore equals torch shifted by {dy} px (H), {dx} px (W) "
                       f"(max |Δ| {r:.2g} on the overlap)", column)
    ratio = m64.std() / max(t64.std(), 1e-12)
    if ratio > 1.02:
        return Finding(ERROR, "decode_pil", f"{head}, std ratio {ratio:.3f}: MindSpore images are sharper "
                       "(resized without antialias)", column)
    return Finding(ERROR, "interpolation", f"{head}, std ratio {ratio:.3f}: resampling differs", column)


# ------------------------------------------------------------------------------------------------
# Labels

def _non_decreasing(x: np.ndarray) -> bool:
    return bool(np.all(np.diff(x) >= 0))


def diagnose_labels(t: np.ndarray, m: np.ndarray, column: str | None = None,
                    shuffle_torch: bool | None = None, shuffle_ms: bool | None = None) -> Finding | None:
    """Labels compared by value (int64 vs int32 is not a difference)."""
    t, m = np.asarray(t).reshape(-1), np.asarray(m).reshape(-1)
    n = min(t.size, m.size)
    t, m = t[:n], m[:n]
    if n == 0 or np.array_equal(t.astype(np.int64), m.astype(np.int64)):
        return None
    agree = float(np.mean(t == m))
    head = f"labels agree on {agree:.0%} of {n} paired samples"
    ev = [f"torch {t[:12].tolist()}", f"MindSpore {m[:12].tolist()}"]
    pairs = set(zip(t.tolist(), m.tolist()))
    if 1 < len(pairs) == len(set(t.tolist())) == len(set(m.tolist())) and n >= 2 * len(pairs):
        # a bijection seen on enough samples: a relabelling, not a shuffle
        mapping = dict(sorted(pairs))
        return Finding(ERROR, "class_index", f"{head}: consistent relabelling torch→MindSpore {mapping}", column, ev)
    if shuffle_torch and shuffle_ms:
        return Finding(INFO, "shuffle", f"{head}: both pipelines shuffle, order is not compared", column, ev)
    who = None
    if shuffle_ms and not shuffle_torch or (shuffle_ms is None and _non_decreasing(t) and not _non_decreasing(m)):
        who = "MindSpore shuffles, torch does not"
    elif shuffle_torch and not shuffle_ms or (shuffle_torch is None and _non_decreasing(m) and not _non_decreasing(t)):
        who = "torch shuffles, MindSpore does not"
    if who or sorted(t.tolist()) == sorted(m.tolist()):
        return Finding(ERROR, "shuffle", f"{head}: order differs ({who or 'same labels, other order'})", column, ev)
    return Finding(ERROR, "shuffle" if shuffle_ms != shuffle_torch else "values", f"{head}", column, ev)


# ------------------------------------------------------------------------------------------------
# dtypes and errors

def diagnose_dtype(kind: str, t_dtype: np.dtype, m_dtype: np.dtype, column: str | None = None) -> Finding | None:
    t_dtype, m_dtype = np.dtype(t_dtype), np.dtype(m_dtype)
    if t_dtype == m_dtype:
        return None
    msg = f"dtype torch {t_dtype}, MindSpore {m_dtype}"
    if kind == "label":
        if m_dtype == np.int32:
            return Finding(INFO, "label_dtype", f"{msg}: expected (MindSpore losses take int32); compared by value",
                           column)
        return Finding(WARN, "label_dtype", f"{msg}: MindSpore losses want int32 labels", column)
    if m_dtype == np.uint8 and t_dtype.kind == "f":
        return Finding(ERROR, "to_tensor", f"{msg}: MindSpore images are still uint8", column)
    if t_dtype.kind == m_dtype.kind:
        return Finding(WARN, "dtype", f"{msg}: same kind, different precision", column)
    return Finding(ERROR, "dtype", msg, column)


_ERROR_PATTERNS: list[tuple[str, str, str]] = [
    (r"Decode first|should have at least two dimensions|decode", "decode", "the image column is still encoded bytes"),
    (r"number of channels does not match the size of mean", "normalize_hwc",
     "Normalize read the CHW tensor as HWC (is_hwc=True is the default)"),
    (r"should be PIL image|img should be PIL", "decode_pil", "a PIL-only op got a numpy image"),
    (r"Unable to avoid copy", "dtype", "numpy 2 with MindSpore's GeneratorDataset: return ndarrays, not scalars"),
]


def diagnose_error(side: str, message: str) -> Finding:
    """Name the pitfall behind an exception raised while iterating a pipeline."""
    short = _error_line(message)
    for pattern, key, why in _ERROR_PATTERNS:
        if re.search(pattern, message, re.IGNORECASE):
            return Finding(ERROR, key, f"{side} pipeline raised: {why}", evidence=[short])
    return Finding(ERROR, "error", f"{side} pipeline raised", evidence=[short])


def _error_line(message: str) -> str:
    """MindSpore wraps the useful line inside a long banner; keep that line."""
    for line in message.splitlines():
        if "[ERROR] map operation" in line or "failed." in line:
            return line.replace("[ERROR] ", "").strip()[:400]
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    return (lines[-1] if lines else message)[:400]
