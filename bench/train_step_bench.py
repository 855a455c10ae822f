"""Training-step speed on CPU: torch eager vs the converted MindSpore step vs hand-written MindSpore forms.

The network and loop are examples/train_loop/train.py (CNN with BN, 32×3×32×32, SGD-momentum, clipping,
StepLR). Each variant trains from the same initial weights; the per-step time is
(T(long) - T(short)) / (long - short) so compilation and set-up cancel out, the first-call time is
reported apart. Run:  .venv/bin/python bench/train_step_bench.py [--steps 40] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("GLOG_v", "3")
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train_loop" / "train.py"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _timed(fn, steps_short: int, steps_long: int, repeat: int) -> tuple[float, float]:
    """(seconds of a `steps_short` run incl. set-up/compile, median seconds per extra step)."""
    first, per = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(steps_short)
        t1 = time.perf_counter()
        fn(steps_long)
        t2 = time.perf_counter()
        first.append(t1 - t0)
        per.append(((t2 - t1) - (t1 - t0)) / (steps_long - steps_short))
    return statistics.median(first), statistics.median(per)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    import contextlib
    import io

    import mindspore as ms
    import torch
    from mindspore import nn, ops
    from mindspore.experimental import optim

    from torch2ms.convert import convert_source
    sys.path.insert(0, str(ROOT / "tests"))
    from test_training import _copy_weights  # the weight copy the R11 tests use

    tmp = Path(tempfile.mkdtemp())
    (tmp / "ms_train.py").write_text(convert_source(EXAMPLE.read_text()).code)
    tmod, mmod = _load(EXAMPLE, "bench_torch_train"), _load(tmp / "ms_train.py", "bench_ms_train")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 32)
    torch.manual_seed(0)
    tnet0 = tmod.SmallCNN()
    state = {k: v.clone() for k, v in tnet0.state_dict().items()}
    tx, ty, mx, my = torch.from_numpy(x), torch.from_numpy(y), ms.Tensor(x), ms.Tensor(y)
    my32 = ms.Tensor(y.astype(np.int32))
    quiet = contextlib.redirect_stdout(io.StringIO())

    def torch_run(steps):
        net = tmod.SmallCNN()
        net.load_state_dict(state)
        with quiet:
            return tmod.train(net, tx, ty, steps)

    def ms_net():
        net = mmod.SmallCNN()
        _copy_weights(tnet0, net)
        return net

    def converted(mode):
        def run(steps):
            ms.set_context(mode=mode)
            with quiet:
                return mmod.train(ms_net(), mx, my, steps)
        return run

    def hand(form, mode):
        """Hand-written MindSpore: SoftmaxCrossEntropyWithLogits(sparse) + experimental SGD + clip + StepLR."""
        def run(steps):
            ms.set_context(mode=mode)
            net = ms_net()
            net.set_train()
            loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
            opt = optim.SGD(net.trainable_params(), lr=0.05, momentum=0.9)
            sched = optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
            if form == "TrainOneStepCell":
                class ClipStep(nn.TrainOneStepCell):
                    def construct(self, *inputs):
                        loss = self.network(*inputs)
                        grads = self.grad(self.network, self.weights)(*inputs, ops.ones_like(loss))
                        self.optimizer(ops.clip_by_norm(grads, 5.0))
                        return loss
                step = ClipStep(nn.WithLossCell(net, loss_fn), opt)
            else:
                def fwd(a, b):
                    return loss_fn(net(a), b)
                grad_fn = ms.value_and_grad(fwd, None, opt.parameters)

                def step(a, b):
                    loss, grads = grad_fn(a, b)
                    opt(ops.clip_by_norm(grads, 5.0))
                    return loss
                if form == "jit":
                    step = ms.jit(step)
            losses = []
            for _ in range(steps):
                losses.append(float(step(mx, my32)))
                sched.step()
            return losses
        return run

    variants = {
        "torch eager": torch_run,
        "converted, PyNative": converted(ms.PYNATIVE_MODE),
        "converted, GRAPH_MODE": converted(ms.GRAPH_MODE),
        "hand: functional, PyNative": hand("functional", ms.PYNATIVE_MODE),
        "hand: functional + ms.jit, PyNative": hand("jit", ms.PYNATIVE_MODE),
        "hand: functional, GRAPH_MODE": hand("functional", ms.GRAPH_MODE),
        "hand: TrainOneStepCell, GRAPH_MODE": hand("TrainOneStepCell", ms.GRAPH_MODE),
    }
    ref = np.array(torch_run(opts.steps))
    rows = []
    for name, fn in variants.items():
        losses = np.array(fn(opts.steps))
        rel = float(np.max(np.abs(losses - ref) / np.abs(ref)))
        first, per = _timed(fn, 5, 5 + opts.steps, opts.repeat)
        rows.append((name, first, per, rel))
    base = rows[0][2]
    fastest_hand = min(r[2] for r in rows if r[0].startswith("hand"))
    print(f"{'variant':40s} {'5 steps incl. compile':>22s} {'per step':>10s} {'vs torch':>9s} "
          f"{'vs best hand MS':>16s} {'max loss rel diff':>18s}")
    for name, first, per, rel in rows:
        print(f"{name:40s} {first:20.2f} s {per * 1e3:7.1f} ms {per / base:8.2f}x {per / fastest_hand:15.2f}x {rel:18.1e}")


if __name__ == "__main__":
    main()
