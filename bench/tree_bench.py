"""Issue 15: `torch2ms convert` on a big tree: seconds, files/s and peak memory, next to libcst parse-only.

The tree is copies of ../shared/realcode/corpus (packages renamed copy0001/...), N files in all. Each
measurement runs in its own process, so its peak RSS is its own: the tree driver (the main process) and
the largest worker are reported apart. Peak memory must not grow with the tree: the bench runs at 1,000
files and at N (10,000 by default) and prints both.

    python bench/tree_bench.py [--files 10000] [--small 1000] [-j 2]
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


def build_tree(root: Path, n: int) -> int:
    """``n`` Python files: copies of the corpus, each copy a package of its own."""
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


def measure(n: int, jobs: int, work: Path) -> None:
    tree = work / f"tree{n}"
    size = build_tree(tree, n)
    conv = _run(CONVERT, str(tree), str(work / f"out{n}"), str(jobs))
    parse = _run(PARSE, str(tree), str(jobs))
    print(f"{n} files, {size / 1e6:.1f} MB of source, {jobs} workers:")
    for name, r in (("torch2ms convert", conv), ("libcst parse only", parse)):
        print(
            f"  {name:18s} {r['seconds']:7.1f} s  {r['files'] / r['seconds']:6.1f} files/s  "
            f"peak RSS main {r['main_rss_mb']:6.0f} MB, largest worker {r['worker_rss_mb']:6.0f} MB"
        )
    print(f"  convert / parse-only: {conv['seconds'] / parse['seconds']:.1f}x; {conv['failed']} files failed")
    shutil.rmtree(tree)
    shutil.rmtree(work / f"out{n}", ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in sorted({args.small, args.files}):
            start = time.perf_counter()
            measure(n, args.jobs, Path(tmp))
            print(f"  (bench wall time {time.perf_counter() - start:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
