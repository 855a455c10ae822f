"""R26/R30: the report says what it judged and by which tolerance, and the verdict agrees with it; the
terminal table wraps names instead of cutting them; MindSpore's own log lines stay out of the output."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import pytest
from requires_support import require_module
from rich.console import Console

from torch2ms.align.api import _verdict
from torch2ms.align.report import CompareReport
from torch2ms.align.report_format import training_lines
from torch2ms.align.report_text import print_report
from torch2ms.align.rows import LayerRow, OutputCheck, ParamDiff, TrainingResult


def _training(loss_rel: float, param_rel: float, post: str | None = None, checked: bool = True) -> TrainingResult:
    return TrainingResult(
        steps=1,
        optimizer="sgd",
        lr=0.01,
        momentum=0.9,
        loss="ce",
        torch_losses=[1.0],
        ms_losses=[1.0 + loss_rel],
        loss_rel=[loss_rel],
        loss_tol=1e-4,
        param_tol=1e-3,
        params=[ParamDiff("fc.weight", param_rel)],
        post_checked=checked,
        post_divergence=post,
    )


def test_r26_verdict_after_training_agrees_with_the_printed_tolerance():
    outputs = {"pynative": OutputCheck(ok=True)}
    within = _training(6e-5, 1e-6)  # a 6e-5 loss difference under the 1e-4 line is not a divergence
    assert within.ok and _verdict(None, outputs, within) == "match"
    assert [state for state, _ in training_lines(within)] == ["ok", "ok", "ok"]
    assert "max relative difference 6.00e-05 ≤ tolerance 0.0001" in training_lines(within)[0][1]
    losses_off = _training(2e-4, 1e-6)
    assert not losses_off.ok and _verdict(None, outputs, losses_off) == "divergence"
    assert training_lines(losses_off)[0] == ("bad", "losses: max relative difference 2.00e-04 > tolerance 0.0001")
    after = _training(6e-5, 2e-3, post="conv1: off by 2e-3")
    assert not after.ok and [state for state, _ in training_lines(after)] == ["ok", "bad", "bad"]
    assert "worst fc.weight 2.00e-03 of its scale > tolerance 0.001" in training_lines(after)[1][1]


def test_r26_parameters_that_the_output_ignores_are_a_note_not_a_divergence():
    # An attention key bias (or a conv bias before BatchNorm) gets rounding-noise gradients that Adam scales
    # to full steps: it drifts apart while losses and the eval forward after training agree.
    null_direction = _training(6e-7, 1e-2)
    assert null_direction.ok and not null_direction.params_ok and not null_direction.params_matter
    state, text = training_lines(null_direction)[1]
    assert state == "note" and "directions the output does not depend on" in text
    unchecked = _training(6e-7, 1e-2, checked=False)  # no eval forward to vouch for them: they count
    assert not unchecked.ok and training_lines(unchecked)[1][0] == "bad"


def test_r30_terminal_table_wraps_long_names_instead_of_cutting_them():
    name = "encoder.layers.11.attention.output.dense_projection_with_a_long_name"
    row = LayerRow(index=0, name=name, call=0, torch_type="Linear", leaf=True, shape=[2, 8], rel=1e-7, cosine=1.0)
    rep = CompareReport(status="match", torch_spec="t.py:Net", ms_spec="m.py:Net", seed=0, input_shapes=[[2, 8]])
    rep.layers = [row]
    screen = Console(width=90, record=True, file=io.StringIO())
    print_report(rep, screen)
    text = screen.export_text()
    assert "…" not in text
    layer_column = "".join(line.split("│")[2].strip() for line in text.splitlines() if line.count("│") > 3)
    assert layer_column == name  # every piece of the name, in order, over several lines


PORT = textwrap.dedent("""
    import mindspore.nn as nn


    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(6, 4)
            self.drop = nn.Dropout(keep_prob=0.9)  # MindSpore logs a deprecation WARNING for keep_prob

        def construct(self, x):
            return self.drop(self.fc(x))
""")
TORCH = textwrap.dedent("""
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 4)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            return self.drop(self.fc(x))
""")


@pytest.mark.slow
@pytest.mark.differential
def test_r30_mindspore_log_warnings_stay_out_unless_verbose(tmp_path):
    require_module("torch")
    require_module("mindspore")
    (tmp_path / "t.py").write_text(TORCH, encoding="utf-8")
    (tmp_path / "m.py").write_text(PORT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "GLOG_v"}  # MindSpore's default: warnings shown
    base = [sys.executable, "-m", "torch2ms", "compare", "--torch", "t.py:Net", "--ms", "m.py:Net"]
    base += ["--input-shape", "2,6", "--no-graph"]
    runs = {}
    for flag in ([], ["-v"]):
        proc = subprocess.run([*base, *flag], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        runs[bool(flag)] = proc.stdout + proc.stderr
    assert "MATCH" in runs[False] and "[WARNING]" not in runs[False] and "keep_prob" not in runs[False]
    assert "keep_prob" in runs[True]  # -v shows MindSpore's own warning
