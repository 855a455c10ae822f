"""R24/R30: broken ports and bad input give a clear report (or exit 2 with a message), never a traceback."""

from __future__ import annotations

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

TORCH_SRC = """
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.ln = nn.LayerNorm(8)
        self.act = nn.GELU()
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = F.relu(self.conv(x))
        x = x.mean(dim=(2, 3))
        x = self.act(self.ln(x))
        return self.fc(x)


class L2Norm(nn.Module):
    def forward(self, x):
        return F.normalize(x, dim=1)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = L2Norm()
        self.ln = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(self.ln(self.norm(x)))
"""


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    d = tmp_path_factory.mktemp("bad")
    (d / "t.py").write_text(TORCH_SRC, encoding="utf-8")
    conv = convert_source(TORCH_SRC)
    assert not conv.error, conv.error
    return d, conv.code


def _variant(d, code: str, name: str, *reps) -> str:
    for old, new in reps:
        assert old in code, old
        code = code.replace(old, new, 1)
    (d / f"{name}.py").write_text(code, encoding="utf-8")
    return f"{d}/{name}.py:Net"


def test_r24_output_shape_mismatch_between_sides(port):
    from torch2ms.align import CompareOptions, compare_models

    d, code = port
    spec = _variant(d, code, "wide_head", ("nn.Dense(8, 10)", "nn.Dense(8, 12)"))
    rep = compare_models(f"{d}/t.py:Net", spec, CompareOptions(input_shapes=[(2, 3, 8, 8)], graph=False))
    assert rep.status == "divergence"
    fd = rep.first_divergence
    assert fd.layer == "fc" and fd.kind == "shape"
    assert any("fc.weight" in p for p in rep.problems)  # the weight that could not load is named
    assert "fc.weight" in rep.weights["unloaded"] or rep.weights["shape_mismatch"]
    assert rep.output["pynative"].error.startswith("output shape torch [2, 10] vs MindSpore [2, 12]")


def test_r24_missing_layer_is_reported(port):
    from torch2ms.align import CompareOptions, compare_models

    d, code = port
    spec = _variant(d, code, "no_act", ("x = self.act(self.ln(x))", "x = self.ln(x)"))
    rep = compare_models(f"{d}/t.py:Net", spec, CompareOptions(input_shapes=[(2, 3, 8, 8)], graph=False))
    assert rep.status == "divergence"
    assert rep.missing_layers == ["act"]
    fd = rep.first_divergence
    assert fd.kind == "input" and fd.layer == ""  # the model's own forward, right before fc
    assert "act" in fd.hint and "no MindSpore counterpart" in fd.hint
    assert [r.verdict for r in rep.layers if r.name == "act"] == ["missing"]


def _zero_row_input() -> np.ndarray:
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    x[1] = 0.0
    return x


def test_r24_nan_output_is_named_not_raised(port, tmp_path):
    from torch2ms.align import CompareOptions, compare_models

    d, code = port
    # F.normalize ported by hand without its eps: a zero row becomes 0/0 = NaN in MindSpore only.
    clamp = "x / ops.clamp(ops.norm(x, 2.0, 1, keepdim=True), min=1e-12)"
    spec = _variant(d, code, "no_eps", (clamp, "x / ops.norm(x, 2.0, 1, keepdim=True)")).replace(":Net", ":Head")
    rep = compare_models(
        f"{d}/t.py:Head", spec, CompareOptions(inputs={"x": _zero_row_input()}, graph=False, out_dir=tmp_path)
    )
    fd = rep.first_divergence
    assert rep.status == "divergence" and fd.layer == "norm" and fd.kind == "non-finite", fd
    assert "NaN/Inf" in fd.detail
    assert (tmp_path / "report.html").exists() and (tmp_path / "report.json").exists()


def test_r24_layer_that_raises_is_named(port):
    from torch2ms.align import CompareOptions, compare_models

    d, code = port
    # LayerNorm epsilon=0 in the port: MindSpore refuses a zero-variance row ("Var + Epsilon is zero").
    eps0 = ("nn.LayerNorm((8,), epsilon=1e-05)", "nn.LayerNorm((8,), epsilon=0.0)")
    x = _zero_row_input()
    x[1] = 0.5
    spec = _variant(d, code, "eps0", eps0, eps0).replace(":Net", ":Head")
    rep = compare_models(f"{d}/t.py:Head", spec, CompareOptions(inputs={"x": x}, graph=False))
    fd = rep.first_divergence
    assert rep.status == "divergence" and fd.layer == "ln" and fd.kind == "error", fd
    assert any("raised" in p for p in rep.problems)


def test_r24_mindspore_forward_that_raises_is_reported(port):
    from torch2ms.align import CompareOptions, compare_models

    d, code = port
    # a torch-ism left in the port: MindSpore's Tensor.size is an int, so x.size(0) raises
    spec = _variant(d, code, "size_call", ("x = x.mean(dim=(2, 3))", "x = x.view(x.size(0), 8, -1).mean(-1)"))
    rep = compare_models(f"{d}/t.py:Net", spec, CompareOptions(input_shapes=[(2, 3, 8, 8)], graph=False))
    fd = rep.first_divergence
    assert rep.status == "divergence" and fd.kind == "error"
    assert "after conv and before ln" in fd.detail
    assert any("raised" in p for p in rep.problems)


def test_r24_usage_errors_exit_2(port, tmp_path, capsys):
    from torch2ms.cli import main

    d, code = port
    ms_spec = _variant(d, code, "ok", ("", ""))
    cases = [
        ["--torch", f"{d}/nope.py:Net", "--ms", ms_spec, "--input-shape", "2,3,8,8"],  # no such file
        ["--torch", f"{d}/t.py:Nope", "--ms", ms_spec, "--input-shape", "2,3,8,8"],  # no such factory
        ["--torch", f"{d}/t.py", "--ms", ms_spec, "--input-shape", "2,3,8,8"],  # no :FACTORY
        ["--torch", f"{d}/t.py:Net", "--ms", ms_spec],  # no input
        ["--torch", f"{d}/t.py:Net", "--ms", ms_spec, "--input-shape", "2,5,8,8"],  # torch rejects the input
        ["--torch", f"{d}/t.py:Net", "--ms", ms_spec, "--inputs", str(tmp_path / "none.npz")],
    ]
    for argv in cases:
        assert main(["compare", *argv, "--no-graph"]) == 2, argv
        err = capsys.readouterr().err
        assert "error:" in err and "Traceback" not in err, (argv, err)
