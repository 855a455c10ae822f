"""Issue 22 (``checkpoint-nested-state-dicts``, the generator's ``ckpt=full``): a checkpoint holding the
model's and the optimizer's state dicts next to plain values,
``torch.save({'epoch': e, 'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)``, and
the resume that reads it back: ``ckpt = torch.load(path); model.load_state_dict(ckpt['model'])``,
``optimizer.load_state_dict(ckpt['optimizer'])``, ``start = ckpt['epoch'] + 1``. MindSpore's
``save_checkpoint`` cannot write a nested dict ("UnboundLocalError 'each_param'"); the conversion writes
``torch2ms.runtime.save_checkpoint`` (tensors as parameters named by their path, ``model.head.weight``, the
rest as one JSON entry) and reads it back with ``load_checkpoint``.

Generated matrix: how the checkpoint is written (a dict literal, the tutorial's ``model_state_dict`` keys with
a float loss, a dict filled key by key, ``dict(...)`` with a list and a nested dict, paths ``.pth`` / ``.pt`` /
``os.path.join(..., '.tar')``) x how it is read (``torch.load`` plain, with ``map_location``, with
``weights_only=False``, ``load_state_dict(strict=True)``) x where (module level, functions, ``main()``). Every
case converts to the runtime's checkpoint pair; a covering slice runs the converted script with MindSpore
alone (save, a fresh model and optimizer loaded from the file equal to the saved ones, resumed at the saved
epoch + 1; the file holds every parameter of the model under ``model.``), and is trained by torch and by the
conversion with the real compare_train (PyNative and GRAPH_MODE): SAME.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from matrix_support import covering
from requires_support import require_module

from torch2ms.convert import convert_tree
from torch2ms.convert.pipeline import convert_source

# spelling -> (the statements that save, the model's key, the optimizer's key, the file's name)
SAVES = {
    "dict": (
        ["torch.save({'epoch': 0, 'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, 'ckpt.pth')"],
        "model",
        "optimizer",
        "'ckpt.pth'",
    ),
    "tutorial_keys": (
        [
            "torch.save({",
            "    'epoch': 0,",
            "    'model_state_dict': model.state_dict(),",
            "    'optimizer_state_dict': optimizer.state_dict(),",
            "    'loss': loss.item(),",
            "}, 'checkpoint.pt')",
        ],
        "model_state_dict",
        "optimizer_state_dict",
        "'checkpoint.pt'",
    ),
    "built": (
        [
            "state = {'epoch': 0}",
            "state['model'] = model.state_dict()",
            "state['optimizer'] = optimizer.state_dict()",
            "torch.save(state, os.path.join(out_dir, 'last.tar'))",
        ],
        "model",
        "optimizer",
        "os.path.join(out_dir, 'last.tar')",
    ),
    "dict_call": (
        [
            "torch.save(dict(epoch=0, net=model.state_dict(), opt=optimizer.state_dict(),",
            "                history=[1.0, 0.5], config={'lr': 0.1, 'name': 'mlp'}), 'run.pth')",
        ],
        "net",
        "opt",
        "'run.pth'",
    ),
}
LOADS = {
    "plain": "ckpt = torch.load({path})",
    "map_location": "ckpt = torch.load({path}, map_location='cpu')",
    "weights_only": "ckpt = torch.load({path}, weights_only=False)",
    "strict": "ckpt = torch.load({path}, map_location=torch.device('cpu'))",
}
PLACES = ["module", "function", "main"]
MODES = ["pynative", "graph"]
HEAD = """import os

import numpy as np
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(6, 12), nn.BatchNorm1d(12), nn.ReLU())
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        return self.head(self.features(x))


torch.manual_seed(0)
rng = np.random.RandomState(0)
X = torch.from_numpy(rng.randn(32, 6).astype(np.float32))
Y = torch.from_numpy(rng.randint(0, 3, 32).astype(np.int64))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=8)
criterion = nn.CrossEntropyLoss()
out_dir = '.'


