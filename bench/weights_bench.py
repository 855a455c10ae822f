"""`make bench` (weights): torch2ms weights vs the naive path vs a plain copy, on a ResNet-50 checkpoint.

Each contender runs in its own fresh subprocess, which reports:
  * op_s      — seconds for the operation itself (after imports);
  * total_s   — the subprocess wall time, imports included (what a user waits for);
  * peak_mb   — peak resident memory added by the operation: VmHWM (peak RSS of the process)
                after it minus RSS before it; a lower bound of 0 when the imports peaked higher
                (ru_maxrss is not used: it carries the parent's peak across fork+exec);
  * heap_mb   — tracemalloc peak during the operation (Python + numpy allocations).

Contenders: torch2ms (this package's `torch2ms weights` library call, no torch imported), naive
(torch.load + mindspore.save_checkpoint of a dict of numpy arrays), copy (shutil.copyfile).
Targets: torch2ms op time ≤ 1.5× copy; peak memory ≤ 1.2× checkpoint size.
Timing lives here, never in tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, os, resource, sys, time, tracemalloc
which, src, dst, trace = sys.argv[1:5]
trace = trace == "1"

def rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

if which == "torch2ms":
    from torch2ms.weights.convert import convert_checkpoint
    from torch2ms.kb import load_kb
    kb = load_kb()
    op = lambda: convert_checkpoint(src, dst, kb=kb)
elif which == "naive":
    import torch, mindspore as ms
    def op():
        sd = torch.load(src, map_location="cpu", weights_only=True)
        ms.save_checkpoint({k: v.numpy() for k, v in sd.items()}, dst)
elif which == "copy":
    import shutil
    op = lambda: shutil.copyfile(src, dst)
before = rss_mb()
if trace:
    tracemalloc.start()
t = time.perf_counter()
op()
op_s = time.perf_counter() - t
heap = tracemalloc.get_traced_memory()[1] / 2**20 if trace else 0.0
with open("/proc/self/status") as fh:  # VmHWM: this process image's peak RSS (ru_maxrss survives exec)
    peak = next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:")) / 1024
print(json.dumps({"op_s": op_s, "peak_mb": max(0.0, peak - before), "heap_mb": heap, "rss_before_mb": before}))
'''


def _child(which: str, src: Path, dst: Path, trace: bool) -> tuple[dict, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), GLOG_v="3", OMP_NUM_THREADS="1")
    if dst.exists():
        dst.chmod(0o600)
        dst.unlink()
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, which, str(src), str(dst), "1" if trace else "0"],
                          capture_output=True, text=True, env=env)
    total = time.perf_counter() - t
    if proc.returncode:
        sys.exit(f"{which} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), total


def run(which: str, src: Path, dst: Path) -> dict:
    """One timed run (tracemalloc off: it slows Python code), then one run for the heap figure."""
    res, total = _child(which, src, dst, trace=False)
    traced, _ = _child(which, src, dst, trace=True)
    res["total_s"] = total
    res["heap_mb"] = traced["heap_mb"]
    return res


def main() -> None:
    try:
        import torch
        import torchvision
    except ImportError:
        sys.exit("weights bench needs torch and torchvision (make venv)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / "resnet50.pth"
        torch.manual_seed(0)
        torch.save(torchvision.models.resnet50().state_dict(), src)
        size_mb = src.stat().st_size / 2**20
        # warm the page cache the same way for everyone
        src.read_bytes()
        results = {w: run(w, src, tmp / f"out_{w}.ckpt") for w in ("copy", "torch2ms", "naive")}
    copy, ours, naive = results["copy"], results["torch2ms"], results["naive"]
    print(f"ResNet-50 checkpoint: {size_mb:.1f} MiB (torchvision resnet50 random init, torch.save)")
    print(f"{'':10s} {'op s':>8s} {'total s':>8s} {'peak MiB':>9s} {'heap MiB':>9s}")
    for name, r in results.items():
        print(f"{name:10s} {r['op_s']:8.3f} {r['total_s']:8.2f} {r['peak_mb']:9.1f} {r['heap_mb']:9.1f}")
    t_ratio = ours["op_s"] / copy["op_s"]
    m_ratio = ours["peak_mb"] / size_mb
    print(f"torch2ms / copy time: {t_ratio:.2f}x (target <= 1.5x)   "
          f"torch2ms / naive time: {ours['op_s'] / naive['op_s']:.2f}x (total incl. imports "
          f"{ours['total_s'] / naive['total_s']:.2f}x)")
    print(f"torch2ms peak memory / checkpoint size: {m_ratio:.2f}x (target <= 1.2x); "
          f"naive: {naive['peak_mb'] / size_mb:.2f}x")
    print(json.dumps({"size_mb": size_mb, **{k: v for k, v in results.items()},
                      "time_vs_copy": t_ratio, "mem_vs_size": m_ratio}))


if __name__ == "__main__":
    main()
