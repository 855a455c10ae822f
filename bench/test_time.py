"""Where `make test`'s time goes, without running the whole suite: a table of cases × CPU seconds per file.

    .venv/bin/python bench/test_time.py [--min-cases 8] [--per 1] [--samples TSV] [--out bench/test_time.md]

1. collects the suite twice (``--collect-only``): as ``make test`` runs it (each matrix's covering slice,
   tests/matrix_support.py) and as ``make test-full`` does (``TORCH2MS_FULL_MATRIX=1``);
2. runs ``--per`` case(s) of every test function with at least ``--min-cases`` cases under pytest-xdist
   with bench/test_time_plugin.py, which records each test's CPU seconds (the test's process and the
   processes it waited for), or reads such a TSV (``--samples``);
3. writes the table: per file, its cases in each mode and the estimate (cases × the sampled CPU seconds of
   their function). CPU seconds, not wall time: they hold on a loaded machine. Divide by the workers (CI: 2)
   for the wall time the file adds; functions under ``--min-cases`` are counted, not sampled.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def collect(full: bool) -> dict[str, int]:
    """Test function id → its number of cases, as make test (or make test-full) collects them."""
    env = {k: v for k, v in os.environ.items() if k != "TORCH2MS_FULL_MATRIX"}
    if full:
        env["TORCH2MS_FULL_MATRIX"] = "1"
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-n", "0"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False).stdout
    counts: dict[str, int] = defaultdict(int)
    for line in out.splitlines():
        if "::" in line:
            counts[line.split("[")[0]] += 1
    return counts


def sample(out: Path, min_cases: int, per: int, workers: int) -> None:
    env = dict(os.environ, TEST_TIME_OUT=str(out), TEST_TIME_MIN=str(min_cases), TEST_TIME_PER=str(per))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "bench"), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "test_time_plugin"]
    subprocess.run([*cmd, "-n", str(workers)], cwd=ROOT, env=env, check=False)


def read_samples(path: Path) -> dict[str, list[float]]:
    cpu: dict[str, list[float]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        nodeid, seconds, _wall = line.split("\t")
        cpu[nodeid.split("[")[0]].append(float(seconds))
    return cpu


def cost(samples: list[float], n: int) -> float:
    """CPU seconds of ``n`` cases of a function from its samples in run order: with one sample, n times it;
    with more, the first (it pays the module's fixtures) plus n - 1 times the median of the others."""
    if not n or not samples:
        return 0.0
    if len(samples) == 1:
        return n * samples[0]
    rest = sorted(samples[1:])
    return samples[0] + (n - 1) * rest[len(rest) // 2]


def table(full: dict[str, int], sliced: dict[str, int], cpu: dict[str, list[float]]) -> str:
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0, 0])
    for func, n in full.items():
        row = rows[func.split("::")[0]]
        row[0] += n
        row[1] += sliced.get(func, 0)
        if cpu.get(func):
            row[2] += cost(cpu[func], n)
            row[3] += cost(cpu[func], sliced.get(func, 0))
        else:
            row[4] += sliced.get(func, 0)
    lines = [
        "| file | cases (full) | cases (make test) | est. CPU s (full) | est. CPU s (make test) | unsampled cases |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    total = [0.0] * 5
    for name, row in sorted(rows.items(), key=lambda kv: -kv[1][2]):
        total = [a + b for a, b in zip(total, row, strict=True)]
        if row[2] >= 20:
            lines.append(f"| {name} | {row[0]:.0f} | {row[1]:.0f} | {row[2]:.0f} | {row[3]:.0f} | {row[4]:.0f} |")
    lines.append(
        f"| **all files** | {total[0]:.0f} | {total[1]:.0f} | {total[2]:.0f} | {total[3]:.0f} | {total[4]:.0f} |"
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-cases", type=int, default=8)
    ap.add_argument("--per", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--samples", type=Path, help="a TSV the plugin wrote (skip the sampling run)")
    ap.add_argument("--out", type=Path, help="write the table here (default: print it)")
    args = ap.parse_args()
    samples = args.samples
    if samples is None:
        samples = Path(tempfile.mkdtemp(prefix="test-time-")) / "samples.tsv"
        sample(samples, args.min_cases, args.per, args.workers)
    text = table(collect(full=True), collect(full=False), read_samples(samples))
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
