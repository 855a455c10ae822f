"""Issue 23 §1 (same inputs), item (a): ``DataLoader(..., shuffle=True, generator=g)`` and the other samplers
that take ``generator=``.

Before, the converter dropped ``generator=`` with a review mark (``RandomSampler(ds, generator=g)`` dropped it
silently): the converted loader shuffled from numpy's global stream, so a script that seeds its own generator to
fix the order got another order on every run. Now the loader shuffles as torch's does, with a RandomSampler over
the converted generator (torch2ms.runtime.RandomSampler: each epoch's permutation from a seed the generator gives
when the sampler is made and the epoch's number, so MindSpore's pipeline threads, which start the next epoch
ahead, cannot change the order), and compare-train serves torch's batches, in torch's order.

Generated matrix: the spelling (a generator in a variable, ``torch.Generator().manual_seed(s)`` inline,
``RandomSampler(ds, generator=g)``, ``random_split(..., generator=g)`` then a shuffled loader over a part, a
shuffle flag held in a name) × where the loader is made (a function, the top level). Static: no review mark, no
torch left, the generator reaches the sampler. Run (MindSpore alone): the same order on every run of the script,
a permutation each epoch, another order for another seed. compare-train (real torch, real MindSpore): SAME on each
spelling, both places covered.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from matrix_support import covering

from torch2ms.convert import convert_source, convert_tree

sys.path.insert(0, str(Path(__file__).parent))
from requires_support import require_modules

N = 24
SPELLINGS = {
    "variable": (
        "g = torch.Generator()\ng.manual_seed(SEED)\n",
        "DataLoader(data, batch_size=4, shuffle=True, generator=g)",
    ),
    "inline": ("", "DataLoader(data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(SEED))"),
    "sampler": (
        "g = torch.Generator().manual_seed(SEED)\n",
        "DataLoader(data, batch_size=4, sampler=RandomSampler(data, generator=g))",
    ),
    "split": (
        "g = torch.Generator().manual_seed(SEED)\ndata, rest = random_split(data, [16, 8], generator=g)\n",
        "DataLoader(data, batch_size=4, shuffle=True, generator=g)",
    ),
    "flag": (
        "g = torch.Generator().manual_seed(SEED)\nSHUFFLE = True\n",
        "DataLoader(data, batch_size=4, shuffle=SHUFFLE, generator=g)",
    ),
}
PLACES = ("function", "module")

HEAD = """import torch
import torch.nn as nn
from torch.utils.data import {names}

N = 24
SEED = 7


class Data(Dataset):
    def __init__(self):
        self.x = torch.stack([torch.arange(N) / N, torch.linspace(-1.0, 1.0, N)], 1)

    def __len__(self):
        return N

    def __getitem__(self, i):
        return self.x[i], self.x[i].sum(0, keepdim=True).sin()

"""
TRAIN = """torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
seen = []
for epoch in range(2):
    for xb, yb in loader:
        seen.append(xb[:, 0].tolist())
        optimizer.zero_grad()
        loss = ((model(xb) - yb) ** 2).mean()
        loss.backward()
        optimizer.step()
