"""``torch2ms replay``: record the distinct call configurations of a torch run.

Every torch call the user's own lines make (the direct caller is a file of the model's classes, not
torch's: ``F.softmax(a, dim=-1)`` in a forward, not the ``F.linear`` inside ``nn.Linear``) is written
back as one replayable torch expression over named inputs — ``torch.nn.functional.softmax(a0, dim=-1)``
with ``a0`` a float32[4, 5, 5] — and calls of one expression with the same shapes and dtypes are one
*configuration*. The first call of each configuration keeps its input tensors (within a byte budget)
for replay in the user's regime; beyond the budget, inputs are regenerated from shapes and ranges.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


class Unreplayable(Exception):
    """An argument that cannot be written back as source (a module, a generator, a callable)."""


@dataclass
class CallConfig:
    api: str
    call: str  # the torch expression over a0, a1, ...
    signature: str  # api + argument shapes/dtypes/values: the configuration's key
    where: str  # file:line of its first call
    count: int = 1
    inputs: dict[str, np.ndarray] = field(default_factory=dict)  # recorded (empty beyond the budget)
    specs: dict[str, str] = field(default_factory=dict)  # each input as a KB case input expression


def _spec(a: np.ndarray) -> str:
    """A KB case input expression (proof/inputs.py) that regenerates an array like ``a``."""
    shape = ", ".join(str(n) for n in a.shape)
    if a.dtype == np.bool_:
        return f"randbool({shape})"
    if a.dtype.kind in "iu":
        low, high = (int(a.min()), int(a.max()) + 1) if a.size else (0, 1)
        return f"randint({low}, {high}, ({shape}{',' if a.ndim == 1 else ''}), dtype='{a.dtype}')"
    if a.dtype.kind == "c":  # real and imaginary parts drawn apart (min/max have no order here)
        part = f"randn({shape}{', ' if shape else ''}dtype='float64')"
        return f"({part} + 1j * {part}).astype('{a.dtype}')"
    if a.size and float(a.min()) >= 0:
        return f"rand({shape}{', ' if shape else ''}dtype='{a.dtype}')"
    return f"randn({shape}{', ' if shape else ''}dtype='{a.dtype}')"


class _Writer:
    """Writes one call's arguments back as source, naming its tensors a0, a1, ..."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.arrays: list[np.ndarray] = []
        self.sig: list[str] = []

    def __call__(self, v: Any) -> str:
        t = self.torch
        if isinstance(v, t.Tensor):
            a = v.detach().cpu()
            a = (a.float() if a.dtype == t.bfloat16 else a).numpy().copy()
            self.arrays.append(a)
            self.sig.append(f"{a.dtype}{list(a.shape)}")
            return f"a{len(self.arrays) - 1}"
        if isinstance(v, float) and not math.isfinite(v):
            return f"float('{v}')"
        if isinstance(v, (bool, int, float, str)) or v is None:
            return repr(v)
        if isinstance(v, t.dtype):
            return str(v)
        if isinstance(v, t.device):
            return repr(str(v))
        if v is Ellipsis:
            return "..."
        if isinstance(v, slice):
            return f"slice({self(v.start)}, {self(v.stop)}, {self(v.step)})"
        if isinstance(v, (tuple, list)):  # torch.Size too
            inner = ", ".join(self(x) for x in v)
            if not isinstance(v, tuple):
                return f"[{inner}]"
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        raise Unreplayable(type(v).__name__)


def _expression(api: str, args: tuple, kwargs: dict, writer: _Writer) -> str:
    parts = [writer(a) for a in args[1:]] if api.startswith("torch.Tensor.") else [writer(a) for a in args]
    parts += [f"{k}={writer(v)}" for k, v in kwargs.items()]
    if api.startswith("torch.Tensor."):
        if not args:
            raise Unreplayable("no receiver")
        receiver = writer(args[0])
        return f"{receiver}.{api.rsplit('.', 1)[1]}({', '.join(parts)})"
    return f"{api}({', '.join(parts)})"


