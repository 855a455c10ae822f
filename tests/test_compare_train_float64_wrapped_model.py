"""Issue 22 (3): compare-train's float64 reference run (noise.py) crashed inside al_dcgan_mnist's generator.

The reference run makes the trained models float64 and widens their inputs. The trained model is the
smallest module holding the optimizer's parameters: for ``Generator`` whose ``forward`` is ``self.net(x)``,
that is the Sequential ``netG.net``, so a call to ``netG`` itself was not widened, and ``netG(fixed_noise)``
(noise drawn in float32 at module level, before training) met float64 weights: "Input type
(torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same". compare-train fell back to
the perturbed reference. A call to a module around a trained model is now widened as the model's own.

Generated matrix: how the model sits (the module trained itself, a wrapper holding it as ``self.net``, a
wrapper of a wrapper) x the tensor made before training (``torch.randn`` at module level, ``torch.ones``
constant, a ``linspace`` input) x where it meets the model (inside the step, under ``no_grad`` after it):
the float64 reference trains all its steps in real torch, each loss within float32 rounding of the
float32 run's (default: 5 cases covering every form; ``TORCH2MS_FULL_MATRIX=1``: all 18).
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from requires_support import require_module

pytestmark = [pytest.mark.slow, pytest.mark.differential]

STEPS = 4
BODY = "nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))"
MODELS = {
    "itself": ("", BODY),
    "wrapper": (
        "class Wrap(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.net = {BODY}\n\n    def forward(self, x):\n        return self.net(x)\n",
        "Wrap()",
    ),
    "nested": (
        "class Wrap(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.net = {BODY}\n\n    def forward(self, x):\n        return self.net(x)\n\n\n"
        "class Outer(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.inner = Wrap()\n\n    def forward(self, x):\n        return self.inner(x) * 2.0\n",
        "Outer()",
    ),
}
MADE_BEFORE = {
    "randn": "torch.randn(8, 6)",
    "ones": "torch.ones(8, 6) * 0.5",
    "linspace": "torch.linspace(-1.0, 1.0, 48).reshape(8, 6)",
}
USES = {
    "in_step": ("loss = (model(X) - 1.0).pow(2).mean() + model(fixed).pow(2).mean()", ""),
    "no_grad_after": (
        "loss = (model(X) - 1.0).pow(2).mean()",
        "    with torch.no_grad():\n        shown = model(fixed)\n",
    ),
}
SCRIPT = """import torch
import torch.nn as nn

torch.manual_seed(0)
fixed = {made}
X = torch.rand(8, 6)


{classes}

model = {build}
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range({steps}):
    {loss}
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
{after}"""


def script(model: str, made: str, use: str) -> str:
    classes, build = MODELS[model]
    loss, after = USES[use]
    return SCRIPT.format(made=MADE_BEFORE[made], classes=classes, build=build, steps=STEPS, loss=loss, after=after)


def _events(work: Path, side: str) -> list[dict]:
    return json.loads((work / side / "record.json").read_text())["events"]


CASES = list(itertools.product(MODELS, MADE_BEFORE, USES))
# each model form, each tensor and each use at least once; TORCH2MS_FULL_MATRIX=1: all 18
DEFAULT = [
    ("itself", "randn", "no_grad_after"),
    ("wrapper", "randn", "no_grad_after"),
    ("wrapper", "ones", "in_step"),
    ("nested", "linspace", "no_grad_after"),
    ("nested", "randn", "in_step"),
]


@pytest.mark.parametrize("model, made, use", CASES if os.environ.get("TORCH2MS_FULL_MATRIX") == "1" else DEFAULT)
def test_float64_reference_trains_where_the_model_sits_inside_a_wrapper(tmp_path, model, made, use):
    require_module("torch")
    from torch2ms.trainrun import noise
    from torch2ms.trainrun.runner import run_side, torch_command, write_config

    (tmp_path / "train.py").write_text(script(model, made, use))
    work = tmp_path / "work"
    train = str((tmp_path / "train.py").resolve())
    config = write_config(
        work.resolve(),
        steps=STEPS,
        seed=0,
        data="replay",
        fake_data=False,
        mode="pynative",
        torch_script=train,
        ms_script=train,
        args=[],
    )
    t = run_side("torch", torch_command(None, config), work, tmp_path, 300, None, "torch", STEPS, 0)
    command = torch_command(None, noise.noise_config(config, True))
    n = run_side(noise.NOISE_SIDE, command, work, tmp_path, 300, None, "f64", STEPS, 0)
    assert t.record is not None and n.record is not None, (t, n)
    assert n.record["status"] not in ("crashed", "exited"), n.record.get("error")
    f32, f64 = _events(work, "torch"), _events(work, noise.NOISE_SIDE)
    assert len(f64) == len(f32) == STEPS
    for a, b in zip(f32, f64, strict=True):
        assert abs(a["loss"] - b["loss"]) <= 1e-5 * max(1.0, abs(b["loss"])), (a["loss"], b["loss"])
    assert any(a["loss"] != b["loss"] for a, b in zip(f32, f64, strict=True)), "not a float64 run"