print("ORDER", [round(v * N) for batch in seen for v in batch])
"""


def script(spelling: str, place: str) -> str:
    setup, loader = SPELLINGS[spelling]
    body = "data = Data()\n" + setup + f"loader = {loader}\n" + TRAIN
    if place == "function":
        body = "def main():\n" + "".join(f"    {ln}\n" if ln else "\n" for ln in body.splitlines()) + "\n\nmain()\n"
    names = ["DataLoader", "Dataset"] + [n for n in ("RandomSampler", "random_split") if n in body]
    return HEAD.replace("{names}", ", ".join(names)) + body


CASES = list(itertools.product(SPELLINGS, PLACES))


@pytest.mark.parametrize("spelling, place", CASES)
def test_a_loader_shuffled_by_a_generator_converts_without_a_mark(spelling, place):
    res = convert_source(script(spelling, place))
    assert not res.error and "not converted" not in res.code, res.code
    assert not [ln for ln in res.code.splitlines() if ln.startswith(("import torch", "from torch "))], res.code
    assert not [ln for ln in res.code.splitlines() if ln.startswith("from torch.")], res.code
    assert "review" not in res.code and not [c for c in res.changes if c.action == "review"], res.changes
    loader = next(ln for ln in res.code.splitlines() if "loader = " in ln)
    assert "generator=" in loader and "sampled_dataset(" in loader, loader


def _orders(ms_dir: Path, seeds: tuple[int, ...]) -> list[list[int]]:
    """The converted script run with MindSpore alone (torch cannot be imported), once per seed."""
    blocker = ms_dir.parent / "no_torch"
    (blocker / "torch").mkdir(parents=True, exist_ok=True)
    (blocker / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    text = (ms_dir / "train.py").read_text(encoding="utf-8")
    for k, seed in enumerate(seeds):  # the same script, its seed changed (MindSpore compiles from the file)
        (ms_dir / f"train_{k}.py").write_text(text.replace("SEED = 7", f"SEED = {seed}"), encoding="utf-8")
    runner = (
        "import io, contextlib, json, runpy, sys\n"
        f"sys.path.insert(0, {str(blocker)!r})\n"
        "out = []\n"
        f"for k in range({len(seeds)}):\n"
        "    buf = io.StringIO()\n"
        "    with contextlib.redirect_stdout(buf):\n"
        "        runpy.run_path(f'train_{k}.py', run_name='__main__')\n"
        "    out.append(json.loads(buf.getvalue().split('ORDER', 1)[1].strip()))\n"
        "print('ORDERS', json.dumps(out))\n"
    )
    run = subprocess.run([sys.executable, "-c", runner], cwd=ms_dir, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.split("ORDERS", 1)[1])


@pytest.mark.slow
@pytest.mark.parametrize("spelling, place", covering(CASES))
def test_the_converted_order_is_reproducible_under_a_seeded_generator(spelling, place, tmp_path):
    require_modules("mindspore")
    src = tmp_path / "t" / "train.py"
    src.parent.mkdir()
    src.write_text(script(spelling, place), encoding="utf-8")
    convert_tree(str(src.parent), str(tmp_path / "m"))
    first, again, third, other = _orders(tmp_path / "m", (7, 7, 7, 8))
    size = 16 if spelling == "split" else N
    assert first == again == third, (first, again, third)  # the same order on every run
    epochs = [first[:size], first[size:]]
    for epoch in epochs:  # each epoch a permutation of the loader's samples
        assert len(epoch) == size and len(set(epoch)) == size, epoch
    if spelling != "split":
        assert sorted(epochs[0]) == list(range(N)), epochs[0]
    assert epochs[0] != epochs[1], epochs  # a new order each epoch
    assert other != first, other  # another seed, another order


COMPARED = [
    ("variable", "function"),
    ("inline", "module"),
    ("sampler", "function"),
    ("split", "module"),
    ("flag", "function"),
]


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("spelling, place", COMPARED)
def test_compare_train_says_same_for_a_generator_shuffled_loader(spelling, place, tmp_path):
    require_modules("torch", "mindspore")
    from torch2ms.trainrun import compare_train

    src = tmp_path / "t" / "train.py"
    src.parent.mkdir()
    src.write_text(script(spelling, place), encoding="utf-8")
    convert_tree(str(src.parent), str(tmp_path / "m"))
    rep = compare_train(
        str(src), str(tmp_path / "m" / "train.py"), steps=6, out_dir=str(tmp_path / "o"), cwd=str(tmp_path)
    )
    assert rep.error is None, rep.error
    assert len(rep.rows) == 6, rep.rows
    assert rep.status == "same", (rep.first_divergence, rep.findings, rep.conditions)
    assert all(r["same_inputs"] for r in rep.rows), rep.rows
