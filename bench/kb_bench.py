"""KB load time (issue 14: ``torch2ms lookup`` answers cold in ≤ 150 ms with 2,000 entries).

Prints the number of entries; a cold ``torch2ms lookup nn.Conv2d`` (a new process, bytecode cached
as in an installed package) with the on-disk cache of parsed entries (kb/cache.py) warm, and with the
cache off (every TOML file parsed); the bare interpreter start for reference; ``load_kb()`` alone in
a fresh process, cached and parsed; and the same for a synthetic data dir of 2,000 entries (the real
ones plus renamed copies), to see how loading scales before the KB grows. Each figure is the best of
a few runs (the least disturbed); CPU time is the steadier one on a loaded machine.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from torch2ms.kb import DATA_DIR, load_kb

REPEAT = 5
TARGET_MS = 150
SYNTHETIC = 2000

_LOAD = "import sys, time; t = time.perf_counter(); import torch2ms.kb as k; n = len(k.load_kb({dir!r})); print(n, time.perf_counter() - t)"
_LOOKUP = "import torch2ms.kb as k; k.DATA_DIR = __import__('pathlib').Path({dir!r}); from torch2ms.cli import main; main(['lookup', 'nn.Conv2d'])"


def _best_process(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Fastest wall time and fastest CPU time (user + system) of a new process running ``args``, in ms.

    CPU time is the steadier figure on a shared machine: other load stretches wall time, not our CPU seconds.
    """
    walls, cpus = [], []
    for _ in range(REPEAT):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return 1000 * min(walls), 1000 * min(cpus)


def _best_load(data_dir: Path, env: dict[str, str]) -> float:
    """Fastest ``import torch2ms.kb; load_kb()`` inside a fresh process, in ms (startup excluded)."""
    times = []
    for _ in range(REPEAT):
        out = subprocess.run(
            [sys.executable, "-c", _LOAD.format(dir=str(data_dir))], env=env, check=True, capture_output=True, text=True
        ).stdout.split()
        times.append(float(out[1]))
    return 1000 * min(times)


def synthetic_dir(target: Path, entries: int) -> int:
    """The real data files plus renamed copies of their entries, up to ``entries``; returns the count."""
    real = sorted(DATA_DIR.glob("*.toml"))
    for path in real:
        (target / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    have, copy = len(load_kb()), 0
    while have < entries:
        copy += 1
        for path in real:
            blocks = re.split(r"(?m)^(?=\[\[api\]\]\n)", path.read_text(encoding="utf-8"))
            blocks = [b for b in blocks if b.startswith("[[api]]")][: entries - have]
            text = "".join(blocks)
            text = re.sub(r'(?m)^torch = "([^"]+)"', rf'torch = "\1_synthetic{copy}"', text)
            text = re.sub(r"(?m)^aliases = .*\n", "", text)
            (target / f"zz_synthetic_{copy}_{path.name}").write_text(text, encoding="utf-8")
            have += len(blocks)
            if have >= entries:
                break
    return have


def child_env(tmp: Path) -> dict[str, str]:
    """The environment of an installed torch2ms: bytecode cached (here under ``tmp``, not in the tree)."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(tmp / "pycache"), TORCH2MS_CACHE_DIR=str(tmp / "cache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def report(label: str, data_dir: Path, entries: int, env: dict[str, str]) -> None:
    parse = dict(env, TORCH2MS_NO_CACHE="1")
    lookup = [sys.executable, "-c", _LOOKUP.format(dir=str(data_dir))]
    subprocess.run(lookup, env=env, check=True, stdout=subprocess.DEVNULL)  # fills the caches
    (wall, cpu), (parse_wall, parse_cpu) = _best_process(lookup, env), _best_process(lookup, parse)
    verdict = "ok" if wall <= TARGET_MS else f"over the {TARGET_MS} ms target"
    print(f"{label}: {entries} entries")
    print(
        f"  cold `torch2ms lookup nn.Conv2d`: {wall:5.0f} ms wall, {cpu:4.0f} ms CPU with the cache ({verdict}); "
        f"{parse_wall:5.0f} ms wall, {parse_cpu:4.0f} ms CPU parsing the TOML"
    )
    print(
        f"  load_kb() in a fresh process:     {_best_load(data_dir, env):5.0f} ms with the cache, "
        f"{_best_load(data_dir, parse):5.0f} ms parsing the TOML"
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="t2m-kb-bench-") as tmp:
        env = child_env(Path(tmp))
        wall, cpu = _best_process([sys.executable, "-c", "pass"], env)
        load = os.getloadavg()[0]
        print(
            f"python start (reference): {wall:.0f} ms wall, {cpu:.0f} ms CPU (load average {load:.1f} on {os.cpu_count()} CPUs)"
        )
        report("bundled KB", DATA_DIR, len(load_kb()), env)
        synthetic = Path(tmp) / "synthetic"
        synthetic.mkdir()
        report("synthetic KB", synthetic, synthetic_dir(synthetic, SYNTHETIC), env)


if __name__ == "__main__":
    main()
