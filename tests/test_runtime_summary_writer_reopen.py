"""Issue 22 (al_tensorboard: "OSError: Writer is closed"): a script that closes its SummaryWriter and logs on.

aladdinpersson's TensorBoard tutorial calls ``writer.add_graph(...)`` then ``writer.close()`` before the
training loop, and its loop keeps calling ``writer.add_scalar(...)``: torch's writer opens a new event file
on the next ``add_*``; the runtime's writer raised "Writer is closed" after the first step. It reopens now.

Generated matrix: how the writer was closed (``close()``, twice, a ``with`` block, ``flush()`` after
``close()``) x what is logged after (a scalar, ``add_scalars``, a histogram): the event files read back
like torch's (tags, steps, values; histogram count, sum, min, max).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from requires_support import require_module

CLOSES = {
    "close": ["w.close()"],
    "close_twice": ["w.close()", "w.close()"],
    "flush_after_close": ["w.close()", "w.flush()"],
    "with_block": [],  # the writer was used as a context manager: its exit closed it
}
LOGS = {
    "scalar": lambda w, v: [w.add_scalar("Loss/train", 1.0 / (s + 1), s) for s in range(3)],
    "scalars": lambda w, v: w.add_scalars("acc", {"train": 0.5, "test": 0.25}, 7),
    "histogram": lambda w, v: w.add_histogram("weights", v, 2),
}
CASES = list(itertools.product(CLOSES, LOGS))


def _read(log_dir):
    """{record: values}; a record of add_scalars is named by its key (torch writes each key to a sub-run
    ``acc_train`` under tag ``acc``, the runtime writes the tag ``acc/train``: TensorBoard plots both alike)."""
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    mux = EventMultiplexer(size_guidance={"scalars": 0, "histograms": 0})
    mux.AddRunsFromDirectory(str(log_dir))
    mux.Reload()
    out: dict[str, list] = {}
    for run, tags in mux.Runs().items():
        sub = run.rsplit("acc_", 1)[1] if "acc_" in run else None
        for t in tags["scalars"]:
            key = sub or t.split("acc/")[-1]
            out.setdefault(key, []).extend((e.step, round(e.value, 6)) for e in mux.Scalars(run, t))
        for t in tags["histograms"]:
            h = mux.Histograms(run, t)[0]
            v = h.histogram_value
            out.setdefault(t, []).append((h.step, v.num, round(v.sum, 4), round(v.min, 6), round(v.max, 6)))
    return {k: sorted(v) for k, v in out.items()}


def _run(cls, folder, close, log, values):
    if close == "with_block":
        with cls(log_dir=str(folder)) as w:
            w.add_scalar("before", 1.0, 0)
    else:
        w = cls(log_dir=str(folder))
        w.add_scalar("before", 1.0, 0)
        for statement in CLOSES[close]:
            exec(statement, {"w": w})
    LOGS[log](w, values)
    w.close()


@pytest.mark.differential
@pytest.mark.parametrize(("close", "log"), CASES, ids=["-".join(c) for c in CASES])
def test_writer_logs_after_close_like_torch(tmp_path, close, log):
    require_module("tensorboard")
    require_module("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from torch2ms.runtime.summary import SummaryWriter

    values = np.random.default_rng(0).standard_normal(200).astype(np.float32)
    _run(TorchWriter, tmp_path / "torch", close, log, values)
    _run(SummaryWriter, tmp_path / "ms", close, log, values)
    torch_events = _read(tmp_path / "torch")
    assert torch_events["before"] == [(0, 1.0)] and len(torch_events) > 1  # what torch logged after close()
    assert _read(tmp_path / "ms") == torch_events
