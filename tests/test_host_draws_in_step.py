"""Issue 22 §2 class 10 (random part) / issue 23 §1 (verdict): host random draws inside a training step.

A draw from numpy's or Python's random stream (or a torch.Generator, which the runtime draws with numpy)
written in the data preparation inside the step, or as noise in a model's forward, lands in the
converted ``TrainStep``; under ``@mindspore.jit`` MindSpore cannot call it each step (the graph parses
it once, or fails). The converter now writes such a step uncompiled, with a comment naming the draws;
a torch draw (``torch.rand*``) stays compiled (the ops draw inside the graph).

Generated matrix: the draw (np.random.randn / rand / normal / randint, random.random / gauss / uniform,
torch.rand / randn) × where it sits (data preparation in the step, noise in a model's forward) — static:
compiled exactly where no host draw is; run: compare-train (real torch, real MindSpore) says SAME on a
slice covering every draw and both places (the host streams are seeded alike on both sides and the
MindSpore initialisers draw off them).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from torch2ms.convert import convert_source, convert_tree

sys.path.insert(0, str(Path(__file__).parent))
from requires_support import require_modules

DRAWS = {
    "np_randn": ("np.random.randn(8, 4)", True),
    "np_rand": ("np.random.rand(8, 4)", True),
    "np_normal": ("np.random.normal(0.0, 0.5, (8, 4))", True),
    "np_randint": ("np.random.randint(0, 3, (8, 4))", True),
    "random_random": ("random.random()", True),
    "random_gauss": ("random.gauss(0.0, 1.0)", True),
    "random_uniform": ("random.uniform(-1.0, 1.0)", True),
    "torch_rand": ("torch.rand(8, 4)", False),
    "torch_randn": ("torch.randn(8, 4)", False),
}
PLACES = ("step", "forward")

SCRIPT = """import random

import numpy as np
import torch
import torch.nn as nn


def noise():
    value = {draw}
    return torch.as_tensor(value, dtype=torch.float32) * 0.1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x{forward_noise})


torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
Y = X.sum(1, keepdim=True)
for step in range(4):
    opt.zero_grad()
    xb = X{step_noise}
    loss = ((model(xb) - Y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def script(draw: str, place: str) -> str:
    expr = DRAWS[draw][0]
    inline = f" + torch.as_tensor({expr}, dtype=torch.float32) * 0.1"
    text = SCRIPT.replace("{draw}", expr)
    return text.format(
        forward_noise=inline if place == "forward" else "",
        step_noise=inline if place == "step" else "",
    )


@pytest.mark.parametrize("draw, place", list(itertools.product(DRAWS, PLACES)))
def test_a_step_drawing_on_the_host_runs_uncompiled_and_says_so(draw, place):
    res = convert_source(script(draw, place))
    assert not res.error and "not converted" not in res.code, res.code
    step = res.code[res.code.index("class TrainStep") :]
    host = DRAWS[draw][1]
    assert ("@ms.jit" not in step) == host, step
    if host:
        name = DRAWS[draw][0].split("(")[0]
        assert "Runs uncompiled: the step draws with" in step and name in step, step


COMPARED = [
    ("np_randn", "step"),
    ("np_rand", "forward"),
    ("np_normal", "forward"),
    ("np_randint", "step"),
    ("random_random", "forward"),
    ("random_gauss", "step"),
    ("random_uniform", "forward"),
    ("torch_randn", "step"),
]


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("draw, place", COMPARED)
def test_compare_train_says_same_for_host_draws_in_the_step(draw, place, tmp_path):
    require_modules("torch", "mindspore")
    from torch2ms.trainrun import compare_train

    src = tmp_path / "t" / "train.py"
    src.parent.mkdir()
    src.write_text(script(draw, place), encoding="utf-8")
    convert_tree(str(src.parent), str(tmp_path / "m"))
    rep = compare_train(
        str(src), str(tmp_path / "m" / "train.py"), steps=4, out_dir=str(tmp_path / "o"), cwd=str(tmp_path)
    )
    assert rep.error is None, rep.error
    assert len(rep.rows) == 4, rep.rows
    assert rep.status == "same", (rep.first_divergence, rep.findings, rep.conditions)
