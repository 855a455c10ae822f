"""torchvision.models inside a user's model (issue 11 class 10, issue 14), converted as a project.

The user's file builds resnet18 / mobilenet_v2 / a VisionTransformer from torchvision and replaces their heads
(``backbone.fc = nn.Linear(...)``). ``torch2ms convert`` writes ``torchvision_ms`` (torchvision's own
architectures, converted) beside it; ``torch2ms weights`` converts the user's torch checkpoint; the
converted models then run in a process where torch cannot be imported and must give torch's numbers
in PyNative and GRAPH_MODE. Pretrained weights (``weights=ResNet18_Weights.IMAGENET1K_V1``) come from
torch.hub's cache, converted once with ``torch2ms weights`` (a random checkpoint stands in for the
download: nothing is fetched).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_tree

pytestmark = [pytest.mark.slow, pytest.mark.differential]

HERE = Path(__file__).parent
SRC = HERE.parent / "src"

USER_MODEL = """\
import torch
import torch.nn as nn
import torchvision
from torchvision import models
from torchvision.models import ResNet18_Weights


class ResNetClassifier(nn.Module):
    def __init__(self, num_classes=3, pretrained=False):
        super().__init__()
        weights = ResNet18_Weights.IMAGENET1K_V1 if pretrained else None
        self.backbone = models.resnet18(weights=weights)
        self.backbone.fc = nn.Linear(self.backbone.fc.in_features, num_classes)

    def forward(self, x):
        return self.backbone(x)


