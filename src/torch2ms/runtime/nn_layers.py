"""torch.nn layers MindSpore 2.10 has no Cell for, as Cells over mindspore.ops that take torch's arguments.

Dropout2d/dropout2d (torch drops whole (N, C) slices of an input of any rank >= 2; MindSpore's
Dropout2D takes 4-D only), Unfold/Fold (ops.unfold/ops.fold run on CPU; mint.nn's Im2ColExt/Col2ImExt kernels do not, and
nn.Unfold is TF's extract_image_patches), RMSNorm (ops.rms_norm has no CPU kernel), CosineSimilarity
(nn.CosineSimilarity is a metric), PairwiseDistance and the circular pads. Parameter names are torch's.
Needs MindSpore only (converted projects carry this module as it is).
"""

from __future__ import annotations

import math
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import nn, ops

__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "CosineSimilarity",
    "Dropout2d",
    "Fold",
    "LayerNorm",
    "LogSoftmax",
    "PairwiseDistance",
    "RMSNorm",
    "Softmax",
    "Softmin",
    "Unfold",
    "dropout2d",
]


class Unfold(nn.Cell):
    """torch.nn.Unfold: sliding blocks of a (N, C, H, W) input as columns (N, C * kh * kw, L)."""

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def construct(self, x: Any) -> Any:
        return ops.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(nn.Cell):
    """torch.nn.Fold: columns (N, C * kh * kw, L) summed back into a (N, C, H, W) output."""

    def __init__(
        self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
    ) -> None:
        super().__init__()
        size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
        self.output_size = ms.Tensor(np.array(size, np.int32))
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def construct(self, x: Any) -> Any:
        return ops.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)


class RMSNorm(nn.Cell):
    """torch.nn.RMSNorm: x / sqrt(mean(x², normalized dims) + eps) * weight; eps=None is the dtype's eps."""

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.axes = tuple(range(-len(shape), 0))
        self.weight = ms.Parameter(ops.ones(shape, ms.float32), name="weight") if elementwise_affine else None

    def construct(self, x: Any) -> Any:
        eps = self.eps if self.eps is not None else float(np.finfo(np.float32).eps)
        out = x * ops.rsqrt((x * x).mean(self.axes, keep_dims=True) + eps)
        return out * self.weight if self.weight is not None else out


class LayerNorm(nn.LayerNorm):
    """torch.nn.LayerNorm(elementwise_affine=False | bias=False): mindspore.nn.LayerNorm without the parameters
    torch's layer lacks (no gamma/beta, or no beta), so the parameters (and a converted checkpoint) match torch's
    one to one; the missing ones act as constant ones/zeros. A subclass: ``isinstance(m, nn.LayerNorm)`` holds."""

    def __init__(
        self,
        normalized_shape: Any,
        begin_norm_axis: int = -1,
        begin_params_axis: int = -1,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        epsilon: float = 1e-7,
        dtype: Any = ms.float32,
        elementwise_affine: bool = True,
        bias: bool = True,
    ) -> None:
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        super().__init__(shape, begin_norm_axis, begin_params_axis, gamma_init, beta_init, epsilon, dtype)
        if not elementwise_affine:
            del self._params["gamma"]
            self.gamma = None
        if not (elementwise_affine and bias):
            del self._params["beta"]
            self.beta = None
        self._ones = ms.Tensor(np.ones(shape, np.float32))
        self._zeros = ms.Tensor(np.zeros(shape, np.float32))

    def construct(self, input_x: Any) -> Any:
        gamma = self._ones if self.gamma is None else self.gamma
        beta = self._zeros if self.beta is None else self.beta
        return self.layer_norm(input_x, gamma.astype(input_x.dtype), beta.astype(input_x.dtype))[0]


def _implicit_dim(dim: Any, ndim: int) -> int:
    """torch's legacy softmax dim when none is given: 0 for 0-D, 1-D and 3-D input, else 1."""
    if dim is not None:
        return int(dim)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(nn.Cell):
    """torch.nn.Softmax(dim=None): the implicit dim of torch (MindSpore's nn.Softmax defaults to -1)."""

    def __init__(self, dim: Any = None) -> None:
        super().__init__()
        self.dim = dim

    def construct(self, x: Any) -> Any:
        return ops.softmax(x, _implicit_dim(self.dim, x.ndim))


class LogSoftmax(Softmax):
    """torch.nn.LogSoftmax(dim=None): the implicit dim of torch."""

    def construct(self, x: Any) -> Any:
        return ops.log_softmax(x, _implicit_dim(self.dim, x.ndim))


class Softmin(Softmax):
    """torch.nn.Softmin(dim=None): the implicit dim of torch."""

    def construct(self, x: Any) -> Any:
        return ops.softmax(-x, _implicit_dim(self.dim, x.ndim))


class CosineSimilarity(nn.Cell):
    """torch.nn.CosineSimilarity(dim, eps) through ops.cosine_similarity."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def construct(self, x1: Any, x2: Any) -> Any:
        return ops.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(nn.Cell):
    """torch.nn.PairwiseDistance: the p-norm of x1 - x2 + eps over the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = float(p), eps, keepdim

    def construct(self, x1: Any, x2: Any) -> Any:
        diff = ops.abs(x1 - x2 + self.eps)
        if self.norm == math.inf:
            return diff.max(axis=-1, keepdims=self.keepdim)
        if self.norm == 0:
            return (diff != 0).astype(diff.dtype).sum(-1, keepdims=self.keepdim)
        return (diff**self.norm).sum(-1, keepdims=self.keepdim) ** (1.0 / self.norm)


class _CircularPad(nn.Cell):
    dims = 1

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = (padding,) * (2 * self.dims) if isinstance(padding, int) else tuple(padding)

    def construct(self, x: Any) -> Any:
        return ops.pad(x, self.padding, mode="circular")


class CircularPad1d(_CircularPad):
    """torch.nn.CircularPad1d: ops.pad(mode='circular') on the last dim."""

    dims = 1


class CircularPad2d(_CircularPad):
    """torch.nn.CircularPad2d: ops.pad(mode='circular') on the last two dims."""

    dims = 2


class CircularPad3d(_CircularPad):
    """torch.nn.CircularPad3d: ops.pad(mode='circular') on the last three dims."""

    dims = 3


def dropout2d(input: Any, p: float = 0.5, training: bool = True) -> Any:
    """torch.nn.functional.dropout2d: torch's feature dropout, one keep/drop draw per (n, c) whatever
    the rank (2-D: per element; 3-D: (N, C, L) channels, as torch 2.x does; 5-D: (N, C) volumes).
    The trailing dims are folded into one so MindSpore's 4-D-only ops.dropout2d does the draw."""
    if not training or p == 0.0:
        return input
    shape = input.shape
    folded = input.reshape(shape[0], shape[1], -1, 1)
    return ops.dropout2d(folded, p, True).reshape(shape)


class Dropout2d(nn.Dropout2d):
    """torch.nn.Dropout2d on inputs of any rank >= 2 (see dropout2d); identity in eval mode. A subclass of
    MindSpore's, so code that finds dropout layers by class (isinstance, cells_and_names) still finds it."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__(p=p)
        self.p = p

    def construct(self, x: Any) -> Any:
        return dropout2d(x, self.p, self.training)
