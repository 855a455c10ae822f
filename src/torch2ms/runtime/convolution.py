"""Convolutions that run fast on CPU: MindSpore's own Cells, with a different forward there.

MindSpore 2.10's CPU kernels for Conv2D and Conv2DTranspose (= Conv2DBackpropInput) run at tens of
MFLOP/s at the channel counts of a DCGAN or a wide CNN, 10-200x slower than torch, while its MatMul,
im2col (``ops.unfold``) and col2im (``ops.fold``) kernels are fast (bench/conv_transpose_bench.py;
issue 22 class 12). On CPU these Cells compute, for one group and 2-D (1-D run as 2-D):

- ``Conv2d``: im2col of the (padded) input, then one MatMul with the weight;
- ``Conv*dTranspose``: one MatMul of the weight's transpose with the input, summed into the output by
  col2im, then cut to MindSpore's length (the gradients are a MatMul and an im2col: fast kernels too).

Other cases (groups, 3-D) compute the transposed convolution as a stride-1 convolution of the
zero-inserted input (``stride - 1`` zeros between the samples), padded by ``dilation * (k - 1) - padding``
on each side (plus ``output_padding`` after), with the kernel flipped and its in/out channels swapped
per group; a grouped Conv2d runs MindSpore's forward. Elsewhere than CPU they run MindSpore's forward.

They subclass ``nn.Conv2d`` / ``nn.Conv1dTranspose`` / ``nn.Conv2dTranspose`` / ``nn.Conv3dTranspose`` with the same
constructor, so parameters, their names and shapes, initialisation, checkpoints and ``isinstance``
checks are MindSpore's. The output is MindSpore's for every ``pad_mode`` (and torch's where the converter
gave torch's padding); ``output_padding`` is applied as torch does (MindSpore's own is wrong on CPU).
Needs MindSpore only (converted projects carry this module as it is).
"""

from __future__ import annotations

from typing import Any

import mindspore as ms
from mindspore import nn, ops

__all__ = ["Conv1dTranspose", "Conv2d", "Conv2dTranspose", "Conv3dTranspose"]


def _on_cpu() -> bool:
    return str(ms.get_context("device_target")).upper() == "CPU"


def _tuple(value: Any, n: int) -> tuple[int, ...]:
    return tuple(int(v) for v in value) if isinstance(value, (tuple, list)) else (int(value),) * n


