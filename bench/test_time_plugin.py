"""pytest plugin for bench/test_time.py: run a sample of the tests and record each one's CPU seconds.

Loaded with ``-p test_time_plugin`` (bench/ on PYTHONPATH). ``TEST_TIME_OUT``: the TSV it appends
``nodeid<TAB>cpu_s<TAB>wall_s`` to, one line per test as it ends. ``TEST_TIME_MIN``: keep only test
functions with at least this many cases; ``TEST_TIME_PER``: cases kept per function (the middle one
first, spread over the function's cases). CPU seconds count this process and every child it waited for
(a compare-train's torch and MindSpore processes), so they hold on a loaded machine where wall time does not.
"""

from __future__ import annotations

import os
import resource
import time
from typing import Any

import pytest


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    groups: dict[str, list[Any]] = {}
    for item in items:
        groups.setdefault(item.nodeid.split("[")[0], []).append(item)
    least = int(os.environ.get("TEST_TIME_MIN", "1"))
    per = int(os.environ.get("TEST_TIME_PER", "1"))
    keep: list[Any] = []
    drop: list[Any] = []
    for its in groups.values():
        n = len(its)
        chosen = set() if n < least else {(n // 2 + k * n // per) % n for k in range(min(per, n))}
        for i, item in enumerate(its):
            (keep if i in chosen else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any):
    cpu, wall = _cpu(), time.perf_counter()
    yield
    line = f"{item.nodeid}\t{_cpu() - cpu:.2f}\t{time.perf_counter() - wall:.2f}\n"
    with open(os.environ["TEST_TIME_OUT"], "a", encoding="utf-8") as f:
        f.write(line)
