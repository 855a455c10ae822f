"""compare-train's instrumentation overhead: examples/project/train_cnn.py and its conversion, each run
plain (`python train_cnn.py --epochs E`, unmodified) and instrumented (the bootstrap compare-train
starts), per side. Target: instrumented / plain ≤ 1.2 per step.

How a step is timed: inside each process (bench/step_clock.py), a perf_counter and a process_time
stamp after every training step: torch at every optimizer step (its global step post-hook), MindSpore
at the end of every call of the most-called outermost Cell (the converted loop's jit-compiled
TrainStep). The same clock, about a microsecond a step, runs in the plain and the instrumented process,
so interpreter start, imports, compilation and the script's evaluation after training stay out of the
figure (whole-process timing drowned a few-ms torch step in start-up noise of ±hundreds of ms).
A run's per-step figure: the median, over its epochs after the first `--warmup` (graph compilation,
model discovery, caches), of the epoch's wall (or CPU) time from the last step of the previous epoch to
its own last step, divided by its steps, so the epoch boundary's work (scheduler, new data iterator)
counts. Variants are interleaved in `--repeat` rounds; each variant's figure is the median over rounds.
CPU seconds (the process's, all its threads) are steadier than wall on a shared machine: the verdict
is on CPU time, wall is shown beside it. MindSpore's instrumented runs need the torch record of the
same config, so each round runs the torch variants first.

Run:  .venv/bin/python bench/compare_train_bench.py [--epochs 8] [--warmup 2] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")
# One intra-op thread for every variant: oversubscribed OpenMP threads spin, and on a shared 2-core
# machine that turns other load into CPU seconds of ours.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
os.environ.setdefault("MS_DEV_LAUNCH_BLOCKING", "1")
os.environ.setdefault("MS_DEV_HOST_BLOCKING_RUN", "1")
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "project"
CLOCK = Path(__file__).resolve().with_name("step_clock.py")
STEPS_PER_EPOCH = 4  # 72 training images, batches of 16, drop_last
PAIRS = (("torch", "torch plain"), ("MindSpore", "MindSpore plain"))


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
    """Each variant's step_clock arguments after OUT.json, in the order a round runs them."""
    script_args = ["--epochs", str(epochs), "--checkpoint", str(tmp / "cnn.pth")]
    replay = str(config(tmp / "replay", epochs, ms_dir / "train_cnn.py", "replay"))
    own = str(config(tmp / "own", epochs, ms_dir / "train_cnn.py", "own"))
    return {
        "torch plain": ["torch", "run", str(EXAMPLE / "train_cnn.py"), *script_args],
        "torch instrumented": ["torch", "boot", replay],
        "torch instrumented (own data, for MindSpore)": ["torch", "boot", own],
        "MindSpore plain": ["mindspore", "run", str(ms_dir / "train_cnn.py"), *script_args],
        "MindSpore instrumented": ["mindspore", "boot", own],
    }


def per_step(stamps: list[list], warmup: int) -> tuple[float, float]:
    """Median steady-state epoch time per step, (wall, CPU) seconds, from one run's step stamps."""
    most = Counter(name for _, _, name in stamps).most_common(1)[0][0]
    steps = [(wall, cpu) for wall, cpu, name in stamps if name == most]
    ends = range(warmup * STEPS_PER_EPOCH - 1, len(steps) - STEPS_PER_EPOCH, STEPS_PER_EPOCH)
    if warmup < 1 or len(ends) < 1:
        sys.exit(f"too few steps ({len(steps)}) after {warmup} warm-up epoch(s): raise --epochs")
    epochs = [[b - a for a, b in zip(steps[e], steps[e + STEPS_PER_EPOCH])] for e in ends]
    return (
        statistics.median(w for w, _ in epochs) / STEPS_PER_EPOCH,
        statistics.median(c for _, c in epochs) / STEPS_PER_EPOCH,
    )


def run_variant(args: list[str], out: Path, env: dict[str, str], warmup: int) -> tuple[float, float]:
    out.unlink(missing_ok=True)
    subprocess.run(
        [sys.executable, str(CLOCK), str(out), *args],
        cwd=out.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return per_step(json.loads(out.read_text()), warmup)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=8, help="epochs of every run")
    ap.add_argument("--warmup", type=int, default=2, help="first epochs left out of the figure")
    ap.add_argument("--repeat", type=int, default=2, help="interleaved rounds")
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
    figures: dict[str, list[tuple[float, float]]] = {}
    for _ in range(opts.repeat):
        for name, args in commands(tmp, ms_dir, opts.epochs).items():
            figures.setdefault(name, []).append(run_variant(args, tmp / "stamps.json", env, opts.warmup))
    report(figures, opts, (load0, os.getloadavg()[0]))


def report(figures: dict[str, list[tuple[float, float]]], opts: argparse.Namespace, load: tuple) -> None:
    med = {n: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for n, v in figures.items()}
    steady = (opts.epochs - opts.warmup - 1) * STEPS_PER_EPOCH
    print(
        f"compare-train instrumentation overhead, examples/project/train_cnn.py: step times inside each process, "
        f"{steady} steady-state steps of {opts.epochs} epochs per run, median over {opts.repeat} interleaved "
        f"rounds (load average {load[0]:.1f} → {load[1]:.1f})"
    )
    print(f"  {'variant':44s} {'wall ms/step':>12s} {'CPU ms/step':>12s}   rounds (wall ms)")
    for name, (wall, cpu) in med.items():
        rounds = " ".join(f"{1000 * w:.2f}" for w, _ in figures[name])
        print(f"  {name:44s} {1000 * wall:12.2f} {1000 * cpu:12.2f}   {rounds}")
    for side, base in PAIRS:
        inst, plain = med[f"{side} instrumented"], med[base]
        ratio_wall, ratio_cpu = inst[0] / plain[0], inst[1] / plain[1]
        verdict = "ok" if ratio_cpu <= 1.2 else "ABOVE TARGET"
        print(
            f"  {side}: instrumented / plain per step = {ratio_cpu:.2f}× CPU, {ratio_wall:.2f}× wall "
            f"(target ≤ 1.2× CPU: {verdict})"
        )


if __name__ == "__main__":
    main()
