"""compare-train's float64 reference run (noise.py) with a loss that meets the loader's batch itself.

A VAE's ``BCELoss(reduction="sum")(model(x), x)``, a regression's ``mse_loss(model(x), y)``: the
reference run widens the trained models and their inputs to float64, but the batch the loss compares
with stayed float32, so torch refused the mixed dtypes ("Found dtype Double but expected Float") and
compare-train fell back to the perturbed reference, whose drift (one float32 rounding applied to the
gradients) does not reach the absolute rounding of a cancelling sum: aladdinpersson's VAE was DIFFERENT
at step 4 by 2.3e-3 (its KL term's log(sigma**2) makes the gradient ill-conditioned) while torch's own
float32 run parted from itself by 5.7e-3 by step 5. The loader's floating tensors are now float64 in the
reference run too.

Generated matrix: how the loss meets the batch (BCE with the input as target, a float target of the
batch, a batch as a dict, a functional loss) x the loader's batch form, and a target built by the script
(``torch.ones(n) * 0.9``, al_dcgan_mnist's label: a loss module's inputs are widened with the model's
output): the float64 reference trains all its steps in real torch, each loss within float32 rounding of the float32 run's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from matrix_support import product
from requires_support import require_module

pytestmark = [pytest.mark.slow, pytest.mark.differential]

STEPS = 4
DATA = {
    "tuple": (
        "DataLoader(TensorDataset(X, Y), batch_size=8)",
        "for x, y in loader:",
    ),
    "dict": (
        "DataLoader([{'x': X[i], 'y': Y[i]} for i in range(len(X))], batch_size=8)",
        "for b in loader:\n        x, y = b['x'], b['y']",
    ),
}
LOSSES = {
    "bce_input_target": "nn.BCELoss(reduction='sum')(torch.sigmoid(model(x)), x)",
    "mse_float_target": "F.mse_loss(model(x)[:, :1], y)",
    "l1_functional": "F.l1_loss(model(x), x) + (model(x)[:, :1] - y).pow(2).mean()",
    # a target the script builds before the model's first call (a GAN's smoothed label): float32
    "bce_own_label": "nn.BCELoss()(torch.sigmoid(model(x)[:, :1]), label)",
}
PRE = {"bce_own_label": "label = torch.ones(x.shape[0], 1) * 0.9"}
SCRIPT = """import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.rand(32, 6)
Y = X[:, :2].sum(1, keepdim=True)
loader = {loader}
model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 6))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(2):
    {loop}
        {pre}
        loss = {loss}
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def script(loss: str, data: str) -> str:
    loader, loop = DATA[data]
    return SCRIPT.format(loader=loader, loop=loop, loss=LOSSES[loss], pre=PRE.get(loss, "pass"))


def _events(work: Path, side: str) -> list[dict]:
    return json.loads((work / side / "record.json").read_text())["events"]


@pytest.mark.parametrize(("loss", "data"), product(list(LOSSES), list(DATA), pairs=False))
def test_float64_reference_trains_where_a_loss_meets_the_batch(tmp_path, loss, data):
    require_module("torch")
    from torch2ms.trainrun import noise
    from torch2ms.trainrun.runner import run_side, torch_command, write_config

    (tmp_path / "train.py").write_text(script(loss, data))
    work = tmp_path / "work"
    config = write_config(
        work.resolve(),
        steps=STEPS,
        seed=0,
        data="replay",
        fake_data=False,
        mode="pynative",
        torch_script=str((tmp_path / "train.py").resolve()),
        ms_script=str((tmp_path / "train.py").resolve()),
        args=[],
    )
    t = run_side("torch", torch_command(None, config), work, tmp_path, 300, None, "torch", STEPS, 0)
    n = run_side(
        noise.NOISE_SIDE,
        torch_command(None, noise.noise_config(config, True)),
        work,
        tmp_path,
        300,
        None,
        "f64",
        STEPS,
        0,
    )
    assert t.record is not None and n.record is not None, (t, n)
    assert n.record["status"] not in ("crashed", "exited"), n.record.get("error")
    f32, f64 = _events(work, "torch"), _events(work, noise.NOISE_SIDE)
    assert len(f64) == len(f32) == STEPS
    for a, b in zip(f32, f64, strict=True):
        assert abs(a["loss"] - b["loss"]) <= 1e-5 * max(1.0, abs(b["loss"])), (a["loss"], b["loss"])
    assert any(a["loss"] != b["loss"] for a, b in zip(f32, f64, strict=True)), "not a float64 run"
