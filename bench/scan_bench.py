"""scan speed against a plain libcst parse of the same files, side by side in one run.

Timing lives here, never in tests. Each figure is the best of a few repetitions.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import libcst
from common import best, torchvision_tree  # bench/common.py (scripts run from bench/)

from torch2ms.analysis.scan import scan_path
from torch2ms.kb import load_kb

REPEAT = 3


def bench_scan() -> None:
    _, files = torchvision_tree()
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

    t_scan, t_cst, t_ast = best(scan, REPEAT), best(cst_parse, REPEAT), best(ast_parse, REPEAT)
    print(f"scan over torchvision models/ + ops/: {len(files)} files, {lines} lines ({len(roots)} folders)")
    print(f"  {'what':34s} {'seconds':>8s} {'lines/s':>10s} {'vs libcst parse':>16s}")
    for name, t in (("torch2ms scan", t_scan), ("libcst parse only (the floor)", t_cst), ("ast parse only", t_ast)):
        print(f"  {name:34s} {t:8.3f} {lines / t:10.0f} {t / t_cst:15.2f}x")
    print(f"  target: scan <= 1.5x the libcst parse time -> {'met' if t_scan <= 1.5 * t_cst else 'NOT met'}")


if __name__ == "__main__":
    bench_scan()
