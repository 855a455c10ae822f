"""torch.nn layers built where they are used (issue 22, class 10): ``nn.Linear(d, d)(x)`` inside forward.

torch builds such a layer on every call, initialises it afresh from its global random stream and never
trains it (no optimizer holds its parameters). A MindSpore Cell built inside ``construct`` fails to compile
("its name 'weight' already exists") or, run eagerly, draws its weights from MindSpore's own initialisers.
These functions take torch's constructor arguments and return the layer as a function of its input: the
weights drawn as torch draws them (kaiming-uniform with a = sqrt(5) and a uniform bias for Linear and Conv,
a standard normal for Embedding, ones and zeros for LayerNorm) with ``ops.rand`` / ``ops.randn``, so they
compile in GRAPH_MODE and are new at every call in both modes, as torch's are.
Needs MindSpore only (converted projects carry this module as it is).
"""

from __future__ import annotations

import math
from typing import Any

import mindspore as ms
from mindspore import ops

__all__ = ["fresh_conv1d", "fresh_conv2d", "fresh_embedding", "fresh_layer_norm", "fresh_linear"]


def _uniform(shape: tuple, bound: float) -> Any:
    """U(-bound, bound), drawn as torch's ``uniform_`` draws it: a uniform in [0, 1) scaled in float64, then
    rounded to float32 once."""
    return (ops.rand(*shape).astype(ms.float64) * (2 * bound) - bound).astype(ms.float32)


def _bound(fan_in: int) -> float:
    """kaiming_uniform_(a=sqrt(5)) and the default bias: both U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    return 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0


def fresh_linear(in_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> Any:
    """``nn.Linear(in, out, bias)`` built where it is called: ``y = x @ W.T + b``, W and b drawn now."""
    bound = _bound(in_features)
    weight = _uniform((out_features, in_features), bound)
    b = _uniform((out_features,), bound) if bias else None

    def linear(x: Any) -> Any:
        y = ops.matmul(x, weight.T)
        return y if b is None else y + b

    return linear


def _conv_parts(in_channels: int, out_channels: int, kernel: tuple, groups: int, bias: bool) -> tuple:
    fan_in = in_channels // groups
    for k in kernel:
        fan_in *= k
    bound = _bound(fan_in)
    weight = _uniform((out_channels, in_channels // groups, *kernel), bound)
    b = _uniform((out_channels,), bound) if bias else None
    return weight, b


def _pads(padding: Any, n: int) -> tuple:
    """torch's padding (an int, a tuple per dimension, 'same' or 'valid') as (pad_mode, padding)."""
    if isinstance(padding, str):
        return padding, 0
    if isinstance(padding, int):
        return "pad", padding
    pads: tuple = ()
    for p in padding[:n]:
        pads = (*pads, p, p)
    return "pad", pads


def fresh_conv2d(
    in_channels: int,
    out_channels: int,
    kernel_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    bias: bool = True,
    padding_mode: str = "zeros",
    device: Any = None,
    dtype: Any = None,
) -> Any:
    """``nn.Conv2d(...)`` built where it is called (zero padding)."""
    kernel = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    weight, b = _conv_parts(in_channels, out_channels, kernel, groups, bias)
    mode, pads = _pads(padding, 2)

    def conv2d(x: Any) -> Any:
        y = ops.conv2d(x, weight, None, stride, mode, pads, dilation, groups)
        return y if b is None else y + b.reshape(1, -1, 1, 1)

    return conv2d


def fresh_conv1d(
    in_channels: int,
    out_channels: int,
    kernel_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    bias: bool = True,
    padding_mode: str = "zeros",
    device: Any = None,
    dtype: Any = None,
) -> Any:
    """``nn.Conv1d(...)`` built where it is called (zero padding)."""
    kernel = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
    weight, b = _conv_parts(in_channels, out_channels, kernel, groups, bias)
    mode, pads = _pads(padding, 1)
    pads = pads[0] if isinstance(pads, tuple) else pads
    s = stride if isinstance(stride, int) else stride[0]
    d = dilation if isinstance(dilation, int) else dilation[0]

    def conv1d(x: Any) -> Any:
        y = ops.conv1d(x, weight, None, s, mode, pads, d, groups)
        return y if b is None else y + b.reshape(1, -1, 1)

    return conv1d


def fresh_embedding(
    num_embeddings: int,
    embedding_dim: int,
    padding_idx: Any = None,
    max_norm: Any = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
    _weight: Any = None,
    _freeze: bool = False,
    device: Any = None,
    dtype: Any = None,
) -> Any:
    """``nn.Embedding(n, d, padding_idx)`` built where it is called: a standard normal table (the padding row
    zero), looked up."""
    table = ops.randn(num_embeddings, embedding_dim)
    if padding_idx is not None:
        row = padding_idx if padding_idx >= 0 else padding_idx + num_embeddings
        keep = (ops.arange(0, num_embeddings) != row).astype(table.dtype).reshape(-1, 1)
        table = table * keep

    def embedding(x: Any) -> Any:
        return ops.gather(table, x, 0)

    return embedding


def fresh_layer_norm(
    normalized_shape: Any,
    eps: float = 1e-5,
    elementwise_affine: bool = True,
    bias: bool = True,
    device: Any = None,
    dtype: Any = None,
) -> Any:
    """``nn.LayerNorm(shape)`` built where it is called: its weight is ones and its bias zeros, so it
    normalises over the last dimensions and nothing else."""
    n = 1 if isinstance(normalized_shape, int) else len(normalized_shape)

    def layer_norm(x: Any) -> Any:
        axes = tuple(range(x.ndim - n, x.ndim))
        mean = x.mean(axis=axes, keep_dims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keep_dims=True)
        return (x - mean) / ops.sqrt(var + eps)

    return layer_norm
