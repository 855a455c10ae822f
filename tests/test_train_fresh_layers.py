"""Issue 22, class 10 (a layer built where it is used): graykode's BERT writes ``nn.Linear(a, b)(x)`` and
``nn.LayerNorm(d)(x)`` inside forward.

torch builds such a layer at every call, initialises it from its global stream and never trains it. The
conversion builds it with the runtime's ``fresh_linear`` / ``fresh_conv1d`` / ``fresh_conv2d`` /
``fresh_embedding`` / ``fresh_layer_norm``: torch's arguments, weights drawn as torch draws them with
``ops.rand`` / ``ops.randn`` at every call, a function GRAPH_MODE compiles (the step keeps
``@mindspore.jit``); compare-train gives torch's ``nn.init`` draws inside a forward in training and the
MindSpore side's ``ops`` draws the same pseudo-noise.

Generated matrix: layer kind (Linear, LayerNorm, Conv1d, Conv2d, Embedding) x where it is built (forward, a
module-level helper forward calls, a method) x use (called at once, bound to a local then called) x mode
(the step compiled, or uncompiled because the forward also reads a value to the host). Statically: every
case; trained by torch and by the conversion with compare-train (SAME): a slice, every case with
TORCH2MS_FULL_MATRIX=1.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.convert import convert_tree

# kind -> (torch constructor, its use on `h` ([batch, 8]) with {f} the layer, the runtime function)
KINDS = {
    "linear": ("nn.Linear(8, 8)", "{f}(h)", "fresh_linear"),
    "layer_norm": ("nn.LayerNorm(8)", "{f}(h * 3.0)", "fresh_layer_norm"),
    "conv1d": ("nn.Conv1d(2, 2, 3, padding=1)", "{f}(h.view(-1, 2, 4)).view(-1, 8)", "fresh_conv1d"),
    "conv2d": ("nn.Conv2d(2, 2, 3, padding=1, bias=False)", "{f}(h.view(-1, 2, 2, 2)).view(-1, 8)", "fresh_conv2d"),
    "embedding": (
        "nn.Embedding(10, 8, padding_idx=0)",
        "h + {f}((h[:, :2] > 0).long() * 3 + 1).sum(1)",
        "fresh_embedding",
    ),
}
WHERE = ["forward", "helper", "method"]
USE = ["call", "local"]
MODES = ["graph", "pynative"]
JIT = re.compile(r"^\s*@(ms|mindspore)\.jit\s*$", re.M)


def _body(kind: str, use: str) -> list[str]:
    ctor, apply, _ = KINDS[kind]
    if use == "call":
        return [f"h = {apply.format(f=ctor)}"]
    return [f"layer = {ctor}", f"h = {apply.format(f='layer')}"]


def script(kind: str, where: str, use: str, mode: str) -> str:
    body = _body(kind, use)
    forward = ["h = torch.tanh(self.fc(x))"]
    helper = method = ""
    if where == "forward":
        forward += body
    elif where == "helper":
        forward.append("h = fresh(h)")
        helper = "def fresh(h):\n    " + "\n    ".join([*body, "return h"]) + "\n"
    else:
        forward.append("h = self.fresh(h)")
        method = "    def fresh(self, h):\n        " + "\n        ".join([*body, "return h"]) + "\n"
    if mode == "pynative":
        forward.append("self.kept.append(h.sum().item())")  # host code: the step runs uncompiled
    forward.append("return self.out(h)")
    fwd = "\n        ".join(forward)
    return f"""import numpy as np
import torch
import torch.nn as nn


{helper}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 8)
        self.out = nn.Linear(8, 3)
        self.kept = []

    def forward(self, x):
        {fwd}

{method}

torch.manual_seed(0)
rng = np.random.RandomState(0)
X = torch.from_numpy(rng.randn(32, 5).astype(np.float32))
Y = torch.from_numpy(rng.randint(0, 3, 32).astype(np.int64))
model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for epoch in range(2):
    for i in range(0, 32, 8):
        optimizer.zero_grad()
        out = model(X[i:i + 8])
        loss = criterion(out, Y[i:i + 8])
        loss.backward()
        optimizer.step()
