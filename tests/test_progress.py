"""R30 (issue 13): the long commands show progress with elapsed time on a terminal — convert (files), weights
(tensors and bytes), export (each phase) — and stay silent when a program reads the output (--json) or the
output is not a terminal. compare and check-data are covered in test_compare_real_tasks.py and
test_check_data_misuse.py.

A terminal is simulated with rich's TTY_COMPATIBLE=1 (read by every Console the commands create), or with a
Console on a buffer that is told it is a terminal.
"""

from __future__ import annotations

import io
import re

import pytest
from requires_support import require_module
from rich.console import Console

from torch2ms.cli import main
from torch2ms.progress import RichProgress

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _screen() -> tuple[io.StringIO, RichProgress]:
    screen = io.StringIO()
    return screen, RichProgress(Console(file=screen, force_terminal=True, width=120))


def _plain(text: str) -> str:
    return ANSI.sub("", text)


def test_r30_convert_counts_the_python_files(tmp_path):
    from torch2ms.convert import convert_tree

    src = tmp_path / "proj"
    src.mkdir()
    for i in range(3):
        (src / f"m{i}.py").write_text(f"import torch\nx{i} = torch.zeros(2)\n", encoding="utf-8")
    screen, progress = _screen()
    convert_tree(str(src), str(tmp_path / "out"), jobs=1, progress=progress)
    shown = _plain(screen.getvalue())
    assert "converting Python files" in shown and "3/3" in shown
    assert re.search(r"\d:\d\d:\d\d", shown)  # elapsed time


def test_r30_convert_draws_on_a_terminal_only(tmp_path, capsys, monkeypatch):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "m.py").write_text("import torch\nx = torch.zeros(2)\n", encoding="utf-8")
    assert main(["convert", str(src), "-o", str(tmp_path / "a")]) == 0
    assert "converting Python files" not in capsys.readouterr().err  # not a terminal: nothing drawn
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert main(["convert", str(src), "-o", str(tmp_path / "b")]) == 0
    captured = capsys.readouterr()
    assert "converting Python files" in _plain(captured.err)  # on stderr: stdout keeps the summary only
    assert "converting Python files" not in captured.out


@pytest.fixture()
def checkpoint(tmp_path):
    torch = require_module("torch")
    net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Linear(32, 4))
    path = tmp_path / "w.pth"
    torch.save(net.state_dict(), path)
    return path


def test_r22_weights_progress_counts_tensors_and_bytes(checkpoint, tmp_path):
    from torch2ms.weights import convert_checkpoint

    screen, progress = _screen()
    with progress:
        res = convert_checkpoint(checkpoint, tmp_path / "w.ckpt", progress=progress)
    shown = _plain(screen.getvalue())
    assert res.written and res.params == 4
    total = 4 * (64 * 32 + 32 + 32 * 4 + 4)  # float32 bytes of the four tensors
    assert "reading the checkpoint" in shown and "writing 4 tensors" in shown
    assert f"{total / 1000:.1f} kB/{total / 1000:.1f} kB, 4/4 tensors" in shown, shown


def test_r22_weights_json_stays_silent_on_a_terminal(checkpoint, tmp_path, capsys, monkeypatch):
    import json

    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert main(["weights", str(checkpoint), "-o", str(tmp_path / "a.ckpt"), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["params"] == 4 and "writing" not in captured.err
    assert main(["weights", str(checkpoint), "-o", str(tmp_path / "b.ckpt")]) == 0
    assert "writing 4 tensors" in _plain(capsys.readouterr().err)


NET = """
import mindspore.nn as nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(6, 3)

    def construct(self, x):
        return self.fc(x)
"""


def test_r29_export_shows_each_phase(tmp_path):
    ms = require_module("mindspore")
    from torch2ms.export import export_mindir

    (tmp_path / "net.py").write_text(NET, encoding="utf-8")
    import importlib.util

    spec = importlib.util.spec_from_file_location("t2m_progress_net", tmp_path / "net.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ms.save_checkpoint(module.Net(), str(tmp_path / "net.ckpt"))
    screen, progress = _screen()
    with progress:
        res = export_mindir(
            f"{tmp_path}/net.py:Net", tmp_path / "net.ckpt", [(2, 6)], tmp_path / "net", progress=progress
        )
    assert res.verified
    shown = _plain(screen.getvalue())
    for phase in (
        "building the network and loading the checkpoint",
        "running the network once",
        "mindspore.export (GRAPH_MODE compile)",
        "loading the MindIR back and running it",
    ):
        assert phase in shown, (phase, shown)
