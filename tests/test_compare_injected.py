"""R24: `compare` names the first layer that is wrong — proven by breaking one layer of a correct port.

A small torch model is converted with torch2ms.convert.convert_source; the converted file is then
broken in exactly one place, the way real hand ports break (MindSpore defaults left in place, a
momentum not inverted, a transposed weight), and compare must name THAT layer every time.
Real torch and real MindSpore run on the same seeded input and weights.
"""

from __future__ import annotations

import json

import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

TORCH_SRC = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.conv3 = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.ln = nn.LayerNorm(16)
        self.act = nn.GELU()
        self.fc1 = nn.Linear(16, 16)
        self.fc = nn.Linear(16, 10)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.relu(self.conv2(x))
        x = F.relu(self.conv3(x))
        x = x.mean(dim=(2, 3))
        x = self.act(self.ln(x))
        x = self.fc1(x)
        return self.fc(self.drop(x))
"""

# A hand-written Dense that forgot torch's x @ Wᵀ (square, so every shape still fits).
DENSE_T = """

class _DenseT(nn.Dense):
    def construct(self, x):
        return ops.matmul(x, self.weight) + self.bias

"""

# bug id → (replacements in the converted source, layer compare must name, kind, hint fragment, train steps)
BUGS = {
    "layernorm_eps_1e-7": ([("epsilon=1e-05", "epsilon=1e-07")], "ln", "values", "LayerNorm epsilon differs", 0),
    "gelu_tanh_vs_exact": ([("approximate=False", "approximate=True")], "act", "values", "GELU approximation", 0),
    "bn_momentum_not_inverted": ([("momentum=0.9", "momentum=0.1")], "bn1", "values", "BN momentum", 2),
    "conv_pad_mode_same": (
        [("nn.Conv2d(8, 16, 3, pad_mode='valid', has_bias=True)", "nn.Conv2d(8, 16, 3, has_bias=True)")],
        "conv2",
        "shape",
        "pad_mode='same'",
        0,
    ),
    "conv_strided_pad_mode_same": (
        [("stride=2, pad_mode='pad', padding=1,", "stride=2,")],
        "conv3",
        "values",
        "pad_mode='same'",
        0,
    ),
    "maxpool_default_stride": (
        [("nn.MaxPool2d(2, stride=2, pad_mode='pad', padding=0)", "nn.MaxPool2d(2, pad_mode='pad', padding=0)")],
        "pool",
        "shape",
        "pooling stride",
        0,
    ),
    "linear_weight_transposed": (
        [("self.fc1 = nn.Dense(16, 16)", "self.fc1 = _DenseT(16, 16)"), ("\nclass Net", DENSE_T + "class Net")],
        "fc1",
        "values",
        "transposed",
        0,
    ),
}


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    d = tmp_path_factory.mktemp("cmp")
    (d / "net_torch.py").write_text(TORCH_SRC, encoding="utf-8")
    conv = convert_source(TORCH_SRC)
    assert not conv.error, conv.error
    (d / "net_ms.py").write_text(conv.code, encoding="utf-8")
    return d, conv.code


def _write_bug(d, code: str, name: str, reps) -> str:
    for old, new in reps:
        assert old in code, f"converter output changed: {old!r} not found"
        code = code.replace(old, new, 1)
    path = d / f"bug_{name.replace('-', '_').replace('.', '_')}.py"
    path.write_text(code, encoding="utf-8")
    return f"{path}:Net"


def test_r23_r24_r27_correct_port_has_no_divergence(port):
    from torch2ms.align import CompareOptions, compare_models

    d, _ = port
    opts = CompareOptions(input_shapes=[(4, 3, 16, 16)], seed=0, replay_all=True)
    rep = compare_models(f"{d}/net_torch.py:Net", f"{d}/net_ms.py:Net", opts)
    assert rep.status == "match", rep.first_divergence
    assert rep.first_divergence is None
    assert rep.alignment == "name" and not rep.missing_layers and not rep.weights["unloaded"]
    assert rep.output["pynative"].ok and rep.output["graph"].ok  # R27: both modes checked
    assert all(r.verdict == "ok" for r in rep.layers)
    leaves = [r for r in rep.layers if r.leaf]
    assert leaves and all(r.local_rel is not None for r in leaves)
    assert all(r.cosine > 0.999999 for r in rep.layers)


@pytest.mark.parametrize("bug", list(BUGS))
def test_r24_injected_bug_is_named_as_first_divergence(port, bug):
    from torch2ms.align import CompareOptions, TrainOptions, compare_models

    d, code = port
    reps, layer, kind, hint, steps = BUGS[bug]
    spec = _write_bug(d, code, bug, reps)
    for seed in (0, 1):  # every time, not by luck of one input
        opts = CompareOptions(input_shapes=[(4, 3, 16, 16)], seed=seed, train=TrainOptions(steps=steps), graph=False)
        rep = compare_models(f"{d}/net_torch.py:Net", spec, opts)
        fd = rep.first_divergence
        assert rep.status == "divergence" and fd is not None, bug
        assert fd.layer == layer, (bug, fd)
        assert fd.kind == kind, (bug, fd)
        assert hint in fd.hint, (bug, fd.hint)
        assert fd.phase == ("after training" if steps else "forward")
        before = [r for r in rep.layers if r.index < (fd.index if fd.phase == "forward" else 0)]
        assert all(r.verdict == "ok" for r in before)


def test_r30_cli_writes_json_html_and_plot(port, tmp_path):
    from torch2ms.cli import main

    d, code = port
    spec = _write_bug(d, code, "cli_gelu", BUGS["gelu_tanh_vs_exact"][0])
    out = tmp_path / "rep"
    rc = main(
        ["compare", "--torch", f"{d}/net_torch.py:Net", "--ms", spec, "--input-shape", "2,3,16,16", "--out", str(out)]
    )
    assert rc == 1
    data = json.loads((out / "report.json").read_text())
    assert data["first_divergence"]["layer"] == "act"
    html = (out / "report.html").read_text()
    assert "<svg" in html and "First divergence" in html and "act" in html  # plots inline, text kept
    png = (out / "layer_errors.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        main(
            [
                "compare",
                "--torch",
                f"{d}/net_torch.py:Net",
                "--ms",
                f"{d}/net_ms.py:Net",
                "--input-shape",
                "2,3,16,16",
                "--no-graph",
            ]
        )
        == 0
    )


def test_r23_weights_file_is_loaded_on_both_sides(port, tmp_path):
    import importlib.util

    import torch

    from torch2ms.align import CompareOptions, compare_models

    d, _ = port
    spec = importlib.util.spec_from_file_location("_w_net_torch", d / "net_torch.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(123)
    net = mod.Net()
    with torch.no_grad():
        net.bn1.running_mean.uniform_(-0.5, 0.5)
        net.bn1.running_var.uniform_(0.5, 2.0)
    torch.save({"state_dict": net.state_dict()}, tmp_path / "w.pth")
    opts = CompareOptions(weights=str(tmp_path / "w.pth"), input_shapes=[(2, 3, 16, 16)], graph=False)
    rep = compare_models(f"{d}/net_torch.py:Net", f"{d}/net_ms.py:Net", opts)
    assert rep.status == "match", rep.first_divergence
    assert rep.weights["torch_load"] == {"missing": [], "unexpected": []} and not rep.weights["unloaded"]
