"""Issue 23 §3: terminal tables fit the terminal's width. For each of scan, lookup and compare × a
terminal of 60, 80, 120 and 200 columns (COLUMNS, as a shell sets it): no line of the output is longer than
the width; compare's narrow table keeps the layer names and the verdict."""

from __future__ import annotations

import textwrap

import pytest
from requires_support import require_module

from torch2ms.cli import main

WIDTHS = [60, 80, 120, 200]
MODEL = textwrap.dedent("""
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder_block_with_a_long_name = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
            self.head = nn.Linear(4 * 6 * 6, 2)

        def forward(self, x):
            return self.head(self.encoder_block_with_a_long_name(x).flatten(1))
""")


def _lines_too_long(text: str, width: int) -> list[str]:
    return [ln for ln in text.splitlines() if len(ln) > width]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("width")
    (tmp / "orig").mkdir()
    (tmp / "orig" / "model_with_a_rather_long_file_name_for_the_table.py").write_text(MODEL)
    assert main(["convert", str(tmp / "orig"), "-o", str(tmp / "out")]) == 0
    return tmp


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(
    "command",
    [["scan", "{orig}"], ["lookup", "nn.Conv2d"], ["lookup", "torch.optim.lr_scheduler.ReduceLROnPlateau"]],
)
def test_static_commands_fit_the_terminal(project, capsys, monkeypatch, width, command):
    monkeypatch.setenv("COLUMNS", str(width))
    args = [a.format(orig=project / "orig") for a in command]
    capsys.readouterr()
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.strip() and not _lines_too_long(out, width), _lines_too_long(out, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_fits_the_terminal(project, capsys, monkeypatch, width):
    require_module("torch")
    require_module("mindspore")
    monkeypatch.setenv("COLUMNS", str(width))
    name = "model_with_a_rather_long_file_name_for_the_table.py:Net"
    args = ["compare", "--torch", f"{project}/orig/{name}", "--ms", f"{project}/out/{name}"]
    capsys.readouterr()
    assert main([*args, "--input-shape", "1,3,6,6", "--no-graph"]) == 0
    out = capsys.readouterr().out
    assert not _lines_too_long(out, width), _lines_too_long(out, width)
    assert "head" in out and "MATCH" in out
