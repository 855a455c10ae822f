"""R28: compare works when torch cannot be imported in the MindSpore process: the torch side runs in
another interpreter (--torch-python) and the two exchange inputs, weights and layer outputs as .npz."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

TORCH_SRC = """
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.act = nn.GELU()
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        return self.fc(self.act(self.pool(self.bn(self.conv(x))).flatten(1)))
"""

# The MindSpore process: torch and torchvision are blocked before anything else is imported.
MS_PROCESS = textwrap.dedent("""
    import json, sys

    class _BlockTorch:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "torchvision"):
                raise ImportError(f"{name} is blocked in the MindSpore process")

    sys.meta_path.insert(0, _BlockTorch())
    from torch2ms.align import CompareOptions, TrainOptions, compare_models

    opts = CompareOptions(input_shapes=[(2, 3, 8, 8)], torch_python=sys.argv[3], train=TrainOptions(steps=2),
                          out_dir=sys.argv[4])
    rep = compare_models(sys.argv[1], sys.argv[2], opts)
    fd = rep.first_divergence
    print(json.dumps({"status": rep.status, "layer": fd and fd.layer, "two_process": rep.two_process,
                      "torch_loaded": any(m.split(".")[0] == "torch" for m in sys.modules),
                      "graph_ok": rep.output["graph"].ok, "losses": rep.training.max_loss_rel}))
""")


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    d = tmp_path_factory.mktemp("two")
    (d / "net_torch.py").write_text(TORCH_SRC, encoding="utf-8")
    code = convert_source(TORCH_SRC).code
    (d / "net_ms.py").write_text(code, encoding="utf-8")
    (d / "net_ms_bug.py").write_text(code.replace("approximate=False", "approximate=True"), encoding="utf-8")
    return d


@pytest.mark.parametrize("variant,status,layer", [("net_ms", "match", None), ("net_ms_bug", "divergence", "act")])
def test_r28_torch_side_in_its_own_process(port, tmp_path, variant, status, layer):
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            MS_PROCESS,
            f"{port}/net_torch.py:Net",
            f"{port}/{variant}.py:Net",
            sys.executable,
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["two_process"] and not res["torch_loaded"]
    assert res["status"] == status and res["layer"] == layer, res
    assert res["graph_ok"] == (variant == "net_ms") or variant == "net_ms_bug"
    assert res["losses"] is not None and res["losses"] < 1e-3
    assert (tmp_path / "report.json").exists() and (tmp_path / "report.html").exists()
