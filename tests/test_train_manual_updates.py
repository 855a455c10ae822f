"""Training loops without an optimizer (issue 22 §2, class 7): the script applies its gradients itself
(``p.data.add_(-lr * p.grad)``, ``with torch.no_grad(): p -= lr * p.grad``, ...) and clears them
(``model.zero_grad()``, ``p.grad.zero_()``, ``p.grad = None``). Two halves:

* convert: the update must change the MindSpore Parameter (``p -= v`` in MindSpore rebinds a name,
  and the in-place rewrite ``p = p.add(v)`` does too: both updated nothing), and a clear inside the
  update loop must clear the gradient tuple (else the next step adds to the old gradients);
* compare-train: with no optimizer a step is one ``backward()`` (torch) / one ``value_and_grad`` call
  (MindSpore), recorded when the next one starts; it said "nothing to compare" before.

Matrix: update spelling × how the gradient is cleared × loop inline or in a function; every case is
converted; six of them, covering every spelling, clear and place, are trained side by side with
compare-train (SAME, parameters compared at the end).
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
model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
x = torch.randn(32, 3)
y = torch.randn(32, 1)
lr = 0.1
"""
UPDATES = {
    "data_add_": (False, "p.data.add_(-lr * p.grad)"),
    "data_isub_grad_data": (False, "p.data -= lr * p.grad.data"),
    "no_grad_isub": (True, "p -= lr * p.grad"),
    "data_sub_": (False, "p.data.sub_(lr * p.grad)"),
    "no_grad_add_alpha": (True, "p.add_(p.grad, alpha=-lr)"),
    "data_assign": (False, "p.data = p.data - lr * p.grad"),
}
CLEARS = {
    "model_zero_grad": ("model.zero_grad()", ""),
    "grad_zero_": ("", "p.grad.zero_()"),
    "grad_none": ("", "p.grad = None"),
}


def manual_script(update: str, clear: str, where: str) -> str:
    no_grad, line = UPDATES[update]
    before, inside = CLEARS[clear]
    loop = "for p in model.parameters():\n    " + line + ("\n    " + inside if inside else "")
    if no_grad:
        loop = "with torch.no_grad():\n" + textwrap.indent(loop, "    ")
    step = (
        before + "\n" if before else ""
    ) + "loss = ((model(x[i:i + 8]) - y[i:i + 8]) ** 2).mean()\nloss.backward()\n"
    body = "for i in range(0, 32, 8):\n" + textwrap.indent(step + loop, "    ") + "\n"
    if where == "function":
        body = "def train(epochs):\n    for epoch in range(epochs):\n" + textwrap.indent(body, "        ")
        body += "\n\ntrain(2)\n"
    else:
        body = "for epoch in range(2):\n" + textwrap.indent(body, "    ")
    return HEADER + "\n" + body


CASES = list(itertools.product(UPDATES, CLEARS, ["inline", "function"]))
# trained side by side (about 40 s each): every update spelling once, with every clear and both places
TRAINED = [(u, list(CLEARS)[i % len(CLEARS)], ["inline", "function"][i % 2]) for i, u in enumerate(UPDATES)]


def _convert(root: Path, source: str) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source)
    convert_tree(str(root / "src"), str(root / "out"))
    return root / "out" / "train.py"


@pytest.mark.parametrize("case", CASES, ids=["-".join(c) for c in CASES])
def test_manual_update_converts_to_an_update_of_the_parameter(tmp_path, case):
    out = _convert(tmp_path, manual_script(*case)).read_text()
    assert "not converted" not in out and "port by hand" not in out, out
    assert "p -= " not in out and "p = p." not in out, out  # a rebound name updates nothing
    if case[1] != "model_zero_grad":
        assert "grads_model = None  # torch2ms: p.grad" in out, out


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("case", TRAINED, ids=["-".join(c) for c in TRAINED])
def test_manual_update_trains_the_same(tmp_path, case):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = manual_script(*case)
    (tmp_path / "train.py").write_text(source)
    ms_script = _convert(tmp_path / "c", source)
    rep = compare_train(
        str(tmp_path / "train.py"), str(ms_script), steps=6, out_dir=str(tmp_path / "cmp"), cwd=str(tmp_path)
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 6
    # the updates moved the losses: a loop whose update did nothing would repeat the same loss per batch
    assert rep.rows[4]["torch_loss"] != pytest.approx(rep.rows[0]["torch_loss"], rel=1e-3)
