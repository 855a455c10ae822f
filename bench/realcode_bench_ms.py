"""MindSpore side of bench/realcode_bench.py: one pair (converted vs a MindSpore reference), timed interleaved.

python realcode_bench_ms.py resnet50|gpt2-mindone|gpt CONVERTED_ROOT [--repeat N]
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


def _converted_gpt(root: Path):
    sys.modules["torch"] = None  # type: ignore[assignment]  # the converted GPT runs with MindSpore alone
    sys.path.insert(0, str(root))
    from mingpt.model import GPT as ConvertedGPT

    cfg = ConvertedGPT.get_default_config()
    cfg.model_type = None
    cfg.n_layer, cfg.n_head, cfg.n_embd = GPT_SHAPE["n_layer"], GPT_SHAPE["n_head"], GPT_SHAPE["n_embd"]
    cfg.vocab_size, cfg.block_size = GPT_SHAPE["vocab"], GPT_SHAPE["block_size"]
    return ConvertedGPT(cfg)


def _tokens():
    import mindspore as ms

    rng = np.random.default_rng(0)
    shape = (BATCH, GPT_SHAPE["block_size"])
    idx = ms.Tensor(rng.integers(0, GPT_SHAPE["vocab"], shape).astype(np.int32))
    return idx, ms.Tensor(rng.integers(0, GPT_SHAPE["vocab"], shape).astype(np.int32))


def _loss_cell(logits_of: Callable):
    """net → Cell(idx, targets) → mean token cross-entropy of the logits ``logits_of(net, idx)``."""
    from mindspore import nn, ops

    class TokenLoss(nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def construct(self, a, b):
            logits = logits_of(self.net, a)
            return ops.cross_entropy(logits.view(-1, logits.shape[-1]), b.view(-1))

    return TokenLoss


def _gpt_shape() -> str:
    return (
        f"gpt {GPT_SHAPE['n_layer']} layers × {GPT_SHAPE['n_embd']} (batch {BATCH} × {GPT_SHAPE['block_size']} tokens)"
    )


def _mindone_gpt2():
    """mindone's GPT-2 (mindone.transformers, MindSpore's own port of Hugging Face's models) at minGPT's
    shape. One substitution, said in the output: its Conv1D calls mint.addmm, which has no CPU kernel in
    MindSpore 2.10 ("Unsupported op [Addmm] on CPU"), so on CPU it runs as matmul + bias (the same sum)."""
    from mindone.transformers import GPT2LMHeadModel, mindspore_utils
    from mindspore import mint
    from transformers import GPT2Config

    def construct(self, x):
        size_out = x.shape[:-1] + (self.nf,)
        return (mint.matmul(x.view(-1, x.shape[-1]), self.weight) + self.bias).view(size_out)

    mindspore_utils.Conv1D.construct = construct
    cfg = GPT2Config(
        n_layer=GPT_SHAPE["n_layer"],
        n_head=GPT_SHAPE["n_head"],
        n_embd=GPT_SHAPE["n_embd"],
        vocab_size=GPT_SHAPE["vocab"],
        n_positions=GPT_SHAPE["block_size"],
        tie_word_embeddings=False,  # minGPT's head is its own matrix
    )
    return GPT2LMHeadModel(cfg)


def _copy_gpt_to_gpt2(src, dst) -> int:
    """minGPT's parameters into GPT-2's: the same names; GPT-2's Conv1D keeps its weights transposed."""
    import mindspore as ms

    theirs = dict(src.parameters_and_names())
    n = 0
    for name, p in dst.parameters_and_names():
        q = theirs[name].asnumpy()
        if name.endswith(".weight") and (".attn.c_" in name or ".mlp.c_" in name):
            q = q.T
        assert q.shape == p.shape, (name, q.shape, p.shape)
        p.set_data(ms.Tensor(np.ascontiguousarray(q)))
        n += 1
    return n


