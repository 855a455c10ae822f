"""What both instrumented sides share: the run config, the step recorder, the stop signal, result files.

Standard library and numpy only: the torch side may run in another interpreter where torch2ms is not
installed, so ``torch_boot.py`` loads this file by path (see :func:`load_sibling`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

# Hyper-parameters compared between the two sides' optimizer groups (others are framework plumbing).
HYPER_KEYS = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "betas", "eps", "amsgrad", "maximize")
# Pseudo-noise that replaces random draws inside training on both sides: sin(i * A + B) * SCALE has
# mean ~0 and variance ~1 and is computed the same way by both frameworks (no generator state).
NOISE_A, NOISE_B, NOISE_SCALE = 0.731, 0.1, 1.4142135
# Pseudo-integers that replace integer draws inside a model's forward in training (a compiled step cannot
# replay a recorded draw): (i*i*A + i*B + C) mod (high - low) + low, integer arithmetic on both sides.
INT_PATTERN = (31, 7919, 13)


class StopTraining(BaseException):
    """Raised from a hook after the last requested step: a BaseException, so `except Exception` in the
    user's script does not swallow it."""


def load_sibling(name: str) -> ModuleType:
    """This package's stdlib/numpy-only module `name`, loaded by file path (no package import needed)."""
    key = f"_torch2ms_trainrun_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


def live_instances(cls: type) -> list[Any]:
    """Every live object of `cls` (the trained models are found this way: scripts keep them anywhere)."""
    import gc
    import warnings

    found = []
    with warnings.catch_warnings():  # isinstance() on some deprecated framework objects warns
        warnings.simplefilter("ignore")
        for o in gc.get_objects():
            try:
                if isinstance(o, cls):
                    found.append(o)
            except ReferenceError:  # a dead weak proxy
                continue
    return found


def side_dir(config: dict[str, Any], side: str) -> Path:
    """Where ``side`` keeps its files: work/SIDE; with ``--nproc`` (torchrun/msrun), rank 0 there too and
    rank r > 0 in work/SIDE.rankR (RANK from torchrun, RANK_ID from msrun), msrun's scheduler process
    (it runs the script too, up to init()) in work/SIDE.sched."""
    work = Path(config["work"])
    if int(config.get("nproc", 1)) <= 1:
        return work / side
    if os.environ.get("MS_ROLE") == "MS_SCHED":
        return work / f"{side}.sched"
    rank = int(os.environ.get("RANK", os.environ.get("RANK_ID", "0")) or 0)
    return work / (f"{side}.rank{rank}" if rank else side)


def read_config(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=_plain) + "\n", encoding="utf-8")
    tmp.replace(path)