"""


CASES = list(itertools.product(KINDS, WHERE, USE, MODES))


def _convert(root: Path, source: str) -> str:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source)
    convert_tree(str(root / "src"), str(root / "out"))
    return (root / "out" / "train.py").read_text()


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[tuple[str, str, str, str], str]:
    """Every case of the matrix, converted as one project (one file per case): one convert for the matrix."""
    root = tmp_path_factory.mktemp("fresh")
    (root / "src").mkdir()
    for i, case in enumerate(CASES):
        (root / "src" / f"case_{i}.py").write_text(script(*case))
    convert_tree(str(root / "src"), str(root / "out"))
    return {case: (root / "out" / f"case_{i}.py").read_text() for i, case in enumerate(CASES)}


@pytest.mark.parametrize(("kind", "where", "use", "mode"), CASES, ids=["-".join(c) for c in CASES])
def test_layer_built_where_used_becomes_a_runtime_function(converted, kind, where, use, mode):
    out = converted[(kind, where, use, mode)]
    name = KINDS[kind][2]
    assert f"{name}(" in out and "not converted" not in out, out
    assert "class TrainStep" in out, out
    # the layer built where it is used keeps the step compiled; only the host read makes it eager
    assert bool(JIT.search(out)) == (mode == "graph"), out


def test_layers_kept_on_the_module_are_left_as_cells(tmp_path):
    """Built in ``__init__``, bound to a local that is stored or returned, or with an argument the runtime
    does not take: the KB's Cell, as before."""
    src = script("linear", "method", "local", "graph")
    src = src.replace(
        "        layer = nn.Linear(8, 8)\n", "        layer = nn.Linear(8, 8)\n        self.last = layer\n"
    )
    src = src.replace(
        "        self.kept = []\n", "        self.kept = []\n        self.extra = nn.Linear(8, 8)(torch.zeros(1, 8))\n"
    )
    src += "\nc = nn.Conv2d(2, 2, 3, padding=1, padding_mode='reflect')(torch.zeros(1, 2, 4, 4))\n"
    out = _convert(tmp_path, src)
    assert re.search(r"layer = (ms\.)?nn\.Dense\(8, 8\)", out), out
    assert "self.extra = fresh_linear(8, 8)" in out, out  # called at once: never kept, wherever it is
    assert "fresh_conv2d" not in out, out


DIFFERENTIAL = [
    ("linear", "forward", "call", "graph"),
    ("linear", "method", "local", "pynative"),
    ("layer_norm", "forward", "call", "pynative"),
    ("conv1d", "helper", "local", "graph"),
    ("conv2d", "method", "call", "graph"),
    ("embedding", "helper", "call", "pynative"),
    ("embedding", "forward", "local", "graph"),
]
FULL = os.environ.get("TORCH2MS_FULL_MATRIX") == "1"


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(
    ("kind", "where", "use", "mode"),
    CASES if FULL else DIFFERENTIAL,
    ids=["-".join(c) for c in (CASES if FULL else DIFFERENTIAL)],
)
def test_layer_built_where_used_trains_as_torch(tmp_path, kind, where, use, mode):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = script(kind, where, use, mode)
    (tmp_path / "train.py").write_text(source)
    _convert(tmp_path / "c", source)
    rep = compare_train(
        str(tmp_path / "train.py"),
        str(tmp_path / "c" / "out" / "train.py"),
        steps=5,
        out_dir=str(tmp_path / "cmp"),
        cwd=str(tmp_path),
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 5
    # the layer's draws were made alike on both sides: torch's nn.init inside forward and the runtime's ops
    drawn = " ".join(c for c in rep.conditions if "pseudo-noise" in c)
    # (a compiled step counts no draw on MindSpore's side: torch's count says the layer drew the pseudo-noise)
    want = {"layer_norm": [], "embedding": ["Tensor.normal_"]}.get(kind, ["Tensor.uniform_"])
    assert all(w in drawn for w in want), rep.conditions
