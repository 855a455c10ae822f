"""R23/R24/R27/R28 on real code: torchvision's resnet18 and mobilenet_v3_small, converted, compared layer by
layer (small input). The converted package is also called ``torchvision``, so the MindSpore side runs
in a fresh process and the torch side in its own (--torch-python), as with two environments."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from requires_support import require_modules

from torch2ms.convert import convert_tree

pytestmark = [pytest.mark.slow, pytest.mark.differential]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    require_modules("torchvision", "mindspore")
    spec = importlib.util.find_spec("torchvision")
    root = tmp_path_factory.mktemp("tvcmp") / "conv"
    convert_tree(Path(list(spec.submodule_search_locations)[0]), root / "torchvision")
    return root


@pytest.mark.parametrize("name,module", [("resnet18", "resnet"), ("mobilenet_v3_small", "mobilenetv3")])
def test_r24_converted_torchvision_model_has_no_divergence(converted, tmp_path, name, module):
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch2ms",
            "compare",
            "--torch",
            f"torchvision.models:{name}",
            "--ms",
            f"{converted}/torchvision/models/{module}.py:{name}",
            "--input-shape",
            "1,3,64,64",
            "--torch-python",
            sys.executable,
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    rep = json.loads((out / "report.json").read_text())
    assert rep["status"] == "match" and rep["first_divergence"] is None
    assert rep["alignment"] == "name" and not rep["missing_layers"] and not rep["weights"]["unloaded"]
    assert len(rep["layers"]) > 40 and all(r["verdict"] == "ok" for r in rep["layers"])
    assert rep["output"]["pynative"]["ok"] and rep["output"]["graph"]["ok"]
