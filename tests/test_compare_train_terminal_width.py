"""Issue 23 §3 (item 4 of the verdict work): compare-train's terminal report fits the terminal's width
(COLUMNS, as a shell sets it) instead of a fixed 160 columns; a pipe without COLUMNS keeps 160.

Two real runs (a converted script that trains the same, with --own-data so the table has its widest
form, and one with an injected learning-rate bug, so the DIFFERENT verdict and its facts print) are
rendered by the command at 80 and 200 columns: no line is longer than the width, and at 200 the long
title uses more than the old 160."""

from __future__ import annotations

import pytest
from requires_support import require_module

from torch2ms.cli import main
from torch2ms.convert import convert_tree

pytestmark = [pytest.mark.slow, pytest.mark.differential]

WIDTHS = [80, 200]
SCRIPT = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(64, 6)
y = (x[:, 0] > 0).long()
loader = DataLoader(TensorDataset(x, y), batch_size=8)
model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()
for xb, yb in loader:
    optimizer.zero_grad()
    loss = loss_fn(model(xb), yb)
    loss.backward()
    optimizer.step()
"""
LONG = "a_training_script_with_a_rather_long_name_so_that_the_title_is_wide"
CASES = {"same": ("", "", ["--own-data"]), "different": ("lr=0.1", "lr=0.2", [])}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """case → (the report of a real run, the torch and MindSpore script paths)."""
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    out = {}
    for case, (old, new, flags) in CASES.items():
        tmp = tmp_path_factory.mktemp(case)
        src = tmp / "torch" / f"{LONG}.py"
        src.parent.mkdir()
        src.write_text(SCRIPT, encoding="utf-8")
        convert_tree(str(src), str(tmp / "ms"))
        ms = tmp / "ms" / f"{LONG}.py"
        text = ms.read_text(encoding="utf-8")
        assert old in text, f"the converted script no longer contains {old!r}"
        ms.write_text(text.replace(old, new, 1), encoding="utf-8")
        data = "own" if "--own-data" in flags else "replay"
        rep = compare_train(str(src), str(ms), steps=6, data=data, out_dir=str(tmp / "out"), cwd=str(tmp))
        assert rep.status == case, (rep.error, rep.findings, rep.first_divergence)
        out[case] = (rep, src, ms, flags)
    return out


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", list(CASES))
def test_compare_train_report_fits_the_terminal(reports, capsys, monkeypatch, tmp_path, case, width):
    rep, src, ms, flags = reports[case]
    # the command renders the report of the real run above (running it again would only repeat it)
    monkeypatch.setattr("torch2ms.trainrun.api.compare_train", lambda *a, **kw: rep)
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    code = main(["compare-train", "--torch", str(src), "--ms", str(ms), "--steps", "6", *flags])
    assert code == (0 if case == "same" else 1)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert not [ln for ln in lines if len(ln) > width], [ln for ln in lines if len(ln) > width]
    assert ("SAME" if case == "same" else "DIFFERENT") in out
    if width > 160:  # the terminal's width, not the old fixed 160
        assert max(map(len, lines)) > 160, max(map(len, lines))
    if case == "same":  # the own-data columns are kept, wrapped to fit
        assert "batch" in out


def test_a_pipe_without_columns_keeps_the_whole_table(reports, capsys, monkeypatch):
    rep, src, ms, flags = reports["different"]
    monkeypatch.setattr("torch2ms.trainrun.api.compare_train", lambda *a, **kw: rep)
    monkeypatch.delenv("COLUMNS", raising=False)
    capsys.readouterr()
    assert main(["compare-train", "--torch", str(src), "--ms", str(ms), "--steps", "6"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert 80 < max(map(len, lines)) <= 160, max(map(len, lines))  # long lines wrapped at 160
