"""``torch2ms compare-train``: the user's training script and its conversion, run side by side unmodified
(instrumented from outside), compared step by step (R26).

Public API (imported lazily; importing this package pulls in neither torch nor MindSpore):
  * :func:`compare_train` → :class:`TrainReport` (``.status``, ``.first_divergence``, ``.exit_code``)
  * :class:`TrainUsageError` — bad paths or arguments (the CLI exits 2)
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "compare_train": "api",
    "TrainUsageError": "runner",
    "TrainReport": "report",
    "print_report": "report",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
