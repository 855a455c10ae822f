"""R26 compare-train on other script shapes, each pair run unmodified in two processes:

* a GAN (tests/trainrun/gan_torch.py / gan_ms.py): two networks, two optimizers, two backward calls
  before the discriminator's step, noise drawn in the loop (both sides get the same pseudo-noise);
  PyNative only — in GRAPH_MODE MindSpore itself refuses the script, plain or instrumented: the two
  SequentialCells' parameters share names ("0.weight ... already exists") inside one graph;
* a Trainer class with gradient accumulation, clipping, AdamW and a per-step cosine schedule
  (trainer_torch.py / trainer_ms.py), in PyNative and GRAPH_MODE;
* an autocast + GradScaler script (train_amp.py) converted by `torch2ms convert`: torch's CUDA AMP
  switches itself off on a CPU-only torch (float32) while the conversion runs MindSpore's float16 O1,
  hence 2e-3 (as tests/test_training_amp.py).
The MindSpore scripts are written by hand where today's converter does not convert the loop.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torch2ms.convert import convert_tree
from torch2ms.trainrun import compare_train

pytestmark = [pytest.mark.slow, pytest.mark.differential]

HERE = Path(__file__).resolve().parent / "trainrun"


def run(tmp_path: Path, torch_script: Path, ms_script: Path, **kw):
    return compare_train(str(torch_script), str(ms_script), out_dir=str(tmp_path / "out"), cwd=str(tmp_path), **kw)


def test_r26_gan_two_optimizers(tmp_path):
    rep = run(tmp_path, HERE / "gan_torch.py", HERE / "gan_ms.py", steps=6)
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert [(r["step"], r["opt"]) for r in rep.rows[:4]] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert len(rep.rows) == 12 and max(r["rel"] for r in rep.rows) <= 1e-4
    assert any("torch.randn ×6, ops.randn ×6" in c for c in rep.conditions), rep.conditions


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_r26_trainer_class_with_gradient_accumulation(tmp_path, mode):
    rep = run(tmp_path, HERE / "trainer_torch.py", HERE / "trainer_ms.py", steps=6, mode=mode)
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 6 and max(r["rel"] for r in rep.rows) <= 1e-4
    assert all(r["same_inputs"] for r in rep.rows)
    assert rep.rows[1]["torch_lr"][0] < rep.rows[0]["torch_lr"][0]  # the cosine schedule moves every step


def test_r26_autocast_gradscaler_script_converted(tmp_path):
    convert_tree(str(HERE / "train_amp.py"), str(tmp_path / "ms"))
    rep = run(tmp_path, HERE / "train_amp.py", tmp_path / "ms" / "train_amp.py", steps=10, tol=2e-3)
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 10
