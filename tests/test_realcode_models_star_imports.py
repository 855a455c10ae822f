"""Issue 11, class 11 (R1, R6, R27): a model split over files. ``model.py`` has no torch import of
its own: ``nn``, ``F`` and ``torch`` come from ``from .parts import *`` (and a re-export by name,
``from .util import act``); a package ``__init__`` star-imports the model in turn. Converted as a
project, every file converts and the model matches torch in PyNative and GRAPH_MODE."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from rc_models_support import compare_modes

from torch2ms.convert import convert_tree

pytestmark = pytest.mark.differential

FILES = {
    "segnet/__init__.py": "from .model import *\n",
    "segnet/util.py": textwrap.dedent("""\
        import torch.nn.functional as act
        """),
    "segnet/parts.py": textwrap.dedent("""\
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class DoubleConv(nn.Module):
            def __init__(self, cin, cout):
                super().__init__()
                self.net = nn.Sequential(
                    nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
                )

            def forward(self, x):
                return self.net(x)
        """),
    "segnet/model.py": textwrap.dedent("""\
        from .parts import *
        from .util import act

        __all__ = ["SegNet"]


        class SegNet(nn.Module):
            def __init__(self, cin=3, classes=2):
                super().__init__()
                self.down = DoubleConv(cin, 8)
                self.pool = nn.MaxPool2d(2)
                self.mid = DoubleConv(8, 8)
                self.head = nn.Conv2d(16, classes, kernel_size=1)

            def forward(self, x):
                a = self.down(x)
                b = F.interpolate(self.mid(self.pool(a)), scale_factor=2, mode="nearest")
                return act.log_softmax(self.head(torch.cat([a, b], dim=1)), dim=1)
        """),
}


def _write(root: Path) -> None:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _import_package(root: Path, name: str):
    sys.path.insert(0, str(root))
    try:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(root))


def test_r1_star_imported_torch_names_are_converted(tmp_path):
    _write(tmp_path / "src")
    report = convert_tree(tmp_path / "src", tmp_path / "out")
    model = (tmp_path / "out" / "segnet" / "model.py").read_text()
    assert not report.failed
    assert "class SegNet(nn.Cell)" in model and "cat(" in model and "ops.log_softmax(" in model
    assert "from .parts import *" in model  # DoubleConv still comes from there
    assert not [c for f in report.files for c in f.changes if c["action"] == "not-converted"]


@pytest.mark.slow
def test_r27_star_imported_model_matches_torch_in_both_modes(tmp_path):
    import torch

    _write(tmp_path / "src")
    convert_tree(tmp_path / "src", tmp_path / "out")
    tpkg = _import_package(tmp_path / "src", "segnet")
    torch.manual_seed(0)
    tnet = tpkg.SegNet()
    for m in tnet.modules():
        if isinstance(m, torch.nn.BatchNorm2d):  # running statistics matter in eval mode
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    mpkg = _import_package(tmp_path / "out", "segnet")
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    errors = compare_modes(tnet, mpkg.SegNet, [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors
