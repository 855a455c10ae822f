"""Issue 22: one backward, several optimizers stepped after it (``enc_opt.step(); dec_opt.step()``).

An encoder/decoder loop at module level or in a function was converted to the single fused TrainStep of
the first optimizer; the others' ``zero_grad()`` went and their ``step()`` stayed: "'SGD' object has no
attribute 'step'" after the first step (seen while testing seq2seq-style loops). Such a loop is the general
step's now, which gives each optimizer its own gradients.

Generated matrix: how many optimizers and in which order they are cleared and stepped x where the loop lives
(module level, a function, a method of a Trainer class). Statically no ``.step()`` / ``.zero_grad()`` call
is left and every optimizer is called with gradients; a slice trained by torch and by the conversion with
compare-train: SAME.
"""

from __future__ import annotations

import itertools
import re
import textwrap
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.convert import convert_tree

# spelling -> (optimizer names in zero_grad order, in step order)
SPELLINGS = {
    "two_same_order": (["enc_opt", "dec_opt"], ["enc_opt", "dec_opt"]),
    "two_reversed": (["enc_opt", "dec_opt"], ["dec_opt", "enc_opt"]),
    "three": (["enc_opt", "mid_opt", "dec_opt"], ["enc_opt", "mid_opt", "dec_opt"]),
}
PLACES = ["module", "function", "trainer"]
OPTS = {
    "enc_opt": "torch.optim.SGD(encoder.parameters(), lr=0.1, momentum=0.9)",
    "mid_opt": "torch.optim.Adam(mid.parameters(), lr=0.01)",
    "dec_opt": "torch.optim.SGD(decoder.parameters(), lr=0.05)",
}

HEAD = """
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
rng = np.random.RandomState(0)
X = torch.from_numpy(rng.randn(6, 8, 4).astype(np.float32))
Y = torch.from_numpy(rng.randn(6, 8, 2).astype(np.float32))
encoder = nn.Linear(4, 6)
mid = nn.Linear(6, 6)
decoder = nn.Linear(6, 2)
criterion = nn.MSELoss()
"""


def script(spelling: str, place: str) -> str:
    zeros, steps = SPELLINGS[spelling]
    names = list(dict.fromkeys(zeros))
    forward = "out = decoder(torch.tanh(mid(encoder(X[i]))))" if "mid_opt" in names else "out = decoder(encoder(X[i]))"
    body = [*(f"{o}.zero_grad()" for o in zeros), forward, "loss = criterion(out, Y[i])", "loss.backward()"]
    body += [f"{o}.step()" for o in steps]
    opts = [f"{o} = {OPTS[o]}" for o in names]
    loop = "for epoch in range(2):\n    for i in range(6):\n" + textwrap.indent("\n".join(body), " " * 8)
    if place == "function":
        return HEAD + "\n".join(opts) + "\n\n\ndef fit():\n" + textwrap.indent(loop, "    ") + "\n\n\nfit()\n"
    if place == "trainer":
        own = [f"self.{o} = {o}" for o in names]
        method = loop.replace("enc_opt", "self.enc_opt").replace("mid_opt", "self.mid_opt")
        method = method.replace("dec_opt", "self.dec_opt")
        cls = "class Trainer:\n    def __init__(self):\n" + textwrap.indent("\n".join(own), " " * 8)
        cls += "\n\n    def fit(self):\n" + textwrap.indent(method, " " * 8)
        return HEAD + "\n".join(opts) + "\n\n\n" + cls + "\n\n\nTrainer().fit()\n"
    return HEAD + "\n".join(opts) + "\n" + loop + "\n"


CASES = list(itertools.product(SPELLINGS, PLACES))


def _convert(root: Path, source: str) -> str:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source)
    convert_tree(str(root / "src"), str(root / "out"))
    return (root / "out" / "train.py").read_text()


@pytest.mark.parametrize(("spelling", "place"), CASES, ids=["-".join(c) for c in CASES])
def test_every_optimizer_updates_with_its_gradients(tmp_path, spelling, place):
    out = _convert(tmp_path, script(spelling, place))
    code = "\n".join(line.split("#")[0] for line in out.splitlines())
    assert "not converted" not in out, out
    assert not re.search(r"\.(step|zero_grad)\(\)", code), out
    for o in dict.fromkeys(SPELLINGS[spelling][0]):
        assert re.search(rf"\b{o}\(grads_\w+\)", code), (o, out)


DIFFERENTIAL = [("two_same_order", "module"), ("two_reversed", "function"), ("three", "trainer")]


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(("spelling", "place"), DIFFERENTIAL, ids=["-".join(c) for c in DIFFERENTIAL])
def test_several_optimizers_train_as_torch(tmp_path, spelling, place):
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
    assert len(rep.rows) == 6 * len(set(SPELLINGS[spelling][0]))  # a row per optimizer and step
