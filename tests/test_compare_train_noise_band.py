"""Issue 23 §1, class "noise, not a bug" over a long run: RMSprop and Adam turn the float noise on the
biases before BatchNorm (whose gradient is zero but for rounding) into full-size steps, so after 40
steps a few parameters differ far beyond the parameter threshold while the losses agree. The band is
measured, not assumed: torch runs the script again in float64, and the float32 run's distance from it
is torch's own rounding error as the training amplifies it; only what lies within NOISE_FACTOR x that
drift is absorbed.

Generated matrix: optimizer (RMSprop, Adam) x BatchNorm (1d after Linear, 2d after Conv2d) x 40 steps,
converted with `torch2ms convert` and run through compare-train (real torch, real MindSpore). Where the
MindSpore run stays within torch's own noise: SAME, the absorbed parameters named, the rule and the
float64 reference stated, the terminal verdict saying "within torch's own run-to-run noise". Measured
(2 CPU cores, MindSpore 2.10): RMSprop x BatchNorm2d is not within it — MindSpore's losses part from
torch's by 2.2e-4 at step 26 while torch's float32 run stays within 2.3e-6 of its float64 run — so the
verdict stays DIFFERENT as numerical drift, with the band it was measured against. The cause, op by op
(tests/test_rmsprop_batchnorm2d_cause.py): MindSpore's float32 BatchNorm2d kernel rounds 2-5x more than
torch's as the channel mean moves (RMSprop walks the pre-BatchNorm biases); its RMSprop equals torch's. A real difference
(BatchNorm eps changed in the conversion) over the same 40 steps stays DIFFERENT: the band does not
swallow it."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from torch2ms.convert import convert_tree

pytestmark = [pytest.mark.slow, pytest.mark.differential]

STEPS = 40
OPTIMIZERS = {
    "RMSprop": "torch.optim.RMSprop(model.parameters(), lr=1e-2)",
    "Adam": "torch.optim.Adam(model.parameters(), lr=1e-2)",
}
NORMS = {
    "bn1d": (
        "torch.randn(256, 16)",
        "nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 32), nn.BatchNorm1d(32), nn.ReLU(), "
        "nn.Linear(32, 2)",
    ),
    "bn2d": (
        "torch.randn(128, 3, 6, 6)",
        "nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), "
        "nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 2)",
    ),
}
SCRIPT = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = {x}
y = (x.flatten(1)[:, :4].sum(1) > 0).long()
loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
model = nn.Sequential({layers})
optimizer = {optimizer}
loss_fn = nn.CrossEntropyLoss()
for epoch in range(6):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
"""


def run(tmp_path: Path, name: str, opt: str, norm: str, edit: tuple[str, str] | None = None):
    from torch2ms.trainrun import compare_train

    x, layers = NORMS[norm]
    src = tmp_path / "torch" / f"{name}.py"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(SCRIPT.format(x=x, layers=layers, optimizer=OPTIMIZERS[opt]), encoding="utf-8")
    convert_tree(str(src), str(tmp_path / "ms"))
    ms = tmp_path / "ms" / f"{name}.py"
    if edit:
        text = ms.read_text(encoding="utf-8")
        assert edit[0] in text, f"the converted script no longer contains {edit[0]!r}"
        ms.write_text(text.replace(edit[0], edit[1], 1), encoding="utf-8")
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    return compare_train(str(src), str(ms), steps=STEPS, out_dir=str(out), cwd=str(tmp_path))


def _facts(rep) -> str:
    return repr((rep.error, rep.findings, rep.first_divergence, rep.noise, rep.parameters[:4]))


def _terminal(rep) -> str:
    from rich.console import Console

    from torch2ms.trainrun.report import print_report

    buf = io.StringIO()
    print_report(rep, Console(file=buf, width=200, color_system=None))
    return buf.getvalue()


WITHIN = [("RMSprop", "bn1d"), ("Adam", "bn1d"), ("Adam", "bn2d")]
BEYOND = [("RMSprop", "bn2d")]


@pytest.mark.parametrize("opt, norm", WITHIN)
def test_optimizer_noise_on_batchnorm_over_40_steps_is_within_torchs_own_noise(tmp_path, opt, norm):
    rep = run(tmp_path, f"{opt}_{norm}", opt, norm)
    assert rep.status == "same", _facts(rep)
    assert len(rep.rows) == STEPS, len(rep.rows)
    assert all(r["rel"] <= r.get("limit", rep.tol) for r in rep.rows), _facts(rep)
    beyond = [p["name"] for p in rep.parameters if p["rel"] > rep.parameter_tol]
    if beyond:  # what made it DIFFERENT before the band: absorbed, named, and the rule said
        assert rep.noise is not None and set(beyond) <= set(rep.noise["absorbed"]["parameters"]), _facts(rep)
        assert any("within torch's own run-to-run noise" in c for c in rep.conditions), rep.conditions
        assert any("the rule: a step or a parameter differs only beyond" in c for c in rep.conditions)
        assert rep.noise["reference"] == "float64" and any("in float64" in c for c in rep.conditions)
        assert "within torch's own run-to-run noise" in _terminal(rep)
        # each absorbed parameter is within NOISE_FACTOR x the drift torch measured on itself
        assert all(p["rel"] <= p["limit"] for p in rep.parameters), _facts(rep)
    else:  # nothing to absorb: no band claimed
        assert rep.noise is None or not rep.noise["absorbed"].get("parameters"), _facts(rep)


@pytest.mark.parametrize("opt", list(OPTIMIZERS))
def test_a_real_batchnorm_difference_over_40_steps_stays_different(tmp_path, opt):
    edit = ("nn.BatchNorm1d(32, ", "nn.BatchNorm1d(32, eps=1e-3, ")
    rep = run(tmp_path, f"{opt}_eps", opt, "bn1d", edit)
    assert rep.status == "different", _facts(rep)
    assert rep.first_divergence is not None and rep.first_divergence["step"] <= 5, _facts(rep)
    assert "DIFFERENT" in _terminal(rep)


@pytest.mark.parametrize("opt, norm", BEYOND)
def test_drift_beyond_torchs_own_noise_stays_different_and_says_against_what(tmp_path, opt, norm):
    rep = run(tmp_path, f"{opt}_{norm}", opt, norm)
    assert rep.status == "different", _facts(rep)
    d = rep.first_divergence
    assert d is not None and d["cause"] == "numerical drift", _facts(rep)
    # beyond the band torch measured on itself, not only beyond the plain tolerance
    assert rep.noise is not None and rep.noise["reference"] == "float64", _facts(rep)
    assert d["rel"] > rep.rows[d["index"]]["limit"] >= rep.tol, _facts(rep)
    assert any("torch ran again in float64" in c for c in rep.conditions), rep.conditions
