"""Issue 26, determinism: the same input converts to the same bytes, on every run and with any number of
workers, and converting the output again changes no file.

Each property runs on a generated multi-file project (packages, relative and absolute imports between its
files, models, a training script, a script in a sub-folder, code left marked, text that is not Python,
non-ASCII) and on a few repositories of the real-code kit, read from ../shared/realcode at test time.
What may differ between runs is only what names the run itself: the report and line map name their
OUT folder, and a second pass's report describes the code it was given. The second pass keeps the first
pass's layer map and line map (they describe the torch source, which the second pass no longer sees).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from requires_support import CORPUS, require_kit

from torch2ms import cli
from torch2ms.convert import convert_tree

# The run's own records: they name the output folder, or (in a second pass) describe converted code.
RECORDS = {"torch2ms-report.json", "torch2ms-report.md", "torch2ms-linemap.json", "torch2ms_layers.json"}
KIT_REPOS = ["karpathy/minGPT", "kuangliu/pytorch-cifar", "openai/whisper"]

MODEL = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

from {up}common import scale


class {name}(nn.Module):
    """Layer {i}: größe {width} — 模型."""

    def __init__(self, width: int = {width}):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.norm = nn.BatchNorm1d(width)
        self.drop = nn.Dropout({drop})

    def forward(self, x):
        y = self.fc(x).relu().view(x.size(0), -1)  # a chain with a comment
        y = F.softmax(self.norm(y), dim=-1) * scale({i})
        return self.drop(torch.cat([y, x], dim=1)).sum(dim=1, keepdim=True)
'''
COMMON = "import torch\n\n\ndef scale(i):\n    return torch.tensor(float(i)).sqrt().item()\n"
TRAIN = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

from {pkg}.{sub}.m0 import {first}


def main(steps: int = 2):
    torch.manual_seed(0)
    model = {first}()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = TensorDataset(torch.randn(8, {width}), torch.randint(0, 2, (8,)))
    for x, y in DataLoader(data, batch_size=4, shuffle=True):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
"""
LEFT_MARKED = "import torch\n\n\ndef odd(x):\n    return torch.not_an_api(x).cuda()\n"


def generated_project(root: Path, seed: int = 26, packages: int = 3, models: int = 4) -> Path:
    """A project of ``packages`` × ``models`` model files plus the files around them (a fixed seed)."""
    rng = random.Random(seed)
    pkg = root / "proj" / "mylib"
    (pkg / "__init__.py").parent.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .common import scale\n", encoding="utf-8")
    (pkg / "common.py").write_text(COMMON, encoding="utf-8")
    (pkg / "odd.py").write_text(LEFT_MARKED, encoding="utf-8")
    first = ""
    for p in range(packages):
        sub = pkg / f"sub{p}"
        sub.mkdir()
        (sub / "__init__.py").write_text(f"from .m0 import Net{p}_0\n", encoding="utf-8")
        for m in range(models):
            name = f"Net{p}_{m}"
            first = first or name
            body = MODEL.format(
                up=rng.choice(["..", "mylib."]), name=name, i=m, width=8, drop=rng.choice([0.0, 0.1, 0.5])
            )
            (sub / f"m{m}.py").write_text(body, encoding="utf-8")
    scripts = root / "proj" / "scripts"
    scripts.mkdir()
    (scripts / "train.py").write_text(TRAIN.format(pkg="mylib", sub="sub0", first=first, width=8))
    (root / "proj" / "train.py").write_text(TRAIN.format(pkg="mylib", sub="sub0", first=first, width=8))
    (root / "proj" / "README.md").write_text("# notes — 笔记\n", encoding="utf-8")
    (root / "proj" / "config.yaml").write_text("lr: 0.001\n")
    return root / "proj"


@pytest.fixture(params=["generated", *(pytest.param(r, marks=pytest.mark.slow) for r in KIT_REPOS)])
def source(request, tmp_path: Path) -> Path:
    if request.param == "generated":
        return generated_project(tmp_path)
    return require_kit(CORPUS / request.param)


