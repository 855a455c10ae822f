"""Data-pipeline check (R25, with R14–R16): same data through a torch and a MindSpore pipeline, compared.

Names load lazily: ``torch2ms.cli`` imports ``torch2ms.data.cli`` to build its parser, and the static
commands must keep working without numpy (tests/test_static_no_frameworks.py).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "check_data": "check",
    "compare_sides": "check",
    "collect": "collect",
    "load_factory": "collect",
    "Side": "collect",
    "SpecError": "collect",
    "Finding": "diagnose",
    "ColumnReport": "report",
    "DataReport": "report",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'torch2ms.data' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
