"""``torch2ms convert --cpu-fast-conv``: torch's Conv2d and ConvTranspose1d/2d/3d become the runtime's.

By default they convert to MindSpore's own layers (``nn.Conv2d``, ``nn.Conv2dTranspose``...): idiomatic
code, and the layers Ascend runs. With the option they convert to ``torch2ms.runtime.Conv2d`` /
``Conv1dTranspose`` / ``Conv2dTranspose`` / ``Conv3dTranspose`` (``runtime/convolution.py``): the same
Cells (arguments, parameters and their names), computed on CPU as im2col/col2im + MatMul because
MindSpore 2.10's CPU convolution kernels run 10-100x slower than torch's (bench/conv_transpose_bench.py);
on GPU and Ascend they run MindSpore's forward unchanged.
"""

from __future__ import annotations

import dataclasses
import functools

from ..kb import KB

__all__ = ["FAST_CONV", "fast_conv_kb"]

FAST_CONV = {
    "torch.nn.Conv2d": "torch2ms.runtime.Conv2d",
    "torch.nn.ConvTranspose1d": "torch2ms.runtime.Conv1dTranspose",
    "torch.nn.ConvTranspose2d": "torch2ms.runtime.Conv2dTranspose",
    "torch.nn.ConvTranspose3d": "torch2ms.runtime.Conv3dTranspose",
}


@functools.cache
def fast_conv_kb(kb: KB) -> KB:
    """``kb`` with the convolution entries of ``FAST_CONV`` mapped to the runtime's layers."""
    return KB([dataclasses.replace(e, ms=FAST_CONV[e.torch]) if e.torch in FAST_CONV else e for e in kb])