def _plain(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    return str(o)


def array_stats(a: Any, rest: Any = ()) -> dict[str, Any]:
    """Shape, dtype and summary numbers of one numpy array, plus what tells two batches apart for sure:
    `hash`, a digest of the values of `a` (as float64, with their count) and `hash_all`, of `a` and the
    batch's other arrays `rest` — equal only for identical contents, whatever each framework's integer
    or float width — and
    `wsum`, a position-weighted sum (rows swapped change it; values compared within float rounding
    when the digests differ). This runs for every batch: one float64 copy, reused."""
    import hashlib

    import numpy as np

    a = np.asarray(a)
    n = max(a.size, 1)
    x = a.astype(np.float64).ravel()
    digests = [hashlib.sha1(), hashlib.sha1()]  # the first array's; all arrays'
    for i, part in enumerate((x, *(np.asarray(r).astype(np.float64).ravel() for r in rest))):
        for digest in digests if i == 0 else digests[1:]:
            digest.update(str(part.size).encode())
            digest.update(part.tobytes())
    total = float(x.sum())
    squares = float(np.dot(x, x))
    wsum = float(np.dot(x, np.sin(np.arange(x.size, dtype=np.float64) * NOISE_A + NOISE_B)))
    mean = total / n
    return {
        "shape": list(a.shape),
        "dtype": str(a.dtype),
        "sum": total,
        "wsum": wsum,
        "hash": digests[0].hexdigest(),
        "hash_all": digests[1].hexdigest(),
        "arrays": 1 + len(rest),
        "abs_sum": float(np.abs(x, out=x).sum()),
        "mean": mean,
        "std": max(squares / n - mean * mean, 0.0) ** 0.5,
    }


def stream_state() -> Any:
    """Python's `random` and numpy's global random state, as bytes in a uint8 array (for batches.npz)."""
    import pickle
    import random

    import numpy as np

    return np.frombuffer(pickle.dumps((random.getstate(), np.random.get_state())), np.uint8)


def set_stream_state(state: Any) -> None:
    import pickle
    import random

    import numpy as np

    py, npy = pickle.loads(state.tobytes())  # our own file, written by the torch side
    random.setstate(py)
    np.random.set_state(npy)


def stream_digest() -> str:
    """A short digest of both global random streams: equal on the two sides while they drew alike."""
    import hashlib

    return hashlib.sha1(stream_state().tobytes()).hexdigest()[:12]


PROGRESS_FILE = "progress.txt"


class ProgressFile:
    """Steps done of those wanted, as "DONE TOTAL", for the parent's progress display (runner.run_side
    polls it every 0.2 s). Rewritten in place at one fixed width, never truncated, at most every
    `interval` seconds and at the last step: write_text every step took 4-5 ms of wall time here (ext4
    flushes a file truncated and rewritten when it is closed), as much as a small model's whole step."""

    def __init__(self, path: Path, total: int, interval: float = 0.05) -> None:
        self.path, self.total, self.width, self.interval = path, total, len(str(total)), interval
        self.fd: int | None = None  # opened at the first step: until then the parent sees no file
        self.written = -float("inf")

    def show(self, done: int) -> None:
        now = time.perf_counter()
        if now - self.written < self.interval and done < self.total:
            return
        self.written = now
        if self.fd is None:
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.pwrite(self.fd, f"{min(done, self.total):>{self.width}} {self.total}".encode(), 0)


class Recorder:
    """Step events of one side. A step is one optimizer update; its loss is the sum of the losses
    back-propagated (or differentiated) since the previous update, so gradient accumulation and a GAN's
    two backward calls count as they do in the script."""

    def __init__(self, side: str, config: dict[str, Any]) -> None:
        self.side = side
        self.config = config
        self.steps_wanted = int(config["steps"])
        self.out = side_dir(config, side)
        self.out.mkdir(parents=True, exist_ok=True)
        self.events: list[dict[str, Any]] = []
        self.counts: dict[int, int] = {}
        self.pending_losses: list[float] = []
        self.pending_inputs: dict[str, Any] | None = None
        self.batch_stats: dict[str, Any] | None = None  # the last batch a data loader / dataset yielded
        self.optimizers: list[dict[str, Any]] = []
        self.models: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.randomness: dict[str, Any] = {"dropout": {}, "random_ops": {}}
        self.replay: dict[str, Any] = {}
        self.draws: dict[str, Any] = {}  # torch: the recorded random draws; MindSpore: which it served
        self.t0 = time.perf_counter()
        self.first_step_t: float | None = None
        self.progress = ProgressFile(self.out / PROGRESS_FILE, self.steps_wanted)

    def add_loss(self, value: float) -> None:
        self.pending_losses.append(value)

    def note_inputs(self, stats: dict[str, Any] | None) -> None:
        if self.pending_inputs is None:
            self.pending_inputs = stats

    def step(self, opt: int, lr: list[float], grad_norm: float | None, extra: dict[str, Any]) -> None:
        """Record one update of optimizer `opt`; raise StopTraining once every optimizer did its steps."""
        now = time.perf_counter()
        if self.first_step_t is None:
            self.first_step_t = now
        n = self.counts.get(opt, 0) + 1
        self.counts[opt] = n
        losses, self.pending_losses = self.pending_losses, []
        ev = {
            "step": n,
            "opt": opt,
            "loss": sum(losses) if losses else None,  # nan/inf stay: json writes them, the report shows them
            "n_losses": len(losses),
            "lr": lr,
            "grad_norm": grad_norm,
            # the step's batch: the loader's when there is one (what the model and the loss get from
            # it differs between scripts: a GAN's generator step feeds noise), else the model's input
            "inputs": self.batch_stats if self.batch_stats is not None else self.pending_inputs,
            "t": now - self.t0,
            "streams": stream_digest(),
        }
        ev.update(extra)
        self.pending_inputs = None
        self.events.append(ev)
        self.progress.show(n)
        if n >= self.steps_wanted and all(c >= self.steps_wanted for c in self.counts.values()):
            raise StopTraining

    def result(self, status: str, error: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "side": self.side,
            "status": status,
            "error": error,
            "steps_requested": self.steps_wanted,
            "events": self.events,
            "optimizers": self.optimizers,
            "models": self.models,
            "notes": self.notes,
            "randomness": self.randomness,
            "replay": self.replay,
            "draws": self.draws,
            "wall_s": time.perf_counter() - self.t0,
            "first_step_s": (self.first_step_t - self.t0) if self.first_step_t else None,
            "unstepped_losses": len(self.pending_losses),
        }


def manual_step(side: Any, modes: Any) -> None:
    """Record one manual update (no optimizer: the script changed the parameters itself between two
    backward passes) as a step of its ``ManualUpdates`` slot, the same on both sides. ``side`` is the
    torch or MindSpore tracer (its optimizers, models, recorder, ``manual`` and ``manual_gnorm``);
    ``modes(model)``: that model's train/eval and dropout modes, read the framework's way."""
    j = next(i for i, o in enumerate(side.optimizers) if o is side.manual)
    if len(side.rec.optimizers) <= j:
        side.rec.optimizers.extend({} for _ in range(j + 1 - len(side.rec.optimizers)))
    if not side.rec.optimizers[j]:
        side.rec.optimizers[j] = side.describe_optimizer(j)
    gnorm, side.manual_gnorm = side.manual_gnorm, None
    by_model = {m.key: modes(m) for m in side.models if j in m.opts}
    no_lr: list[Any] = [None]  # no learning rate: the script scales the gradient itself
    side.rec.step(j, no_lr, gnorm, {"modes": by_model, "clip": None})


def error_info(exc: BaseException, script: str) -> dict[str, Any]:
    """Type, message and the innermost frame of the user's code (their script or its folder) as file:line."""
    frames = traceback.extract_tb(exc.__traceback__)
    root = str(Path(script).resolve().parent)
    user = [f for f in frames if str(Path(f.filename).resolve()).startswith(root)]
    where = user[-1] if user else (frames[-1] if frames else None)
    msg = str(exc).strip().splitlines()
    return {
        "type": type(exc).__name__,
        "message": msg[0][:400] if msg else "",
        "where": f"{where.filename}:{where.lineno}" if where else None,
        "code": (where.line or "").strip() if where else None,
        "traceback": "".join(traceback.format_exception(exc))[-4000:],
    }


def run_script(script: str, args: list[str]) -> None:
    """Run `script` as __main__ with `args`, its folder first on sys.path (as `python script.py` does)."""
    import runpy

    sys.argv = [script, *args]
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")


def run_instrumented(rec: Recorder, script: str, args: list[str], finish: Any) -> None:
    """Run the script, classify how it ended, let `finish(status)` save the side's tensors, write
    record.json, and leave with os._exit (data-loader workers and framework threads cannot hold us)."""
    status, error = "finished", None
    try:
        run_script(script, args)
    except StopTraining:
        status = "stopped"
    except SystemExit as exc:
        if exc.code not in (None, 0):
            status, error = "exited", {"type": "SystemExit", "message": str(exc.code), "where": None, "code": None}
    except BaseException as exc:  # noqa: BLE001 - any failure of the user's script is reported, not raised
        status, error = "crashed", error_info(exc, script)
    try:
        finish(status)
    except Exception as exc:  # noqa: BLE001 - the record must still be written
        rec.notes.append(f"saving the final state failed: {type(exc).__name__}: {exc}")
    if status == "finished" and not rec.events:
        status = "no_steps"
    write_json(rec.out / "record.json", rec.result(status, error))
    sys.stdout.flush()
    sys.stderr.flush()
    wait_for_ranks(rec)
    os._exit(0)


def wait_for_ranks(rec: Recorder, limit_s: float = 120.0) -> None:
    """--nproc: leave only when every rank of this side has written its record. A rank that left at once
    took its half of the last step's ring all-reduce with it ("RingAllReduce wait sending ... failed" on
    the other rank, measured under msrun), so each rank marks itself done and waits for the others."""
    nproc = int(rec.config.get("nproc", 1))
    if nproc <= 1:
        return
    (rec.out / "done").touch()
    base = rec.out.name.split(".rank")[0]
    marks = [Path(rec.config["work"]) / (base if r == 0 else f"{base}.rank{r}") / "done" for r in range(nproc)]
    deadline = time.monotonic() + limit_s
    while not all(m.is_file() for m in marks) and time.monotonic() < deadline:
        time.sleep(0.05)
