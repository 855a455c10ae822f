"""R26 compare-train: the comparison rules on hand-made step records (no framework runs here).

Each test builds the per-step records the two instrumented sides write and checks which step is named
and why: a loss reduction that differs, a learning-rate schedule stepped per batch, a training mode
that differs, batches that differ, a dropped parameter group; and what stays "same" (float32 noise in
the learning rate, a loss trained close to zero).
"""

from __future__ import annotations

import copy

import pytest

from torch2ms.trainrun import causes, diagnose
from torch2ms.trainrun.api import judge, side_error
from torch2ms.trainrun.report import TrainReport
from torch2ms.trainrun.runner import SideRun

MODES = {"model0": {"bn_train": 1, "bn_total": 1, "drop_train": 0, "drop_total": 0}}
INPUTS = {"shape": [16, 8], "dtype": "float32", "sum": 3.0, "abs_sum": 90.0, "mean": 0.02, "std": 1.0}
MODEL = {
    "key": "model0",
    "type": "Net",
    "optimizers": [0],
    "layer_types": {"": "torch.nn.Module", "bn": "torch.nn.BatchNorm1d", "fc": "torch.nn.Linear"},
    "trainable": ["fc.weight", "fc.bias", "bn.weight", "bn.bias"],
    "init": "init_model0.npz",
    "final": "final_model0.npz",
}
GROUP_T = {"params": [f"model0:{n}" for n in MODEL["trainable"]], "hyper": {"lr": 0.1, "momentum": 0.9}}
GROUP_M = {
    "params": ["model0:fc.weight", "model0:fc.bias", "model0:bn.gamma", "model0:bn.beta"],
    "hyper": {"lr": 0.1, "momentum": 0.9},
}


def events(losses: list[float], lrs: list[float]) -> list[dict]:
    return [
        {
            "step": i + 1,
            "opt": 0,
            "loss": x,
            "lr": [lr],
            "grad_norm": 1.0,
            "inputs": dict(INPUTS),
            "modes": copy.deepcopy(MODES),
            "clip": None,
        }
        for i, (x, lr) in enumerate(zip(losses, lrs))
    ]


def record(side: str, losses: list[float], lrs: list[float]) -> dict:
    return {
        "side": side,
        "status": "stopped",
        "events": events(losses, lrs),
        "optimizers": [{"type": "SGD", "groups": [copy.deepcopy(GROUP_T if side == "torch" else GROUP_M)]}],
        "models": [dict(MODEL)]
        if side == "torch"
        else [{"key": "model0", "type": "Net", "final": "final_model0.npz", "load": {}}],
        "notes": [],
        "randomness": {"dropout": {}, "random_ops": {}, "dropout_layers": 0},
        "replay": {"batches": 4, "torch_iterators": 1},
    }


def judged(t: dict, m: dict, tmp_path) -> TrainReport:
    rep = TrainReport("same", "t.py", "m.py", len(t["events"]), 1e-4, "pynative", "replay", 0)
    judge(rep, t, m, tmp_path)  # no final_*.npz files in tmp_path: no parameter comparison
    return rep


LOSSES = [2.0, 1.8, 1.6, 1.5, 1.4, 1.3]
LRS = [0.1, 0.1, 0.1, 0.05, 0.05, 0.05]


def test_r26_identical_records_are_same(tmp_path):
    rep = judged(record("torch", LOSSES, LRS), record("ms", LOSSES, LRS), tmp_path)
    assert rep.status == "same" and rep.exit_code == 0 and rep.first_divergence is None


def test_r26_float32_learning_rate_and_near_zero_loss_stay_same(tmp_path):
    t = record("torch", [2.0, 0.5, 0.01, 0.004], [3e-3, 2e-3, 1e-4, 1.0e-5])
    m = record(
        "ms", [2.0, 0.5, 0.0100002, 0.0040003], [3e-3 * (1 + 6e-8), 2e-3, 1e-4 * (1 + 1e-6), 1.0e-5 * (1 + 3e-6)]
    )
    rep = judged(t, m, tmp_path)
    assert rep.status == "same", rep.findings
    # 3e-7 absolute on a 0.004 loss is 7.5e-5 of it, but 1.5e-6 of the 1% floor (0.02) of the first loss
    assert rep.rows[3]["rel"] == pytest.approx(3e-7 / 0.02)


def test_r26_loss_reduction_named_at_the_first_step(tmp_path):
    rep = judged(record("torch", LOSSES, LRS), record("ms", [x * 16 for x in LOSSES], LRS), tmp_path)
    assert rep.status == "different" and rep.first_divergence["step"] == 1
    assert rep.first_divergence["cause"] == "loss reduction differs"
    assert "16×" in rep.first_divergence["facts"][0] and "batch size is 16" in rep.first_divergence["facts"][0]


