"""Compare the two sides' records: the per-step table, the first step beyond tolerance, and its likeliest
cause (batches, initial weights, BN/Dropout mode, parameter groups, learning rate, optimizer settings,
loss reduction, gradient clipping), plus the trained parameters at the end."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..i18n import _

LR_RTOL = 1e-5
INPUT_RTOL = 1e-6


def rel(a: float | None, b: float | None) -> float | None:
    """|b - a| relative to |a| (a is torch's)."""
    if a is None or b is None:
        return None
    if math.isnan(a) or math.isnan(b):
        return math.inf
    return abs(b - a) / max(abs(a), 1e-12)


def identical_inputs(t: dict[str, Any] | None, m: dict[str, Any] | None) -> bool | None:
    """The two batches hold the same values (digests of their contents; all arrays when both sides saw
    as many), or None when a side recorded no digest."""
    if t is None or m is None or "hash" not in t or "hash" not in m:
        return None
    if t["hash"] != m["hash"]:
        return False
    if t.get("arrays") == m.get("arrays") and "hash_all" in t and "hash_all" in m:
        return bool(t["hash_all"] == m["hash_all"])
    return True


def same_inputs(t: dict[str, Any] | None, m: dict[str, Any] | None) -> bool | None:
    """Identical contents, or (a batch each side computed) equal values within float rounding: the sums,
    the absolute sums and a position-weighted sum (swapped rows change it) agree."""
    if t is None or m is None:
        return None
    if t["shape"] != m["shape"]:
        return False
    if identical_inputs(t, m):
        return True
    keys = [k for k in ("sum", "abs_sum", "wsum") if k in t and k in m]
    scale = max(abs(t.get("abs_sum", 0.0)), 1e-12)
    return all(abs(t[k] - m[k]) <= INPUT_RTOL * scale or abs(t[k] - m[k]) < 1e-6 for k in keys)


def loss_rel(t: float | None, m: float | None, first: float | None) -> float | None:
    """|m - t| relative to the larger of |t| and 1% of the first step's loss: a loss trained to near zero
    would otherwise turn float32 noise in the logits into a large relative difference."""
    if t is None or m is None:
        return None
    if math.isnan(t) or math.isnan(m):
        return math.inf
    return abs(m - t) / max(abs(t), 0.01 * abs(first or 0.0), 1e-12)


def pair_rows(t_events: list[dict[str, Any]], m_events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per torch step event, with the MindSpore event at the same position."""
    rows = []
    first: dict[int, float | None] = {}
    for t in t_events:
        first.setdefault(t["opt"], t["loss"])
    for i, t in enumerate(t_events):
        m = m_events[i] if i < len(m_events) else None
        rows.append(
            {
                "index": i,
                "step": t["step"],
                "opt": t["opt"],
                "ms_opt": m["opt"] if m else None,
                "torch_loss": t["loss"],
                "ms_loss": m["loss"] if m else None,
                "rel": loss_rel(t["loss"], m["loss"], first[t["opt"]]) if m else None,
                "torch_lr": t["lr"],
                "ms_lr": m["lr"] if m else None,
                "torch_grad_norm": t["grad_norm"],
                "ms_grad_norm": m["grad_norm"] if m else None,
                "clip": t.get("clip"),
                "same_inputs": same_inputs(t.get("inputs"), m.get("inputs")) if m else None,
                "identical_inputs": identical_inputs(t.get("inputs"), m.get("inputs")) if m else None,
                "torch_inputs": t.get("inputs"),
                "ms_inputs": m.get("inputs") if m else None,
                "same_streams": (t["streams"] == m["streams"]) if m and "streams" in t and "streams" in m else None,
                "torch_modes": t.get("modes", {}),
                "ms_modes": m.get("modes", {}) if m else {},
            }
        )
    return rows


def first_beyond(rows: list[dict[str, Any]], tol: float) -> int | None:
    for r in rows:
        if r["ms_loss"] is None and r["torch_loss"] is not None:
            return r["index"]
        if r["rel"] is not None and r["rel"] > r.get("limit", tol):
            return r["index"]
    return None


def lr_differs(row: dict[str, Any], scale: float) -> bool:
    """Learning rates differ beyond float32 schedule arithmetic: MindSpore keeps them in float32 Parameters
    and its cosine schedule recurses in float32, so near zero compare against the run's peak (`scale`)."""
    t, m = row["torch_lr"], row["ms_lr"]
    if not m or len(t) != len(m):  # a group dropped: group_findings names it
        return False
    return any(
        a is not None and b is not None and abs(a - b) > LR_RTOL * max(abs(a), abs(b), scale) for a, b in zip(t, m)
    )


def modes_differ(row: dict[str, Any]) -> list[str]:
    """Plain-words mode differences of the trained models at this step."""
    out = []
    for key, t in row["torch_modes"].items():
        m = row["ms_modes"].get(key)
        if not m:
            continue
        for kind, label in (("bn", "BatchNorm"), ("drop", "Dropout")):
            if t[f"{kind}_train"] != m[f"{kind}_train"]:
                text = _("{label} layers in training mode: torch {torch}, MindSpore {ms} ({model})")
                torch_count = f"{t[f'{kind}_train']}/{t[f'{kind}_total']}"
                ms_count = f"{m[f'{kind}_train']}/{m[f'{kind}_total']}"
                out.append(text.format(label=label, torch=torch_count, ms=ms_count, model=key))
    return out


def integer_ratio(a: float, b: float) -> int | None:
    """n when b = n·a or a = n·b for an integer n ≥ 2 (a loss reduction that differs)."""
    if not a or not b:
        return None
    r = b / a if abs(b) >= abs(a) else a / b
    n = round(r)
    return n if n >= 2 and abs(r - n) <= 1e-3 * n else None


def compare_parameters(work: Path, t_rec: dict[str, Any], m_rec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every trained model's parameters at the end, torch's renamed by the KB: worst first."""
    from ..kb import load_kb
    from ..weights import convert_state_dict

    kb, out = load_kb(), []
    m_models = {m["key"]: m for m in m_rec.get("models", [])}
    for tm in t_rec.get("models", []):
        mm = m_models.get(tm["key"])
        t_path, m_path = work / "torch" / tm["final"], work / "ms" / (mm["final"] if mm else "")
        if not mm or not t_path.is_file() or not m_path.is_file():
            continue
        with np.load(t_path) as z:
            torch_state = convert_state_dict({k: z[k] for k in z.files}, tm["layer_types"], kb)
        with np.load(m_path) as z:
            for name in z.files:
                if name not in torch_state or torch_state[name].shape != z[name].shape:
                    continue
                t, m = torch_state[name].astype(np.float64), z[name].astype(np.float64)
                diff = float(np.abs(t - m).max()) if t.size else 0.0
                scale = float(np.abs(t).max()) if t.size else 0.0
                row = {"name": f"{tm['key']}:{name}", "max_abs": diff, "rel": diff / max(scale, 1e-12)}
                if name.endswith("in_proj_bias") and t.ndim == 1 and t.size % 3 == 0:
                    row["rel_without_key"] = _rel_without_key(t, m)
                out.append(row)
    return sorted(out, key=lambda d: -d["rel"])


def _rel_without_key(t: np.ndarray, m: np.ndarray) -> float:
    """An attention's packed (query, key, value) bias compared without its key third: the key bias shifts
    every score of a query alike, so softmax cancels it and its gradient is zero up to float noise."""
    n = t.size // 3
    keep = np.r_[0:n, 2 * n : 3 * n]
    return float(np.abs(t[keep] - m[keep]).max()) / max(float(np.abs(t).max()), 1e-12)
