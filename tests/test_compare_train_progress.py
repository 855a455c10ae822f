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
    """What the display was told; with ``ack``, each step shown is acknowledged as the file
    ``ack/seen-DONE`` (the handshake a test child waits for before its next step)."""

    def __init__(self, ack: Path | None = None) -> None:
        self.updates: list[tuple[str, int, int | None]] = []
        self.finished: list[str] = []
        self.ack = ack

    def update(self, phase: str, done: int, total: int | None = None) -> None:
        self.updates.append((phase, done, total))
        if self.ack is not None:
            (self.ack / f"seen-{done}").touch()

    def finish(self, phase: str) -> None:
        self.finished.append(phase)


# The real common.Recorder in the child. Its steps are paced by a handshake, not a clock: after step
# k it waits until the parent's display has acknowledged k (the file seen-k), however slow the poll is.
HANDSHAKE_CHILD = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from torch2ms.trainrun.common import Recorder\n"
    "rec = Recorder('side', {'work': sys.argv[1], 'steps': 10})\n"
    "rec.progress.interval = 0.0  # write every step: the handshake paces them\n"
    "for k in range(1, int(sys.argv[2]) + 1):\n"
    "    rec.step(0, [0.1], None, {})\n"
    "    while not (Path(sys.argv[1]) / f'seen-{k}').exists():\n"
    "        time.sleep(0.005)\n"
)


@pytest.mark.parametrize("steps", [1, 3])
def test_r26_run_side_reports_the_steps_a_script_records(tmp_path, steps):
    # a stale longer file goes first: not two fields, never shown
    (tmp_path / "side").mkdir()
    (tmp_path / "side" / "progress.txt").write_text("999 1000 from an earlier run")
    child = HANDSHAKE_CHILD
    progress = Recording(ack=tmp_path)
    cmd = [sys.executable, "-c", child, str(tmp_path), str(steps)]
    run = run_side("side", cmd, tmp_path, tmp_path, 120, progress, "steps", 10)
    assert run.returncode == 0
    assert progress.updates == [("steps", done, 10) for done in range(steps + 1)]
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
    forever = "import threading; threading.Event().wait()"  # never exits by itself: only the timeout ends it
    run = run_side("side", [sys.executable, "-c", forever], tmp_path, tmp_path, 1, progress)
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
