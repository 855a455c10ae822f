"""Run the two instrumented scripts, one after the other, each in its own process.

The torch side goes first: the MindSpore side needs its recorded initial weights and batches. The
processes talk through files in the work directory only (``config.json``; ``torch/`` and ``ms/``
with ``record.json`` and .npz files), so the torch side can be another interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..doctor import MS_SPEED_ENV
from ..i18n import _
from ..progress import Progress
from .common import PROGRESS_FILE

HERE = Path(__file__).resolve().parent
_POLL_S = 0.2  # how often the progress display reads a running side's step count
MS_LAUNCH = "import sys; sys.path.pop(0); from torch2ms.trainrun.ms_boot import main; main(sys.argv[1])"
# msrun's scheduler process runs the script too, up to init() (where it serves the workers and exits):
# it runs the script bare, not instrumented, recording nothing
MSRUN_LAUNCH = """import os, sys
sys.path.pop(0)
if os.environ.get("MS_ROLE") == "MS_SCHED":
    from torch2ms.trainrun.common import read_config, run_script
    cfg = read_config(sys.argv[1])
    run_script(cfg["ms_script"], cfg["args"])
else:
    from torch2ms.trainrun.ms_boot import main
    main(sys.argv[1])
"""


class TrainUsageError(Exception):
    """Bad command-line input or a script that cannot be compared (the command exits 2)."""


@dataclass
class SideRun:
    side: str
    returncode: int | None
    seconds: float
    record: dict[str, Any] | None
    output_tail: str


def check_inputs(torch_script: str, ms_script: str, torch_python: str | None, steps: int, tol: float) -> None:
    for label, path in (("--torch", torch_script), ("--ms", ms_script)):
        p = Path(path)
        if not p.is_file():
            raise TrainUsageError(
                _("{label} {path}: no such file (give the training script's path)").format(label=label, path=path)
            )
        if p.suffix != ".py":
            raise TrainUsageError(_("{label} {path}: not a Python script (.py)").format(label=label, path=path))
    if torch_python and not (shutil.which(torch_python) or Path(torch_python).is_file()):
        raise TrainUsageError(_("--torch-python {torch_python}: no such interpreter").format(torch_python=torch_python))
    if steps < 1:
        raise TrainUsageError(_("--steps {steps}: give at least 1 step").format(steps=steps))
    if not tol > 0:
        raise TrainUsageError(_("--tol {tol}: give a positive relative tolerance, e.g. 1e-4").format(tol=tol))


def write_config(work: Path, **config: Any) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    for side in ("torch", "ms"):
        shutil.rmtree(work / side, ignore_errors=True)
    # --nproc: the other ranks' folders and msrun's scheduler's, and the done marks ranks wait on
    for stale in [*work.glob("*.rank[0-9]*"), *work.glob("*.sched"), *work.glob("*/done")]:
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
    path = work / "config.json"
    path.write_text(json.dumps({"work": str(work), **config}, indent=1) + "\n", encoding="utf-8")
    return path


def _child_env(seed: int = 0, mindspore: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    # MindSpore's CPU speed switches (doctor's), for its side only and only where the user left them unset:
    # on an AVX-512 host a DCGAN's converted step took past 600 s where torch took a minute (issue 22,
    # class 12). Numerics: the same kernels' AVX2 versions. torch's side keeps its own oneDNN level.
    if mindspore:
        for key, value in MS_SPEED_ENV.items():
            env.setdefault(key, value)
    # set iteration order and hash() alike on both sides (a label map built from a set, say)
    env["PYTHONHASHSEED"] = str(seed)
    root = str(HERE.parents[1])  # the folder holding the torch2ms package: the MindSpore side imports it
    env["PYTHONPATH"] = os.pathsep.join([root, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env.setdefault("GLOG_v", "3")
    env["PYTHONUNBUFFERED"] = "1"
    # msrun starts its workers as `python` from PATH: this interpreter's
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), *([env["PATH"]] if env.get("PATH") else [])])
    return env


def run_side(
    side: str,
    command: list[str],
    work: Path,
    cwd: Path,
    timeout: float,
    progress: Progress | None = None,
    label: str = "",
    steps: int | None = None,
    seed: int = 0,
    group: bool = False,
) -> SideRun:
    """One instrumented script; its output goes to work/SIDE/output.txt. ``progress`` is told each
    training step the script records (phase ``label``, ``steps`` wanted). ``group``: a launcher (torchrun,
    msrun) in a process group of its own, so a timeout ends its workers too."""
    (work / side).mkdir(parents=True, exist_ok=True)
    log = work / side / "output.txt"
    t0 = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=_child_env(seed, mindspore=is_mindspore_command(command)),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=group,
        )
        try:
            rc = _wait(proc, timeout, work / side / PROGRESS_FILE, progress or Progress(), (label or side, steps))
        except BaseException:  # Ctrl-C: a launcher in its own session does not get it from the terminal
            if group:
                _kill(proc)
            raise
    seconds = time.perf_counter() - t0
    record_path = work / side / "record.json"
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else None
    text = log.read_text(encoding="utf-8", errors="replace")
    return SideRun(side, rc, seconds, record, "\n".join(text.splitlines()[-15:]))


def _wait(
    proc: subprocess.Popen, timeout: float, progress_file: Path, progress: Progress, phase: tuple[str, int | None]
) -> int | None:
    """The script's exit code (None: killed at ``timeout``), telling ``progress`` its steps meanwhile."""
    deadline = time.monotonic() + timeout
    shown = ""
    label, steps = phase
    progress.update(label, 0, steps)
    while True:
        try:
            rc: int | None = proc.wait(timeout=_POLL_S)
        except subprocess.TimeoutExpired:
            rc = None
        try:
            text = progress_file.read_text(encoding="utf-8")
        except OSError:
            text = ""
        if text != shown and len(parts := text.split()) == 2:
            shown = text
            progress.update(label, int(parts[0]), int(parts[1]))
        if rc is not None:
            progress.finish(label)
            return rc
        if time.monotonic() > deadline:
            _kill(proc)
            proc.wait()
            progress.finish(label)
            return None


