"""A training script's step times, from inside its process: the clock compare_train_bench.py starts.

    python step_clock.py OUT.json torch|mindspore run SCRIPT [ARGS...]   # the script, unmodified
    python step_clock.py OUT.json torch|mindspore boot CONFIG.json       # compare-train's bootstrap of it

Records (perf_counter, process_time) after every training step and writes them to OUT.json at exit
(also at the os._exit compare-train's bootstraps leave by). A step ends: torch, at every optimizer
step (torch's global optimizer step post-hook); MindSpore, at the end of every outermost Cell call
(a converted loop's step is one call of its jit-compiled TrainStep Cell, or of the value_and_grad
function and the optimizer from Python; the optimizer itself is compiled, no Python hook sees it), each
stamp naming the Cell's class so the reader can keep the steps' calls. About a microsecond a step, the
same in the plain and the instrumented run.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
import time
from pathlib import Path
from typing import Any

TRAINRUN = Path(__file__).resolve().parents[1] / "src" / "torch2ms" / "trainrun"
Stamp = tuple[float, float, str]


def clock_torch(stamps: list[Stamp]) -> None:
    from torch.optim.optimizer import register_optimizer_step_post_hook

    def stamp(opt: Any, args: Any, kwargs: Any) -> None:
        stamps.append((time.perf_counter(), time.process_time(), type(opt).__name__))

    register_optimizer_step_post_hook(stamp)


def clock_mindspore(stamps: list[Stamp]) -> None:
    from mindspore import nn

    call, depth = nn.Cell.__call__, [0]

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        try:
            return call(self, *args, **kwargs)
        finally:
            depth[0] -= 1
            if not depth[0]:
                stamps.append((time.perf_counter(), time.process_time(), type(self).__name__))

    nn.Cell.__call__ = __call__  # type: ignore[method-assign]


def write_at_exit(out: Path, stamps: list[Stamp]) -> None:
    """OUT.json once, at a normal exit or at the os._exit the bootstraps end with."""
    done: list[bool] = []
    real_exit = os._exit

    def write() -> None:
        if not done:
            done.append(True)
            out.write_text(json.dumps(stamps))

    def leave(code: int) -> None:
        write()
        real_exit(code)

    os._exit = leave  # type: ignore[assignment]
    atexit.register(write)


def main(argv: list[str]) -> None:
    out, framework, how, target, *args = argv
    sys.path.pop(0)  # the bench folder: its module names must not shadow the script's
    stamps: list[Stamp] = []
    write_at_exit(Path(out), stamps)
    (clock_torch if framework == "torch" else clock_mindspore)(stamps)
    if how == "run":  # as `python SCRIPT ARGS` runs it
        sys.argv = [target, *args]
        sys.path.insert(0, str(Path(target).resolve().parent))
        runpy.run_path(target, run_name="__main__")
    elif framework == "torch":  # as compare-train starts it: python torch_boot.py CONFIG
        sys.argv = [str(TRAINRUN / "torch_boot.py"), target]
        runpy.run_path(sys.argv[0], run_name="__main__")
    else:  # as compare-train starts it: python -c "from torch2ms.trainrun.ms_boot import main; main(CONFIG)"
        from torch2ms.trainrun.ms_boot import main as ms_main

        ms_main(target)


if __name__ == "__main__":
    main(sys.argv[1:])
