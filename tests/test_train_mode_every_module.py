"""Issue 22 §2, class 1: the inserted ``set_train(True)`` must reach every module the step trains.

pytorch/tutorials' seq2seq ``train(input, target, encoder, decoder, encoder_optimizer, decoder_optimizer, ...)``
gets its optimizers as arguments: no optimizer links to a module there, so the converter set only the first
module the forward calls (``encoder.set_train(True)``) and the decoder, whose Dropout torch runs in training
mode, ran in inference mode. Every module the forward calls by name (a name the file uses as a module, whose
mode it never sets) is put in training mode now; a network the file puts in ``eval()`` somewhere is left as
the file leaves it.

Generated matrix: how the forward calls the second module (one after the other, nested, in a Python loop)
x where the step lives (a per-step function taking the optimizers, a loop at module level with two
optimizers, a loop in a function with one optimizer over both modules' parameters). Statically both modules
get ``set_train(True)`` before the step; on a decoder with BatchNorm (its statistics differ in the two modes),
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

CALLS = {
    "sequential": ["h = encoder(X[i])", "out = decoder(h)"],
    "nested": ["out = decoder(encoder(X[i]))"],
    "python_loop": ["h = encoder(X[i])", "for _ in range(2):", "    h = h + decoder(h)", "out = h"],
}
PLACES = ["step_function", "module_two_optimizers", "function_one_optimizer"]

HEAD = """
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
rng = np.random.RandomState(0)
X = torch.from_numpy(rng.randn(6, 8, 4).astype(np.float32))
Y = torch.from_numpy(rng.randn(6, 8, 4).astype(np.float32))
encoder = nn.Linear(4, 4)
decoder = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Tanh())
criterion = nn.MSELoss()
"""


def script(calls: str, place: str) -> str:
    forward = [*CALLS[calls], "loss = criterion(out, Y[i])"]
    if place == "function_one_optimizer":
        opts = ["optimizer = torch.optim.SGD(list(encoder.parameters()) + list(decoder.parameters()), lr=0.1)"]
        zero, step = ["optimizer.zero_grad()"], ["optimizer.step()"]
    else:
        opts = [
            "enc_opt = torch.optim.SGD(encoder.parameters(), lr=0.1)",
            "dec_opt = torch.optim.SGD(decoder.parameters(), lr=0.1)",
        ]
        zero, step = ["enc_opt.zero_grad()", "dec_opt.zero_grad()"], ["enc_opt.step()", "dec_opt.step()"]
    body = [*zero, *forward, "loss.backward()", *step]
    if place == "step_function":  # seq2seq's train(): the modules and their optimizers passed in
        fn = "def train(i, encoder, decoder, enc_opt, dec_opt):\n" + textwrap.indent(
            "\n".join([*body, "return loss.item()"]), "    "
        )
        loop = "for epoch in range(2):\n    for i in range(6):\n        train(i, encoder, decoder, enc_opt, dec_opt)"
        return HEAD + "\n".join(opts) + "\n\n\n" + fn + "\n\n\n" + loop + "\n"
    loop = "for epoch in range(2):\n    for i in range(6):\n" + textwrap.indent("\n".join(body), " " * 8)
    if place == "function_one_optimizer":
        loop = "def fit():\n" + textwrap.indent(loop, "    ") + "\n\n\nfit()"
    return HEAD + "\n".join(opts) + "\n" + loop + "\n"


CASES = list(itertools.product(CALLS, PLACES))


def _convert(root: Path, source: str) -> str:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source)
    convert_tree(str(root / "src"), str(root / "out"))
    return (root / "out" / "train.py").read_text()


def _set_train(out: str) -> list[str]:
    return re.findall(r"^\s*(\w+)\.set_train\(True\)", out, re.M)


@pytest.mark.parametrize(("calls", "place"), CASES, ids=["-".join(c) for c in CASES])
def test_every_called_module_starts_in_training_mode(tmp_path, calls, place):
    out = _convert(tmp_path, script(calls, place))
    assert "def forward_fn" in out and "not converted" not in out, out
    assert sorted(set(_set_train(out))) == ["decoder", "encoder"], out
    assert out.index("decoder.set_train(True)") < out.index("grad_fn(")


@pytest.mark.parametrize("place", PLACES)
def test_a_module_the_file_puts_in_eval_is_left_alone(tmp_path, place):
    """A frozen network (``decoder.eval()`` where it is built) keeps the mode the file gives it."""
    src = script("sequential", place).replace(
        "criterion = nn.MSELoss()\n", "criterion = nn.MSELoss()\ndecoder.eval()\n"
    )
    assert "decoder.eval()" in src
    out = _convert(tmp_path, src)
    assert "decoder" not in _set_train(out), out


DIFFERENTIAL = [
    ("sequential", "step_function"),
    ("nested", "module_two_optimizers"),
    ("python_loop", "function_one_optimizer"),
]


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(("calls", "place"), DIFFERENTIAL, ids=["-".join(c) for c in DIFFERENTIAL])
def test_both_modules_train_as_torch(tmp_path, calls, place):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = script(calls, place)
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
    assert len(rep.rows) == (6 if place == "function_one_optimizer" else 12)  # a row per optimizer and step
