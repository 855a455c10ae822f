"""Where a converted DCGAN step spends its time on CPU: per op, MindSpore against torch on the same shapes.

Issue 22 class 12: the kit's GAN scripts (al_dcgan, al_wgan, al_amp, tu_dcgan) time out on MindSpore where
torch takes 1-2 minutes. This bench times, for the DCGAN generator's transposed convolutions and the
discriminator's strided convolutions (features 64, 64x64 images):

- torch ``conv_transpose2d`` / ``conv2d``: forward, and forward + backward (input and weight gradients);
- MindSpore ``nn.Conv2dTranspose`` (the Conv2DTranspose = Conv2DBackpropInput kernel): the same two;
- the runtime's ``Conv2dTranspose`` (MatMul + col2im on CPU, torch2ms_runtime): the same two;
- MindSpore ``nn.Conv2d``, the runtime's ``Conv2d`` (im2col + MatMul) and ``nn.BatchNorm2d``: the same two;
- optionally (``--step``) one whole generator step, PyNative and ``ms.jit``, with the compile time apart.

Run: ``nice -n 10 .venv/bin/python bench/conv_transpose_bench.py --batch 16 [--step]``. Prints one line per op
with best-of-N seconds and the MindSpore/torch ratio; report the load average beside the numbers.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

# (name, Cin, Cout, k, stride, padding, input H) for the DCGAN generator (noise 100, features 64) and critic.
GEN = [
    ("gen1 100->1024 k4 s1 p0 1x1", 100, 1024, 4, 1, 0, 1),
    ("gen2 1024->512 k4 s2 p1 4x4", 1024, 512, 4, 2, 1, 4),
    ("gen3 512->256 k4 s2 p1 8x8", 512, 256, 4, 2, 1, 8),
    ("gen4 256->128 k4 s2 p1 16x16", 256, 128, 4, 2, 1, 16),
    ("gen5 128->1 k4 s2 p1 32x32", 128, 1, 4, 2, 1, 32),
]
DISC = [
    ("disc1 1->64 k4 s2 p1 64x64", 1, 64, 4, 2, 1, 64),
    ("disc2 64->128 k4 s2 p1 32x32", 64, 128, 4, 2, 1, 32),
    ("disc3 128->256 k4 s2 p1 16x16", 128, 256, 4, 2, 1, 16),
    ("disc4 256->512 k4 s2 p1 8x8", 256, 512, 4, 2, 1, 8),
]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def torch_times(kind: str, n: int, cin: int, cout: int, k: int, s: int, p: int, h: int, repeat: int):
    import torch

    torch.manual_seed(0)
    layer = (torch.nn.ConvTranspose2d if kind == "t" else torch.nn.Conv2d)(cin, cout, k, s, p, bias=False)
    x = torch.randn(n, cin, h, h, requires_grad=True)

    def fwd():
        with torch.no_grad():
            layer(x)

    def fwd_bwd():
        layer.zero_grad()
        x.grad = None
        layer(x).sum().backward()

    fwd_bwd()
    return best(fwd, repeat), best(fwd_bwd, repeat)


def ms_times(layer, n: int, cin: int, h: int, repeat: int):
    import mindspore as ms
    from mindspore import ops

    x = ms.Tensor(np.random.default_rng(0).standard_normal((n, cin, h, h)).astype(np.float32))
    grad = ms.grad(lambda inp: layer(inp).sum(), grad_position=0, weights=layer.trainable_params())

    def fwd():
        layer(x).asnumpy()

    def fwd_bwd():
        gx, gw = grad(x)
        gx.asnumpy()
        ops.stack([g.sum() for g in gw]).asnumpy() if gw else None

    fwd_bwd()
    return best(fwd, repeat), best(fwd_bwd, repeat)


def row(name: str, t: tuple[float, float], ref: tuple[float, float]) -> None:
    print(
        f"{name:44s} fwd {t[0]:8.4f}s ({t[0] / ref[0]:7.1f}x torch)   fwd+bwd {t[1]:8.4f}s ({t[1] / ref[1]:7.1f}x torch)",
        flush=True,
    )


def bench_ops(n: int, repeat: int, skip_native: bool) -> None:
    import mindspore as ms
    from mindspore import nn

    from torch2ms.runtime.convolution import Conv2d, Conv2dTranspose

    for name, cin, cout, k, s, p, h in GEN:
        ref = torch_times("t", n, cin, cout, k, s, p, h, repeat)
        row(f"torch  ConvTranspose2d {name}", ref, ref)
        pad = {"pad_mode": "pad", "padding": p} if p else {"pad_mode": "valid"}
        if not skip_native:
            native = nn.Conv2dTranspose(cin, cout, k, s, has_bias=False, **pad)
            row(f"ms     Conv2dTranspose {name}", ms_times(native, n, cin, h, repeat), ref)
        ours = Conv2dTranspose(cin, cout, k, s, has_bias=False, **pad)
        row(f"ms rt  ConvTranspose2d {name}", ms_times(ours, n, cin, h, repeat), ref)
    for name, cin, cout, k, s, p, h in DISC:
        ref = torch_times("c", n, cin, cout, k, s, p, h, repeat)
        row(f"torch  Conv2d {name}", ref, ref)
        conv = nn.Conv2d(cin, cout, k, s, pad_mode="pad", padding=p, has_bias=False)
        row(f"ms     Conv2d {name}", ms_times(conv, n, cin, h, repeat), ref)
        ours = Conv2d(cin, cout, k, s, pad_mode="pad", padding=p, has_bias=False)
        row(f"ms rt  Conv2d {name}", ms_times(ours, n, cin, h, repeat), ref)
    for c, h in ((1024, 4), (256, 16), (128, 32)):
        import torch

        bn_t = torch.nn.BatchNorm2d(c)
        xt = torch.randn(n, c, h, h, requires_grad=True)
        ref = (best(lambda b=bn_t, x=xt: b(x), repeat), best(lambda b=bn_t, x=xt: b(x).sum().backward(), repeat))
        row(f"torch  BatchNorm2d {c}x{h}x{h}", ref, ref)
        bn = nn.BatchNorm2d(c)
        bn.set_train(True)
        row(f"ms     BatchNorm2d {c}x{h}x{h}", ms_times(bn, n, c, h, repeat), ref)
    del ms


def bench_step(n: int, native: bool) -> None:
    """One DCGAN generator step (generator forward + loss + gradients), PyNative and compiled."""
    import mindspore as ms
    from mindspore import nn, ops

    from torch2ms.runtime.convolution import Conv2dTranspose

    def block(cin, cout, s, p):
        pad = {"pad_mode": "pad", "padding": p} if p else {"pad_mode": "valid"}
        cls = nn.Conv2dTranspose if native else Conv2dTranspose
        conv = cls(cin, cout, 4, s, has_bias=False, **pad)
        return [conv, nn.BatchNorm2d(cout), nn.ReLU()]

    gen = nn.SequentialCell(
        block(100, 1024, 1, 0) + block(1024, 512, 2, 1) + block(512, 256, 2, 1) + block(256, 128, 2, 1)
    )
    gen.set_train(True)
    z = ms.Tensor(np.random.default_rng(0).standard_normal((n, 100, 1, 1)).astype(np.float32))

    def loss_fn(zz):
        return gen(zz).square().mean()

    grad_fn = ms.value_and_grad(loss_fn, None, gen.trainable_params())
    label = "native Conv2dTranspose" if native else "runtime ConvTranspose2d"
    t = time.perf_counter()
    loss, grads = grad_fn(z)
    loss.asnumpy()
    print(f"step PyNative first call ({label}): {time.perf_counter() - t:.3f}s", flush=True)
    print(f"step PyNative ({label}): {best(lambda: grad_fn(z)[0].asnumpy(), 2):.3f}s", flush=True)
    jitted = ms.jit(grad_fn)
    t = time.perf_counter()
    jitted(z)[0].asnumpy()
    print(f"step jit first call = compile + run ({label}): {time.perf_counter() - t:.3f}s", flush=True)
    print(f"step jit ({label}): {best(lambda: jitted(z)[0].asnumpy(), 2):.3f}s", flush=True)
    del ops


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--step", action="store_true", help="also time one generator step, PyNative and jit")
    ap.add_argument("--skip-native", action="store_true", help="leave MindSpore's own Conv2dTranspose out")
    args = ap.parse_args()
    print(f"batch {args.batch}, load average {os.getloadavg()[0]:.2f}", flush=True)
    bench_ops(args.batch, args.repeat, args.skip_native)
    if args.step:
        bench_step(args.batch, native=False)
        if not args.skip_native:
            bench_step(args.batch, native=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
