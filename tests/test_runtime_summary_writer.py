"""R4 / issue 12: ``torch.utils.tensorboard.SummaryWriter`` converts to torch2ms.runtime's writer, which
needs no torch: the same add_scalar / add_scalars / add_histogram calls write TensorBoard event files
that read back like torch's (tags, steps, values; histogram count, sum, min, max); a kind of record it
does not write warns once; without the tensorboard package it warns and the script runs on.
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

SCRIPT = """
import numpy as np
from torch.utils.tensorboard import SummaryWriter


def log(log_dir, values):
    writer = SummaryWriter(log_dir=log_dir)
    for step in range(3):
        writer.add_scalar("Loss/train", 1.0 / (step + 1), step)
    writer.add_scalars("acc", {"train": 0.5, "test": 0.25}, 7)
    writer.add_histogram("weights", values, 2)
    writer.flush()
    writer.close()
"""


def _read(log_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    scalars = {t: [(e.step, round(e.value, 6)) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}
    hist = acc.Histograms("weights")[0]
    h = hist.histogram_value
    return scalars, (hist.step, h.num, round(h.sum, 4), round(h.min, 6), round(h.max, 6))


def test_r4_summary_writer_converts_to_the_runtime_writer():
    code = convert_source(SCRIPT).code
    assert "import torch" not in code and "SummaryWriter(log_dir=log_dir)" in code
    assert "SummaryWriter" in code.split("\n\n")[0]  # imported from the runtime


@pytest.mark.differential
def test_r4_runtime_writer_events_read_back_like_torchs(tmp_path):
    require_module("tensorboard")
    require_module("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from torch2ms.runtime.summary import SummaryWriter

    values = np.random.default_rng(0).standard_normal(200).astype(np.float32)
    for cls, folder in ((TorchWriter, "torch"), (SummaryWriter, "ms")):
        w = cls(log_dir=str(tmp_path / folder))
        for step in range(3):
            w.add_scalar("Loss/train", 1.0 / (step + 1), step)
        w.add_histogram("weights", values, 2)
        w.close()
    assert _read(tmp_path / "ms") == _read(tmp_path / "torch")
    with pytest.warns(RuntimeWarning, match="add_image records nothing"):
        SummaryWriter(log_dir=str(tmp_path / "img")).add_image("x", values)


def test_r4_runtime_writer_without_tensorboard_warns_and_runs(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_tensorboard(name, *args, **kwargs):
        if name.startswith("tensorboard"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tensorboard)
    from torch2ms.runtime.summary import SummaryWriter

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        w = SummaryWriter(log_dir=str(tmp_path / "none"))
        w.add_scalar("loss", 0.5, 1)
        w.add_histogram("w", [1.0, 2.0], 1)
        w.flush()
        w.close()
    assert [str(s.message) for s in seen] == [
        "torch2ms SummaryWriter: the tensorboard package is not installed, no event file is written "
        "(pip install tensorboard)"
    ]
    assert not (tmp_path / "none").exists()