def test_r26_scheduler_stepped_per_batch_named_as_schedule(tmp_path):
    m_lrs = [0.1, 0.05, 0.025, 0.0125, 0.00625, 0.003125]
    m_losses = LOSSES[:2] + [1.65, 1.6, 1.55, 1.5]
    rep = judged(record("torch", LOSSES, LRS), record("ms", m_losses, m_lrs), tmp_path)
    d = rep.first_divergence
    assert d["step"] == 3 and d["cause"].startswith(
        "learning-rate schedule differs (the MindSpore scheduler steps more often"
    )
    assert "from step 2" in d["facts"][0]


def test_r26_training_mode_named_before_anything_else(tmp_path):
    m = record("ms", [2.1, *LOSSES[1:]], LRS)
    for e in m["events"]:
        e["modes"]["model0"]["bn_train"] = 0
    rep = judged(record("torch", LOSSES, LRS), m, tmp_path)
    assert rep.first_divergence["cause"] == "BN/Dropout mode differs"
    assert "BatchNorm layers in training mode: torch 1/1, MindSpore 0/1" in rep.first_divergence["facts"][0]
    assert "set_train(True)" in rep.first_divergence["facts"][0]


def test_r25_batches_that_differ_are_named(tmp_path):
    m = record("ms", [2.05, *LOSSES[1:]], LRS)
    m["events"][0]["inputs"]["sum"] = 7.5
    rep = judged(record("torch", LOSSES, LRS), m, tmp_path)
    assert rep.first_divergence["cause"] == "the batches differ"


def test_r26_dropped_parameter_group_is_a_difference(tmp_path):
    m = record("ms", LOSSES[:1] + [1.9, 1.7, 1.6, 1.5, 1.4], LRS)
    m["optimizers"][0]["groups"][0]["params"] = ["model0:bn.gamma", "model0:bn.beta"]
    rep = judged(record("torch", LOSSES, LRS), m, tmp_path)
    assert rep.first_divergence["cause"] == "a parameter not trained"
    assert "model0:fc.bias, model0:fc.weight" in rep.first_divergence["facts"][0]


def test_r26_bn_statistics_in_the_optimizer_are_named_even_when_losses_agree(tmp_path):
    m = record("ms", LOSSES, LRS)
    m["optimizers"][0]["groups"][0]["params"] += ["model0:bn.moving_mean", "model0:bn.moving_variance"]
    rep = judged(record("torch", LOSSES, LRS), m, tmp_path)
    assert rep.status == "different" and rep.first_divergence is None
    assert [f["kind"] for f in rep.findings] == ["extra-stats"]
    assert "trainable_params()" in rep.findings[0]["message"]


def test_r26_integer_ratio():
    assert diagnose.integer_ratio(2.0, 32.0) == 16
    assert diagnose.integer_ratio(32.0, 2.0) == 16
    assert diagnose.integer_ratio(2.0, 2.1) is None
    assert diagnose.integer_ratio(0.0, 1.0) is None


def test_r26_hyper_parameter_difference_is_named():
    out = causes._hyper_findings(
        0, 1, {"weight_decay": 5e-4, "betas": (0.9, 0.999)}, {"weight_decay": 0.0, "betas": (0.9, 0.999)}
    )
    assert [f["message"] for f in out] == ["optimizer 0 group 1: weight_decay differs: torch 0.0005, MindSpore 0.0"]


def test_r26_side_errors_read_like_instructions():
    rec = {"events": [], "status": "exited", "error": {"message": "2"}}
    msg = side_error(
        SideRun(
            "torch",
            0,
            1.0,
            rec,
            "usage: train.py [-h] --data DATA\ntrain.py: error: the following arguments are required: --data",
        ),
        60,
    )
    assert (
        msg.startswith("the torch script exited with status 2 before its first optimizer step") and "after `--`" in msg
    )
    rec = {"events": [], "status": "no_steps", "error": None, "unstepped_losses": 3}
    assert "calls backward() but never optimizer.step()" in side_error(SideRun("ms", 0, 1.0, rec, ""), 60)
    assert "did not finish within 60 s" in side_error(SideRun("ms", None, 60.0, None, ""), 60)


def test_r26_attention_key_bias_alone_is_named_not_a_difference():
    import numpy as np

    t = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], dtype=np.float64)  # (query, key, value) thirds
    m = t.copy()
    m[2:4] += [0.05, -0.05]  # the key third moved by Adam-amplified noise
    row = {"name": "model0:encoder.layers.0.self_attn.in_proj_bias", "rel": 0.083}
    row["rel_without_key"] = diagnose._rel_without_key(t, m)
    assert row["rel_without_key"] == 0.0
    f = causes.final_parameter_finding([row], 1e-2, losses_agree=True)
    assert f["kind"] == "attention-key-bias" and f["severity"] == "warning", f
    m[0] += 0.05  # the query third differs too: a real difference
    row["rel_without_key"] = diagnose._rel_without_key(t, m)
    assert causes.final_parameter_finding([row], 1e-2, losses_agree=True)["kind"] == "params-final"
    row["rel_without_key"] = 0.0  # losses that disagree: not explained either
    assert causes.final_parameter_finding([row], 1e-2, losses_agree=False)["kind"] == "params-final"
