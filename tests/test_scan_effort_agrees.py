"""Issue 23 §3: scan's effort estimate is what the conversion leaves, counted as the conversion report counts it.

``scan`` runs the converter's own per-file analysis without writing (convert/estimate.py): for a generated
matrix of small projects (constructs the converter handles fully, ones it marks for review, unknown and
no-equivalent APIs, dict datasets, gradient reads, AMP, custom autograd), each placed as one file, as a
package part re-exported by ``from .part import *`` beside a script, and all together in one tree, the
numbers scan prints (per category and total, per file, in the terminal table, JSON, Markdown and CSV) equal
``torch2ms convert``'s report of the same project, and so does the list of what is left for the user. Then
the kit: for every repository of ../shared/realcode/corpus, scan's "left for the user" equals the report's
(three small ones here, all in the slow case).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from requires_support import CORPUS, require_kit
from rich.console import Console

from torch2ms.cli import main
from torch2ms.convert import convert_tree
from torch2ms.convert.estimate import scan_with_estimate
from torch2ms.report import scan_report

MODEL = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)
"""
DICT_DATASET = """import torch
from torch.utils.data import DataLoader, Dataset, random_split


class Pairs(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"image": torch.ones(3, 4, 4) * i, "mask": torch.zeros(4, 4)}


def loaders():
    train, val = random_split(Pairs(), [6, 2])
    loader_args = dict(batch_size=2, num_workers=0)
    return DataLoader(train, shuffle=True, **loader_args), DataLoader(val, **loader_args)


def first_images(loader):
    for batch in loader:
        images = batch["image"]
        return images.shape
"""
GRAD_READ = """import torch
import torch.nn as nn


def train(model, data):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in data:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        norms = [p.grad.norm().item() for p in model.parameters() if p.grad is not None]
        print(max(norms))
        opt.step()
"""
AMP = """import torch
import torch.nn as nn


def train(model, data):
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    for x, y in data:
        opt.zero_grad()
        with torch.autocast("cpu", enabled=False):
            loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
"""
AUTOGRAD = """import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def square(x):
    return Square.apply(x)
"""
UNKNOWN = """import torch


def odd(x):
    y = torch.not_a_real_api(x)
    z = torch.cuda.memory_summary()
    return torch.special.zeta(y, 2.0), z
"""
PLAIN_LOOP = """import torch
import torch.nn as nn


def train(model, data):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in data:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    torch.save(model.state_dict(), "m.pt")
"""

REVIEW_KWARGS = """import torch.nn as nn


def make_conv(*args, **kwargs):
    return nn.Conv2d(*args, **kwargs)


def make_head(**options):
    return nn.Sequential(nn.Linear(4, 4, **options), nn.ReLU())
"""

PIECES = {
    "model": MODEL,
    "dict_dataset": DICT_DATASET,
    "grad_read": GRAD_READ,
    "amp": AMP,
    "autograd": AUTOGRAD,
    "unknown": UNKNOWN,
    "plain_loop": PLAIN_LOOP,
    "review_kwargs": REVIEW_KWARGS,
}
LAYOUTS = ("file", "package")


def _project(root: Path, piece: str, layout: str) -> Path:
    """One piece placed as ``layout`` says; the path to give scan and convert."""
    root.mkdir(parents=True)
    if layout == "file":
        (root / f"{piece}.py").write_text(PIECES[piece])
        return root / f"{piece}.py"
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .part import *\n")
    (pkg / "part.py").write_text(PIECES[piece])
    (root / "main.py").write_text("import torch\nfrom pkg import *\n\nx = torch.zeros(2)\nprint(x.sum())\n")
    return root


def _all_together(root: Path) -> Path:
    root.mkdir(parents=True)
    for name, text in PIECES.items():
        (root / f"{name}.py").write_text(text)
    return root


def _report(src: Path, out: Path) -> dict:
    convert_tree(src, out, jobs=1)
    return json.loads((out / "torch2ms-report.json").read_text(encoding="utf-8"))


def _left_of(report: dict) -> list[tuple]:
    return sorted(
        (f["path"], c["line"], c["api"], c["action"], c["note"])
        for f in report["files"]
        for c in f["changes"]
        if c["action"] != "converted"
    )


def _assert_agree(scan: dict, report: dict) -> None:
    s, r = scan["summary"], report["summary"]
    assert s["effort"] == {"automatic": r["converted"], "review": r["review"], "manual": r["not_converted"]}
    assert s["left_for_user"] == r["review"] + r["not_converted"]
    per_file = {f["path"]: f["counts"] for f in report["files"]}
    for f in scan["files"]:
        c = per_file.get(f["path"], {})
        assert f["effort"] == {
            "automatic": c.get("converted", 0),
            "review": c.get("review", 0),
            "manual": c.get("not-converted", 0),
        }, f["path"]
    assert sorted((x["path"], x["line"], x["api"], x["action"], x["note"]) for x in scan["left"]) == _left_of(report)


