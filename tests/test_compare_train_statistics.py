"""R26: parameters that differ after training are reported; when they are only BatchNorm moving statistics
and every loss agrees (a GAN whose generator output torch back-propagates twice: MindSpore's
value_and_grad calls the generator once per differentiated function), the finding names that cause."""

from __future__ import annotations

from torch2ms.trainrun.causes import final_parameter_finding


def test_r26_statistics_only_difference_names_the_repeated_forward():
    bad = [{"name": "model1:1.moving_mean", "rel": 0.5}, {"name": "model1:4.moving_variance", "rel": 0.2}]
    f = final_parameter_finding(bad, 0.01, losses_agree=True)
    assert f["kind"] == "bn-statistics" and f["severity"] == "difference"
    assert "model1 ran its forward more often per step" in f["message"]
    assert "model1:1.moving_mean (5.0e-01)" in f["message"]


def test_r26_weights_or_diverged_losses_keep_the_plain_finding():
    stats = [{"name": "model0:bn.moving_mean", "rel": 0.5}]
    weights = stats + [{"name": "model0:fc.weight", "rel": 0.3}]
    assert final_parameter_finding(weights, 0.01, losses_agree=True)["kind"] == "params-final"
    assert final_parameter_finding(stats, 0.01, losses_agree=False)["kind"] == "params-final"