def train_epoch(model, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    return loss
"""


def _save(save: str) -> list[str]:
    return SAVES[save][0]


def _load(save: str, load: str) -> list[str]:
    _lines, key, okey, path = SAVES[save]
    strict = ", strict=True" if load == "strict" else ""
    return [
        LOADS[load].format(path=path),
        f"model.load_state_dict(ckpt['{key}']{strict})",
        f"optimizer.load_state_dict(ckpt['{okey}'])",
        "start = ckpt['epoch'] + 1",
    ]


CHECK = [
    "gap = max(float((a - b).abs().max()) for a, b in zip(model.parameters(), model1.parameters()))",
    "assert gap == 0.0, gap",
    "assert start == 1, start",
    "print('resumed at', start)",
]


def script(save: str, load: str, place: str) -> str:
    first = ["model = Net()", "optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)"]
    first.append("loss = train_epoch(model, optimizer)")
    fresh = ["model1 = model", "model = Net()", "optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)"]
    resume = ["train_epoch(model, optimizer)"]
    if place == "module":
        code = [*first, *_save(save), *fresh, *_load(save, load), *CHECK, *resume]
    elif place == "function":
        code = [
            "def save_checkpoint(model, optimizer, loss):",
            *("    " + ln for ln in _save(save)),
            "",
            "",
            "def resume(model, optimizer):",
            *("    " + ln for ln in _load(save, load)),
            "    return start",
            "",
            "",
            *first,
            "save_checkpoint(model, optimizer, loss)",
            *fresh,
            "start = resume(model, optimizer)",
            *CHECK,
            *resume,
        ]
    else:
        body = [*first, *_save(save), *fresh, *_load(save, load), *CHECK, *resume]
        code = ["def main():", *("    " + ln for ln in body), "", "", 'if __name__ == "__main__":', "    main()"]
    return HEAD + "\n\n" + "\n".join(code) + "\n"


CASES = list(itertools.product(SAVES, LOADS, PLACES))


@pytest.mark.parametrize(("save", "load", "place"), CASES, ids=["-".join(c) for c in CASES])
def test_nested_checkpoint_converts_to_the_runtime_pair(save, load, place):
    source = script(save, load, place)
    compile(source, "train.py", "exec")
    out = convert_source(source, "train.py").code
    # (inside a function the KB's torch.optim.Optimizer.state_dict note marks the call, which runs: MindSpore's
    # optimizer is a Cell, its state_dict() the Parameters that load_param_into_net loads back)
    code = "\n".join(ln.split("# torch2ms")[0] for ln in out.splitlines())
    marks = [ln for ln in out.splitlines() if "not converted" in ln and "Optimizer.state_dict" not in ln]
    assert not marks and "torch." not in code, out
    # the runtime's save (imported under another name where the file defines its own save_checkpoint)
    assert re.search(r"^from torch2ms\.runtime import .*\bsave_checkpoint\b", code, re.M), out
    assert re.search(r"save_checkpoint\((\{|state\b|dict\()", code), out
    assert "ckpt = load_checkpoint(" in code, out
    assert "ms.save_checkpoint(" not in code and "mindspore.save_checkpoint(" not in code, out
    assert f"ckpt['{SAVES[save][1]}']" in code and f"ckpt['{SAVES[save][2]}']" in code, out


RUNS = covering([(*c, m) for c in CASES for m in MODES], keep=lambda c: c == ("dict", "plain", "module", "graph"))


def _convert(tmp_path: Path, save: str, load: str, place: str) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(script(save, load, place))
    convert_tree(str(tmp_path / "src"), str(tmp_path / "out"))
    return tmp_path / "out" / "train.py"


@pytest.mark.slow
@pytest.mark.parametrize(("save", "load", "place", "mode"), RUNS, ids=["-".join(c) for c in RUNS])
def test_checkpoint_saves_loads_and_resumes_on_mindspore(tmp_path, save, load, place, mode):
    """The converted script alone (no torch, no torch2ms: a python that cannot import them): the model and
    optimizer loaded from the file equal the saved ones (the script asserts it), and the file holds the model's
    parameters under the checkpoint's key."""
    require_module("mindspore")
    import mindspore as ms

    converted = _convert(tmp_path, save, load, place)
    run = tmp_path / "run"
    run.mkdir()
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    for name in ("torch", "torch2ms"):  # importing either fails in the child
        (blocker / f"{name}.py").write_text(f"raise ImportError('{name} must not be imported')\n")
    env = dict(os.environ, PYTHONPATH=str(blocker), GLOG_v="3")
    context = "GRAPH_MODE" if mode == "graph" else "PYNATIVE_MODE"
    runner = tmp_path / "run_it.py"  # `python out/train.py` in the chosen mode: the script's folder first on sys.path
    runner.write_text(
        "import runpy, sys\nimport mindspore as ms\n"
        f"ms.set_context(mode=ms.{context})\n"
        f"sys.path.insert(0, {str(converted.parent)!r})\n"
        f"runpy.run_path({str(converted)!r}, run_name='__main__')\n"
    )
    cmd = [sys.executable, str(runner)]
    res = subprocess.run(cmd, cwd=run, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "resumed at 1" in res.stdout
    files = [p for p in run.iterdir() if p.name.endswith(".ckpt")]
    assert len(files) == 1, list(run.iterdir())
    saved = ms.load_checkpoint(str(files[0]))
    key = SAVES[save][1]
    model_keys = {k[len(key) + 1 :] for k in saved if k.startswith(key + ".")}
    # the model's parameters, by MindSpore's names: two Dense layers and a BatchNorm (with its statistics)
    assert model_keys >= {"head.weight", "head.bias", "features.0.weight", "features.0.bias"}, sorted(saved)
    assert {"features.1.gamma", "features.1.beta", "features.1.moving_mean"} <= model_keys, sorted(saved)
    assert any(k.startswith(SAVES[save][2] + ".") for k in saved), sorted(saved)  # the optimizer's state


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(("save", "load", "place", "mode"), RUNS, ids=["-".join(c) for c in RUNS])
def test_checkpoint_resume_trains_as_torch(tmp_path, save, load, place, mode):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    converted = _convert(tmp_path, save, load, place)
    rep = compare_train(
        str(tmp_path / "src" / "train.py"),
        str(converted),
        steps=8,
        out_dir=str(tmp_path / "cmp"),
        cwd=str(tmp_path),
        mode=mode,
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 8
