"""Per-tensor error metrics, and the rule that separates float32 noise from a porting bug."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ..i18n import _

# Local error (a MindSpore layer run on torch's own input for that layer, relative to the output's
# scale) is a bug when it exceeds NOISE_K × the layer's float32 noise (|float32 − float64| in torch
# on the same input) and the floor. ~2e-6 is ~16 float32 ulps of the largest output element.
FLOOR_LOCAL = 2e-6
NOISE_K = 10.0
# Where no local replay exists (containers: their own forward code), the accumulated error must
# jump GROWTH× above everything before it and above FLOOR_CHAIN: noise grows slowly with depth.
GROWTH = 10.0
FLOOR_CHAIN = 1e-5
# "Share within tolerance": |a − b| ≤ ATOL_REL·scale + RTOL·|a|.
RTOL, ATOL_REL = 1e-4, 1e-5
# The final output matches when max|a − b| ≤ OUTPUT_TOL × max|a| (the torchvision proof's bar).
OUTPUT_TOL = 1e-4


@dataclass
class Diff:
    shape_ok: bool
    ref_shape: list[int]
    got_shape: list[int]
    max_abs: float = float("nan")
    rel: float = float("nan")  # max_abs / max|ref|: the scale-free error used for verdicts
    max_rel: float = float("nan")  # elementwise max |a−b| / (|a| + tiny)
    cosine: float = float("nan")
    within: float = float("nan")  # share of elements within tolerance
    scale: float = 0.0
    nonfinite: str = ""  # non-empty: NaN/Inf where the other side is finite

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in asdict(self).items()}


def diff(ref: np.ndarray, got: np.ndarray) -> Diff:
    """torch (ref) vs MindSpore (got) for one tensor."""
    ref = np.asarray(ref)
    got = np.asarray(got)
    d = Diff(shape_ok=ref.shape == got.shape, ref_shape=list(ref.shape), got_shape=list(got.shape))
    if not d.shape_ok:
        return d
    a = ref.astype(np.float64)
    b = got.astype(np.float64)
    fa, fb = np.isfinite(a), np.isfinite(b)
    if not (fa.all() and fb.all()):
        same = (~fa & ~fb) & ((np.isnan(a) & np.isnan(b)) | (a == b))
        bad_ms = int((~fb & ~same).sum())
        bad_t = int((~fa & ~same).sum())
        # Readers tell the side by the first word ("MindSpore"/"torch"): every translation starts with it.
        if bad_ms:
            d.nonfinite = _("MindSpore has {n} NaN/Inf value(s) where torch does not").format(n=bad_ms)
        elif bad_t:
            d.nonfinite = _("torch has {n} NaN/Inf value(s) where MindSpore does not").format(n=bad_t)
        keep = fa & fb
        a, b = a[keep], b[keep]
    if a.size == 0:
        d.max_abs = d.rel = d.max_rel = 0.0
        d.cosine = d.within = 1.0
        return d
    err = np.abs(a - b)
    scale = float(np.abs(a).max())
    d.scale = scale
    d.max_abs = float(err.max())
    d.rel = d.max_abs / scale if scale > 0 else d.max_abs
    d.max_rel = float((err / (np.abs(a) + 1e-6 * scale + 1e-30)).max())
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    d.cosine = float(np.dot(a.ravel(), b.ravel()) / (na * nb)) if na > 0 and nb > 0 else (1.0 if na == nb else 0.0)
    d.within = float((err <= ATOL_REL * scale + RTOL * np.abs(a)).mean())
    return d


def worst(diffs: Sequence[Diff]) -> Diff | None:
    """The worst of several outputs of one call (a shape mismatch or NaN beats any value error)."""
    if not diffs:
        return None
    for d in diffs:
        if not d.shape_ok:
            return d
    for d in diffs:
        if d.nonfinite:
            return d
    return max(diffs, key=lambda d: d.rel)


def diff_all(refs: Sequence[np.ndarray], gots: Sequence[np.ndarray]) -> Diff | None:
    if len(refs) != len(gots):
        return Diff(shape_ok=False, ref_shape=[len(refs)], got_shape=[len(gots)], nonfinite="")
    return worst([diff(r, g) for r, g in zip(refs, gots)])


def local_threshold(noise_rel: float | None) -> float:
    return max(NOISE_K * (noise_rel or 0.0), FLOOR_LOCAL)


def chain_threshold(baseline: float) -> float:
    return max(GROWTH * baseline, FLOOR_CHAIN)
