"""R6-R10, R21, R23, R27 on real code nobody here wrote: the installed torchvision package, converted.

Torch side and MindSpore side run in separate processes (the converted package is also called
``torchvision``); they exchange weights, inputs and outputs through .npz files.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from torch2ms.convert import convert_tree

pytestmark = [pytest.mark.slow, pytest.mark.differential]

HERE = Path(__file__).parent / "realcode"
MODELS_64 = ["alexnet", "vgg11_bn", "resnet18", "resnet50", "squeezenet1_0", "densenet121", "googlenet",
             "mobilenet_v2", "mobilenet_v3_small", "shufflenet_v2_x1_0", "mnasnet0_5", "efficientnet_b0",
             "convnext_tiny", "swin_t"]
MODELS_224 = ["vit_b_16"]  # ViT checks the image size


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    spec = importlib.util.find_spec("torchvision")
    if spec is None or importlib.util.find_spec("mindspore") is None:
        pytest.skip("needs torchvision and mindspore")
    tv = Path(list(spec.submodule_search_locations)[0])
    root = tmp_path_factory.mktemp("tv")
    report = convert_tree(tv, root / "converted" / "torchvision")
    assert not [f.path for f in report.failed if f.path.startswith(("models/", "ops/"))]
    data = root / "data"
    data.mkdir()
    for size, names in (("64", MODELS_64), ("224", MODELS_224)):
        subprocess.run([sys.executable, str(HERE / "torch_side.py"), str(data), size, *names], check=True,
                       capture_output=True, timeout=900)
    out = subprocess.run([sys.executable, str(HERE / "ms_side.py"), str(root / "converted"), str(data),
                          *MODELS_64, *MODELS_224], capture_output=True, text=True, timeout=1500)
    rows = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            rows[row["model"]] = row
    return rows, report


@pytest.mark.parametrize("name", MODELS_64 + MODELS_224)
def test_r23_r27_converted_torchvision_model_matches(results, name):
    rows, _ = results
    row = rows.get(name)
    assert row is not None, f"{name}: the MindSpore side printed nothing"
    assert "error" not in row, row.get("error", "") + "\n" + row.get("trace", "")
    scale = row["scale"]
    assert scale > 1e-3, "degenerate output: the comparison would prove nothing"
    assert row["pynative_max_abs"] <= 1e-4 * scale, row
    assert row["graph_max_abs"] <= 1e-4 * scale, row


def test_r20_torchvision_conversion_report(results):
    _, report = results
    s = report.to_dict()["summary"]
    assert s["converted"] > 5000
    assert s["conversion_rate"] > 0.9
