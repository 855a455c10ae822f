"""scan speed against a plain libcst parse of the same files, side by side in one run.

Timing lives here, never in tests. Each figure is the best of a few repetitions.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import time
from pathlib import Path

import libcst

from torch2ms.analysis.scan import iter_python_files, scan_path
from torch2ms.kb import load_kb

REPEAT = 3


def torchvision_sources() -> list[Path]:
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        sys.exit("bench needs torchvision installed (make venv)")
    root = Path(list(spec.submodule_search_locations)[0])
    files: list[Path] = []
    for sub in ("models", "ops"):
        found, _ = iter_python_files(root / sub)
        files += found
    return files


def best(fn) -> float:
    times = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def bench_scan() -> None:
    files = torchvision_sources()
    lines = sum(p.read_text(encoding="utf-8").count("\n") for p in files)
    roots = sorted({p.parent for p in files})
    kb = load_kb()

    tv_root = Path(list(importlib.util.find_spec("torchvision").submodule_search_locations)[0])

    def scan():
        for sub in ("models", "ops"):
            scan_path(tv_root / sub, kb)

    def cst_parse():
        for p in files:
            libcst.parse_module(p.read_text(encoding="utf-8"))

    def ast_parse():
        for p in files:
            ast.parse(p.read_text(encoding="utf-8"))

    t_scan, t_cst, t_ast = best(scan), best(cst_parse), best(ast_parse)
    print(f"scan over torchvision models/ + ops/: {len(files)} files, {lines} lines ({len(roots)} folders)")
    print(f"  {'what':34s} {'seconds':>8s} {'lines/s':>10s} {'vs libcst parse':>16s}")
    for name, t in (("torch2ms scan", t_scan), ("libcst parse only (the floor)", t_cst), ("ast parse only", t_ast)):
        print(f"  {name:34s} {t:8.3f} {lines / t:10.0f} {t / t_cst:15.2f}x")
    print(f"  target: scan <= 1.5x the libcst parse time -> {'met' if t_scan <= 1.5 * t_cst else 'NOT met'}")


if __name__ == "__main__":
    bench_scan()
