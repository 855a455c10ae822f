"""Issue 22: a name the forward binds on one path only, returned by forward_fn (UnboundLocalError).

pytorch/tutorials' seq2seq ``train()`` binds ``topi`` only in the branch without teacher forcing (and ``ei``
only when the input is not empty); the converted forward_fn returned every name the forward assigned and
read itself, so the other branch raised "cannot access local variable 'topi'". A name the forward reads
only itself stays a local of forward_fn now; what the code around reads, or a value carried to the next
call, still comes back.

Generated matrix: the partial binding's spelling (an ``if`` without ``else``, the ``else`` branch only, a
loop that runs zero times, a ``break`` before the binding, a ``while``) x where the step lives (module
level, a function with the loop, a per-step function taking the optimizer like seq2seq's ``train()``, two
optimizers). Statically forward_fn never returns the partial name; a slice trained by torch and by the
conversion with compare-train: SAME.
"""

from __future__ import annotations

import ast
import itertools
import textwrap
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.convert import convert_tree

# spelling -> statements after `out = model(x)` / `loss = criterion(out, y)`; `i` is the step number
SPELLINGS = {
    "if": ["if i % 2 == 0:", "    extra = out.pow(2).mean()", "    loss = loss + 0.1 * extra"],
    "else_only": [
        "if i % 2:",
        "    loss = loss * 1.0",
        "else:",
        "    extra = out.abs().mean()",
        "    loss = loss + extra",
    ],
    "zero_loop": ["for k in range(i % 2):", "    extra = out[:, k].mean()", "    loss = loss + 0.1 * extra"],
    "break": [
        "for k in range(3):",
        "    if k == i % 3:",
        "        break",
        "    extra = out[:, k].pow(2).mean()",
        "    loss = loss + 0.1 * extra",
    ],
    "while": ["t = 0", "while t < i % 2:", "    extra = out.sum() * 0.01", "    loss = loss + extra", "    t += 1"],
}
PLACES = ["module", "function", "step_function", "two_optimizers"]

HEAD = """
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
rng = np.random.RandomState(0)
X = torch.from_numpy(rng.randn(6, 8, 5).astype(np.float32))
Y = torch.from_numpy(rng.randint(0, 3, (6, 8)).astype(np.int64))
model = nn.Linear(5, 3)
head = nn.Linear(3, 3)
criterion = nn.CrossEntropyLoss()
"""


def script(spelling: str, place: str) -> str:
    partial = SPELLINGS[spelling]
    two = place == "two_optimizers"
    forward = ["out = head(model(X[i]))" if two else "out = model(X[i])", "loss = criterion(out, Y[i])", *partial]
    opts = ["optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)"]
    zero, step = ["optimizer.zero_grad()"], ["optimizer.step()"]
    if two:
        opts.append("head_optimizer = torch.optim.Adam(head.parameters(), lr=0.01)")
        zero.append("head_optimizer.zero_grad()")
        step.append("head_optimizer.step()")
    body = [*zero, *forward, "loss.backward()", *step]
    if place == "step_function":  # seq2seq's train(): one step per call, the optimizer passed in
        fn = "def train(i, model, optimizer):\n" + textwrap.indent("\n".join([*body, "return loss.item()"]), "    ")
        loop = "for epoch in range(2):\n    for i in range(6):\n        train(i, model, optimizer)"
        return HEAD + "\n".join(opts) + "\n\n\n" + fn + "\n\n\n" + loop + "\n"
    loop = "for epoch in range(2):\n    for i in range(6):\n" + textwrap.indent("\n".join(body), " " * 8)
    if place == "function":
        loop = "def fit():\n" + textwrap.indent(loop, "    ") + "\n\n\nfit()"
    return HEAD + "\n".join(opts) + "\n" + loop + "\n"


CASES = list(itertools.product(SPELLINGS, PLACES))


def _convert(root: Path, source: str) -> str:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source)
    convert_tree(str(root / "src"), str(root / "out"))
    return (root / "out" / "train.py").read_text()


def _returned(out: str) -> set[str]:
    """Names the generated forward functions return."""
    names: set[str] = set()
    for fn in ast.walk(ast.parse(out)):
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith("forward_fn"):
            for r in ast.walk(fn):
                if isinstance(r, ast.Return) and r.value is not None:
                    names |= {n.id for n in ast.walk(r.value) if isinstance(n, ast.Name)}
    return names


@pytest.mark.parametrize(("spelling", "place"), CASES, ids=["-".join(c) for c in CASES])
def test_partial_name_stays_local(tmp_path, spelling, place):
    out = _convert(tmp_path, script(spelling, place))
    assert "def forward_fn" in out and "not converted" not in out, out
    returned = _returned(out)
    assert "loss" in returned, out
    assert not returned & {"extra", "k", "t"}, out


def test_name_read_after_the_step_still_comes_back(tmp_path):
    """What the code around reads (``out`` printed after the step) is still returned next to the loss."""
    src = script("if", "module").replace(
        "        optimizer.step()\n", "        optimizer.step()\n        print(out[0])\n"
    )
    assert "print(out[0])" in src
    assert "out" in _returned(_convert(tmp_path, src))


def python_values_script(place: str) -> str:
    """The forward's only values read after the step are Python ones (seq2seq's ``target_length``): an int
    from ``len()``, a bool, a float."""
    src = script("if", place)
    lines = ["n = len(Y[i])", "big = n > 4", "scale = 1.0 / n"]
    src = src.replace(
        "loss = criterion(out, Y[i])\n",
        "loss = criterion(out, Y[i])\n" + "".join(f"{{indent}}{line}\n" for line in lines),
        1,
    )
    return src


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("place", PLACES)
def test_python_values_next_to_the_loss_train_as_torch(tmp_path, place):
    """MindSpore's has_aux refused a forward whose extra outputs were all Python values ("should be multi
    output"): they come back as one tuple next to the loss now."""
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    base = script("if", place)
    indent = next(line[: len(line) - len(line.lstrip())] for line in base.splitlines() if "loss = criterion(" in line)
    read = "print(n, big, scale * loss.item())"
    source = python_values_script(place).replace("{indent}", indent)
    step_line = next(line for line in source.splitlines() if line.strip() == "loss.backward()")
    source = source.replace(step_line, step_line + "\n" + indent + read, 1)
    (tmp_path / "train.py").write_text(source)
    out = _convert(tmp_path / "c", source)
    assert "def forward_fn" in out and "not converted" not in out, out
    rep = compare_train(
        str(tmp_path / "train.py"),
        str(tmp_path / "c" / "out" / "train.py"),
        steps=6,
        out_dir=str(tmp_path / "cmp"),
        cwd=str(tmp_path),
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)


DIFFERENTIAL = [
    ("if", "step_function"),
    ("zero_loop", "two_optimizers"),
    ("break", "module"),
    ("else_only", "function"),
]


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(("spelling", "place"), DIFFERENTIAL, ids=["-".join(c) for c in DIFFERENTIAL])
def test_partial_name_trains_as_torch(tmp_path, spelling, place):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = script(spelling, place)
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
    assert len(rep.rows) == (12 if place == "two_optimizers" else 6)  # a row per optimizer and step
