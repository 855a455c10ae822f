"""Demo: examples/project's training functions, the torch originals and their conversions, trained 50 steps
from the same initial weights on the same batches (MindSpore in GRAPH_MODE); the loss curves side by side.

    python examples/demo/train_both.py CONVERTED_DIR OUT_DIR [cnn-sgd,lstm,gpt]   (also: cnn-adamw)

OUT_DIR holds what examples/demo/project_torch.py and `torch2ms weights` wrote: cnn_init.pth (torch),
cnn_init.ckpt (its conversion, loaded into the MindSpore CNN) and cnn_batches.npz (the batches of the
example's torch ImageFolder pipeline). The LSTM and the GPT get their weights through the same KB renames
in-process. Exit 1 if a curve differs by more than 1e-4 relative at any step.
"""

import importlib
import sys
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1] / "project"
SCRIPTS = ("data", "models", "train_cnn", "train_lstm", "train_gpt")
TOL = 1e-4


def import_scripts(folder: Path, keep: bool):
    """The project's modules from `folder`. MindSpore's graph compiler finds a function's globals through
    sys.modules[fn.__module__], so the converted side stays registered under the plain names."""
    for n in SCRIPTS:
        sys.modules.pop(n, None)
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        return {n: importlib.import_module(n) for n in SCRIPTS}
    finally:
        sys.path.remove(str(folder))
        if not keep:
            for n in SCRIPTS:
                sys.modules.pop(n, None)


def copy_weights(tnet, mnet) -> None:
    import mindspore as ms

    from torch2ms.kb import load_kb
    from torch2ms.weights.rename import convert_state_dict

    state = {k: v.detach().numpy() for k, v in tnet.state_dict().items()}
    layer_types = {n: f"torch.nn.{type(m).__name__}" for n, m in tnet.named_modules()
                   if type(m).__module__.startswith("torch.nn")}
    params = convert_state_dict(state, layer_types, load_kb())
    names = {n for n, _ in mnet.parameters_and_names()}
    not_loaded, _ = ms.load_param_into_net(mnet, {k: ms.Parameter(ms.Tensor(v), name=k)
                                                  for k, v in params.items() if k in names})
    assert not not_loaded, not_loaded


class Epochs:
    """A loader whose every pass yields the next epoch's batches."""

    def __init__(self, epochs):
        self._epochs = iter(epochs)

    def __iter__(self):
        return iter(next(self._epochs))


def cnn(t, m, out: Path, optimizer: str):
    import mindspore as ms
    import torch

    z = np.load(out / "cnn_batches.npz")
    xs, ys = z["train_x"], z["train_y"]
    epochs = len(xs) // 5
    per_epoch = [list(zip(xs[i * 5:(i + 1) * 5], ys[i * 5:(i + 1) * 5])) for i in range(epochs)]
    tnet = t["models"].SmallCNN(num_classes=3)
    tnet.load_state_dict(torch.load(out / "cnn_init.pth"))
    mnet = m["models"].SmallCNN(num_classes=3)
    not_loaded, _ = ms.load_param_into_net(mnet, ms.load_checkpoint(str(out / "cnn_init.ckpt")))
    assert not not_loaded, not_loaded
    opt, sched = t["train_cnn"].make_optimizer(tnet.parameters(), optimizer, epochs)
    expected = t["train_cnn"].train(tnet, Epochs([[(torch.from_numpy(x), torch.from_numpy(y)) for x, y in e]
                                                  for e in per_epoch]), opt, sched, epochs)
    opt, sched = m["train_cnn"].make_optimizer(mnet.get_parameters(), optimizer, epochs)
    got = m["train_cnn"].train(mnet, Epochs([[(ms.Tensor(x), ms.Tensor(y)) for x, y in e] for e in per_epoch]),
                               opt, sched, epochs)
    return expected, got


def lstm(t, m, out: Path):
    import mindspore as ms
    import torch

    tokens, labels = (a.numpy() for a in t["data"].sentiment_data(n=160))
    batches = [(tokens[i:i + 32], labels[i:i + 32]) for i in range(0, 160, 32)]
    torch.manual_seed(0)
    tnet, mnet = t["models"].LSTMClassifier(t["data"].VOCAB_SIZE), m["models"].LSTMClassifier(t["data"].VOCAB_SIZE)
    copy_weights(tnet, mnet)
    expected = t["train_lstm"].train(tnet, [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches], 10)
    got = m["train_lstm"].train(mnet, [(ms.Tensor(x), ms.Tensor(y)) for x, y in batches], 10)
    return expected, got


def gpt(t, m, out: Path):
    import mindspore as ms
    import torch

    batches = [(x.numpy(), y.numpy()) for x, y in t["data"].text_batches(50)]
    torch.manual_seed(0)
    tnet, mnet = t["models"].TinyGPT(len(t["data"].CHARS)), m["models"].TinyGPT(len(t["data"].CHARS))
    copy_weights(tnet, mnet)
    expected = t["train_gpt"].train(tnet, [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches])
    got = m["train_gpt"].train(mnet, [(ms.Tensor(x), ms.Tensor(y)) for x, y in batches])
    return expected, got


RUNS = {
    "cnn-sgd": ("train_cnn.py  SmallCNN, SGD-momentum + StepLR", lambda t, m, o: cnn(t, m, o, "sgd")),
    "cnn-adamw": ("train_cnn.py  SmallCNN, AdamW + CosineAnnealingLR", lambda t, m, o: cnn(t, m, o, "adamw")),
    "lstm": ("train_lstm.py LSTMClassifier, Adam + clip_grad_norm_", lstm),
    "gpt": ("train_gpt.py  TinyGPT, AdamW + cosine per step + clipping", gpt),
}


def main(converted: str, out_dir: str, which: str = "cnn-sgd,lstm,gpt") -> int:
    import contextlib
    import io
    import time

    import mindspore as ms

    out = Path(out_dir)
    t = import_scripts(PROJECT, keep=False)
    m = import_scripts(Path(converted), keep=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    worst = 0.0
    for key in which.split(","):
        title, run = RUNS[key]
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # the scripts' own per-epoch logging
            expected, got = (np.asarray(c, dtype=np.float64) for c in run(t, m, out))
        rel = np.abs(got - expected) / np.abs(expected)
        worst = max(worst, float(rel.max()))
        print(f"\n{title}: {len(expected)} steps, GRAPH_MODE ({time.perf_counter() - t0:.0f} s both sides)")
        print(f"  {'step':>4}  {'torch loss':>11}  {'MindSpore loss':>14}  {'rel diff':>9}")
        for i in list(range(0, len(expected), 5)) + [len(expected) - 1]:
            print(f"  {i:>4}  {expected[i]:>11.6f}  {got[i]:>14.6f}  {rel[i]:>9.1e}")
        print(f"  max rel diff {rel.max():.1e} (step {int(rel.argmax())})  "
              f"{'ok' if rel.max() <= TOL else 'DIFFERS'} (≤ {TOL:g})")
    print(f"\nloss curves {'agree' if worst <= TOL else 'DIFFER'}: worst step {worst:.1e} relative")
    return 0 if worst <= TOL else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
