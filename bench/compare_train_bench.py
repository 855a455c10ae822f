"""compare-train's instrumentation overhead: examples/project/train_cnn.py and its conversion, each run
plain (`python train_cnn.py --epochs E`, unmodified) and instrumented (the bootstrap compare-train
starts), per side. Target: instrumented / plain ≤ 1.2 per step.

How a step is timed: inside each process (bench/step_clock.py), a perf_counter and a process_time
stamp after every training step: torch at every optimizer step (its global step post-hook), MindSpore
at the end of every call of the most-called outermost Cell (the converted loop's jit-compiled
TrainStep). The same clock, about a microsecond a step, runs in the plain and the instrumented process,
so interpreter start, imports, compilation and the script's evaluation after training stay out of the
figure (whole-process timing drowned a few-ms torch step in start-up noise of ±hundreds of ms).
A side's variants start together and only the epochs all of them trained at the same time count
(perf_counter is one clock for all processes): on a shared machine they then see the same load (run
one after the other, a load that came and went between them spread the rounds' ratios over 0.8-1.6).
Per run, an epoch's figure is its wall (or CPU) time from the last step of the previous epoch to its
own last step, divided by its steps, so the epoch boundary's work (scheduler, a new data iterator)
counts; the first `--warmup` epochs (graph compilation, model discovery, caches) are left out. A
variant's per-step figure is the median over its epochs of all `--repeat` rounds; a side's ratio is
the median of the rounds' ratios (instrumented / plain of the same round). CPU seconds (the process's,
all its threads) are steadier than wall on a shared machine: the verdict is on CPU time, wall is shown
beside it, and so is each round's CPU ratio: when the rounds disagree by more than 0.2 the machine was
too busy to judge. MindSpore's instrumented run needs the torch record of the same
config, so each round runs the torch variants first.

Run:  .venv/bin/python bench/compare_train_bench.py [--epochs 40] [--warmup 2] [--repeat 3]
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
# the variants of a group run at the same time, so that they see the same load
GROUPS = (
    ("torch plain", "torch instrumented", "torch instrumented (own data, for MindSpore)"),
    ("MindSpore plain", "MindSpore instrumented"),
)


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


def steady_steps(stamps: list[list], warmup: int) -> list[tuple[float, float]]:
    """(wall, CPU) stamps of one run's steps from the last step of its warm-up epochs on."""
    most = Counter(name for _, _, name in stamps).most_common(1)[0][0]
    return [(wall, cpu) for wall, cpu, name in stamps if name == most][max(warmup * STEPS_PER_EPOCH - 1, 0) :]


def epoch_windows(steps: list[tuple[float, float]], span: tuple[float, float]) -> list[tuple[float, float]]:
    """(wall, CPU) seconds per step of each epoch whose steps all ran within `span` (wall clock)."""
    pairs = [(steps[e], steps[e + STEPS_PER_EPOCH]) for e in range(0, len(steps) - STEPS_PER_EPOCH, STEPS_PER_EPOCH)]
    return [
        ((b[0] - a[0]) / STEPS_PER_EPOCH, (b[1] - a[1]) / STEPS_PER_EPOCH)
        for a, b in pairs
        if span[0] <= a[0] and b[0] <= span[1]
    ]


def run_together(cmds: dict[str, list[str]], tmp: Path, env: dict[str, str], warmup: int) -> dict[str, list]:
    """Start the variants at once, wait for all; each one's epoch windows while all were training."""
    procs = {}
    for k, (name, args) in enumerate(cmds.items()):
        out = tmp / f"stamps-{k}.json"
        out.unlink(missing_ok=True)
        cmd = [sys.executable, str(CLOCK), str(out), *args]
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs[name] = (proc, out, cmd)
    steady = {}
    for name, (proc, out, cmd) in procs.items():
        if proc.wait() != 0 or not out.is_file():
            sys.exit(
                f"{name}: the run failed (exit code {proc.returncode}); see its output: cd {tmp} && {' '.join(cmd)}"
            )
        steady[name] = steady_steps(json.loads(out.read_text()), warmup)
    span = (max(s[0][0] for s in steady.values() if s), min(s[-1][0] for s in steady.values() if s))
    windows = {name: epoch_windows(steps, span) for name, steps in steady.items()}
    if min(len(w) for w in windows.values()) < 2:
        sys.exit(f"fewer than 2 epochs of {', '.join(cmds)} trained at the same time: raise --epochs")
    return windows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=40, help="epochs of every run")
    ap.add_argument("--warmup", type=int, default=2, help="first epochs left out of the figure")
    ap.add_argument("--repeat", type=int, default=3, help="rounds")
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
    figures: dict[str, list[list[tuple[float, float]]]] = {}
    for _ in range(opts.repeat):
        cmds = commands(tmp, ms_dir, opts.epochs)
        for group in GROUPS:  # torch first: MindSpore's instrumented run loads its record
            for name, windows in run_together({n: cmds[n] for n in group}, tmp, env, opts.warmup).items():
                figures.setdefault(name, []).append(windows)
    report(figures, opts, (load0, os.getloadavg()[0]))


def medians(runs: list[list[tuple[float, float]]]) -> tuple[float, float]:
    """Median per-step (wall, CPU) seconds over the steady-state epochs of the given runs."""
    return (
        statistics.median(w for run in runs for w, _ in run),
        statistics.median(c for run in runs for _, c in run),
    )


def report(figures: dict[str, list[list[tuple[float, float]]]], opts: argparse.Namespace, load: tuple) -> None:
    med = {name: medians(runs) for name, runs in figures.items()}
    print(
        f"compare-train instrumentation overhead, examples/project/train_cnn.py: step times inside each process, "
        f"median over the steady-state epochs a side's variants trained at the same time ({opts.epochs} epochs a "
        f"run, first {opts.warmup} left out, {opts.repeat} rounds; load average {load[0]:.1f} → {load[1]:.1f})"
    )
    print(f"  {'variant':44s} {'wall ms/step':>12s} {'CPU ms/step':>12s} {'epochs':>7s}")
    for name, (wall, cpu) in med.items():
        print(f"  {name:44s} {1000 * wall:12.2f} {1000 * cpu:12.2f} {sum(map(len, figures[name])):7d}")
    for side, base in PAIRS:
        rounds = list(zip(figures[f"{side} instrumented"], figures[base]))  # same round: same load
        wall = statistics.median(medians([i])[0] / medians([p])[0] for i, p in rounds)
        cpu = [medians([i])[1] / medians([p])[1] for i, p in rounds]
        ratio = statistics.median(cpu)
        verdict = "ok" if ratio <= 1.2 else "ABOVE TARGET"
        if max(cpu) - min(cpu) > 0.2:  # the rounds disagree by more than the margin judged
            verdict += ", but the rounds disagree: rerun on a quieter machine"
        print(
            f"  {side}: instrumented / plain per step = {ratio:.2f}× CPU, {wall:.2f}× wall, median of the rounds' "
            f"ratios (CPU per round {' '.join(f'{r:.2f}' for r in cpu)}; target ≤ 1.2× CPU: {verdict})"
        )


if __name__ == "__main__":
    main()
