"""torch.nn.utils helpers with no single MindSpore call: fusing BatchNorm into a conv / linear layer.

Needs MindSpore only (converted projects carry this module as it is).
"""

from __future__ import annotations

from typing import Any

__all__ = ["fuse_conv_bn_weights", "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(
    conv_w: Any, conv_b: Any, bn_rm: Any, bn_rv: Any, bn_eps: float, bn_w: Any, bn_b: Any, transpose: bool = False
) -> tuple[Any, Any]:
    """torch.nn.utils.fuse_conv_bn_weights: the conv weight and bias that fold an eval-mode BatchNorm in.

    Returns two Parameters, as torch. For a converted Conv2dTranspose pass transpose=True (its weight is
    (in, out, kh, kw), like torch's ConvTranspose).
    """
    import mindspore as ms
    from mindspore import ops

    conv_b = ops.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ops.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = ops.zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt = ops.rsqrt(bn_rv + bn_eps)
    shape = (1, -1) + (1,) * (conv_w.ndim - 2) if transpose else (-1, 1) + (1,) * (conv_w.ndim - 2)
    weight = (conv_w * (bn_w * rsqrt).reshape(shape)).astype(conv_w.dtype)
    bias = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).astype(conv_b.dtype)
    return ms.Parameter(weight, name="weight"), ms.Parameter(bias, name="bias")


def fuse_linear_bn_weights(
    linear_w: Any, linear_b: Any, bn_rm: Any, bn_rv: Any, bn_eps: float, bn_w: Any, bn_b: Any
) -> tuple[Any, Any]:
    """torch.nn.utils.fuse_linear_bn_weights: the Dense weight and bias that fold an eval-mode BatchNorm in."""
    import mindspore as ms
    from mindspore import ops

    linear_b = ops.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * ops.rsqrt(bn_rv + bn_eps)
    weight = (linear_w * scale.expand_dims(-1)).astype(linear_w.dtype)
    bias = ((linear_b - bn_rm) * scale + bn_b).astype(linear_b.dtype)
    return ms.Parameter(weight, name="weight"), ms.Parameter(bias, name="bias")
