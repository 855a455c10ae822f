"""MindSpore side of bench/realcode_bench.py: one pair (converted vs hand-written), timed interleaved.

python realcode_bench_ms.py resnet50|gpt CONVERTED_ROOT [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

BATCH = 8
GPT_SHAPE = {"vocab": 512, "block_size": 128, "n_layer": 6, "n_head": 6, "n_embd": 192}


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    out = fn()
    for leaf in out if isinstance(out, (tuple, list)) else [out]:
        if hasattr(leaf, "asnumpy"):
            leaf.asnumpy()  # wait for the result
    return time.perf_counter() - start


def _interleaved(calls: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Best seconds per call of each variant over ``repeat`` rounds, after one compiling call each."""
    for fn in calls.values():
        _timed(fn)
    best = {name: float("inf") for name in calls}
    for _ in range(repeat):
        for name, fn in calls.items():
            best[name] = min(best[name], _timed(fn))
    return best


def _copy_by_name(src, dst, renames: tuple[tuple[str, str], ...] = ()) -> int:
    """Give ``dst`` the parameters of ``src`` whose names (after ``renames``) and shapes match; returns how many."""
    import mindspore as ms

    theirs = {}
    for name, q in src.parameters_and_names():
        for old, new in renames:
            name = name.replace(old, new)
        theirs[name] = q
    n = 0
    for name, p in dst.parameters_and_names():
        q = theirs.get(name)
        if q is not None and q.shape == p.shape:
            p.set_data(ms.Tensor(q.asnumpy()))
            n += 1
    return n


def _train_step(net, loss_of: Callable | None = None):
    """One GRAPH_MODE training step: loss, gradients and SGD-momentum update in one compiled Cell."""
    from mindspore import nn

    if loss_of is None:
        loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    else:
        loss_net = loss_of(net)
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    step = nn.TrainOneStepCell(loss_net, opt)
    step.set_train(True)
    return step


# mindcv's names for torchvision's ResNet parameters where they differ
_MINDCV_RESNET = (("downsample.", "down_sample."), ("fc.", "classifier."))


def resnet50(root: Path, repeat: int) -> dict[str, float]:
    sys.modules["torch"] = None  # type: ignore[assignment]  # the converted model runs with MindSpore alone
    sys.path.insert(0, str(root))
    import mindspore as ms
    from mindcv.models import resnet50 as mindcv_resnet50
    from net import build  # the converted user script: torchvision_ms's resnet50

    ms.set_context(mode=ms.GRAPH_MODE)
    nets = {"converted": build(), "mindcv": mindcv_resnet50(num_classes=1000)}
    copied = _copy_by_name(nets["converted"], nets["mindcv"], _MINDCV_RESNET)
    rng = np.random.default_rng(0)
    x = ms.Tensor(rng.standard_normal((BATCH, 3, 224, 224)).astype(np.float32))
    y = ms.Tensor(rng.integers(0, 1000, BATCH).astype(np.int32))
    for net in nets.values():
        net.set_train(False)
    outs = {k: net(x).asnumpy() for k, net in nets.items()}
    err = float(np.abs(outs["converted"] - outs["mindcv"]).max() / np.abs(outs["converted"]).max())
    total = len(list(nets["mindcv"].get_parameters()))
    print(f"resnet50: {copied}/{total} parameters copied by name; same output to {err:.1e} (relative)")
    infer = _interleaved({k: (lambda n=n: n(x)) for k, n in nets.items()}, repeat)
    steps = {k: _train_step(n) for k, n in nets.items()}
    train = _interleaved({k: (lambda s=s: s(x, y)) for k, s in steps.items()}, repeat)
    return _report("resnet50 (batch 8, 224×224)", "mindcv", infer, train)


def gpt(root: Path, repeat: int) -> dict[str, float]:
    sys.modules["torch"] = None  # type: ignore[assignment]  # the converted GPT runs with MindSpore alone
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(Path(__file__).parent))
    import mindspore as ms
    from mindspore import nn
    from mingpt.model import GPT as ConvertedGPT
    from ms_gpt import GPT as HandGPT

    ms.set_context(mode=ms.GRAPH_MODE)
    cfg = ConvertedGPT.get_default_config()
    cfg.model_type = None
    cfg.n_layer, cfg.n_head, cfg.n_embd = GPT_SHAPE["n_layer"], GPT_SHAPE["n_head"], GPT_SHAPE["n_embd"]
    cfg.vocab_size, cfg.block_size = GPT_SHAPE["vocab"], GPT_SHAPE["block_size"]
    nets = {"converted": ConvertedGPT(cfg), "hand-written": HandGPT(**GPT_SHAPE)}
    copied = _copy_by_name(nets["converted"], nets["hand-written"])
    rng = np.random.default_rng(0)
    idx = ms.Tensor(rng.integers(0, GPT_SHAPE["vocab"], (BATCH, GPT_SHAPE["block_size"])).astype(np.int32))
    tgt = ms.Tensor(rng.integers(0, GPT_SHAPE["vocab"], (BATCH, GPT_SHAPE["block_size"])).astype(np.int32))
    for net in nets.values():
        net.set_train(False)
    outs = {k: net(idx, tgt)[0].asnumpy() for k, net in nets.items()}
    err = float(np.abs(outs["converted"] - outs["hand-written"]).max() / np.abs(outs["converted"]).max())
    total = len(list(nets["hand-written"].get_parameters()))
    print(f"gpt: {copied}/{total} parameters copied by name; same logits to {err:.1e} (relative)")
    infer = _interleaved({k: (lambda n=n: n(idx, tgt)) for k, n in nets.items()}, repeat)

    class LossOnly(nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def construct(self, a, b):
            return self.net(a, b)[1]

    steps = {k: _train_step(n, LossOnly) for k, n in nets.items()}
    train = _interleaved({k: (lambda s=s: s(idx, tgt)) for k, s in steps.items()}, repeat)
    shape = f"gpt {GPT_SHAPE['n_layer']} layers × {GPT_SHAPE['n_embd']} (batch 8 × {GPT_SHAPE['block_size']} tokens)"
    return _report(shape, "hand-written", infer, train)


def _report(title: str, hand: str, infer: dict[str, float], train: dict[str, float]) -> dict[str, float]:
    print(
        f"{title}: load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, GRAPH_MODE, best of interleaved rounds"
    )
    ratios = {}
    for what, got in (("inference", infer), ("training step", train)):
        ratio = got["converted"] / got[hand]
        ratios[what] = ratio
        verdict = "met" if ratio <= 1.05 else "NOT met"
        print(
            f"  {what:14s} converted {got['converted'] * 1e3:8.1f} ms   {hand} {got[hand] * 1e3:8.1f} ms   "
            f"ratio {ratio:.2f}x (target ≤ 1.05x: {verdict})"
        )
    return ratios


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pair", choices=["resnet50", "gpt"])
    ap.add_argument("root", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    opts = ap.parse_args()
    (resnet50 if opts.pair == "resnet50" else gpt)(opts.root, opts.repeat)


if __name__ == "__main__":
    main()
