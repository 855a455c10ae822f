"""compare-train's instrumentation overhead: examples/project/train_cnn.py and its conversion, each run
plain (`python train_cnn.py --epochs E`) and instrumented (the bootstrap compare-train starts), per side.

Per-step cost = (T(long) - T(short)) / (steps_long - steps_short), so interpreter start, imports,
compilation and the script's evaluation and checkpoint after training cancel out; each variant runs
`--repeat` rounds (a short and a long run back to back) and the median of the rounds' per-step figures
is reported. CPU seconds of the child process (steadier on a shared machine) and wall seconds are both shown.
The MindSpore side is instrumented with --own-data here, so it runs the same data pipeline as the
plain script (with replay it reads torch's recorded batches instead, which is cheaper still).
Target: instrumented / plain ≤ 1.2 per step.

Run:  .venv/bin/python bench/compare_train_bench.py [--short 2] [--long 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")
# One intra-op thread for every variant: oversubscribed OpenMP threads spin, and on a shared 2-core
# machine that turns other load into CPU seconds of ours (a first run with the default threads, load
# average 10, spread the torch per-step CPU time of near-identical variants over 54-140 ms).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
os.environ.setdefault("MS_DEV_LAUNCH_BLOCKING", "1")
os.environ.setdefault("MS_DEV_HOST_BLOCKING_RUN", "1")
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "project"
STEPS_PER_EPOCH = 4  # 72 training images, batches of 16, drop_last
TRAINRUN = ROOT / "src" / "torch2ms" / "trainrun"


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def config(work: Path, epochs: int, ms_script: Path, data: str) -> Path:
    cfg = {
        "work": str(work),
        "steps": epochs * STEPS_PER_EPOCH,
        "seed": 0,
        "data": data,
        "fake_data": False,
        "mode": "pynative",
        "torch_script": str(EXAMPLE / "train_cnn.py"),
        "ms_script": str(ms_script),
        "args": ["--epochs", str(epochs)],
    }
    work.mkdir(parents=True, exist_ok=True)
    (work / "config.json").write_text(json.dumps(cfg))
    return work / "config.json"


def commands(tmp: Path, ms_dir: Path, epochs: int) -> dict[str, list[str]]:
    py = sys.executable
    plain_args = ["--epochs", str(epochs), "--checkpoint", str(tmp / "cnn.pth")]
    launch = "import sys; sys.path.pop(0); from torch2ms.trainrun.ms_boot import main; main(sys.argv[1])"
    own = config(tmp / f"own{epochs}", epochs, ms_dir / "train_cnn.py", "own")
    return {
        "torch plain": [py, str(EXAMPLE / "train_cnn.py"), *plain_args],
        "torch instrumented": [
            py,
            str(TRAINRUN / "torch_boot.py"),
            str(config(tmp / f"w{epochs}", epochs, ms_dir / "train_cnn.py", "replay")),
        ],
        "torch instrumented (own data, for MindSpore)": [py, str(TRAINRUN / "torch_boot.py"), str(own)],
        "MindSpore plain": [py, str(ms_dir / "train_cnn.py"), *plain_args],
        "MindSpore instrumented": [py, "-c", launch, str(own)],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--short", type=int, default=2, help="epochs of the short run")
    ap.add_argument("--long", type=int, default=20, help="epochs of the long run")
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    from torch2ms.convert import convert_tree

    tmp = Path(tempfile.mkdtemp(prefix="compare-train-bench-"))
    ms_dir = tmp / "project_ms"
    convert_tree(str(EXAMPLE), str(ms_dir))
    env = dict(
        os.environ,
        SHAPES_DIR=str(tmp / "shapes"),
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    )
    subprocess.run([sys.executable, "-c", "import data; data.make_image_folder()"], cwd=EXAMPLE, env=env, check=True)
    load0 = os.getloadavg()[0]
    slopes: dict[str, list[tuple[float, float]]] = {}
    steps = (opts.long - opts.short) * STEPS_PER_EPOCH
    for _ in range(opts.repeat):
        short_cmds, long_cmds = commands(tmp, ms_dir, opts.short), commands(tmp, ms_dir, opts.long)
        for n in short_cmds:  # torch first (MindSpore loads its record); a variant's two runs back to back
            a, b = timed(short_cmds[n], tmp, env), timed(long_cmds[n], tmp, env)
            slopes.setdefault(n, []).append(((b[0] - a[0]) / steps, (b[1] - a[1]) / steps))
    report(slopes, steps, opts, (load0, os.getloadavg()[0]))


def report(slopes: dict[str, list[tuple[float, float]]], steps: int, opts: argparse.Namespace, load: tuple) -> None:
    per_step = {n: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for n, v in slopes.items()}
    print(
        f"compare-train instrumentation overhead, examples/project/train_cnn.py: {steps} steps between runs "
        f"of {opts.short} and {opts.long} epochs, median of {opts.repeat} rounds (load average {load[0]:.1f} → {load[1]:.1f})"
    )
    print(f"  {'variant':44s} {'wall ms/step':>12s} {'CPU ms/step':>12s}")
    for name, (wall, cpu) in per_step.items():
        print(f"  {name:44s} {1000 * wall:12.2f} {1000 * cpu:12.2f}")
    for side, base in (("torch", "torch plain"), ("MindSpore", "MindSpore plain")):
        inst, plain = per_step[f"{side} instrumented"], per_step[base]
        if min(inst + plain) <= 0:
            print(
                f"  {side}: too noisy to tell (a longer run took less time than a shorter one): rerun on a quieter machine"
            )
            continue
        ratio_wall, ratio_cpu = inst[0] / plain[0], inst[1] / plain[1]
        verdict = "ok" if ratio_cpu <= 1.2 else "ABOVE TARGET"
        print(
            f"  {side}: instrumented / plain per step = {ratio_cpu:.2f}× CPU, {ratio_wall:.2f}× wall (target ≤ 1.2× CPU: {verdict})"
        )


if __name__ == "__main__":
    main()
