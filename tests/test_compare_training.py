"""R26: the same small CNN trained on both sides (same initial weights, batches, optimizer, loss)
gives the same loss curve, step by step, and the same parameters at the end."""

from __future__ import annotations

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

pytestmark = [pytest.mark.differential, pytest.mark.slow]

CNN_SRC = """
import torch.nn as nn


# No conv bias before BatchNorm (as real CNNs): BN cancels it, so its gradient is pure rounding noise
# that Adam scales up to full steps, and that null direction would wander differently per framework.
class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))
"""


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    d = tmp_path_factory.mktemp("cnn")
    (d / "cnn_torch.py").write_text(CNN_SRC, encoding="utf-8")
    conv = convert_source(CNN_SRC)
    assert not conv.error, conv.error
    (d / "cnn_ms.py").write_text(conv.code, encoding="utf-8")
    return f"{d}/cnn_torch.py:SmallCNN", f"{d}/cnn_ms.py:SmallCNN"


@pytest.mark.parametrize("optimizer,lr", [("sgd", 0.05), ("adam", 1e-3), ("adamw", 1e-3)])
def test_r26_loss_curves_agree_over_50_steps(cnn, optimizer, lr, tmp_path):
    from torch2ms.align import CompareOptions, TrainOptions, compare_models

    t, m = cnn
    # Two fixed batches, cycled: a learnable task (fresh random labels every step teach nothing).
    rng = np.random.default_rng(0)
    bx = rng.standard_normal((2, 8, 3, 16, 16)).astype(np.float32)
    by = rng.integers(0, 10, (2, 8))
    data = {"x": bx[0], "train_x": bx[np.arange(50) % 2], "train_y": by[np.arange(50) % 2]}
    train = TrainOptions(
        steps=50, optimizer=optimizer, lr=lr, momentum=0.9, weight_decay=1e-2 if optimizer == "adamw" else 0.0
    )
    rep = compare_models(t, m, CompareOptions(inputs=data, seed=0, train=train, graph=False, out_dir=tmp_path))
    tr = rep.training
    assert len(tr.torch_losses) == len(tr.ms_losses) == 50
    assert tr.torch_losses[-1] < tr.torch_losses[0]  # it actually trained
    assert tr.max_loss_rel <= 1e-4, tr.loss_rel
    assert tr.worst_param_rel <= 1e-4, tr.params[:3]
    assert tr.ok and rep.status == "match", (rep.first_divergence, rep.problems)
    assert (tmp_path / "loss.png").read_bytes()[:4] == b"\x89PNG"
    assert "loss curves" in (tmp_path / "report.html").read_text()
