"""Compare what torch and MindSpore returned: shapes, dtypes, values (or statistics) as the case asks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kb import Case

__all__ = ["CaseFailure", "compare", "to_numpy"]


class CaseFailure(AssertionError):
    """A differential case whose numbers disagree (or that could not run)."""


def to_numpy(value: Any) -> Any:
    """Tensors of either framework (nested in tuples/lists) as numpy arrays; dtypes as plain names."""
    import mindspore as ms
    import torch

    if isinstance(value, torch.Tensor):
        v = value.detach().cpu()
        if v.dtype == torch.bfloat16:
            v = v.float()
        return v.resolve_conj().resolve_neg().numpy()
    if isinstance(value, ms.Tensor):
        if value.dtype == ms.bfloat16:
            value = value.astype(ms.float32)
        return value.asnumpy()
    if isinstance(value, (tuple, list)):
        if isinstance(value, torch.Size):
            return tuple(value)
        return type(value)(to_numpy(v) for v in value)
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    if isinstance(value, ms.dtype.Type) if hasattr(ms.dtype, "Type") else False:
        return str(value).lower()
    return value


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)) and not _is_shape(value):
        out = []
        for v in value:
            out.extend(_flatten(v))
        return out
    return [value]


def _is_shape(value: Any) -> bool:
    return (
        isinstance(value, tuple)
        and all(isinstance(v, int) for v in value)
        and not any(isinstance(v, bool) for v in value)
    )


def _compare_scalars(t: Any, m: Any, case: Case, label: str) -> None:
    if isinstance(t, float) or isinstance(m, float):
        if not np.isclose(float(t), float(m), rtol=case.rtol, atol=case.atol):
            raise CaseFailure(f"{label}: torch {t!r} != MindSpore {m!r}")
    elif t != m and str(t) != str(m):
        raise CaseFailure(f"{label}: torch {t!r} != MindSpore {m!r}")


def _compare_stats(t: np.ndarray, m: np.ndarray, case: Case, label: str) -> None:
    tf, mf = t.astype(np.float64), m.astype(np.float64)
    for stat in (np.mean, np.std):
        a, b = float(stat(tf)), float(stat(mf))
        if abs(a - b) > case.atol + case.rtol * abs(a):
            raise CaseFailure(f"{label}: {stat.__name__} torch {a:.6g} vs MindSpore {b:.6g}")


def _compare_arrays(t: np.ndarray, m: np.ndarray, case: Case, label: str) -> float:
    if t.shape != m.shape:
        raise CaseFailure(f"{label}: shape torch {t.shape} vs MindSpore {m.shape}")
    if case.check != "stats" and t.dtype != m.dtype:
        raise CaseFailure(f"{label}: dtype torch {t.dtype} vs MindSpore {m.dtype}")
    if case.check == "shape" or t.size == 0:
        return 0.0
    if case.check == "stats":
        _compare_stats(t, m, case, label)
        return 0.0
    if t.dtype == bool or not np.issubdtype(t.dtype, np.number):
        if not np.array_equal(t, m):
            raise CaseFailure(f"{label}: values differ ({int((t != m).sum())} of {t.size} elements)")
        return 0.0
    # Complex results are compared as complex: a float64 cast would drop the imaginary part.
    wide = np.complex128 if np.iscomplexobj(t) or np.iscomplexobj(m) else np.float64
    tf, mf = t.astype(wide), m.astype(wide)
    if not np.allclose(tf, mf, rtol=case.rtol, atol=case.atol, equal_nan=True):
        err = np.nanmax(np.abs(tf - mf))
        raise CaseFailure(f"{label}: max abs error {err:.3g} > atol {case.atol} (rtol {case.rtol})")
    finite = np.isfinite(tf) & np.isfinite(mf)
    return float(np.max(np.abs(tf[finite] - mf[finite]))) if finite.any() else 0.0


def compare(t_val: Any, m_val: Any, case: Case, what: str = "output") -> float:
    """Assert torch and MindSpore values (numpy already) agree as the case asks; return the max abs error."""
    t_list, m_list = _flatten(t_val), _flatten(m_val)
    if len(t_list) != len(m_list):
        raise CaseFailure(f"{what}: torch gave {len(t_list)} values, MindSpore {len(m_list)}")
    worst = 0.0
    for i, (t, m) in enumerate(zip(t_list, m_list)):
        label = f"{what}[{i}]" if len(t_list) > 1 else what
        if not isinstance(t, np.ndarray) and not isinstance(m, np.ndarray):
            _compare_scalars(t, m, case, label)
            continue
        worst = max(worst, _compare_arrays(np.asarray(t), np.asarray(m), case, label))
    return worst


@dataclass
class CaseResult:
    """What one passing case compared: the two expressions, the worst difference, the modes it ran in."""

    torch_src: str
    ms_src: str
    max_abs: float
    modes: tuple[str, ...] = ("pynative",)  # R27: the MindSpore modes the case ran and compared in
