"""R26 / issue 13: compare-train shows each side's training steps as they run (torch first, then
MindSpore), through the progress display the other long commands use (torch2ms.progress)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from torch2ms.convert import convert_tree
from torch2ms.progress import Progress
from torch2ms.trainrun import compare_train
from torch2ms.trainrun.runner import run_side

SMALL = Path(__file__).resolve().parent / "trainrun" / "train_small.py"


class Recording(Progress):
    def __init__(self) -> None:
        self.updates: list[tuple[str, int, int | None]] = []
        self.finished: list[str] = []

    def update(self, phase: str, done: int, total: int | None = None) -> None:
        self.updates.append((phase, done, total))

    def finish(self, phase: str) -> None:
        self.finished.append(phase)


def test_r26_run_side_reports_the_steps_a_script_records(tmp_path):
    # the real common.Recorder in the child, at a pace the poll sees; a stale longer file goes first
    (tmp_path / "side").mkdir()
    (tmp_path / "side" / "progress.txt").write_text("999 1000 from an earlier run")
    child = (
        "import sys, time\n"
        "from torch2ms.trainrun.common import Recorder\n"
        "rec = Recorder('side', {'work': sys.argv[1], 'steps': 10})\n"
        "for _ in range(3):\n"
        "    rec.step(0, [0.1], None, {})\n"
        "    time.sleep(0.5)\n"
    )
    progress = Recording()
    run = run_side("side", [sys.executable, "-c", child, str(tmp_path)], tmp_path, tmp_path, 60, progress, "steps", 10)
    assert run.returncode == 0
    assert progress.updates == [("steps", 0, 10), ("steps", 1, 10), ("steps", 2, 10), ("steps", 3, 10)]
    assert progress.finished == ["steps"]


def test_r26_progress_file_rewritten_in_place_at_one_width(tmp_path):
    from torch2ms.trainrun.common import ProgressFile

    path = tmp_path / "progress.txt"
    shown = ProgressFile(path, 100, interval=0.0)
    assert not path.exists()  # no file before the first step
    seen = []
    for done in (1, 10, 100, 150):
        shown.show(done)
        seen.append(path.read_text())
    assert seen == ["  1 100", " 10 100", "100 100", "100 100"]  # done is capped at the total


def test_r26_progress_file_written_at_most_every_interval_and_at_the_last_step(tmp_path):
    from torch2ms.trainrun.common import ProgressFile

    path = tmp_path / "progress.txt"
    shown = ProgressFile(path, 100, interval=60.0)
    seen = []
    for done in (1, 2, 99, 100):
        shown.show(done)
        seen.append(path.read_text())
    assert seen == ["  1 100", "  1 100", "  1 100", "100 100"]


def test_r26_run_side_timeout_still_finishes_the_phase(tmp_path):
    progress = Recording()
    run = run_side("side", [sys.executable, "-c", "import time; time.sleep(30)"], tmp_path, tmp_path, 1, progress)
    assert run.returncode is None and progress.finished == ["side"]


@pytest.mark.slow
@pytest.mark.differential
def test_r26_compare_train_shows_both_sides_steps(tmp_path):
    convert_tree(str(SMALL.parent), str(tmp_path / "ms"))
    progress = Recording()
    rep = compare_train(
        str(SMALL),
        str(tmp_path / "ms" / SMALL.name),
        steps=3,
        out_dir=str(tmp_path / "out"),
        cwd=str(tmp_path),
        progress=progress,
    )
    assert rep.error is None, rep.error
    assert progress.finished == ["torch: training steps", "MindSpore: training steps"]
    for label in progress.finished:
        seen = [(done, total) for phase, done, total in progress.updates if phase == label]
        assert seen[0] == (0, 3) and seen[-1] == (3, 3), seen
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)