def _terminal_numbers(report) -> tuple[list[int], list[int]]:
    """The totals row of scan's effort table and the numbers of its "left for the user" line."""
    buf = io.StringIO()
    scan_report.render_terminal(report, Console(file=buf, width=400, color_system=None))
    text = buf.getvalue()
    row = next(line for line in text.splitlines() if re.match(r"^[│|] total ", line))
    left = next(line for line in text.splitlines() if line.startswith("left for the user:"))
    return [int(n) for n in re.findall(r"\d+", row)], [int(n) for n in re.findall(r"\d+", left)][:3]


def _check_every_format(scan, report: dict) -> None:
    data = json.loads(scan_report.to_json(scan))
    _assert_agree(data, report)
    r = report["summary"]
    totals, left = _terminal_numbers(scan)
    assert totals == [r["converted"], r["review"], r["not_converted"]]
    assert left == [r["review"] + r["not_converted"], r["review"], r["not_converted"]]
    md = scan_report.to_markdown(scan)
    assert f"| **total** | **{r['converted']}** | **{r['review']}** | **{r['not_converted']}** |" in md
    rows = list(csv.DictReader(io.StringIO(scan_report.to_csv(scan))))
    efforts = [row["effort"] for row in rows if row["kind"] == "left"]
    assert (efforts.count("review"), efforts.count("manual")) == (r["review"], r["not_converted"])
    assert all(row["effort"] == "" for row in rows if row["kind"] != "left")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("piece", sorted(PIECES))
def test_scan_effort_equals_the_conversion_report(tmp_path, piece, layout, monkeypatch):
    monkeypatch.setenv("TORCH2MS_LANG", "en")  # --lang sets it: restored after the test
    src = _project(tmp_path / "src", piece, layout)
    report = _report(src, tmp_path / "out")
    _check_every_format(scan_with_estimate(src, jobs=1), report)


def test_the_matrix_covers_every_category(tmp_path):
    """The matrix is not all zeros: the projects together have converted, review and not-converted items."""
    src = _all_together(tmp_path / "src")
    r = _report(src, tmp_path / "out")["summary"]
    assert r["converted"] > 0 and r["review"] > 0 and r["not_converted"] > 0


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_cli_scan_prints_the_conversion_counts(tmp_path, fmt, monkeypatch):
    """The command itself (not only the function): scan -j 2 of the whole matrix in one tree, JSON and table."""
    monkeypatch.setenv("TORCH2MS_LANG", "en")  # --lang sets it: restored after the test
    monkeypatch.setenv("COLUMNS", "400")
    src = _all_together(tmp_path / "src")
    report = _report(src, tmp_path / "out")
    out = tmp_path / f"scan.{fmt}"
    assert main(["--lang", "en", "scan", str(src), "-j", "2", "--format", fmt, "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    r = report["summary"]
    if fmt == "json":
        _assert_agree(json.loads(text), report)
    else:
        line = next(x for x in text.splitlines() if x.startswith("left for the user:"))
        assert [int(n) for n in re.findall(r"\d+", line)][:3] == [
            r["review"] + r["not_converted"],
            r["review"],
            r["not_converted"],
        ]


def test_scan_says_it_in_chinese(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH2MS_LANG", "en")  # --lang zh below sets it for the process: restored after the test
    src = _all_together(tmp_path / "src")
    r = _report(src, tmp_path / "out")["summary"]
    out = tmp_path / "scan.txt"
    assert main(["--lang", "zh", "scan", str(src), "-j", "1", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "left for the user" not in text
    line = next(x for x in text.splitlines() if x.startswith("留给用户："))
    assert [int(n) for n in re.findall(r"\d+", line)][:3] == [
        r["review"] + r["not_converted"],
        r["review"],
        r["not_converted"],
    ]


def _repositories() -> list[Path]:
    return sorted(p for owner in CORPUS.iterdir() if owner.is_dir() for p in owner.iterdir() if p.is_dir())


FAST_REPOSITORIES = ("karpathy/minGPT", "lucidrains/mlp-mixer-pytorch", "openai/CLIP")


def _kit_agrees(repo: Path, tmp_path: Path) -> None:
    report = _report(repo, tmp_path / "out")
    scan = json.loads(scan_report.to_json(scan_with_estimate(repo, jobs=1)))
    _assert_agree(scan, report)


@pytest.mark.parametrize("name", FAST_REPOSITORIES)
def test_kit_left_for_user_equals_the_report(tmp_path, name):
    require_kit()
    _kit_agrees(CORPUS / name, tmp_path)


@pytest.mark.slow
def test_kit_every_repository_agrees(tmp_path):
    require_kit()
    repos = _repositories()
    assert len(repos) >= 10
    for i, repo in enumerate(repos):
        _kit_agrees(repo, tmp_path / str(i))
