"""torch.fft's Hermitian transforms (hfft, ihfft and their 2-D / n-D forms) through the real ones.

MindSpore 2.10's CPU kernels of ``ops.hfft/ihfft/hfft2/ihfft2/hfftn/ihfftn`` give torch's values on
the first call in a process and other ones on the next, alternating (the second hfft is torch's hfft of
the conjugate input; the second ihfft, the conjugate of torch's), for fresh input tensors too. The real
transforms (``ops.rfft/irfft`` and their 2-D / n-D forms) give the same values on every call, and:

    hfft(x, n, dim, norm)  = irfft(conj(x), n, dim, norm')
    ihfft(x, n, dim, norm) = conj(rfft(x, n, dim, norm'))

with norm' the other direction's scaling ("backward" <-> "forward", None is "backward"; "ortho" stays).
MindSpore is imported here at the top: GRAPH_MODE compiles these bodies and allows no import in them.
"""

from __future__ import annotations

from typing import Any

from mindspore import ops

__all__ = ["hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]


def _swapped(norm: Any) -> Any:
    """The scaling of the opposite transform: torch's hfft scales as irfft does with the other norm."""
    if norm is None or norm == "backward":
        return "forward"
    if norm == "forward":
        return "backward"
    return norm


def hfft(input: Any, n: Any = None, dim: int = -1, norm: Any = None) -> Any:
    """torch.fft.hfft: the real signal of a Hermitian half-spectrum (``ops.irfft`` of the conjugate)."""
    return ops.irfft(ops.conj(input), n, dim, _swapped(norm))


def ihfft(input: Any, n: Any = None, dim: int = -1, norm: Any = None) -> Any:
    """torch.fft.ihfft: the Hermitian half-spectrum of a real signal (conjugate of ``ops.rfft``)."""
    return ops.conj(ops.rfft(input, n, dim, _swapped(norm)))


def hfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: Any = None) -> Any:
    """torch.fft.hfft2 through ``ops.irfft2`` of the conjugate."""
    return ops.irfft2(ops.conj(input), s, dim, _swapped(norm))


def ihfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: Any = None) -> Any:
    """torch.fft.ihfft2 as the conjugate of ``ops.rfft2``."""
    return ops.conj(ops.rfft2(input, s, dim, _swapped(norm)))


def hfftn(input: Any, s: Any = None, dim: Any = None, norm: Any = None) -> Any:
    """torch.fft.hfftn through ``ops.irfftn`` of the conjugate."""
    return ops.irfftn(ops.conj(input), s, dim, _swapped(norm))


def ihfftn(input: Any, s: Any = None, dim: Any = None, norm: Any = None) -> Any:
    """torch.fft.ihfftn as the conjugate of ``ops.rfftn``."""
    return ops.conj(ops.rfftn(input, s, dim, _swapped(norm)))
