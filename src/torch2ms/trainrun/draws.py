"""Random draws replayed between the two sides of ``compare-train`` (numpy and the standard library only:
the torch side loads this file by path).

The torch side records every random draw the user's code makes (any point of the script: module level,
model construction, the loop), in a canonical form per kind of draw the conversion makes of it:

* ``normal``: standard normal values (``randn``, ``normal``, ``Tensor.normal_`` ↔ ``ops.randn(_like)``,
  ``ops.normal``, ``ops.standard_normal``);
* ``uniform``: values in [0, 1) (``rand``, ``uniform_``, ``bernoulli_(p)``, ``exponential_`` ↔
  ``ops.rand(_like)``);
* ``int``: integers as drawn (``randint``, ``randint_like``, ``random_`` ↔ ``ops.randint(_like)``);
* ``perm``, ``multinomial``, ``bernoulli``, ``poisson``: the values as drawn.

The MindSpore side takes, per kind, the next recorded draw of the same size and serves it instead of
its own; a draw it cannot match (another size, values out of its range, nothing recorded) is drawn for
real and named in the report, and so is every recorded draw MindSpore never asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

DRAWS_FILE = "draws.npz"
DRAWS_BYTES_CAP = 256 << 20


class DrawLog:
    """The torch side's recorded draws, in order."""

    def __init__(self) -> None:
        self.meta: list[dict[str, Any]] = []
        self.arrays: dict[str, np.ndarray] = {}
        self.bytes = 0
        self.note: str | None = None

    def add(self, kind: str, name: str, values: np.ndarray) -> None:
        if self.note is not None:
            return
        self.bytes += values.nbytes
        if self.bytes > DRAWS_BYTES_CAP:
            self.note = "more than 256 MiB of random draws: recording stopped there"
            return
        self.arrays[f"d{len(self.meta)}"] = values
        self.meta.append({"kind": kind, "name": name, "size": int(values.size)})

    def save(self, out: Path) -> dict[str, Any]:
        np.savez(out / DRAWS_FILE, **self.arrays)
        return {"draws": self.meta, "note": self.note}


class DrawQueue:
    """The MindSpore side's view of the recorded draws: per kind, the next one not yet served."""

    def __init__(self, torch_dir: Path, record: dict[str, Any]) -> None:
        meta = (record.get("draws") or {}).get("draws", [])
        self.file = np.load(torch_dir / DRAWS_FILE) if meta else None
        self.pending: dict[str, list[int]] = {}
        self.meta = meta
        for i, m in enumerate(meta):
            self.pending.setdefault(m["kind"], []).append(i)
        self.served: dict[str, int] = {}
        self.unmatched: dict[str, int] = {}

    def take(self, kind: str, name: str, size: int, check: Any = None) -> np.ndarray | None:
        """The next recorded draw of `kind` holding `size` values (and passing `check`), or None (counted)."""
        queue = self.pending.get(kind)
        if queue and self.file is not None and self.meta[queue[0]]["size"] == size:
            values = self.file[f"d{queue[0]}"]
            if check is None or check(values):
                queue.pop(0)
                self.served[name] = self.served.get(name, 0) + 1
                return values
        self.unmatched[name] = self.unmatched.get(name, 0) + 1
        return None

    def summary(self) -> dict[str, Any]:
        left: dict[str, int] = {}
        for queue in self.pending.values():
            for i in queue:
                left[self.meta[i]["name"]] = left.get(self.meta[i]["name"], 0) + 1
        return {"served": self.served, "unmatched_ms": self.unmatched, "unused_torch": left}
