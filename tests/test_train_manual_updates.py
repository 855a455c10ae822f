"""Training loops without an optimizer (issue 22 §2, class 7): the script applies its gradients itself
(``p.data.add_(-lr * p.grad)``, ``with torch.no_grad(): p -= lr * p.grad``, ...) and clears them
(``model.zero_grad()``, ``p.grad.zero_()``, ``p.grad = None``). Two halves:

* convert: the update must change the MindSpore Parameter (``p -= v`` in MindSpore rebinds a name,
  and the in-place rewrite ``p = p.add(v)`` does too: both updated nothing), and a clear inside the
  update loop must clear the gradient tuple (else the next step adds to the old gradients);
* compare-train: with no optimizer a step is one ``backward()`` (torch) / one ``value_and_grad`` call
  (MindSpore), recorded when the next one starts; it said "nothing to compare" before.

Matrix: update spelling × how the gradient is cleared × where the loop lives (inline, a function, a
Trainer's method) × how the parameters are iterated (``parameters()``, ``named_parameters()``), on a model
with BatchNorm (compare-train once recorded torch's manual step after one forward more than MindSpore's:
the moving statistics differed while every loss agreed); every case is converted (one tree); a covering
slice (tests/matrix_support.py), PyNative and GRAPH_MODE, is trained side by side with compare-train
(SAME, parameters compared at the end).
"""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest
from matrix_support import covering
from requires_support import require_module

from torch2ms.convert import convert_tree

HEADER = """
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 1))
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


ITERATE = {"parameters": "for p in model.parameters():", "named_parameters": "for name, p in model.named_parameters():"}
PLACES = ["inline", "function", "method"]
MODES = ["pynative", "graph"]


def manual_script(update: str, clear: str, where: str, iterate: str = "parameters") -> str:
    no_grad, line = UPDATES[update]
    before, inside = CLEARS[clear]
    loop = ITERATE[iterate] + "\n    " + line + ("\n    " + inside if inside else "")
    if no_grad:
        loop = "with torch.no_grad():\n" + textwrap.indent(loop, "    ")
    step = (
        before + "\n" if before else ""
    ) + "loss = ((model(x[i:i + 8]) - y[i:i + 8]) ** 2).mean()\nloss.backward()\n"
    body = "for i in range(0, 32, 8):\n" + textwrap.indent(step + loop, "    ") + "\n"
    if where == "function":
        body = "def train(epochs):\n    for epoch in range(epochs):\n" + textwrap.indent(body, "        ")
        body += "\n\ntrain(2)\n"
    elif where == "method":
        fit = "def fit(self, epochs):\n    for epoch in range(epochs):\n" + textwrap.indent(body, "        ")
        fit = fit.replace("model", "self.model")
        init = "def __init__(self, model):\n    self.model = model\n\n"
        body = "class Trainer:\n" + textwrap.indent(init + fit, "    ") + "\n\nTrainer(model).fit(2)\n"
    else:
        body = "for epoch in range(2):\n" + textwrap.indent(body, "    ")
    return HEADER + "\n" + body


CASES = list(itertools.product(UPDATES, CLEARS, PLACES, ITERATE))
# trained side by side (about 40 s each): every value of every axis, PyNative and GRAPH_MODE
TRAINED = covering([(*c, m) for c in CASES for m in MODES])


def _name(case: tuple[str, ...]) -> str:
    return "-".join(case)


def _convert(root: Path, source: str) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source)
    convert_tree(str(root / "src"), str(root / "out"))
    return root / "out" / "train.py"


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[str, str]:
    """Every case converted as one tree: case name -> the converted script."""
    root = tmp_path_factory.mktemp("manual-updates")
    (root / "src").mkdir()
    for case in CASES:
        (root / "src" / f"{_name(case).replace('-', '__')}.py").write_text(manual_script(*case))
    convert_tree(str(root / "src"), str(root / "out"))
    return {_name(c): (root / "out" / f"{_name(c).replace('-', '__')}.py").read_text() for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=_name)
def test_manual_update_converts_to_an_update_of_the_parameter(converted, case):
    out = converted[_name(case)]
    assert "not converted" not in out and "port by hand" not in out, out
    assert "p -= " not in out and "p = p." not in out, out  # a rebound name updates nothing
    # ops.assign (runtime/training.py): a GRAPH_MODE value_and_grad sees it, p.data = v and set_data do not
    assert "assign_data(p, " in out and "p.data = " not in out and "p.set_data(" not in out, out
    if case[1] != "model_zero_grad":
        assert "grads_model = None  # torch2ms: p.grad" in out, out


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("case", TRAINED, ids=_name)
def test_manual_update_trains_the_same(tmp_path, case):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    *spelling, mode = case
    source = manual_script(*spelling)
    (tmp_path / "train.py").write_text(source)
    ms_script = _convert(tmp_path / "c", source)
    rep = compare_train(
        str(tmp_path / "train.py"),
        str(ms_script),
        steps=6,
        out_dir=str(tmp_path / "cmp"),
        cwd=str(tmp_path),
        mode=mode,
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 6
    # the updates moved the losses: a loop whose update did nothing would repeat the same loss per batch
    assert rep.rows[4]["torch_loss"] != pytest.approx(rep.rows[0]["torch_loss"], rel=1e-3)
