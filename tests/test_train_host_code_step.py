"""Issue 22, class 10 (host code in the compiled step): a forward that pulls a value to the host or builds a
layer on each call.

graykode's attention tutorials keep ``attn.data.numpy()`` for a plot inside forward, BERT builds
``nn.Linear(...)(x)`` and ``nn.LayerNorm(d)(x)`` inside forward; the generated ``@mindspore.jit`` TrainStep
could not compile them ("'Parameter' object's method 'asnumpy' is not supported in 'construct'", "its name
'weight' already exists"). torch runs them eagerly; the converted step now does too, and says so in a comment
and in the report.

Generated matrix: the host code's spelling x where it sits (forward, a method forward calls, a sub-module's
forward) x where the loop lives (module level, a function); statically the step is uncompiled exactly when
host code is reached (a model without it keeps ``@mindspore.jit``); a slice trained by torch and by the
conversion with compare-train: SAME.
"""

from __future__ import annotations

import itertools
import re
import textwrap
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.convert import convert_tree

# spelling -> (statement inside the model's code on `h` (a [batch, 8] tensor), deterministic in both frameworks)
SPELLINGS = {
    "data_numpy": "self.kept.append(h.data.numpy())",
    "detach_cpu_numpy": "self.kept.append(h.detach().cpu().numpy())",
    "item": "self.kept.append(h.sum().item())",
    "tolist": "self.kept.append(h[0].tolist())",
    "layer_norm_built": "h = nn.LayerNorm(8)(h)",
    "softmax_built": "h = h + nn.Softmax(dim=-1)(h)",
    "none": "",
}
JIT = re.compile(r"^\s*@(ms|mindspore)\.jit\s*$", re.M)
WHERE = ["forward", "method", "submodule"]
LOOPS = ["module", "function"]


def script(spelling: str, where: str, loop: str) -> str:
    host = SPELLINGS[spelling]
    inner_forward = "return h"
    net_forward = ["h = torch.tanh(self.fc(x))"]
    methods: list[str] = []
    if where == "forward":
        net_forward += [host] if host else []
    elif where == "method":
        net_forward.append("h = self.look(h)")
        methods = ["def look(self, h):", *(["    " + host] if host else []), "    return h"]
    else:
        net_forward.append("h = self.inner(h)")
        inner_forward = "\n        ".join([*([host] if host else []), "return h"])
    net_forward.append("return self.out(h)")
    body = "\n        ".join(net_forward)
    extra = textwrap.indent("\n".join(methods), "    ")
    src = f"""
import numpy as np
import torch
import torch.nn as nn


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.kept = []

    def forward(self, h):
        {inner_forward}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 8)
        self.inner = Inner()
        self.out = nn.Linear(8, 3)
        self.kept = []

    def forward(self, x):
        {body}

{extra}


torch.manual_seed(0)
rng = np.random.RandomState(0)
X = torch.from_numpy(rng.randn(32, 5).astype(np.float32))
Y = torch.from_numpy(rng.randint(0, 3, 32).astype(np.int64))
model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
"""
    loop = """for epoch in range(2):
    for i in range(0, 32, 8):
        optimizer.zero_grad()
        out = model(X[i:i + 8])
        loss = criterion(out, Y[i:i + 8])
        loss.backward()
        optimizer.step()
"""
    if loop == "function":
        loop = "def train():\n" + textwrap.indent(loop, "    ") + "\n\ntrain()\n"
    return src + "\n" + loop


CASES = [c for c in itertools.product(SPELLINGS, WHERE, LOOPS) if c[0] != "none" or c[1] == "forward"]


def _convert(root: Path, source: str) -> str:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source)
    convert_tree(str(root / "src"), str(root / "out"))
    return (root / "out" / "train.py").read_text()


@pytest.mark.parametrize(("spelling", "where", "loop"), CASES, ids=["-".join(c) for c in CASES])
def test_step_uncompiled_exactly_where_host_code_is_reached(tmp_path, spelling, where, loop):
    out = _convert(tmp_path, script(spelling, where, loop))
    assert "class TrainStep" in out and "not converted" not in out, out
    compiled = bool(JIT.search(out))
    # a LayerNorm built where it is used is the runtime's fresh_layer_norm now, which compiles
    # (tests/test_train_fresh_layers.py): no host code left
    host = spelling not in ("none", "layer_norm_built")
    assert compiled == (not host), out
    assert ("Not compiled (no @mindspore.jit)" in out) == host, out


def test_host_code_outside_the_step_keeps_it_compiled(tmp_path):
    """A method forward never calls (a plot helper) may pull values to the host: the step stays compiled."""
    src = script("none", "forward", "module").replace(
        "        return self.out(h)\n",
        "        return self.out(h)\n\n    def attention_map(self):\n        return self.fc.weight.data.numpy()\n",
    )
    assert "def attention_map" in src
    out = _convert(tmp_path, src)
    assert JIT.search(out), out


DIFFERENTIAL = [
    ("data_numpy", "forward", "module"),
    ("item", "method", "function"),
    ("layer_norm_built", "submodule", "module"),
    ("detach_cpu_numpy", "submodule", "function"),
    ("softmax_built", "method", "module"),
]


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(("spelling", "where", "loop"), DIFFERENTIAL, ids=["-".join(c) for c in DIFFERENTIAL])
def test_uncompiled_step_trains_as_torch(tmp_path, spelling, where, loop):
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
