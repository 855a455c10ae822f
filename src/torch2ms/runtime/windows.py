"""torch.signal.windows that MindSpore 2.10 lacks, with torch's formulas and arguments.

MindSpore has hann/hamming/blackman/bartlett/kaiser windows (``ops.*_window``) but no cosine,
exponential, gaussian or general-cosine window; these follow torch/signal/windows/windows.py
sample for sample. ``sym=False`` is the periodic window (one more point, the last one dropped).
The samples are computed in float64 and cast to ``dtype`` (torch's default float32). MindSpore is
imported here at the top: GRAPH_MODE compiles these bodies and allows no import statement in them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import mindspore
from mindspore import ops

__all__ = ["cosine_window", "exponential_window", "gaussian_window", "general_cosine_window"]


def _samples(m: int, start: float, step: float) -> Any:
    """``start + i * step`` for i in range(m), float64 (torch's linspace over the same points)."""
    return ops.arange(m, dtype=mindspore.float64) * step + start


def _finish(values: Any, dtype: Any) -> Any:
    return values.astype(dtype if dtype is not None else mindspore.float32)


def _empty_or_ones(m: int, dtype: Any) -> Any:
    """Windows of length 0 or 1: torch returns an empty tensor or ``[1.]`` before any formula."""
    return _finish(ops.ones((m,)), dtype)


def _check_length(m: int) -> None:
    if m < 0:
        raise ValueError(f"window length M must be non-negative, got {m}")


def cosine_window(M: int, *, sym: bool = True, dtype: Any = None) -> Any:
    """torch.signal.windows.cosine: sin(pi * (n + 0.5) / M)."""
    _check_length(M)
    if M == 0:
        return _empty_or_ones(0, dtype)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return _finish(ops.sin(_samples(M, 0.5 * step, step)), dtype)


def exponential_window(
    M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype: Any = None
) -> Any:
    """torch.signal.windows.exponential: exp(-|n - center| / tau)."""
    _check_length(M)
    if tau <= 0:
        raise ValueError(f"tau must be positive, got {tau}")
    if sym and center is not None:
        raise ValueError("center must be None for symmetric windows")
    if M == 0:
        return _empty_or_ones(0, dtype)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    return _finish(ops.exp(-ops.abs(_samples(M, -center / tau, 1.0 / tau))), dtype)


def gaussian_window(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None) -> Any:
    """torch.signal.windows.gaussian: exp(-((n - (M - 1) / 2) / std)**2 / 2)."""
    _check_length(M)
    if std <= 0:
        raise ValueError(f"std must be positive, got {std}")
    if M == 0:
        return _empty_or_ones(0, dtype)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    scale = 1 / (std * math.sqrt(2))
    k = _samples(M, start * scale, scale)
    return _finish(ops.exp(-(k**2)), dtype)


def general_cosine_window(M: int, *, a: Sequence[float], sym: bool = True, dtype: Any = None) -> Any:
    """torch.signal.windows.general_cosine: sum_i (-1)**i * a[i] * cos(2 * pi * i * n / (M - 1))."""
    _check_length(M)
    if M <= 1:
        return _empty_or_ones(M, dtype)
    k = _samples(M, 0.0, 2 * math.pi / (M if not sym else M - 1))
    total = ops.zeros_like(k)
    for i, w in enumerate(a):
        total = total + (-1) ** i * w * ops.cos(i * k)
    return _finish(total, dtype)