def files(root: Path, leave_out: set[str] = frozenset()) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in leave_out
    }


def _convert(src: Path, out: Path, jobs: int, *more: str) -> None:
    assert cli.main(["convert", str(src), "-o", str(out), "-j", str(jobs), *more]) in (0, 1)


def test_same_input_twice_gives_the_same_bytes(source: Path, tmp_path: Path):
    """Same input, same output folder, twice: every byte of every file the same, the records included."""
    out = tmp_path / "out"
    _convert(source, out, 1)
    first = files(out)
    assert any(name.endswith(".py") for name in first)
    _convert(source, out, 1)
    assert files(out) == first


@pytest.mark.parametrize("jobs", [2, 3])
def test_workers_give_the_same_bytes_as_one(source: Path, tmp_path: Path, jobs: int):
    """``-j N`` against ``-j 1``: the same files, byte for byte; the reports say the same of each file."""
    _convert(source, tmp_path / "one", 1)
    _convert(source, tmp_path / "many", jobs)
    one, many = files(tmp_path / "one", RECORDS), files(tmp_path / "many", RECORDS)
    assert one.keys() == many.keys()
    assert [k for k in one if one[k] != many[k]] == []
    reports = [json.loads((tmp_path / n / "torch2ms-report.json").read_text("utf-8")) for n in ("one", "many")]
    assert reports[0]["files"] == reports[1]["files"] and reports[0]["summary"] == reports[1]["summary"]


def test_converting_the_output_again_changes_no_file(source: Path, tmp_path: Path):
    """The output converted as a project once more: no file changed, none added, none lost (the vendored
    torch2ms_runtime package included); only the second run's own records are its own."""
    once, twice = tmp_path / "once", tmp_path / "twice"
    _convert(source, once, 1)
    report = convert_tree(once, twice, jobs=1)
    assert not report.failed
    first, second = files(once, RECORDS), files(twice, RECORDS)
    assert sorted(set(first) ^ set(second)) == []
    assert [k for k in first if first[k] != second[k]] == []
    assert any("mindspore" in v.decode("utf-8", "replace") for k, v in first.items() if k.endswith(".py"))
    # the first pass's records survive: the layer map still names torch layers, the line map still
    # points at the original source (a second pass reads MindSpore code and converts nothing)
    for name in ("torch2ms_layers.json", "torch2ms-linemap.json"):
        assert (once / name).is_file() == (twice / name).is_file(), name
        if (once / name).is_file():
            assert json.loads((twice / name).read_text("utf-8")) == json.loads((once / name).read_text("utf-8")), name


def test_an_edited_output_converted_again_gets_a_fresh_line_map(tmp_path: Path):
    """A converted file the user edits back to torch (a statement added) and converts again: the first
    pass's map no longer describes that text (its digest differs), so the map is made afresh against
    the tree given; an untouched output keeps the first map (test above)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(
        "import torch\n\n\ndef f(x):\n    y = torch.relu(x)\n    return torch.tanh(y)\n", encoding="utf-8"
    )
    once, twice = tmp_path / "once", tmp_path / "twice"
    _convert(src, once, 1)
    first = json.loads((once / "torch2ms-linemap.json").read_text("utf-8"))
    assert first["source"] == str(src.resolve()) and set(first["files"]) == {"m.py"}
    edited = (
        (once / "m.py").read_text("utf-8").replace("def f(x):", "import torch\n\n\ndef f(x):\n    x = torch.abs(x)")
    )
    (once / "m.py").write_text(edited, encoding="utf-8")
    convert_tree(once, twice, jobs=1)
    second = json.loads((twice / "torch2ms-linemap.json").read_text("utf-8"))
    assert second["source"] == str(once.resolve())
    given, out = edited.splitlines(), (twice / "m.py").read_text("utf-8").splitlines()
    lines = second["files"]["m.py"]["lines"]
    for word in ("abs", "tanh"):
        assert word in given[lines[str(next(i for i, t in enumerate(out, 1) if word in t))] - 1]
