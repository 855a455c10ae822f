"""Issue 23 §1, class "random draws everywhere": a converted script must get the same random values
on both sides wherever it draws them, and the report names any draw that could not be made identical.

Generated scripts draw from every random source — torch.randint / randint_like / randn / rand /
randperm, numpy's global stream, Python's random — at every place a script draws: at module level
before the model, after the model and optimizer before the loop, in the loop, inside the model's
forward (which the conversion compiles: ops.randint inside a jitted step, in PyNative and in GRAPH
mode), and in a Dataset's __getitem__ behind a shuffling DataLoader (MindSpore's pipeline calls it too:
those draws are not the script's, as torch's loader draws are not); × both MindSpore modes. Each is
converted with `torch2ms convert` and run through compare-train (real torch, real MindSpore): SAME,
with no draw left unmatched. The conversion moves a loop's draws into the compiled step as it does the
forward's, and there numpy's and Python's streams cannot be drawn per step (MindSpore evaluates them
once, at compile time): such a draw is named, not called drift; those two places draw torch's sources."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from matrix_support import product

from torch2ms.convert import convert_tree

pytestmark = [pytest.mark.slow, pytest.mark.differential]

HEAD = """import random

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)
random.seed(0)


def torch_draws(n):
    return torch.cat(
        [
            torch.randint(0, 5, (n, 1)).float(),
            torch.randn(n, 1),
            torch.rand(n, 1),
            torch.randint_like(torch.zeros(n, 1), 0, 3),
        ],
        1,
    )


def host_draws(n):
    return torch.cat(
        [
            torch.randperm(n).reshape(n, 1).float(),
            torch.from_numpy(np.random.rand(n, 1).astype(np.float32)),
            torch.ones(n, 1) * random.random(),
        ],
        1,
    )


def all_draws(n):
    return torch.cat([torch_draws(n), host_draws(n)], 1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(7, 2)

    def forward(self, x):
{forward}


"""
PLAIN_FORWARD = "        return self.fc(x)"
DRAWING_FORWARD = "        return self.fc(torch.cat([x[:, :3], torch_draws(x.shape[0])], 1))"
HOST_FORWARD = "        return self.fc(x + torch.from_numpy(np.random.rand(1, 7).astype(np.float32)))"
LOOP = """
y = torch.arange(16) % 2
for step in range(4):
    x = {x}
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""
LOADER = """
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return all_draws(1)[0] + i, i % 2


loader = DataLoader(Items(), batch_size=8, shuffle=True)
for epoch in range(2):
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
BUILD = "model = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
PLACES = ("module_level", "before_loop", "in_loop", "in_forward", "in_getitem")
MODES = ("pynative", "graph")


def draws_script(place: str, forward: str = "") -> str:
    forward = forward or (DRAWING_FORWARD if place == "in_forward" else PLAIN_FORWARD)
    text = HEAD.replace("{forward}", forward)
    if place == "module_level":
        text += "x0 = all_draws(16)\n"
    text += BUILD
    if place == "before_loop":
        text += "x0 = all_draws(16)\n"
    if place == "in_getitem":
        return text + LOADER
    if place == "in_forward":
        text += "x0 = torch.ones(16, 7)\n"
    # the conversion moves the loop's draws into the compiled step, as the forward's: torch's sources there
    in_loop = "torch.cat([torch_draws(16), torch.ones(16, 3)], 1)"
    return text + LOOP.replace("{x}", in_loop if place == "in_loop" else "x0")


def convert_and_run(tmp_path: Path, name: str, source: str, steps: int, **kw):
    from torch2ms.trainrun import compare_train

    src = tmp_path / "torch" / f"{name}.py"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(source, encoding="utf-8")
    convert_tree(str(src), str(tmp_path / "ms"))
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    ms = tmp_path / "ms" / f"{name}.py"
    return compare_train(str(src), str(ms), steps=steps, out_dir=str(out), cwd=str(tmp_path), **kw)


def _facts(rep) -> str:
    return repr((rep.error, rep.findings, rep.first_divergence, rep.conditions, rep.rows[:2]))


@pytest.mark.parametrize(("place", "mode"), product(PLACES, MODES, pairs=False))
def test_every_random_source_at_every_place_in_every_mode_is_the_same(tmp_path, place, mode):
    rep = convert_and_run(tmp_path, f"draws_{place}", draws_script(place), steps=4, mode=mode)
    assert rep.status == "same", _facts(rep)
    assert len(rep.rows) == 4 and max(r["rel"] for r in rep.rows) <= 1e-5, _facts(rep)
    assert not [f for f in rep.findings if f["kind"] in ("draws", "streams")], rep.findings
    assert all(r["same_streams"] is not False for r in rep.rows), [r["same_streams"] for r in rep.rows]
    if place == "in_forward":  # the forward's integer draws: the shared pseudo-integers, said so
        shared = next(c for c in rep.conditions if c.startswith("random draws during training"))
        assert "torch.randint ×4" in shared and "torch.randint_like ×4" in shared, shared


@pytest.mark.parametrize("mode", MODES)
def test_a_numpy_draw_inside_a_compiled_forward_is_named(tmp_path, mode):
    rep = convert_and_run(tmp_path, "host_forward", draws_script("in_forward", HOST_FORWARD), steps=4, mode=mode)
    if mode == "pynative":  # the converter writes the step uncompiled (a host draw in forward): the same draws
        assert rep.status == "same", _facts(rep)
        return
    # GRAPH_MODE compiles the forward whatever the step says: the draw cannot be matched, and is named
    assert rep.status == "different", _facts(rep)
    streams = [f["message"] for f in rep.findings if f["kind"] == "streams"]
    assert streams and "numpy" in streams[0], rep.findings
    assert rep.first_divergence and rep.first_divergence["cause"] != "numerical drift", _facts(rep)


GENERATOR = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
g = torch.Generator().manual_seed(5)
data = torch.randn(32, 7)
order = torch.randperm(32, generator=g)  # module level
model = nn.Linear(7, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
sub = torch.randperm(32, generator=g)[:16]  # before the loop
x0 = data[order][:16] + data[sub]
y = torch.arange(16) % 2
loader = DataLoader(TensorDataset(x0, y), batch_size=8, shuffle=True, generator=g)
for epoch in range(2):
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize("mode", MODES)
def test_draws_through_a_torch_generator_are_replayed(tmp_path, mode):
    # the conversion draws them from the runtime's numpy-backed Generator (another algorithm): replayed,
    # and the DataLoader's generator-driven shuffle through the replayed batches
    rep = convert_and_run(tmp_path, "generator", GENERATOR, steps=4, mode=mode)
    assert rep.status == "same", _facts(rep)
    assert not [f for f in rep.findings if f["kind"] == "draws"], rep.findings
    replayed = next(c for c in rep.conditions if c.startswith("random draws replayed"))
    assert "ops.randperm(generator=) ×2" in replayed, replayed
