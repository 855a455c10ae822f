"""Issues 15 and 26: `torch2ms convert` and `torch2ms scan` on a big tree: seconds, files/s and peak memory,
next to libcst parse-only; the larger tree's figures also as ratios against the smaller run's.

The tree is copies of ../shared/realcode/corpus (packages renamed copy0001/...), N files in all. Each
measurement runs in its own process, so its peak RSS is its own: the tree driver (the main process) and
the largest worker are reported apart. Peak memory must not grow with the tree: the bench runs at 1,000
files and at N (10,000 by default) and prints both.

    python bench/tree_bench.py [--files 10000] [--small 1000] [-j 2]
    python bench/tree_bench.py --big    # one generated file of 1, 2 and 5 MB: convert's peak RSS and time
    python bench/tree_bench.py --only scan --files 100000 --small 10000   # scan alone at 100k files
    python bench/tree_bench.py --only scan --files 100000 --small 10000 --lines 15   # 100k generated small files
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "realcode" / "corpus"

CONVERT = """
import json, resource, sys, time
from torch2ms.convert import convert_tree
t = time.perf_counter()
r = convert_tree(sys.argv[1], sys.argv[2], jobs=int(sys.argv[3]))
s = time.perf_counter() - t
print(json.dumps({"seconds": s, "files": len(r.files), "failed": len(r.failed),
    "main_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "worker_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""

SCAN = """
import json, resource, sys, time
from torch2ms.convert.estimate import scan_with_estimate  # what `torch2ms scan` runs (the effort: a conversion)
t = time.perf_counter()
r = scan_with_estimate(sys.argv[1], jobs=int(sys.argv[2]))
s = time.perf_counter() - t
print(json.dumps({"seconds": s, "files": len(r.files), "lines": sum(f.lines for f in r.files),
    "main_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "worker_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""

# One file converted in this process, as a worker does (no memory cap, no size limit: measured, not refused).
BIG = """
import json, os, resource, sys, time
from torch2ms.convert import project_pool
from torch2ms.kb import load_kb
load_kb()
project_pool.MAX_CONVERT_BYTES = 1 << 40
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
p = sys.argv[1]
o = project_pool.convert_job(project_pool.Job(p, os.path.basename(p), os.path.getsize(p)))
print(json.dumps({"seconds": time.perf_counter() - t, "error": o.error, "base_rss_mb": base,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

PARSE = """
import json, resource, sys, time
from multiprocessing import Pool
from pathlib import Path
import libcst

def parse(path):
    try:
        libcst.parse_module(Path(path).read_bytes())
        return 1
    except Exception:
        return 0

if __name__ == "__main__":
    files = [str(p) for p in sorted(Path(sys.argv[1]).rglob("*.py"))]
    t = time.perf_counter()
    with Pool(int(sys.argv[2])) as pool:
        ok = sum(pool.imap_unordered(parse, files, chunksize=16))
    s = time.perf_counter() - t
    print(json.dumps({"seconds": s, "files": len(files), "parsed": ok,
        "main_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "worker_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


# A small generated module (--lines): a model, a function and a loop, ~15 lines; more lines repeat the function.
SMALL = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear({i} % 7 + 4, 2)

    def forward(self, x):
        return F.relu(self.fc(x)).sum(dim=-1)
"""
SMALL_MORE = """

def step{k}(model, x, opt):
    loss = model(x).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()
"""


def build_small_tree(root: Path, n: int, lines: int) -> int:
    """``n`` generated Python files of about ``lines`` lines each, 100 to a package."""
    for i in range(n):
        text = SMALL.format(i=i)
        k = 0
        while text.count("\n") + 8 <= lines:
            text += SMALL_MORE.format(k=k)
            k += 1
        folder = root / f"pkg{i // 100:05d}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "__init__.py").write_text("")
        (folder / f"m{i:06d}.py").write_text(text)
    return sum(p.stat().st_size for p in root.rglob("*.py"))


def build_tree(root: Path, n: int, lines: int | None = None) -> int:
    """``n`` Python files: copies of the corpus, each copy a package of its own (or generated small files)."""
    if lines:
        return build_small_tree(root, n, lines)
    seeds = sorted(p for p in CORPUS.rglob("*.py"))
    if not seeds:
        sys.exit(f"no corpus at {CORPUS}")
    made, copy = 0, 0
    while made < n:
        for src in seeds[: n - made]:
            dst = root / f"copy{copy:04d}" / src.relative_to(CORPUS)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        made += min(len(seeds), n - made)
        copy += 1
    return sum(p.stat().st_size for p in root.rglob("*.py"))


def _run(script: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        sys.exit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(n: int, jobs: int, work: Path, only: str | None = None, lines: int | None = None) -> dict:
    tree = work / f"tree{n}"
    size = build_tree(tree, n, lines)
    runs = {}
    if only in (None, "convert"):
        runs["convert"] = _run(CONVERT, str(tree), str(work / f"out{n}"), str(jobs))
    if only in (None, "scan"):
        runs["scan"] = _run(SCAN, str(tree), str(jobs))
    if only is None:
        runs["parse"] = _run(PARSE, str(tree), str(jobs))
    lines = runs["scan"]["lines"] if "scan" in runs else "?"
    print(f"{n} files, {size / 1e6:.1f} MB of source, {lines} lines, {jobs} workers:")
    labels = {"convert": "torch2ms convert", "scan": "torch2ms scan", "parse": "libcst parse only"}
    for key, r in runs.items():
        print(
            f"  {labels[key]:18s} {r['seconds']:7.1f} s  {r['files'] / r['seconds']:6.1f} files/s  "
            f"peak RSS main {r['main_rss_mb']:6.0f} MB, largest worker {r['worker_rss_mb']:6.0f} MB"
        )
    if "parse" in runs:
        conv, parse = runs["convert"], runs["parse"]
        print(f"  convert / parse-only: {conv['seconds'] / parse['seconds']:.1f}x; {conv['failed']} files failed")
    shutil.rmtree(tree)
    shutil.rmtree(work / f"out{n}", ignore_errors=True)
    return {"files": n, **runs}


def ratios(small: dict, large: dict) -> None:
    """The larger run against the smaller: time should grow like the files, peak memory not at all."""
    k = large["files"] / small["files"]
    print(f"{large['files']} files against {small['files']} ({k:.0f}x the files):")
    for name in ("convert", "scan"):
        if name not in small or name not in large:
            continue
        a, b = small[name], large[name]
        worker = f", worker {b['worker_rss_mb'] / a['worker_rss_mb']:4.2f}x" if a["worker_rss_mb"] else ""
        print(
            f"  {name:8s} time {b['seconds'] / a['seconds']:5.1f}x  "
            f"peak RSS main {b['main_rss_mb'] / a['main_rss_mb']:4.2f}x{worker}"
        )


def big_files(work: Path) -> None:
    """Generated files of 1, 2 and 5 MB (corpus files one after another): what one file costs a worker."""
    texts = []
    for p in sorted(CORPUS.rglob("*.py")):
        text = p.read_text(encoding="utf-8", errors="replace").replace("from __future__ import", "pass  #")
        try:
            compile(text, str(p), "exec")
        except (SyntaxError, ValueError):
            continue
        texts.append(text)
    for mb in (1, 2, 5):
        parts, size = [], 0
        while size + len(texts[len(parts) % len(texts)]) < mb * 1_000_000:
            parts.append(texts[len(parts) % len(texts)])
            size += len(parts[-1]) + 1
        path = work / f"big{mb}mb.py"
        path.write_text("\n".join(parts), encoding="utf-8")
        r = _run(BIG, str(path))
        over = r["peak_rss_mb"] - r["base_rss_mb"]
        print(
            f"  {path.stat().st_size / 1e6:4.1f} MB file: {r['seconds']:6.1f} s, peak RSS {r['peak_rss_mb']:6.0f} MB "
            f"({over:6.0f} MB over the loaded KB){'; ' + r['error'] if r['error'] else ''}",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--big", action="store_true", help="one big generated file instead of a big tree")
    ap.add_argument("--only", choices=("convert", "scan"), help="measure one command (e.g. scan at 100,000 files)")
    ap.add_argument("--lines", type=int, help="generated files of about this many lines instead of corpus copies")
    ap.add_argument("--work", help="folder for the generated trees (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        if args.big:
            big_files(Path(tmp))
            return 0
        runs = []
        for n in sorted({args.small, args.files}):
            start = time.perf_counter()
            runs.append(measure(n, args.jobs, Path(tmp), args.only, args.lines))
            print(f"  (bench wall time {time.perf_counter() - start:.0f} s)", flush=True)
        if len(runs) == 2:
            ratios(*runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
