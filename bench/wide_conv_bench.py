"""Where a wide conv net's MindSpore step goes on CPU (issue 22, class 12: the DCGAN/WGAN tutorial scripts whose
MindSpore side took past 900 s where torch took 1-2 minutes): per layer of the DCGAN (64x64, ngf = ndf = 64),
torch's forward and forward+backward against MindSpore's (PyNative, value_and_grad over the layer), and
MindSpore's first call apart (compile, shape inference) from the later ones (kernels).

    .venv/bin/python bench/wide_conv_bench.py [--batch 16] [--reps 2] [--layers convT2 conv3]

Measured on the shared 2-core machine (load average about 30, batch 16, 2 torch threads, seconds per call):

    layer                 torch fwd  fwd+bwd | MindSpore fwd  fwd+bwd  first call
    convT 100->512 1->4      0.30    0.60    |      0.96      1.00      1.88
    convT 512->256 4->8      0.54    1.33    |     18.06     19.91     21.86
    convT 256->128 8->16     0.37    1.12    |     23.47     26.65     27.95
    convT 128->64 16->32     0.48    1.20    |     21.11     20.01     18.15
    convT 64->3 32->64       0.24    0.80    |      2.46      2.75      3.51
    conv 3->64 64->32        0.20    0.54    |      3.83      7.08      5.24

The first call costs what the later ones do: the time is MindSpore's CPU convolution kernels, not
compilation and not compare-train's harness (the layers run bare here). ``--im2col`` times one convolution of
the generator's shape (16x256x19x19 by 128x256x4x4) as MindSpore's conv2d (148 s measured), as unfold +
matmul in MindSpore (2.7 s + 1.1 s) and in torch (0.4 s): MindSpore's own matmul is ~40x faster than its conv
kernel for this shape, a lead for a runtime convolution, not taken yet.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

LAYERS = {
    # name: (input shape after the batch, torch constructor, MindSpore constructor)
    "convT1": ((100, 1, 1), "ConvTranspose2d(100, 512, 4, 1, 0, bias=False)", (100, 512, 4, 1, 0)),
    "convT2": ((512, 4, 4), "ConvTranspose2d(512, 256, 4, 2, 1, bias=False)", (512, 256, 4, 2, 1)),
    "convT3": ((256, 8, 8), "ConvTranspose2d(256, 128, 4, 2, 1, bias=False)", (256, 128, 4, 2, 1)),
    "convT4": ((128, 16, 16), "ConvTranspose2d(128, 64, 4, 2, 1, bias=False)", (128, 64, 4, 2, 1)),
    "convT5": ((64, 32, 32), "ConvTranspose2d(64, 3, 4, 2, 1, bias=False)", (64, 3, 4, 2, 1)),
    "conv1": ((3, 64, 64), "Conv2d(3, 64, 4, 2, 1, bias=False)", (3, 64, 4, 2, 1)),
    "conv2": ((64, 32, 32), "Conv2d(64, 128, 4, 2, 1, bias=False)", (64, 128, 4, 2, 1)),
    "conv3": ((128, 16, 16), "Conv2d(128, 256, 4, 2, 1, bias=False)", (128, 256, 4, 2, 1)),
    "conv4": ((256, 8, 8), "Conv2d(256, 512, 4, 2, 1, bias=False)", (256, 512, 4, 2, 1)),
}


def _clock(fn, reps: int) -> float:
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps


def torch_layer(ctor: str, shape: tuple, reps: int) -> tuple[float, float]:
    import torch

    layer = eval(f"torch.nn.{ctor}")  # the table's own constructor text
    x = torch.randn(*shape)

    def fwd():
        with torch.no_grad():
            layer(x)

    def both():
        layer(x).sum().backward()

    fwd(), both()
    return _clock(fwd, reps), _clock(both, reps)


def ms_layer(name: str, args: tuple, shape: tuple, reps: int) -> tuple[float, float, float]:
    import mindspore as ms
    from mindspore import nn

    cin, cout, k, s, p = args
    cls = nn.Conv2dTranspose if name.startswith("convT") else nn.Conv2d
    layer = cls(cin, cout, k, s, pad_mode="pad", padding=p, has_bias=False)
    x = ms.Tensor(np.random.randn(*shape).astype(np.float32))
    grad = ms.value_and_grad(lambda x: layer(x).sum(), None, layer.trainable_params())
    start = time.perf_counter()
    grad(x)[0].asnumpy()
    first = time.perf_counter() - start
    layer(x).asnumpy()
    return _clock(lambda: layer(x).asnumpy(), reps), _clock(lambda: grad(x)[0].asnumpy(), reps), first


def im2col(reps: int) -> None:
    import mindspore as ms
    import torch
    from mindspore import ops

    x = np.random.randn(16, 256, 19, 19).astype(np.float32)
    w = np.random.randn(128, 256, 4, 4).astype(np.float32)
    xm, wm = ms.Tensor(x), ms.Tensor(w)
    print(f"mindspore conv2d        {_clock(lambda: ops.conv2d(xm, wm).asnumpy(), reps):8.3f} s")
    cols = ops.unfold(xm, 4)
    print(f"mindspore unfold        {_clock(lambda: ops.unfold(xm, 4).asnumpy(), reps):8.3f} s")
    flat = wm.reshape(128, -1)
    print(f"mindspore matmul        {_clock(lambda: ops.matmul(flat, cols).asnumpy(), reps):8.3f} s")
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    print(f"torch conv2d            {_clock(lambda: torch.nn.functional.conv2d(xt, wt), reps):8.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--layers", nargs="*", default=list(LAYERS))
    ap.add_argument("--im2col", action="store_true")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(2)
    if a.im2col:
        im2col(a.reps)
        return
    print(f"batch {a.batch}, seconds per call")
    for name in a.layers:
        shape, ctor, args = LAYERS[name]
        full = (a.batch, *shape)
        tf, tb = torch_layer(ctor, full, a.reps)
        mf, mb, first = ms_layer(name, args, full, a.reps)
        print(
            f"{name:8s} torch fwd {tf:7.3f} fwd+bwd {tb:7.3f} | mindspore fwd {mf:7.3f} fwd+bwd {mb:7.3f} "
            f"first {first:7.3f} | x{mb / tb:5.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
