"""Run the torch side: in this process, or in another interpreter (``--torch-python``) that exchanges
.npz files with this one and reports its progress on stdout."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..factory import SpecError
from ..i18n import _
from .options import CompareUsageError
from .torch_worker import PROGRESS_PREFIX, OnProgress

SRC_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the torch2ms package
TORCH_SIDE_TIMEOUT = 3600


def run_here(
    req: dict[str, Any], given: dict[str, np.ndarray], on_progress: OnProgress
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    if importlib.util.find_spec("torch") is None:
        raise CompareUsageError(
            _(
                "torch is not importable here: pass --torch-python PATH/TO/python of an environment that "
                "has torch (the two sides then exchange .npz files)"
            )
        )
    from .torch_worker import run_torch_side

    try:
        return run_torch_side(req, given, on_progress)
    except SpecError as exc:
        raise CompareUsageError(str(exc)) from None


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # torch2ms's own source first (the worker needs only its standard-library modules), then the
    # caller's folder, where the user's model module may live.
    paths = [str(SRC_ROOT), os.getcwd(), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def _follow(proc: subprocess.Popen, on_progress: OnProgress, deadline: float) -> None:
    """Pass the child's progress lines on; everything else it prints is the user's model talking."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(PROGRESS_PREFIX):
            phase, done, total = json.loads(line[len(PROGRESS_PREFIX) :])
            on_progress(phase, done, total)
        if time.monotonic() > deadline:
            proc.kill()
            break


def run_in(
    torch_python: str, req: dict[str, Any], given: dict[str, np.ndarray], on_progress: OnProgress
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The torch side under another interpreter: request.json + inputs.npz in, torch_side.npz out."""
    with tempfile.TemporaryDirectory(prefix="t2m-compare-") as tmp:
        work = Path(tmp)
        inputs, output, request = work / "torch_inputs.npz", work / "torch_side.npz", work / "request.json"
        np.savez(inputs, **given)
        request.write_text(json.dumps(req | {"inputs_npz": str(inputs), "out_npz": str(output)}), encoding="utf-8")
        command = [torch_python, "-m", "torch2ms.align.torch_worker", str(request)]
        with open(work / "stderr.txt", "w+", encoding="utf-8", errors="replace") as err:
            try:
                proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True, env=_child_env())
            except OSError as exc:
                raise CompareUsageError(
                    _("--torch-python {torch_python}: cannot run it ({exc})").format(torch_python=torch_python, exc=exc)
                ) from None
            _follow(proc, on_progress, time.monotonic() + TORCH_SIDE_TIMEOUT)
            code = proc.wait()
            err.seek(0)
            stderr = err.read()
        if code != 0 or not output.exists():
            last = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit code {code}"
            raise CompareUsageError(
                _("the torch side ({torch_python}) failed: {last}").format(torch_python=torch_python, last=last)
            )
        with np.load(output, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    meta = json.loads(str(arrays.pop("__meta__")))
    if "usage_error" in meta:
        raise CompareUsageError(meta["usage_error"])
    if "fatal" in meta:
        raise CompareUsageError(_("the torch side failed: {error}").format(error=meta["fatal"]))
    return meta, arrays


def run_torch(
    req: dict[str, Any], given: dict[str, np.ndarray], torch_python: str | None, on_progress: OnProgress
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    if torch_python is None:
        return run_here(req, given, on_progress)
    return run_in(torch_python, req, given, on_progress)