class CallLog:
    """The configurations seen so far, the inputs of each one's first call kept within ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.budget, self.kept = max_bytes, 0
        self.configs: dict[str, CallConfig] = {}
        self.skipped: dict[str, int] = {}  # api → calls that could not be written back

    def add(self, api: str, args: tuple, kwargs: dict, where: str, torch: Any) -> None:
        if api.endswith(("__get__", "__set__")) or "." not in api:
            return
        writer = _Writer(torch)
        try:
            call = _expression(api, args, kwargs, writer)
        except Unreplayable:
            self.skipped[api] = self.skipped.get(api, 0) + 1
            return
        names = [f"a{i}" for i in range(len(writer.arrays))]
        signature = f"{call} | " + ", ".join(f"{n}: {s}" for n, s in zip(names, writer.sig))
        if signature in self.configs:
            self.configs[signature].count += 1
            return
        size = sum(a.nbytes for a in writer.arrays)
        keep = self.kept + size <= self.budget
        self.kept += size if keep else 0
        self.configs[signature] = CallConfig(
            api,
            call,
            signature,
            where,
            inputs=dict(zip(names, writer.arrays)) if keep else {},
            specs={n: _spec(a) for n, a in zip(names, writer.arrays)},
        )


# torch's Python functions that hand a call to the TorchFunctionMode (F.softmax, Tensor.split): their
# frames stand between the mode and the line that called them
_DISPATCHERS = ("overrides.py", "nn/functional.py", "_tensor.py", "functional.py")


def _caller(frame: Any, wrappers: set[str]) -> Any:
    while frame is not None and frame.f_code.co_filename in wrappers:
        frame = frame.f_back
    return frame


def call_mode(log: CallLog, files: set[str]) -> Any:
    """A TorchFunctionMode adding to ``log`` each call whose caller is a line of ``files``."""
    import torch
    from torch.overrides import TorchFunctionMode, resolve_name

    root = os.path.dirname(os.path.realpath(torch.__file__))
    wrappers = {
        os.path.join(base, *name.split("/"))
        for name in _DISPATCHERS
        for base in (root, os.path.dirname(torch.__file__))
    }

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            caller = _caller(sys._getframe(1), wrappers)
            if caller is not None and caller.f_code.co_filename in files:
                api = resolve_name(func) or getattr(func, "__name__", "")
                log.add(api, tuple(args), dict(kwargs or {}), f"{caller.f_code.co_filename}:{caller.f_lineno}", torch)
            return func(*args, **(kwargs or {}))

    return Mode()


def record_calls(model: Any, inputs: list[np.ndarray], max_bytes: int = 1 << 28) -> CallLog:
    """One torch forward of ``model`` on ``inputs`` (no gradients): the configurations of its calls."""
    import torch

    from ..align.api_record import user_files

    files = user_files(list(model.modules()), os.path.dirname(os.path.realpath(torch.__file__)))
    log = CallLog(max_bytes)
    with torch.no_grad(), call_mode(log, files):
        model(*[torch.from_numpy(np.array(x)) for x in inputs])
    return log


# -- a log kept on disk: compare-train's torch side records N training steps for the parent ---------------
LOG_JSON, LOG_NPZ = "replay_calls.json", "replay_inputs.npz"


def save_log(log: CallLog, folder: Path) -> None:
    arrays = {f"c{i}:{k}": a for i, c in enumerate(log.configs.values()) for k, a in c.inputs.items()}
    np.savez(folder / LOG_NPZ, **arrays)
    configs = [
        {"api": c.api, "call": c.call, "signature": c.signature, "where": c.where, "count": c.count, "specs": c.specs}
        for c in log.configs.values()
    ]
    data = {"configs": configs, "skipped": log.skipped, "kept": log.kept}
    (folder / LOG_JSON).write_text(json.dumps(data), encoding="utf-8")


def load_log(folder: Path) -> CallLog | None:
    if not (folder / LOG_JSON).is_file():
        return None
    data = json.loads((folder / LOG_JSON).read_text(encoding="utf-8"))
    with np.load(folder / LOG_NPZ) as npz:
        arrays = {k: npz[k] for k in npz.files}
    log = CallLog(0)
    log.skipped, log.kept = data["skipped"], data["kept"]
    for i, c in enumerate(data["configs"]):
        inputs = {k.split(":", 1)[1]: a for k, a in arrays.items() if k.split(":", 1)[0] == f"c{i}"}
        log.configs[c["signature"]] = CallConfig(
            c["api"], c["call"], c["signature"], c["where"], c["count"], inputs=inputs, specs=c["specs"]
        )
    return log
