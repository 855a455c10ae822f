"""Issue 22, class 3 (recurrent state kept on the module) meeting class 10 (what a compiled step cannot run):
a forward that assigns an attribute of its module (``lstm_out, self.hidden = self.lstm(x, self.hidden)``,
pytorch/tutorials' LSTM tagger) was compiled into the ``@mindspore.jit`` TrainStep; GRAPH_MODE cannot carry
a value assigned to the Cell in construct ("For 'LSTM', the 'hx' must be Tuple, but got Tensor[Float64]").
torch runs such a forward eagerly; the converted step now does too, and says why.

Generated matrix: the state's spelling (an LSTM's tuple reset by the loop, a GRU's tensor carried and
detached, a counter, two attributes at once, a statistic kept for later) x where the assignment sits
(forward, a method forward calls) x where the loop lives (module level, a function). Statically the step is
uncompiled exactly when the model keeps state (a model without it keeps ``@mindspore.jit``); a slice trained
by torch and by the conversion with compare-train: SAME.
"""

from __future__ import annotations

import itertools
import re
import textwrap
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.convert import convert_tree

# spelling -> (the forward's statements on `x` [seq, batch, 4] giving `h` [seq, batch, 8]; the state's
# first value in __init__; a statement the loop runs before each forward, or "")
SPELLINGS = {
    "lstm_tuple_reset": (
        ["h, self.hidden = self.rnn(x, self.hidden)"],
        "(torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))",
        "model.hidden = (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))",
    ),
    "gru_tensor_detached": (
        ["h, state = self.gru(x, self.hidden)", "self.hidden = state.detach()"],
        "torch.zeros(1, 2, 8)",
        "",
    ),
    "counter": (["h = self.proj(x)", "self.calls += 1"], "0", ""),
    "two_attributes": (
        ["h = self.proj(x)", "self.last_mean, self.last_max = h.mean().detach(), h.max().detach()"],
        "None",
        "",
    ),
    # (set to None in __init__ it is a cache the graph-mode construct turns into a local: compiled)
    "kept_statistic": (["h = torch.relu(self.proj(x))", "self.hidden = h.detach()"], "torch.zeros(5, 2, 8)", ""),
    "none": (["h = self.proj(x)"], "None", ""),
}
JIT = re.compile(r"^\s*@(ms|mindspore)\.jit\s*$", re.M)
WHERE = ["forward", "method"]
LOOPS = ["module", "function"]


def script(spelling: str, where: str, loop: str) -> str:
    statements, first, reset = SPELLINGS[spelling]
    if where == "forward":
        forward, methods = statements, ""
    else:
        forward = ["h = self.step(x)"]
        methods = "\n    def step(self, x):\n" + textwrap.indent("\n".join([*statements, "return h"]), " " * 8) + "\n"
    body = "\n        ".join([*forward, "return self.out(h[-1])"])
    src = f"""
import numpy as np
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 8)
        self.gru = nn.GRU(4, 8)
        self.proj = nn.Linear(4, 8)
        self.out = nn.Linear(8, 3)
        self.hidden = {first}
        self.calls = 0
        self.last_mean = self.last_max = None

    def forward(self, x):
        {body}
{methods}

torch.manual_seed(0)
rng = np.random.RandomState(0)
X = torch.from_numpy(rng.randn(4, 5, 2, 4).astype(np.float32))
Y = torch.from_numpy(rng.randint(0, 3, (4, 2)).astype(np.int64))
model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
"""
    step = "\n".join(
        [
            "for epoch in range(2):",
            "    for i in range(4):",
            *(["        " + reset] if reset else []),
            "        optimizer.zero_grad()",
            "        out = model(X[i])",
            "        loss = criterion(out, Y[i])",
            "        loss.backward()",
            "        optimizer.step()",
        ]
    )
    if loop == "function":
        step = "def train():\n" + textwrap.indent(step, "    ") + "\n\n\ntrain()"
    return src + "\n" + step + "\n"


CASES = [c for c in itertools.product(SPELLINGS, WHERE, LOOPS) if c[0] != "none" or c[1] == "forward"]


def _convert(root: Path, source: str) -> str:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source)
    convert_tree(str(root / "src"), str(root / "out"))
    return (root / "out" / "train.py").read_text()


@pytest.mark.parametrize(("spelling", "where", "loop"), CASES, ids=["-".join(c) for c in CASES])
def test_step_uncompiled_exactly_where_the_model_keeps_state(tmp_path, spelling, where, loop):
    out = _convert(tmp_path, script(spelling, where, loop))
    assert "class TrainStep" in out and "not converted" not in out, out
    assert bool(JIT.search(out)) == (spelling == "none"), out
    if spelling != "none":
        assert re.search(r"Not compiled \(no @mindspore\.jit\): .*self\.\w+ = \.\.\. in Net\.", out), out


def test_assignment_outside_the_step_keeps_it_compiled(tmp_path):
    """State set by a method forward never calls (``init_hidden``, ``reset``) is no state of the step."""
    src = script("none", "forward", "module").replace(
        "        return self.out(h[-1])\n",
        "        return self.out(h[-1])\n\n    def reset(self):\n        self.hidden = torch.zeros(1, 2, 8)\n",
    )
    assert "def reset" in src
    assert JIT.search(_convert(tmp_path, src))


DIFFERENTIAL = [
    ("lstm_tuple_reset", "forward", "module"),
    ("gru_tensor_detached", "method", "function"),
    ("two_attributes", "forward", "function"),
    ("counter", "method", "module"),
]


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(("spelling", "where", "loop"), DIFFERENTIAL, ids=["-".join(c) for c in DIFFERENTIAL])
def test_stateful_step_trains_as_torch(tmp_path, spelling, where, loop):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = script(spelling, where, loop)
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
