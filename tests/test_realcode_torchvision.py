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
from matrix_support import full_matrix
from requires_support import require_modules

from torch2ms.convert import convert_tree

pytestmark = [pytest.mark.slow, pytest.mark.differential]

HERE = Path(__file__).parent / "realcode"
# ViT at its usual 224×224 needs >1 GB per attention kernel in GRAPH_MODE on CPU (MindSpore broadcasts
# the projection weights over the tokens); a 64×64 ViT-B/16 is the same code with 17 tokens.
MODELS_64 = [
    'vit_b_16@{"image_size": 64}',
    "alexnet",
    "vgg11_bn",
    "resnet18",
    "resnet50",
    "squeezenet1_0",
    "densenet121",
    "googlenet",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "shufflenet_v2_x1_0",
    "mnasnet0_5",
    "efficientnet_b0",
    "convnext_tiny",
    "swin_t",
]

# make test's lean tier (tests/lean_support.py): five architectures (residual, squeeze-excite + hardswish,
# attention, layer-norm blocks, inception branches); make test-full all fifteen.
LEAN = ("vit_b_16", "resnet18", "mobilenet_v3_small", "convnext_tiny", "googlenet")
MODELS = MODELS_64 if full_matrix() else [m for m in MODELS_64 if m.partition("@")[0] in LEAN]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    require_modules("torchvision", "mindspore")
    spec = importlib.util.find_spec("torchvision")
    tv = Path(list(spec.submodule_search_locations)[0])
    root = tmp_path_factory.mktemp("tv")
    report = convert_tree(tv, root / "converted" / "torchvision")
    assert not [f.path for f in report.failed if f.path.startswith(("models/", "ops/"))]
    data = root / "data"
    data.mkdir()
    subprocess.run(
        [sys.executable, str(HERE / "torch_side.py"), str(data), "64", *MODELS],
        check=True,
        capture_output=True,
        timeout=900,
    )
    rows, logs = {}, []
    models = MODELS
    for i in range(0, len(models), 5):
        # A few models per process: compiled graphs stay cached, and memory is shared with the test workers.
        out = subprocess.run(
            [sys.executable, str(HERE / "ms_side.py"), str(root / "converted"), str(data), *models[i : i + 5]],
            capture_output=True,
            text=True,
            timeout=900,
        )
        logs.append(f"exit {out.returncode}: {out.stderr[-1500:]}")
        for line in out.stdout.splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                rows[row["model"]] = row
    rows["_logs"] = logs
    return rows, report


@pytest.mark.parametrize("spec", MODELS, ids=lambda s: s.partition("@")[0])
def test_r23_r27_converted_torchvision_model_matches(results, spec):
    rows, _ = results
    name = spec.partition("@")[0]
    row = rows.get(name)
    assert row is not None, f"{name}: the MindSpore side printed nothing; {rows['_logs']}"
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