def _plan(
    pad_mode: str,
    padding: tuple[int, ...],
    out_pad: tuple[int, ...],
    k: tuple[int, ...],
    s: tuple[int, ...],
    d: tuple[int, ...],
) -> tuple[tuple[int, int, int], ...]:
    """Per spatial dim, (before, after_extra, stride) where the equivalent convolution's input is the
    zero-inserted input padded by ``eff_k - 1 - before`` in front and cut/extended to give MindSpore's length.

    ``before`` = rows the transposed output drops in front; ``after_extra`` = output length minus
    ``(in - 1) * stride + eff_k - before`` (rows added or dropped at the end), fixed by the layer's arguments."""
    plan = []
    for i, (kk, ss, dd) in enumerate(zip(k, s, d)):
        eff = dd * (kk - 1) + 1
        if pad_mode == "pad":
            before, after = padding[2 * i], padding[2 * i + 1]
            plan.append((before, out_pad[i] - after, ss))
        elif pad_mode == "same":  # MindSpore's length in * stride, cropped as TF's 'same' does
            need = max(0, eff - ss)
            plan.append((need // 2, ss - eff + need, ss))
        else:  # valid: the whole result, or in * stride when the kernel is shorter than the stride
            plan.append((0, max(0, ss - eff), ss))
    return tuple(plan)


class _FastForward:
    """The CPU forward shared by the three Cells (``self._dims`` spatial dims, 1-D run as 2-D)."""

    _dims = 2
    # set by the MindSpore Cell this mixes into (declared for the type checker only)
    kernel_size: Any
    stride: Any
    dilation: Any
    padding: Any
    pad_mode: str
    group: int
    out_channels: int
    has_bias: bool
    bias: Any
    bias_add: Any

    def _setup_fast(self, out_pad: Any) -> None:
        dims = 3 if self._dims == 3 else 2
        k = _tuple(self.kernel_size, dims)
        s = _tuple(self.stride, dims)
        d = _tuple(self.dilation, dims)
        pad = self.padding
        pad_t = (pad,) * (2 * dims) if isinstance(pad, int) else tuple(int(p) for p in pad)
        if self._dims == 1:  # Conv1dTranspose keeps a height-1 kernel: no padding on that axis
            pad_t = (0, 0) + pad_t[2:] if len(pad_t) == 4 else (0, 0, pad_t[0], pad_t[0])
        op = _tuple(out_pad, dims) if self._dims != 1 else (0, 0)
        self._fast_plan = _plan(self.pad_mode, pad_t, op, k, s, d)
        self._fast_k = k
        self._fast_dil = d
        self._fast_eff = tuple(dd * (kk - 1) + 1 for kk, dd in zip(k, d))
        g = int(self.group)
        conv_cls = ops.Conv3D if dims == 3 else ops.Conv2D
        self._fast_conv = conv_cls(
            out_channel=int(self.out_channels), kernel_size=k, mode=1, pad_mode="valid", stride=1, dilation=d, group=g
        )
        self._fast_flip = ops.ReverseV2(axis=list(range(2, 2 + dims)))
        self._fast = _on_cpu()

    def _kernel(self, weight: Any) -> Any:
        """(in, out/g, *k) → (out, in/g, *k) per group, flipped: the equivalent convolution's kernel."""
        g = self.group
        shape = weight.shape
        cin, coutg = shape[0], shape[1]
        w = weight.reshape((g, cin // g, coutg) + tuple(shape[2:]))
        w = ops.swapaxes(w, 1, 2)
        w = w.reshape((coutg * g, cin // g) + tuple(shape[2:]))
        return self._fast_flip(w)

    def _spread(self, x: Any, axis: int, plan: tuple[int, int, int], eff: int) -> Any:
        """Zero-insert ``x`` along ``axis`` and pad/crop it for the stride-1 convolution."""
        before, after_extra, s = plan
        n = x.shape[axis]
        if s > 1:  # (.., n, ..) → (.., n, 1, ..) → pad s - 1 zeros after each sample → (.., n * s, ..)
            shape = x.shape
            x = ops.expand_dims(x, axis + 1)
            x = ops.pad(x, (0, 0) * (x.ndim - axis - 2) + (0, s - 1))
            x = x.reshape(shape[:axis] + (n * s,) + shape[axis + 1 :])
        full = (n - 1) * s + 1  # the zero-inserted length; x may hold s - 1 trailing zeros more
        lo = eff - 1 - before
        hi = eff - 1 + after_extra - (x.shape[axis] - full)
        if lo < 0:
            x = ops.narrow(x, axis, -lo, x.shape[axis] + lo)
            lo = 0
        if hi < 0:
            x = ops.narrow(x, axis, 0, x.shape[axis] + hi)
            hi = 0
        if lo or hi:
            x = ops.pad(x, (0, 0) * (x.ndim - axis - 1) + (lo, hi))
        return x

    def _fast_forward(self, x: Any, weight: Any) -> Any:
        if len(self._fast_plan) == 2 and self.group == 1:
            return self._matmul_forward(x, weight)
        first = x.ndim - len(self._fast_plan)
        for i in range(len(self._fast_plan)):
            x = self._spread(x, first + i, self._fast_plan[i], self._fast_eff[i])
        out = self._fast_conv(x, self._kernel(weight))
        if self.has_bias:
            out = self.bias_add(out, self.bias)
        return out

    def _matmul_forward(self, x: Any, weight: Any) -> Any:
        """2-D, one group: columns = W^T @ x (one MatMul), summed into the output by col2im (fold),
        then cut to MindSpore's length (the gradients are a MatMul and an im2col: fast kernels too)."""
        n, cin, h, w = x.shape
        kh, kw = self._fast_k
        cout = weight.shape[1]
        wm = ops.transpose(weight.reshape((cin, cout * kh * kw)), (1, 0))
        xm = ops.transpose(x.reshape((n, cin, h * w)), (1, 0, 2)).reshape((cin, n * h * w))
        cols = ops.transpose(ops.matmul(wm, xm).reshape((cout * kh * kw, n, h * w)), (1, 0, 2))
        (bh, eh, sh), (bw, ew, sw) = self._fast_plan
        hf = (h - 1) * sh + self._fast_eff[0]
        wf = (w - 1) * sw + self._fast_eff[1]
        size = ms.Tensor((hf, wf), ms.int32)
        out = ops.fold(cols, size, self._fast_k, self._fast_dil, 0, (sh, sw))
        out = self._cut(out, 2, bh, hf + eh)
        out = self._cut(out, 3, bw, wf + ew)
        if self.has_bias:
            out = self.bias_add(out, self.bias)
        return out

    def _cut(self, x: Any, axis: int, start: int, stop: int) -> Any:
        """``x[start:stop]`` along ``axis``, zeros where ``stop`` runs past the end."""
        n = x.shape[axis]
        if start > 0 or stop < n:
            x = ops.narrow(x, axis, start, min(stop, n) - start)
        if stop > n:
            x = ops.pad(x, (0, 0) * (x.ndim - axis - 1) + (0, stop - n))
        return x


class Conv2dTranspose(_FastForward, nn.Conv2dTranspose):
    """``nn.Conv2dTranspose`` (same arguments, parameters and names) computed as a convolution on CPU."""

    _dims = 2

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._setup_fast(self.output_padding)

    def construct(self, x: Any) -> Any:
        if self._fast:
            return self._fast_forward(x, self.weight)
        return super().construct(x)


class Conv1dTranspose(_FastForward, nn.Conv1dTranspose):
    """``nn.Conv1dTranspose`` (weight (in, out/g, 1, k)) computed as a height-1 2-D convolution on CPU."""

    _dims = 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._setup_fast(0)

    def construct(self, x: Any) -> Any:
        if self._fast:
            return ops.squeeze(self._fast_forward(ops.expand_dims(x, 2), self.weight), 2)
        return super().construct(x)


class Conv3dTranspose(_FastForward, nn.Conv3dTranspose):
    """``nn.Conv3dTranspose`` computed as a 3-D convolution on CPU (groups included)."""

    _dims = 3

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._setup_fast(self.output_padding)

    def construct(self, x: Any) -> Any:
        if self._fast:
            return self._fast_forward(x, self.weight)
        return super().construct(x)


class Conv2d(nn.Conv2d):
    """``nn.Conv2d`` (same arguments, parameters and names) computed on CPU as im2col + one MatMul."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fast = _on_cpu() and self.group == 1 and self.data_format == "NCHW"
        pad = self.padding
        self._pads = (pad,) * 4 if isinstance(pad, int) else tuple(int(p) for p in pad)
        k, d = self.kernel_size, self.dilation
        self._eff = tuple(int(d[i]) * (int(k[i]) - 1) + 1 for i in range(2))

    def _same_pads(self, h: int, w: int) -> tuple[int, int, int, int]:
        """MindSpore's (and TF's) 'same': output ceil(in / stride), the extra padding row at the end."""
        out: list[int] = []
        for size, s, eff in ((h, self.stride[0], self._eff[0]), (w, self.stride[1], self._eff[1])):
            need = max(0, ((size + s - 1) // s - 1) * s + eff - size)
            out += [need // 2, need - need // 2]
        return (out[0], out[1], out[2], out[3])

    def construct(self, x: Any) -> Any:
        if not self._fast:
            return super().construct(x)
        n = x.shape[0]
        if self.pad_mode == "same":
            top, bottom, left, right = self._same_pads(x.shape[2], x.shape[3])
        elif self.pad_mode == "pad":
            top, bottom, left, right = self._pads
        else:
            top, bottom, left, right = 0, 0, 0, 0
        if top or bottom or left or right:
            x = ops.pad(x, (left, right, top, bottom))
        h, w = x.shape[2], x.shape[3]
        ho = (h - self._eff[0]) // self.stride[0] + 1
        wo = (w - self._eff[1]) // self.stride[1] + 1
        cols = ops.unfold(x, self.kernel_size, self.dilation, 0, self.stride)  # (n, cin * kh * kw, ho * wo)
        kk = cols.shape[1]
        cols = ops.transpose(cols, (1, 0, 2)).reshape((kk, n * ho * wo))
        cout = self.weight.shape[0]
        out = ops.matmul(self.weight.reshape((cout, kk)), cols)
        out = ops.transpose(out.reshape((cout, n, ho * wo)), (1, 0, 2)).reshape((n, cout, ho, wo))
        if self.has_bias:
            out = self.bias_add(out, self.bias)
        return out
