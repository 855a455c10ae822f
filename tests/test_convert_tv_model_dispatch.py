"""Model factories taken from torchvision.models by name (issue 22 §2): ``models.__dict__[arch]()``,
``getattr(models, arch)()``, ``models.resnet18`` passed around, the ``model_names`` list the kit's
``imagenet/main.py`` builds from ``models.__dict__`` — under every import spelling — resolve to the
converted architectures (``torch2ms_runtime.tv_models``), never to torchvision's own classes
(``'ResNet' object has no attribute 'trainable_params'`` in the kit's imagenet script).

Static matrix: import form × lookup form, each converted alone: no torchvision import left, no mark.
Run: the converted files build MindSpore Cells (MindSpore alone). Differential: a generated training
script that picks its architecture through ``models.__dict__`` trains the same under compare-train.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from matrix_support import covering
from requires_support import require_module

from torch2ms.convert import convert_tree

IMPORTS = {
    "import_as": ("import torchvision.models as models", "models"),
    "from_import": ("from torchvision import models", "models"),
    "from_import_as": ("from torchvision import models as tvm", "tvm"),
    "package": ("import torchvision", "torchvision.models"),
}
LOOKUPS = {
    "dict_index": "{m}.__dict__[arch](num_classes=4)",
    "dict_get": "{m}.__dict__.get(arch)(num_classes=4)",
    "getattr": "getattr({m}, arch)(num_classes=4)",
    "attribute": "{m}.resnet18(num_classes=4)",
    "builder_value": "(lambda fn: fn(num_classes=4))({m}.resnet18)",
    "names_list": (
        "[{m}.__dict__[n] for n in sorted(n for n in {m}.__dict__ if n.islower() and not n.startswith('__')"
        " and callable({m}.__dict__[n])) if n == arch][0](num_classes=4)"
    ),
}
CASES = list(itertools.product(IMPORTS, LOOKUPS))


def _source(imp: str, look: str) -> str:
    line, m = IMPORTS[imp]
    return f"{line}\n\narch = 'resnet18'\nmodel = {LOOKUPS[look].format(m=m)}\n"


def _convert(tmp_path: Path, source: str) -> str:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "build.py").write_text(source)
    convert_tree(str(tmp_path / "src"), str(tmp_path / "out"))
    return (tmp_path / "out" / "build.py").read_text()


@pytest.mark.parametrize(("imp", "look"), covering(CASES))
def test_torchvision_model_lookup_converts(tmp_path, imp, look):
    out = _convert(tmp_path, _source(imp, look))
    assert "torchvision" not in out.replace("torchvision_ms", ""), out
    assert "not converted" not in out, out
    assert "tv_models" in out, out


@pytest.mark.slow
@pytest.mark.parametrize("look", list(LOOKUPS))
def test_torchvision_model_lookup_builds_a_cell(tmp_path, look):
    """Each lookup form, converted, builds the converted ResNet (a Cell with trainable parameters),
    run with MindSpore alone from the converted folder."""
    require_module("mindspore")
    require_module("torchvision")
    out = _convert(tmp_path, _source("import_as", look))
    probe = "\nimport sys\nprint(type(model).__module__, len(model.trainable_params()), 'torch' in sys.modules)\n"
    (tmp_path / "out" / "build.py").write_text(out + probe)
    done = subprocess.run(
        [sys.executable, "build.py"], cwd=tmp_path / "out", capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    module, count, torch_loaded = done.stdout.split()[-3:]
    assert module.startswith("torchvision_ms.models"), done.stdout
    assert int(count) == 62 and torch_loaded == "False", done.stdout


TRAIN = """
import argparse
import torch
import torch.nn as nn
import {imp}

parser = argparse.ArgumentParser()
parser.add_argument('-a', '--arch', default='resnet18',
                    choices=sorted(n for n in {m}.__dict__ if n.islower() and not n.startswith('__')
                                   and callable({m}.__dict__[n])))
args = parser.parse_args()
torch.manual_seed(0)
model = {lookup}
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(4, 3, 32, 32)
y = torch.tensor([0, 1, 2, 3])
for step in range(3):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
"""


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("lookup", ["{m}.__dict__[args.arch](num_classes=4)", "getattr({m}, args.arch)(num_classes=4)"])
def test_training_script_picking_its_model_by_name_trains_the_same(tmp_path, lookup):
    require_module("torch")
    require_module("mindspore")
    require_module("torchvision")
    from torch2ms.trainrun import compare_train

    source = TRAIN.format(imp="torchvision.models as models", m="models", lookup=lookup.format(m="models"))
    (tmp_path / "src").mkdir()
    script = tmp_path / "src" / "train.py"
    script.write_text(source)
    convert_tree(str(tmp_path / "src"), str(tmp_path / "out"))
    rep = compare_train(
        str(script), str(tmp_path / "out" / "train.py"), steps=2, out_dir=str(tmp_path / "cmp"), cwd=str(tmp_path)
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 2
