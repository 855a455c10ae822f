"""``torch2ms replay --train SCRIPT.py``: the call configurations of N training steps of a torch script.

The script runs unmodified under compare-train's torch-side instrumentation (trainrun/torch_boot.py,
its own process, seeded), which logs every configuration its lines and its trained models make from the
first training forward until N optimizer steps are done (trainrun/torch_replay.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..i18n import _
from ..trainrun.runner import run_side, torch_command, write_config
from .record import CallLog, load_log

SIDE = "torch_replay"


class ReplayError(Exception):
    """The script could not be run or recorded (the command exits 2)."""


def record_training(
    script: str,
    steps: int,
    args: list[str] | None = None,
    cwd: str | None = None,
    timeout: float = 900.0,
    torch_python: str | None = None,
    seed: int = 0,
    max_bytes: int = 1 << 28,
) -> CallLog:
    if not Path(script).is_file():
        raise ReplayError(
            _("{label} {path}: no such file (give the training script's path)").format(label="--train", path=script)
        )
    work = Path(tempfile.mkdtemp(prefix="torch2ms-replay-"))
    config = write_config(
        work,
        steps=steps,
        seed=seed,
        data="own",
        fake_data=False,
        mode="pynative",
        torch_script=str(Path(script).resolve()),
        ms_script="",
        args=list(args or []),
        side=SIDE,
        replay_calls=True,
        replay_bytes=max_bytes,
    )
    label = _("torch: training steps")
    run = run_side(SIDE, torch_command(torch_python, config), work, Path(cwd or "."), timeout, None, label, steps, seed)
    log = load_log(work / SIDE)
    if log is None:
        text = _("the torch script recorded no training step's calls (exit code {code}); its last output: {last}")
        raise ReplayError(text.format(code=run.returncode, last=run.output_tail.strip().splitlines()[-1:] or ""))
    return log
