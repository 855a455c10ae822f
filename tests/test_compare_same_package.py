"""Issue 23 §3, class "the two sides see each other's package": `compare` with the original and the
converted tree holding the same package name (``unet/``, ``pygcn/``) said "gave a UNet, not a
mindspore.nn.Cell": the converted side got the torch side's package from sys.modules. A generated
two-folder project, for every layout (a package with relative imports, one with absolute imports of
itself, a plain module beside the script) × every spec (the script beside the package, the file
inside it): converted by `torch2ms convert`, compared in real torch and real MindSpore — MATCH.
The script also has optional imports (``try: import wandb`` / ``except ImportError``, tqdm), which
must not stop compare either."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.cli import main

pytestmark = pytest.mark.differential

BLOCK = """
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc = nn.Linear(c, c)

    def forward(self, x):
        return self.fc(x).relu()
"""
MODEL = """
import torch.nn as nn
{import_block}


class Net(nn.Module):
    def __init__(self, c=3):
        super().__init__()
        self.a = Block(c)
        self.head = nn.Linear(c, 2)

    def forward(self, x):
        return self.head(self.a(x))
"""
SCRIPT = """
try:
    import wandb
except ImportError:
    wandb = None
from tqdm import tqdm

{import_net}


def build():
    for _ in tqdm(range(2), disable=True):
        pass
    return Net(3)
"""
# layout → (files, spec of the model file inside the project)
LAYOUTS = {
    "package_relative": (
        {
            "{pkg}/__init__.py": "from .model import Net\n",
            "{pkg}/parts.py": BLOCK,
            "{pkg}/model.py": MODEL.format(import_block="from .parts import Block"),
            "train.py": SCRIPT.format(import_net="from {pkg} import Net"),
        },
        "{pkg}/model.py:Net",
    ),
    "package_absolute": (
        {
            "{pkg}/__init__.py": "",
            "{pkg}/layers.py": BLOCK,
            "{pkg}/models.py": MODEL.format(import_block="from {pkg}.layers import Block"),
            "train.py": SCRIPT.format(import_net="from {pkg}.models import Net"),
        },
        "{pkg}/models.py:Net",
    ),
    # folders without __init__.py (namespace packages; the kit's segment-anything and guided-diffusion
    # copies): the model file's relative imports say how many folders make its package
    "namespace_relative": (
        {
            "{pkg}/parts.py": BLOCK,
            "{pkg}/model.py": MODEL.format(import_block="from .parts import Block"),
            "train.py": SCRIPT.format(import_net="from {pkg}.model import Net"),
        },
        "{pkg}/model.py:Net",
    ),
    "namespace_two_levels": (
        {
            "{pkg}/parts.py": BLOCK,
            "{pkg}/sub/model.py": MODEL.format(import_block="from ..parts import Block"),
            "train.py": SCRIPT.format(import_net="from {pkg}.sub.model import Net"),
        },
        "{pkg}/sub/model.py:Net",
    ),
    "sibling_modules": (
        {
            "layers.py": BLOCK,
            "models.py": MODEL.format(import_block="from layers import Block"),
            "train.py": SCRIPT.format(import_net="from models import Net"),
        },
        "models.py:Net",
    ),
}


def _project(tmp: Path, layout: str, pkg: str) -> tuple[Path, Path, str]:
    files, model_spec = LAYOUTS[layout]
    orig = tmp / "orig"
    for name, text in files.items():
        f = orig / name.format(pkg=pkg)
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(text.replace("{pkg}", pkg)))
    out = tmp / "out"
    assert main(["convert", str(orig), "-o", str(out)]) == 0
    return orig, out, model_spec.format(pkg=pkg)


@pytest.mark.parametrize("spec_kind", ["script", "model_file"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_compare_two_trees_with_the_same_package_name_matches(tmp_path, capsys, layout, spec_kind):
    require_module("torch")
    require_module("mindspore")
    pkg = f"unet_{layout}_{spec_kind}"  # fresh per case: no module cached by an earlier case
    orig, out, model_spec = _project(tmp_path, layout, pkg)
    spec = "train.py:build" if spec_kind == "script" else model_spec
    capsys.readouterr()
    rc = main(["compare", "--torch", f"{orig}/{spec}", "--ms", f"{out}/{spec}", "--input-shape", "2,3", "--no-graph"])
    text = capsys.readouterr()
    assert rc == 0, text.out + text.err
    assert "MATCH" in text.out and "not a mindspore.nn.Cell" not in text.err
