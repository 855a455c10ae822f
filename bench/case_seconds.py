"""Rewrite tests/case_seconds.tsv (make test's lean tier, tests/lean_support.py) from a run's test log.

    TORCH2MS_TEST_LOG=/tmp/t.log make test-full     # or make test: any run on CI-like 2 cores
    .venv/bin/python bench/case_seconds.py /tmp/t.log

Each test function with two or more cases gets its **median** seconds per case (setup + call + teardown):
a module fixture built by the first case does not count against the cases (cutting them would save
nothing). Functions under ``MIN_S`` per case are left out (the lean tier runs every case of a function
not in the table).
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

MIN_S = 0.5
TABLE = Path(__file__).resolve().parent.parent / "tests" / "case_seconds.tsv"


def per_case_seconds(log_lines: list[str]) -> dict[str, float]:
    """function id → median seconds per case, from TORCH2MS_TEST_LOG lines (seconds, phase, outcome, id)."""
    cases: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for line in log_lines:
        parts = line.split(None, 3)
        if len(parts) != 4 or not parts[3].startswith("tests/"):
            continue  # a nested pytest session's lines (a test that runs pytest) name no tests/ path
        nodeid = parts[3].strip().split("@", 1)[0]  # --dist loadgroup appends "@group" to a grouped test's id
        path, _, rest = nodeid.partition("::")
        function = f"{path}::{rest.split('[', 1)[0]}"
        cases[function][nodeid] += float(parts[0])
    return {f: statistics.median(c.values()) for f, c in cases.items() if len(c) >= 2}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    seconds = per_case_seconds(Path(argv[0]).read_text(encoding="utf-8").splitlines())
    rows = sorted((f, s) for f, s in seconds.items() if s >= MIN_S)
    header = "# test function\tmedian seconds per case (2 cores); written by bench/case_seconds.py\n"
    TABLE.write_text(header + "".join(f"{f}\t{s:.2f}\n" for f, s in rows), encoding="utf-8")
    print(f"{TABLE}: {len(rows)} functions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