class MobileNetClassifier(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.net = torchvision.models.mobilenet_v2(weights=None)
        self.net.classifier[1] = nn.Linear(self.net.classifier[1].in_features, num_classes)

    def forward(self, x):
        return self.net(x)


class ViTClassifier(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        # torchvision's ViT class at a small size (vit_b_16's 86M parameters do not fit the test machine's memory
        # twice over; the builder itself is proven by its KB case)
        self.vit = models.VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128)
        self.vit.heads.head = nn.Linear(self.vit.heads.head.in_features, num_classes)

    def forward(self, x):
        return self.vit(x)


def resnet():
    return ResNetClassifier()


def mobilenet():
    return MobileNetClassifier()


def vit():
    return ViTClassifier()


def resnet_pretrained():
    return ResNetClassifier(pretrained=True)
"""
FACTORIES = {"resnet": 32, "mobilenet": 32, "vit": 64}


def _torch_side(src: Path, data: Path, torch_home: Path) -> None:
    """Build each model (seeded, random BN statistics), save its checkpoint, input and eval output."""
    import torch

    sys.path.insert(0, str(src))
    try:
        import model  # the user's torch file
    finally:
        sys.path.remove(str(src))
    sys.modules.pop("model", None)
    for factory, size in FACTORIES.items():
        torch.manual_seed(0)
        net = getattr(model, factory)()
        _randomize_bn(net)
        net.eval()
        x = np.random.default_rng(0).standard_normal((2, 3, size, size)).astype(np.float32)
        with torch.no_grad():
            y = net(torch.from_numpy(x)).numpy()
        torch.save(net.state_dict(), data / f"{factory}.pth")
        np.savez(data / f"{factory}.npz", x=x, y=y)
    _pretrained(model, data, torch_home)


def _randomize_bn(net) -> None:
    import torch

    g = torch.Generator().manual_seed(1)
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)


def _pretrained(model, data: Path, torch_home: Path) -> None:
    """torch.hub's cached resnet18 download, replaced by random weights, then the pretrained model."""
    import torch
    import torchvision

    weights = torchvision.models.ResNet18_Weights.IMAGENET1K_V1
    hub = torch_home / "hub" / "checkpoints"
    hub.mkdir(parents=True)
    torch.manual_seed(3)
    fake = torchvision.models.resnet18()
    _randomize_bn(fake)
    torch.save(fake.state_dict(), hub / Path(weights.url).name)
    torch.manual_seed(0)
    previous = torch.hub.get_dir()
    torch.hub.set_dir(str(torch_home / "hub"))
    try:
        net = model.resnet_pretrained().eval()  # loads the cached file (torch only checks hashes on download)
    finally:
        torch.hub.set_dir(previous)
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    with torch.no_grad():
        y = net(torch.from_numpy(x)).numpy()
    # the new head is random: save it so the MindSpore side can load the same
    torch.save(
        {k: v for k, v in net.state_dict().items() if k.startswith("backbone.fc.")}, data / "resnet_pretrained.pth"
    )
    np.savez(data / "resnet_pretrained.npz", x=x, y=y)


def _weights(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "torch2ms", "weights", *args], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    require_module("torchvision")
    require_module("mindspore")
    root = tmp_path_factory.mktemp("user")
    src, out, data, torch_home = root / "src", root / "out", root / "data", root / "torch_home"
    src.mkdir()
    data.mkdir()
    (src / "model.py").write_text(USER_MODEL, encoding="utf-8")
    report = convert_tree(src, out)
    _torch_side(src, data, torch_home)
    return report, out, data, torch_home


def test_convert_writes_the_converted_torchvision_beside_the_project(converted):
    report, out, _, _ = converted
    code = (out / "model.py").read_text(encoding="utf-8")
    statements = [line.split("#", 1)[0] for line in code.splitlines()]
    assert not [s for s in statements if re.search(r"\btorch(vision)?\b(?!2ms)", s)], code
    assert "tv_models.resnet18(weights=weights)" in code
    assert "tv_models.ResNet18_Weights.IMAGENET1K_V1" in code
    assert (out / "torchvision_ms" / "models" / "resnet.py").is_file()
    assert report.to_dict()["generated"] and "torchvision_ms" in report.to_dict()["generated"][0]
    assert report.rate() == 1.0, report.to_dict()["files"]


@pytest.fixture(scope="module")
def user_checkpoints(converted):
    """The user's checkpoints through ``torch2ms weights --net``: a fixture, not a test's side effect, so the
    comparison below has them on whichever xdist worker runs it (``--dist loadgroup`` splits this module)."""
    _, out, data, _ = converted
    return {
        factory: _weights(
            str(data / f"{factory}.pth"), "--net", f"{out / 'model.py'}:{factory}", "-o", str(data / f"{factory}.ckpt")
        )
        for factory in FACTORIES
    }


def test_weights_cli_converts_the_user_checkpoints(user_checkpoints):
    for res in user_checkpoints.values():
        assert res.returncode == 0, res.stdout + res.stderr
        assert "every network parameter loaded" in res.stdout, res.stdout


def test_converted_models_match_torch_without_torch_in_both_modes(converted, user_checkpoints):
    _, out, data, torch_home = converted
    hub = torch_home / "hub" / "checkpoints"
    pth = next(hub.glob("resnet18-*.pth"))
    # the pretrained download, converted where the converted builder looks for it (no --net: a bare state
    # dict; --torch-net says each layer's type, else its BN renames are guesses and the exit code is 3)
    res = _weights(str(pth), "-o", str(pth.with_suffix(".ckpt")), "--torch-net", "torchvision.models:resnet18")
    assert res.returncode == 0, res.stdout + res.stderr
    res = _weights(str(data / "resnet_pretrained.pth"), "-o", str(data / "resnet_pretrained.ckpt"))
    assert res.returncode == 0, res.stdout + res.stderr
    env = {**os.environ, "PYTHONPATH": str(SRC), "TORCH_HOME": str(torch_home)}
    proc = subprocess.run(
        [sys.executable, str(HERE / "vision_ms_side.py"), str(out), str(data), *FACTORIES, "resnet_pretrained"],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    rows = {r["factory"]: r for r in map(json.loads, (ln for ln in proc.stdout.splitlines() if ln.startswith("{")))}
    for factory in [*FACTORIES, "resnet_pretrained"]:
        row = rows.get(factory)
        assert row is not None, proc.stderr[-3000:]
        assert "error" not in row, row.get("error", "") + row.get("trace", "")
        assert not row.get("not_loaded"), row
        assert row["scale"] > 1e-3, row
        assert row["pynative_max_abs"] <= 1e-4 * row["scale"], row
        assert row["graph_max_abs"] <= 1e-4 * row["scale"], row
