"""Why a layer diverges: compare the two layers' settings, test a transposed weight, quote the KB."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _pair(v: Any, n: int = 2) -> tuple:
    if isinstance(v, (list, tuple)):
        return tuple(v) if len(v) == n else tuple(v)
    return (v,) * n


def _ms_attrs(cell: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(cell).items() if not k.startswith("_")} if cell is not None else {}


def _norm_approx(v: Any) -> str:
    return "tanh" if v in (True, "tanh") else "none" if v in (False, "none", None) else str(v)


def setting_hints(torch_class: str | None, t: Mapping[str, Any], cell: Any) -> list[str]:
    """Settings that differ between a torch layer (its attributes) and its MindSpore cell."""
    m = _ms_attrs(cell)
    if not torch_class or not m:
        return []
    kind = torch_class.rsplit(".", 1)[-1]
    hints: list[str] = []
    if kind == "LayerNorm" and "eps" in t and "epsilon" in m:
        if not np.isclose(t["eps"], m["epsilon"], rtol=1e-3, atol=0):
            hints.append(
                f"LayerNorm epsilon differs: torch eps={t['eps']:g}, MindSpore epsilon={m['epsilon']:g} "
                f"(MindSpore's default is 1e-7: pass epsilon={t['eps']:g})"
            )
    if kind == "GELU" and "approximate" in t and "approximate" in m:
        ta, ma = _norm_approx(t["approximate"]), _norm_approx(m["approximate"])
        if ta != ma:
            hints.append(
                f"GELU approximation differs: torch approximate='{ta}', MindSpore uses "
                f"{'the tanh approximation' if ma == 'tanh' else 'exact erf'} "
                f"(nn.GELU() defaults to approximate=True: pass approximate={ta == 'tanh'})"
            )
    if kind.startswith(("BatchNorm", "SyncBatchNorm")):
        if "eps" in t and "eps" in m and not np.isclose(t["eps"], m["eps"], rtol=1e-3, atol=0):
            hints.append(f"BatchNorm eps differs: torch {t['eps']:g}, MindSpore {m['eps']:g}")
        # MindSpore stores 1 − (its constructor's momentum), i.e. torch's convention.
        if (
            t.get("momentum") is not None
            and "momentum" in m
            and not np.isclose(t["momentum"], m["momentum"], atol=1e-6)
        ):
            hints.append(
                f"BN momentum not inverted: torch momentum={t['momentum']:g} needs MindSpore "
                f"momentum={1 - t['momentum']:g} (1 − m), this cell was built with momentum={1 - m['momentum']:g}"
            )
    if kind.startswith("Conv"):
        pad_mode = str(m.get("pad_mode", "")).lower()
        tp = t.get("padding")
        if pad_mode == "same" and tp != "same":
            hints.append(
                f"padding: MindSpore pad_mode='same' (its default) but torch padding={tp}: "
                f"use pad_mode='pad', padding={tp}"
            )
        elif pad_mode == "valid" and tp not in ("valid", None) and any(_pair(tp)):
            hints.append(f"padding: MindSpore pad_mode='valid' but torch padding={tp}")
        for tk, mk in (("stride", "stride"), ("dilation", "dilation"), ("groups", "group")):
            if (
                tk in t
                and mk in m
                and _pair(t[tk]) != _pair(m[mk])
                and (not isinstance(m[mk], (list, tuple)) or _pair(t[tk], len(m[mk])) != tuple(m[mk]))
            ):
                hints.append(f"{tk} differs: torch {t[tk]}, MindSpore {mk}={m[mk]}")
    if "Pool" in kind and "Adaptive" not in kind:
        ts = t.get("stride") or t.get("kernel_size")
        if ts is not None and "stride" in m and _pair(ts) != _pair(m["stride"]):
            hints.append(
                f"pooling stride differs: torch stride={ts}, MindSpore stride={m['stride']} "
                f"(MindSpore's default stride is 1, torch's is kernel_size)"
            )
        if "kernel_size" in t and "kernel_size" in m and _pair(t["kernel_size"]) != _pair(m["kernel_size"]):
            hints.append(f"pooling kernel differs: torch {t['kernel_size']}, MindSpore {m['kernel_size']}")
    if kind.startswith("Dropout") and "p" in t and "p" in m and not np.isclose(t["p"], m["p"]):
        hints.append(f"Dropout p differs: torch p={t['p']}, MindSpore p={m['p']} (keep_prob is 1 − p)")
    return hints


def transposed_weight_hint(
    torch_class: str | None,
    x: np.ndarray | None,
    ms_out: np.ndarray | None,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
) -> str | None:
    """A Linear whose MindSpore output equals x @ W (not x @ Wᵀ): the weight is used transposed."""
    if torch_class != "torch.nn.Linear" or x is None or ms_out is None or weight is None:
        return None
    if weight.ndim != 2 or weight.shape[0] != weight.shape[1] or x.shape[-1] != weight.shape[0]:
        return None
    cand = x.astype(np.float64) @ weight.astype(np.float64)
    if bias is not None:
        cand = cand + bias
    if cand.shape == ms_out.shape and np.abs(cand - ms_out).max() <= 1e-4 * max(1.0, float(np.abs(cand).max())):
        return "the Linear/Dense weight is used transposed: MindSpore computes x @ W, torch computes x @ Wᵀ"
    return None


def describe(
    kind: str,
    detail: str,
    torch_class: str | None,
    attrs: Mapping[str, Any],
    cell: Any,
    kb: Any,
    extra: Sequence[str] = (),
) -> str:
    """One hint line: specific findings first, then the KB pitfall note for the layer type."""
    parts = list(extra) + setting_hints(torch_class, attrs, cell)
    if kind == "shape" and not parts:
        parts.append(
            "output shape differs: check padding / stride / kernel defaults "
            "(MindSpore Conv pad_mode defaults to 'same', pooling stride to 1)"
        )
    entry = kb.get(torch_class) if (kb is not None and torch_class) else None
    if entry is not None and entry.note:
        parts.append(f"KB ({entry.short}): {entry.note}")
    if not parts and detail:
        parts.append(detail)
    return " | ".join(parts)