def _kill(proc: subprocess.Popen) -> None:
    """The process, and its process group when it leads one (a launcher and its workers)."""
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.kill()


def torch_command(torch_python: str | None, config: Path, nproc: int = 1) -> list[str]:
    """The torch side's command; ``nproc`` > 1: under torchrun, that many CPU processes on this host."""
    python = torch_python or sys.executable
    if nproc <= 1:
        return [python, str(HERE / "torch_boot.py"), str(config)]
    run = [python, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", "--nnodes=1"]
    return [*run, "--master_addr=127.0.0.1", f"--master_port={free_port()}", str(HERE / "torch_boot.py"), str(config)]


def is_mindspore_command(command: list[str]) -> bool:
    """A command :func:`ms_command` built (one process, or msrun's launcher)."""
    return MS_LAUNCH in command or "mindspore.parallel.cluster.run" in command


def ms_command(config: Path, nproc: int = 1) -> list[str]:
    """The MindSpore side's command; ``nproc`` > 1: under msrun, that many workers on this host (msrun runs
    a script file, so the launch line is written beside the config; the workers are `python` from PATH,
    which :func:`_child_env` puts this interpreter's folder first on)."""
    if nproc <= 1:
        return [sys.executable, "-c", MS_LAUNCH, str(config)]
    launcher = config.with_name("ms_launch.py")
    launcher.write_text(MSRUN_LAUNCH, encoding="utf-8")
    msrun = [sys.executable, "-m", "mindspore.parallel.cluster.run", f"--worker_num={nproc}"]
    log_dir = config.with_name("msrun_log")
    return [
        *[*msrun, f"--local_worker_num={nproc}", "--master_addr=127.0.0.1", f"--master_port={free_port()}"],
        *["--join=True", f"--log_dir={log_dir}", str(launcher), str(config)],
    ]


def free_port() -> int:
    """A TCP port nobody listens on now (the launchers' rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
