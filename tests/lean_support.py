"""``make test``'s lean tier: a test function's cases run until its time budget is spent.

CI gives ``make test`` 2 cores and the project asks for about 25 minutes; the suite's end-to-end cases
(compare-train runs, converted projects trained in both modes) cost 5-30 s each, and running every case of
every matrix took ~110 minutes on 2 cores (CI stopped at 91% after 90 minutes). So, unless
``TORCH2MS_FULL_MATRIX=1`` (``make test-full``):

- a function whose cases cost more than ``BUDGET_S`` in all (seconds per case measured on 2 cores, kept in
  ``tests/case_seconds.tsv``) runs ``BUDGET_S // seconds`` of them, at least one: first the cases the greedy
  cover picks (each value of each parameter appears once as soon as the budget allows), then the rest;
- a function marked ``every_case`` (each case is a claim of its own: the KB's per-API proofs) and a function
  not in the table run every case.

``python bench/case_seconds.py LOG`` rewrites the table from a run's ``TORCH2MS_TEST_LOG``.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from matrix_support import covering_order, full_matrix

BUDGET_S = 10.0
TABLE = Path(__file__).with_name("case_seconds.tsv")


def case_seconds(path: Path | None = None) -> dict[str, float]:
    """function id (``file::name``) → measured seconds per case."""
    path = Path(os.environ.get("TORCH2MS_CASE_SECONDS") or path or TABLE)
    table: dict[str, float] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                function, seconds = line.rsplit("\t", 1)
                table[function] = float(seconds)
    return table


def function_id(item: Any) -> str:
    return f"{item.nodeid.split('::', 1)[0]}::{item.originalname}"


def lean_selection(items: list[Any], seconds: dict[str, float], budget: float = BUDGET_S) -> list[Any]:
    """The items the lean tier runs, in their collected order."""
    by_function: dict[str, list[Any]] = defaultdict(list)
    for item in items:
        by_function[function_id(item)].append(item)
    dropped: set[int] = set()
    for fid, cases in by_function.items():
        per_case = seconds.get(fid)
        if per_case is None or len(cases) < 2 or per_case * len(cases) <= budget:
            continue
        if any(c.get_closest_marker("every_case") is not None for c in cases):
            continue
        if not all(hasattr(c, "callspec") for c in cases):
            continue
        runs = max(1, int(budget // per_case))
        order, _ = covering_order(cases, axes=lambda c: tuple(c.callspec.params.values()))
        dropped.update(id(cases[i]) for i in order[runs:])
    return [item for item in items if id(item) not in dropped]


def lean_items(config: Any, items: list[Any]) -> None:
    """Deselect, in place, what the lean tier does not run (conftest's collection hook)."""
    if full_matrix():
        return
    kept = lean_selection(items, case_seconds())
    if len(kept) < len(items):
        keep = {id(i) for i in kept}
        config.hook.pytest_deselected(items=[i for i in items if id(i) not in keep])
        items[:] = kept
