"""Recognise the usual data-pipeline pitfalls from the numbers alone (numpy only, no frameworks).

The torch pipeline is the reference: every function reads "MindSpore differs from torch because …".
Each returns a :class:`Finding` (or ``None`` when that aspect agrees).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..i18n import N_, _
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
        return {
            "level": self.level,
            "pitfall": self.pitfall,
            "title": self.title,
            "column": self.column,
            "message": self.message,
            "fix": self.fix,
            "evidence": list(self.evidence),
        }


def _fmt(v: Sequence[float] | np.ndarray) -> str:
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


def diagnose_batch_count(
    n_torch: int | None,
    n_ms: int | None,
    *,
    bs_torch: int | None = None,
    bs_ms: int | None = None,
    drop_last: bool | None = None,
    drop_remainder: bool | None = None,
) -> Finding | None:
    if n_torch is None or n_ms is None or n_torch == n_ms:
        return None
    msg = _("batches per epoch: torch {torch}, MindSpore {ms}").format(torch=n_torch, ms=n_ms)
    if bs_torch is not None and bs_ms is not None and bs_torch != bs_ms:
        size = _("batch size torch {torch}, MindSpore {ms}").format(torch=bs_torch, ms=bs_ms)
        return Finding(ERROR, "batch_size", f"{msg}; {size}")
    if abs(n_torch - n_ms) == 1:
        dropper = (
            _("MindSpore drops the last partial batch") if n_ms < n_torch else _("torch drops the last partial batch")
        )
        ev = []
        if drop_last is not None or drop_remainder is not None:
            ev.append(f"DataLoader drop_last={drop_last}, batch drop_remainder={drop_remainder}")
        return Finding(
            ERROR, "drop_last", _("{msg}: off by one, {dropper}").format(msg=msg, dropper=dropper), evidence=ev
        )
    return Finding(ERROR, "values", _("{msg}: the pipelines do not see the same number of samples").format(msg=msg))


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
    msg = _("shape torch {torch}, MindSpore {ms}").format(torch=t, ms=m)
    if len(t) != len(m):
        return Finding(ERROR, "layout" if len(t) >= 3 else "values", _("{msg}: different rank").format(msg=msg), column)
    perm = layout_permutation(t, m)
    if perm is not None:
        extra = " (MindSpore NHWC, torch NCHW)" if perm == (0, 3, 1, 2) else f" (transpose {perm})"
        return Finding(ERROR, "layout", _("{msg}: same sizes, transposed").format(msg=msg) + extra, column)
    if t[0] != m[0] and t[1:] == m[1:]:
        return Finding(ERROR, "batch_size", _("{msg}: batch size differs").format(msg=msg), column)
    return Finding(ERROR, "resize_size", _("{msg}: per-sample size differs").format(msg=msg), column)


# ------------------------------------------------------------------------------------------------
# Values: per-channel statistics seen as MindSpore ≈ a·torch + b


def _near(x: np.ndarray, y: float, rel: float) -> bool:
    return bool(np.all(np.abs(x - y) <= rel * abs(y)))


def name_affine(
    a: np.ndarray, b: np.ndarray, head: str, column: str | None = None, evidence: list[str] | None = None
) -> Finding:
    """Name an exact per-channel ``ms = a * torch + b`` relation (the arithmetic pitfalls)."""
    ev = list(evidence or []) + [_("MindSpore ≈ a·torch + b per channel: a {a}, b {b}").format(a=_fmt(a), b=_fmt(b))]
    spread = float(np.abs(b).max())
    if _near(a, 255.0, 0.05) and spread < 0.05 * 255:
        return Finding(
            ERROR, "to_tensor", _("{head}: MindSpore values are ×255 (0–255 scale)").format(head=head), column, ev
        )
    if _near(a, 1 / 255, 0.05):
        return Finding(
            ERROR, "to_tensor", _("{head}: MindSpore values are ÷255: scaled twice").format(head=head), column, ev
        )
    if _near(a, 1.0, 0.02):
        text = _(
            "{head}: same spread, per-channel offset {b}: Normalize mean "
            "differs or Normalize runs before the scaling to [0, 1]"
        )
        return Finding(ERROR, "normalize", text.format(head=head, b=_fmt(b)), column, ev)
    if np.all((a > 0) & (a < 1)) and np.all((b >= -0.05) & (b <= 1.05)):
        text = _(
            "{head}: MindSpore values are not normalised: torch used Normalize(mean≈{mean}, std≈{std}), MindSpore did not"
        )
        return Finding(ERROR, "normalize", text.format(head=head, mean=_fmt(b), std=_fmt(a)), column, ev)
    twice = _("{head}: MindSpore normalises and torch does not (or MindSpore normalises twice): mean≈{mean}, std≈{std}")
    if np.all(a > 1) and np.all(b <= 0) and np.any(b < 0):  # before the next case: its window includes b < 0
        return Finding(ERROR, "normalize", twice.format(head=head, mean=_fmt(-b / a), std=_fmt(1 / a)), column, ev)
    if np.all((a / 255 > 0) & (a / 255 < 1)) and np.all((b / 255 >= -0.05) & (b / 255 <= 1.05)):
        text = _(
            "{head}: MindSpore values are neither scaled nor normalised: "
            "torch used ToTensor + Normalize(mean≈{mean}, std≈{std})"
        )
        return Finding(ERROR, "to_tensor", text.format(head=head, mean=_fmt(b / 255), std=_fmt(a / 255)), column, ev)
    if np.all(a > 1) and np.all(b <= 0):
        return Finding(ERROR, "normalize", twice.format(head=head, mean=_fmt(-b / a), std=_fmt(1 / a)), column, ev)
    return Finding(ERROR, "values", _("{head}: per-channel affine difference").format(head=head), column, ev)


def _resampling(ratio: np.ndarray, head: str, column: str | None, ev: list[str]) -> Finding:
    if np.all(ratio > 1.02):  # no antialias keeps more high-frequency variance
        text = _("{head}: MindSpore images are sharper, std ratio {ratio} (resized without antialias)")
        return Finding(ERROR, "decode_pil", text.format(head=head, ratio=_fmt(ratio)), column, ev)
    text = _("{head}: resampling differs, std ratio {ratio}")
    return Finding(ERROR, "interpolation", text.format(head=head, ratio=_fmt(ratio)), column, ev)


def diagnose_affine(
    t_mean: np.ndarray,
    t_std: np.ndarray,
    m_mean: np.ndarray,
    m_std: np.ndarray,
    atol: float = 1e-3,
    column: str | None = None,
) -> Finding | None:
    """Per-channel stats alone (samples need not be paired): read as ``ms = a * torch + b``, a = std ratio."""
    t_mean, t_std, m_mean, m_std = (np.asarray(v, np.float64) for v in (t_mean, t_std, m_mean, m_std))
    dm, ds = np.abs(m_mean - t_mean).max(), np.abs(m_std - t_std).max()
    if dm <= atol and ds <= atol:
        return None
    a = m_std / np.where(t_std == 0, 1.0, t_std)
    b = m_mean - a * t_mean
    stats = _("{side} mean {mean} std {std}")
    ev = [stats.format(side="torch", mean=_fmt(t_mean), std=_fmt(t_std))]
    ev.append(stats.format(side="MindSpore", mean=_fmt(m_mean), std=_fmt(m_std)))
    head = _("per-channel |Δmean| {dm:.3g}, |Δstd| {ds:.3g}").format(dm=dm, ds=ds)
    if np.all((a > 0.8) & (a < 1.25)) and not _near(a, 1.0, 0.02) and float(np.abs(b).max()) < 0.1:
        # same centre, somewhat different spread: resampling rather than arithmetic
        return _resampling(a, head, column, ev)
    return name_affine(a, b, head, column, ev)


# ------------------------------------------------------------------------------------------------
# Values: paired samples (same order, same shape)


def _shifts(t: np.ndarray, m: np.ndarray, tol: float) -> list[tuple[int, int]] | None:
    """Per sample, the (dy, dx) ∈ {-1, 0, 1}² shift of the last two axes under which MindSpore equals
    torch on the overlap; ``None`` when some sample has no such shift. Crop offsets differ per sample
    (only where size − crop is odd), hence the per-sample test."""
    if t.ndim < 3 or min(t.shape[-2:]) < 3:
        return None
    h, w = t.shape[-2:]
    found = []
    for ts_, ms_ in zip(t, m):
        hit = None
        for dy in (0, -1, 1):
            for dx in (0, -1, 1):
                a = ts_[..., max(dy, 0) : h + min(dy, 0), max(dx, 0) : w + min(dx, 0)]
                b = ms_[..., max(-dy, 0) : h + min(-dy, 0), max(-dx, 0) : w + min(-dx, 0)]
                if float(np.abs(a - b).max()) <= tol:
                    hit = (dy, dx)
                    break
            if hit:
                break
        if hit is None:
            return None
        found.append(hit)
    return found


def _channels(x: np.ndarray) -> list[np.ndarray]:
    if x.ndim >= 3 and x.shape[1] <= 16:
        return [x[:, c].reshape(-1) for c in range(x.shape[1])]
    return [x.reshape(-1)]


def diagnose_pixels(t: np.ndarray, m: np.ndarray, atol: float = 1e-3, column: str | None = None) -> Finding | None:
    """Same shape, same order: name the cause of a max |Δ| above ``atol``.

    An exact per-channel affine relation is arithmetic (ToTensor, Normalize); a 1-px shift is
    CenterCrop rounding; anything else is resampling (antialias, interpolation kernel).
    """
    t64, m64 = np.asarray(t, np.float64), np.asarray(m, np.float64)
    d = float(np.abs(t64 - m64).max())
    if d <= atol:
        return None
    head = _("max |Δ| {d:.3g} on paired samples").format(d=d)
    shifts = _shifts(t64, m64, max(atol, 1e-3 * d))
    if shifts is not None:
        moved = sorted({sh for sh in shifts if sh != (0, 0)})
        text = _(
            "{head}: {shifted} of {total} samples equal torch shifted by 1 px ((dy, dx) {moved}); "
            "the rest are identical"
        )
        shifted = sum(sh != (0, 0) for sh in shifts)
        return Finding(
            ERROR, "center_crop", text.format(head=head, shifted=shifted, total=len(shifts), moved=moved), column
        )
    a, b, resid, ratio = [], [], [], []
    for tc, mc in zip(_channels(t64), _channels(m64)):
        var = tc.var()
        ac = float(np.mean((tc - tc.mean()) * (mc - mc.mean())) / var) if var > 0 else 0.0
        bc = float(mc.mean() - ac * tc.mean())
        a.append(ac)
        b.append(bc)
        resid.append(float(np.sqrt(np.mean((mc - ac * tc - bc) ** 2)) / max(mc.std(), 1e-12)))
        ratio.append(mc.std() / max(tc.std(), 1e-12))
    if max(resid) < 1e-3:  # exact affine up to float32 rounding
        return name_affine(np.array(a), np.array(b), head, column)
    residual = _("relative residual of the best affine fit {resid}").format(resid=_fmt(resid))
    return _resampling(np.array(ratio), head, column, [residual])


# ------------------------------------------------------------------------------------------------
# Labels


def _non_decreasing(x: np.ndarray) -> bool:
    return bool(np.all(np.diff(x) >= 0))


def sample_permutation(t: np.ndarray, m: np.ndarray, atol: float = 1e-3, budget: float = 2e8) -> np.ndarray | None:
    """``p`` with ``m[j] == t[p[j]]`` (within ``atol``) for every sample, or ``None``.

    Finds a shuffle even when the labels happen to line up. Skipped (None) above ``budget``
    element comparisons: it is O(N² · sample size).
    """
    if t.shape != m.shape or t.ndim < 2 or t.shape[0] ** 2 * t[0].size > budget:
        return None
    tf = np.asarray(t, np.float64).reshape(len(t), -1)
    mf = np.asarray(m, np.float64).reshape(len(m), -1)
    p = np.empty(len(m), dtype=np.int64)
    free = np.ones(len(t), dtype=bool)
    for j, row in enumerate(mf):
        d = np.abs(tf - row).max(axis=1)
        d[~free] = np.inf
        i = int(np.argmin(d))
        if d[i] > atol:
            return None
        p[j], free[i] = i, False
    return p


def diagnose_order(
    perm: np.ndarray | None,
    column: str | None = None,
    shuffle_torch: bool | None = None,
    shuffle_ms: bool | None = None,
) -> Finding | None:
    """The same samples in another order: one side shuffles."""
    if perm is None or np.array_equal(perm, np.arange(len(perm))):
        return None
    moved = int(np.sum(perm != np.arange(len(perm))))
    head = _("the same {n} samples, {moved} in another position").format(n=len(perm), moved=moved)
    if shuffle_torch and shuffle_ms:
        text = _("{head}: both pipelines shuffle; compared after reordering")
        return Finding(INFO, "shuffle", text.format(head=head), column)
    who = (
        _("MindSpore shuffles, torch does not")
        if shuffle_ms and not shuffle_torch
        else _("torch shuffles, MindSpore does not")
        if shuffle_torch and not shuffle_ms
        else _("one side shuffles")
    )
    text = _("{head} ({who}); values compared after reordering")
    return Finding(ERROR, "shuffle", text.format(head=head, who=who), column)


def diagnose_labels(
    t: np.ndarray,
    m: np.ndarray,
    column: str | None = None,
    shuffle_torch: bool | None = None,
    shuffle_ms: bool | None = None,
) -> Finding | None:
    """Labels compared by value (int64 vs int32 is not a difference)."""
    t, m = np.asarray(t).reshape(-1), np.asarray(m).reshape(-1)
    n = min(t.size, m.size)
    t, m = t[:n], m[:n]
    if n == 0 or np.array_equal(t.astype(np.int64), m.astype(np.int64)):
        return None
    agree = float(np.mean(t == m))
    head = _("labels agree on {agree:.0%} of {n} paired samples").format(agree=agree, n=n)
    ev = [f"torch {t[:12].tolist()}", f"MindSpore {m[:12].tolist()}"]
    if shuffle_torch and shuffle_ms:
        text = _("{head}: both pipelines shuffle, order is not compared")
        return Finding(INFO, "shuffle", text.format(head=head), column, ev)
    pairs = set(zip(t.tolist(), m.tolist()))
    if (
        1 < len(pairs) == len(set(t.tolist())) == len(set(m.tolist()))
        and n >= 2 * len(pairs)
        and not (shuffle_torch or shuffle_ms)
    ):
        # a bijection seen on enough samples: a relabelling, not a shuffle
        mapping = dict(sorted(pairs))
        text = _("{head}: consistent relabelling torch→MindSpore {mapping}")
        return Finding(ERROR, "class_index", text.format(head=head, mapping=mapping), column, ev)
    who = None
    if shuffle_ms and not shuffle_torch or (shuffle_ms is None and _non_decreasing(t) and not _non_decreasing(m)):
        who = _("MindSpore shuffles, torch does not")
    elif shuffle_torch and not shuffle_ms or (shuffle_torch is None and _non_decreasing(m) and not _non_decreasing(t)):
        who = _("torch shuffles, MindSpore does not")
    if who or sorted(t.tolist()) == sorted(m.tolist()):
        text = _("{head}: order differs ({who})").format(head=head, who=who or _("same labels, other order"))
        return Finding(ERROR, "shuffle", text, column, ev)
    return Finding(ERROR, "shuffle" if shuffle_ms != shuffle_torch else "values", f"{head}", column, ev)


# ------------------------------------------------------------------------------------------------
# dtypes and errors


def diagnose_dtype(kind: str, t_dtype: np.dtype, m_dtype: np.dtype, column: str | None = None) -> Finding | None:
    t_dtype, m_dtype = np.dtype(t_dtype), np.dtype(m_dtype)
    if kind == "label" and m_dtype == np.int64:  # equal to torch or not: MindSpore losses reject it
        text = _("MindSpore labels are int64 (torch {dtype}): cast them to int32").format(dtype=t_dtype)
        return Finding(WARN, "label_dtype", text, column)
    if t_dtype == m_dtype:
        return None
    msg = _("dtype torch {torch}, MindSpore {ms}").format(torch=t_dtype, ms=m_dtype)
    if kind == "label":
        if m_dtype == np.int32:
            text = _("{msg}: expected (MindSpore losses take int32); compared by value")
            return Finding(INFO, "label_dtype", text.format(msg=msg), column)
        return Finding(WARN, "label_dtype", _("{msg}: MindSpore losses want int32 labels").format(msg=msg), column)
    if m_dtype == np.uint8 and t_dtype.kind == "f":
        return Finding(ERROR, "to_tensor", _("{msg}: MindSpore images are still uint8").format(msg=msg), column)
    if t_dtype.kind == m_dtype.kind:
        return Finding(WARN, "dtype", _("{msg}: same kind, different precision").format(msg=msg), column)
    return Finding(ERROR, "dtype", msg, column)


_ERROR_PATTERNS: list[tuple[str, str, str]] = [
    (
        r"Decode first|should have at least two dimensions|decode",
        "decode",
        N_("the image column is still encoded bytes"),
    ),
    (
        r"number of channels does not match the size of mean",
        "normalize_hwc",
        N_("Normalize read the CHW tensor as HWC (is_hwc=True is the default)"),
    ),
    (r"should be PIL image|img should be PIL", "decode_pil", N_("a PIL-only op got a numpy image")),
    (r"Unable to avoid copy", "dtype", N_("numpy 2 with MindSpore's GeneratorDataset: return ndarrays, not scalars")),
]


def diagnose_error(side: str, message: str) -> Finding:
    """Name the pitfall behind an exception raised while iterating a pipeline."""
    short = _error_line(message)
    for pattern, key, why in _ERROR_PATTERNS:
        if re.search(pattern, message, re.IGNORECASE):
            text = _("{side} pipeline raised: {why}").format(side=side, why=_(why))
            return Finding(ERROR, key, text, evidence=[short])
    return Finding(ERROR, "error", _("{side} pipeline raised").format(side=side), evidence=[short])


def _error_line(message: str) -> str:
    """MindSpore wraps the useful line inside a long banner; keep that line."""
    for line in message.splitlines():
        if "[ERROR] map operation" in line or "failed." in line:
            return line.replace("[ERROR] ", "").strip()[:400]
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    return (lines[-1] if lines else message)[:400]
