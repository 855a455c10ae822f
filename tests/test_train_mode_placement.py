"""Where a script sets its model's mode (issue 22 §2, class 1). A torch module starts in training mode, a
MindSpore cell in inference mode, so the converter writes ``model.set_train(True)`` before the first step
unless the script itself decides the mode the first step runs in. A ``model.eval()`` only after training,
a ``model.train()`` at the end of each epoch (after the validation's ``eval()``), or a mode switch inside
a helper defined above the loop used to count as "the script sets the mode": BatchNorm then trained in
inference mode. Only a call on a line above the step, in the same scope, decides it now.

Matrix: where the mode calls are × loop at module level or in a function; static (is the call inserted
exactly when torch's first step runs in its default mode?) and, on a BatchNorm model, compare-train.
"""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.convert import convert_tree

HEADER = """
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(32, 3)
y = torch.randn(32, 1)
"""
STEP = """out = net(x[i:i + 8])
loss = ((out - y[i:i + 8]) ** 2).mean()
opt.zero_grad()
loss.backward()
opt.step()
"""
# name: (text before the epoch loop, at the top of each epoch, after the batches, after training, inserted?)
MODES = {
    "never": ("", "", "", "", True),
    "eval_after_training": ("", "", "", "net.eval()\nprint(net(x).mean())", True),
    "train_at_epoch_end": ("", "", "net.eval()\nwith torch.no_grad():\n    net(x)\nnet.train()", "", True),
    "helper_defined_above": (
        "def evaluate():\n    net.eval()\n    with torch.no_grad():\n        net(x)\n    net.train()\n",
        "",
        "evaluate()",
        "",
        True,
    ),
    "train_at_epoch_start": ("", "net.train()", "", "net.eval()", False),
    "train_before_loop": ("net.train()", "", "", "", False),
    "eval_before_loop": ("net.eval()", "", "", "", False),  # torch trains in inference mode: so does MindSpore
}
CASES = list(itertools.product(MODES, ["module", "function"]))


def mode_script(mode: str, where: str) -> str:
    before, top, end, after, _ = MODES[mode]
    epoch = (top + "\n" if top else "") + "for i in range(0, 32, 8):\n" + textwrap.indent(STEP, "    ")
    epoch += end + "\n" if end else ""
    loop = (before + "\n" if before else "") + "for epoch in range(2):\n" + textwrap.indent(epoch, "    ")
    loop += after + "\n" if after else ""
    if where == "function":
        helper = ""
        if loop.startswith("def evaluate"):  # the helper stays at module level, the loop goes in a function
            helper, loop = loop.split("\n\n", 1)[0] + "\n\n\n", loop.split("\n\n", 1)[1]
        loop = helper + "def train():\n" + textwrap.indent(loop, "    ") + "\n\ntrain()\n"
    return HEADER + "\n" + loop


def _convert(root: Path, source: str) -> str:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source)
    convert_tree(str(root / "src"), str(root / "out"))
    return (root / "out" / "train.py").read_text()


@pytest.mark.parametrize(("mode", "where"), CASES, ids=[f"{m}-{w}" for m, w in CASES])
def test_train_mode_inserted_exactly_when_the_first_step_runs_in_the_default_mode(tmp_path, mode, where):
    out = _convert(tmp_path, mode_script(mode, where))
    assert "not converted" not in out, out
    inserted = "net.set_train(True)  # torch2ms: a torch module starts in training mode" in out
    assert inserted == MODES[mode][4], out
    assert ".set_train(True)  # torch2ms" not in out.replace("net.set_train(True)  # torch2ms", ""), out


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(
    ("mode", "where"), [("eval_after_training", "module"), ("train_at_epoch_end", "function")], ids=str
)
def test_batchnorm_model_trains_in_the_same_mode(tmp_path, mode, where):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = mode_script(mode, where)
    (tmp_path / "train.py").write_text(source)
    _convert(tmp_path / "c", source)
    rep = compare_train(
        str(tmp_path / "train.py"),
        str(tmp_path / "c" / "out" / "train.py"),
        steps=6,
        out_dir=str(tmp_path / "cmp"),
        cwd=str(tmp_path),
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 6