def gpt2_mindone(root: Path, repeat: int) -> dict[str, float]:
    """Converted minGPT vs mindone's GPT-2, in PyNative: mindone's GPT-2 does not compile in GRAPH_MODE
    (its construct fails with "TypeError: 'int' object is not subscriptable")."""
    import mindspore as ms
    import scipy.stats  # noqa: F401 - before torch is blocked: its import-time array-API check reads sys.modules

    ms.set_context(mode=ms.PYNATIVE_MODE)
    nets = {"converted": _converted_gpt(root), "mindone": _mindone_gpt2()}
    copied = _copy_gpt_to_gpt2(nets["converted"], nets["mindone"])
    idx, tgt = _tokens()
    logits = {"converted": lambda n, a: n(a)[0], "mindone": lambda n, a: n(a)[0]}
    for net in nets.values():
        net.set_train(False)
    outs = {k: logits[k](net, idx).asnumpy() for k, net in nets.items()}
    err = float(np.abs(outs["converted"] - outs["mindone"]).max() / np.abs(outs["converted"]).max())
    total = len(list(nets["mindone"].get_parameters()))
    print(f"gpt2-mindone: {copied}/{total} parameters copied by name; same logits to {err:.1e} (relative)")
    print("  reference: mindone.transformers GPT2LMHeadModel (mindone 0.5.0), Conv1D's mint.addmm run as matmul + bias")
    infer = _interleaved({k: (lambda k=k, n=n: logits[k](n, idx)) for k, n in nets.items()}, repeat)
    steps = {k: _train_step(n, _loss_cell(logits[k])) for k, n in nets.items()}
    train = _interleaved({k: (lambda s=s: s(idx, tgt)) for k, s in steps.items()}, repeat)
    return _report(_gpt_shape(), "mindone", infer, train, "PYNATIVE_MODE")


def gpt(root: Path, repeat: int) -> dict[str, float]:
    """Converted minGPT vs bench/ms_gpt.py, in GRAPH_MODE. ms_gpt.py was written for this bench by this
    project: not an external reference (gpt2-mindone is the pair with one)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import mindspore as ms
    from ms_gpt import GPT as HandGPT

    ms.set_context(mode=ms.GRAPH_MODE)
    nets = {"converted": _converted_gpt(root), "bench-written": HandGPT(**GPT_SHAPE)}
    copied = _copy_by_name(nets["converted"], nets["bench-written"])
    idx, tgt = _tokens()
    for net in nets.values():
        net.set_train(False)
    outs = {k: net(idx, tgt)[0].asnumpy() for k, net in nets.items()}
    err = float(np.abs(outs["converted"] - outs["bench-written"]).max() / np.abs(outs["converted"]).max())
    total = len(list(nets["bench-written"].get_parameters()))
    print(f"gpt: {copied}/{total} parameters copied by name; same logits to {err:.1e} (relative)")
    print("  reference: bench/ms_gpt.py, a GPT written for this bench by this project — NOT an external reference")
    infer = _interleaved({k: (lambda n=n: n(idx, tgt)) for k, n in nets.items()}, repeat)
    steps = {k: _train_step(n, _own_loss) for k, n in nets.items()}
    train = _interleaved({k: (lambda s=s: s(idx, tgt)) for k, s in steps.items()}, repeat)
    return _report(_gpt_shape(), "bench-written", infer, train)


def _own_loss(net):
    """Cell(idx, targets) → the loss both GPTs compute themselves (their second output)."""
    from mindspore import nn

    class OwnLoss(nn.Cell):
        def __init__(self, inner):
            super().__init__()
            self.net = inner

        def construct(self, a, b):
            return self.net(a, b)[1]

    return OwnLoss(net)


def _report(
    title: str, hand: str, infer: dict[str, float], train: dict[str, float], mode: str = "GRAPH_MODE"
) -> dict[str, float]:
    print(f"{title}: load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, {mode}, best of interleaved rounds")
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


PAIRS = {"resnet50": resnet50, "gpt2-mindone": gpt2_mindone, "gpt": gpt}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pair", choices=list(PAIRS))
    ap.add_argument("root", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    opts = ap.parse_args()
    PAIRS[opts.pair](opts.root, opts.repeat)


if __name__ == "__main__":
    main()
