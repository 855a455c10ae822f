"""`make bench`: speed of `torch2ms convert` against a libcst parse-only loop, from one run.

Converts the installed torchvision ``models/`` + ``ops/`` source (about 30k lines): once in one
process (``convert_source`` per file) and once over the tree with all cores (``convert_tree``,
jobs = cpu count). Targets: >= 5,000 lines/s per core, <= 2x the parse-only time, all cores used.
Timing lives here, never in tests.
"""

from __future__ import annotations

import ast
import gc
import os
import shutil
import tempfile
from pathlib import Path

import libcst
from common import best, best_wall_cpu, torchvision_tree  # bench/common.py (scripts run from bench/)

from torch2ms.analysis.infer import project_module_classes
from torch2ms.convert import convert_source, convert_tree
from torch2ms.convert.project import local_packages
from torch2ms.kb import load_kb

REPEAT = 3


def main() -> None:
    root, files = torchvision_tree()
    sources = {p: p.read_text(encoding="utf-8") for p in files}
    lines = sum(s.count("\n") for s in sources.values())
    kb = load_kb()

    roots = local_packages(root)
    modules = project_module_classes([ast.parse(s) for s in sources.values()], roots)

    def parse_only() -> None:
        for s in sources.values():
            libcst.parse_module(s)

    def parse_only_paused() -> None:
        # the converter pauses the garbage collector while a file converts (pipeline.collector_paused):
        # the same for the parse loop shows how much of the ratio that pause alone buys
        for s in sources.values():
            gc.disable()
            try:
                libcst.parse_module(s)
            finally:
                gc.enable()

    def convert_serial() -> None:
        for p, s in sources.items():
            convert_source(s, str(p), kb=kb, local_roots=roots, project_modules=modules)

    # The tree run: a copy holding only models/ + ops/ (plus the package __init__), all cores.
    work = Path(tempfile.mkdtemp(prefix="t2m-bench-"))
    tree = work / "torchvision"
    for sub in ("models", "ops"):
        shutil.copytree(root / sub, tree / sub, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "__init__.py").write_text("")
    jobs = os.cpu_count() or 1

    def convert_parallel() -> None:
        convert_tree(tree, work / "out", jobs=jobs)

    try:
        t_parse, c_parse = best_wall_cpu(parse_only, REPEAT)
        t_paused, c_paused = best_wall_cpu(parse_only_paused, REPEAT)
        t_serial, c_serial = best_wall_cpu(convert_serial, REPEAT)
        t0 = os.times()
        t_par = best(convert_parallel, REPEAT)
        t1 = os.times()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # CPU seconds of the worker processes per wall second: how many cores the tree run kept busy.
    child_cpu = (t1.children_user + t1.children_system) - (t0.children_user + t0.children_system)
    busy = child_cpu / (REPEAT * t_par) if t_par else 0.0

    print(f"convert over torchvision models/ + ops/: {len(files)} files, {lines} lines, {jobs} cores")
    print(f"  {'what':40s} {'wall s':>8s} {'CPU s':>8s} {'lines/CPU s':>12s} {'vs parse (CPU)':>15s}")
    print(
        f"  {'libcst parse only, 1 process (floor)':40s} {t_parse:8.3f} {c_parse:8.3f} {lines / c_parse:12.0f} {1.0:14.2f}x"
    )
    print(
        f"  {'libcst parse only, collector paused':40s} {t_paused:8.3f} {c_paused:8.3f} {lines / c_paused:12.0f} {c_paused / c_parse:14.2f}x"
    )
    print(
        f"  {'convert_source, 1 process':40s} {t_serial:8.3f} {c_serial:8.3f} {lines / c_serial:12.0f} {c_serial / c_parse:14.2f}x"
    )
    print(f"  {f'convert_tree, jobs={jobs}':40s} {t_par:8.3f} {'':>8s} {lines / t_par:12.0f} {'(wall)':>15s}")
    per_core = lines / c_serial
    print(f"  convert_source vs parse with the collector paused as convert does: {c_serial / c_paused:.2f}x (CPU)")
    print(f"  wall-clock ratio convert/parse {t_serial / t_parse:.2f}x (stretched by any other load on the machine)")
    print(f"  parallel speed-up {t_serial / t_par:.2f}x on {jobs} cores; cores busy during the tree run: {busy:.2f}")
    print(f"  target >= 5000 lines/s per core: {per_core:.0f} -> {'met' if per_core >= 5000 else 'NOT met'}")
    print(
        f"  target <= 2x parse-only time: {c_serial / c_parse:.2f}x -> {'met' if c_serial <= 2 * c_parse else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
