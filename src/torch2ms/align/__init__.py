"""Layer-by-layer proof of a port: ``torch2ms compare`` (R23, R24, R26, R27, R28, R30).

Public API (imported lazily; importing this package pulls in neither torch nor MindSpore):
  * :func:`compare_models` (two specs, :class:`CompareOptions`) → :class:`CompareReport` (``.status``,
    ``.first_divergence``, ``.layers``, ``.training``, ``.write(dir)``)
  * :class:`CompareUsageError` — bad specs/options/inputs/files (the CLI exits 2)
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "compare_models": "api",
    "CompareOptions": "options",
    "TrainOptions": "options",
    "CompareUsageError": "options",
    "CompareReport": "report",
    "print_report": "report",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
