"""What the benches share: the torchvision source they run over, and best-of-N timing."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path

from torch2ms.analysis.scan import iter_python_files


def torchvision_tree() -> tuple[Path, list[Path]]:
    """The installed torchvision package and its models/ + ops/ source files (about 30k lines)."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        sys.exit("bench needs torchvision installed (make venv)")
    root = Path(list(spec.submodule_search_locations)[0])
    files: list[Path] = []
    for sub in ("models", "ops"):
        found, _ = iter_python_files(root / sub)
        files += found
    return root, files


def best(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs, in seconds (the least disturbed by other load)."""
    return best_wall_cpu(fn, repeat)[0]


def best_wall_cpu(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Fastest wall-clock and fastest CPU time of this process over ``repeat`` runs. CPU time is the
    steadier figure on a shared machine (other load stretches wall time, not our CPU seconds)."""
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)
