"""`make bench`: every benchmark, each comparing torch2ms with the obvious alternative in one run.

Timing lives here, never in tests. Each bench is its own script (and process), so one failing
does not hide the others.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHES = [
    "kb_bench.py",
    "scan_bench.py",
    "convert_bench.py",
    "chain_bench.py",
    "tree_bench.py",
    "weights_bench.py",
    "compare_bench.py",
    "train_step_bench.py",
    "compare_train_bench.py",
    "realcode_bench.py",
]


def main() -> int:
    here = Path(__file__).parent
    failed = []
    for name in BENCHES:
        path = here / name
        if not path.exists():
            continue
        print(f"\n== {name}", flush=True)
        if subprocess.run([sys.executable, str(path)]).returncode != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
