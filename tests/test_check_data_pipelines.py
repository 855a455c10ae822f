"""R25 (with R14–R16): check-data on real torchvision and real mindspore.dataset pipelines over the same images.

A correct port agrees; each deliberately wrong MindSpore pipeline is caught with the right pitfall.
"""

# ruff: noqa: E402 (the framework imports follow require_modules)
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from requires_support import require_modules

# The frameworks are required before they are imported (a fail in CI, a skip elsewhere).
require_modules("torch", "torchvision", "mindspore")

import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.transforms as T
import mindspore.dataset.vision as V
import torch
import torchvision.transforms as tt
from PIL import Image
from torchvision.datasets import ImageFolder

from torch2ms.cli import main
from torch2ms.data import check_data

pytestmark = pytest.mark.differential

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """2 classes × 4 PNGs of odd sizes (90–111 × 120–135): 8 samples, batch 3 → 3 batches, the last partial."""
    d = tmp_path_factory.mktemp("imgs")
    rng = np.random.default_rng(0)
    for cls in ("cat", "dog"):
        (d / cls).mkdir()
        for i in range(4):
            h, w = int(rng.integers(90, 112)), int(rng.integers(120, 136))
            Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(d / cls / f"{i}.png")
    return str(d)


def torch_loader(root, *ops, drop_last=False):
    ops = ops or (tt.Resize((32, 32)),)
    data = ImageFolder(root, tt.Compose([*ops, tt.ToTensor(), tt.Normalize(MEAN, STD)]))
    return torch.utils.data.DataLoader(data, batch_size=3, shuffle=False, drop_last=drop_last)


GOOD = [V.Decode(to_pil=True), V.Resize((32, 32)), V.ToTensor(), V.Normalize(MEAN, STD, is_hwc=False)]


def ms_dataset(root, ops=None, shuffle=False, drop_remainder=False):
    d = ds.ImageFolderDataset(root, shuffle=shuffle)
    d = d.map(ops or GOOD, input_columns=["image"]).map(T.TypeCast(ms.int32), input_columns=["label"])
    return d.batch(3, drop_remainder=drop_remainder)


def _errors(rep):
    return [f.pitfall for f in rep.findings if f.level == "error"]


def test_r25_correct_port_agrees(root):
    rep = check_data(torch_loader(root), ms_dataset(root), batches=3)
    assert rep.ok, rep.to_markdown()
    img, lab = rep.columns
    assert rep.torch.batches_per_epoch == rep.ms.batches_per_epoch == 3
    assert img.torch_shape == img.ms_shape == [3, 3, 32, 32]
    assert img.d_mean < 1e-3 and img.d_std < 1e-3 and img.max_abs < 1e-3
    assert lab.label_agreement == 1.0 and (lab.torch_dtype, lab.ms_dtype) == ("int64", "int32")
    assert [f.pitfall for f in rep.findings] == ["label_dtype"]  # int64 vs int32: info, compared by value


@pytest.mark.parametrize(
    "name, ops, pitfall",
    [
        (
            "opencv decode",
            [V.Decode(), V.Resize((32, 32)), V.ToTensor(), V.Normalize(MEAN, STD, is_hwc=False)],
            "decode_pil",
        ),
        ("no Normalize", [V.Decode(to_pil=True), V.Resize((32, 32)), V.ToTensor()], "normalize"),
        (
            "Normalize before ToTensor",
            [V.Decode(to_pil=True), V.Resize((32, 32)), V.Normalize(MEAN, STD), V.ToTensor()],
            "normalize",
        ),
        ("no ToTensor", [V.Decode(to_pil=True), V.Resize((32, 32)), V.HWC2CHW()], "to_tensor"),
        (
            "no HWC2CHW",
            [V.Decode(to_pil=True), V.Resize((32, 32)), V.Rescale(1 / 255, 0), V.Normalize(MEAN, STD)],
            "layout",
        ),
        (
            "Normalize is_hwc default",
            [V.Decode(to_pil=True), V.Resize((32, 32)), V.ToTensor(), V.Normalize(MEAN, STD)],
            "normalize_hwc",
        ),
        ("no Decode", [V.Resize((32, 32)), V.ToTensor()], "decode"),
    ],
)
def test_r15_wrong_transforms_are_caught_and_named(root, name, ops, pitfall):
    rep = check_data(torch_loader(root), ms_dataset(root, ops), batches=3)
    assert not rep.ok
    assert _errors(rep)[0] == pitfall, (name, rep.to_markdown())


def test_r16_drop_remainder_differs(root):
    rep = check_data(torch_loader(root), ms_dataset(root, drop_remainder=True), batches=3)
    assert (rep.torch.batches_per_epoch, rep.ms.batches_per_epoch) == (3, 2)
    assert _errors(rep) == ["drop_last"]


def test_r16_imagefolder_default_shuffle_is_caught(root):
    rep = check_data(torch_loader(root), ms_dataset(root, shuffle=None), batches=3)
    assert _errors(rep) == ["shuffle"]
    f = rep.findings[0]
    assert "MindSpore shuffles" in f.message and any("shuffles=True" in e for e in f.evidence)
    assert rep.columns[0].d_mean < 1e-3  # a whole epoch: same samples, other order


def test_r25_center_crop_rounding_on_the_numpy_path(root):
    crop = [V.Decode(), V.CenterCrop(64), V.ToTensor(), V.Normalize(MEAN, STD, is_hwc=False)]
    rep = check_data(torch_loader(root, tt.CenterCrop(64)), ms_dataset(root, crop), batches=3)
    assert _errors(rep) == ["center_crop"]
    pil = [V.Decode(to_pil=True), V.CenterCrop(64), V.ToTensor(), V.Normalize(MEAN, STD, is_hwc=False)]
    assert check_data(torch_loader(root, tt.CenterCrop(64)), ms_dataset(root, pil), batches=3).ok


def test_r25_bicubic_on_numpy_needs_pilcubic(root):
    bicubic = tt.Resize((32, 32), tt.InterpolationMode.BICUBIC)

    def ms_ops(inter):
        return [V.Decode(), V.Resize((32, 32), inter), V.ToTensor(), V.Normalize(MEAN, STD, is_hwc=False)]

    bad = check_data(torch_loader(root, bicubic), ms_dataset(root, ms_ops(V.Inter.BICUBIC)), batches=3)
    assert _errors(bad) == ["decode_pil"] and any("PILCUBIC" in e for e in bad.findings[0].evidence)
    good = check_data(torch_loader(root, bicubic), ms_dataset(root, ms_ops(V.Inter.PILCUBIC)), batches=3)
    assert good.ok and good.columns[0].max_abs < 1e-3


class NumpySource:
    """A torch-style Dataset class with numpy items, as GeneratorDataset takes it."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def test_r14_generator_dataset_vs_tensor_dataset():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 3, 8, 8)).astype(np.float32)
    y = (np.arange(10) % 3).astype(np.int64)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=4
    )

    def gen(**kw):
        return ds.GeneratorDataset(NumpySource(x, y), ["x", "y"], **kw).batch(4)

    rep = check_data(loader, gen(shuffle=False), batches=3)
    assert rep.ok and rep.columns[0].max_abs == 0.0 and rep.torch.batches_per_epoch == rep.ms.batches_per_epoch == 3
    assert [f.pitfall for f in rep.findings] == ["label_dtype"]  # int64 labels on MindSpore: a warning
    assert rep.findings[0].level == "warn"
    assert _errors(check_data(loader, gen(), batches=3)) == ["shuffle"]  # GeneratorDataset shuffles by default
    drop = ds.GeneratorDataset(NumpySource(x, y), ["x", "y"], shuffle=False).batch(4, drop_remainder=True)
    assert _errors(check_data(loader, drop, batches=3)) == ["drop_last"]


@pytest.fixture()
def factories(root, tmp_path):
    f = tmp_path / "pipes.py"
    f.write_text(
        textwrap.dedent(f"""
        import mindspore as ms, mindspore.dataset as ds, mindspore.dataset.vision as V
        import mindspore.dataset.transforms as T
        import torch, torchvision.transforms as tt
        from torchvision.datasets import ImageFolder
        ROOT, M, S = {root!r}, {MEAN!r}, {STD!r}

        def torch_loader():
            d = ImageFolder(ROOT, tt.Compose([tt.Resize((32, 32)), tt.ToTensor(), tt.Normalize(M, S)]))
            return torch.utils.data.DataLoader(d, batch_size=3)

        def _ms(ops, **kw):
            d = ds.ImageFolderDataset(ROOT, **kw).map(ops, input_columns=["image"])
            return d.map(T.TypeCast(ms.int32), input_columns=["label"]).batch(3)

        def ms_good():
            return _ms([V.Decode(to_pil=True), V.Resize((32, 32)), V.ToTensor(), V.Normalize(M, S, is_hwc=False)],
                       shuffle=False)

        def ms_default_shuffle():
            return _ms([V.Decode(to_pil=True), V.Resize((32, 32)), V.ToTensor(), V.Normalize(M, S, is_hwc=False)])
    """)
    )
    return f


def test_r25_cli_exit_codes_and_reports(factories, tmp_path, capsys):
    out = tmp_path / "rep"
    assert (
        main(
            [
                "check-data",
                "--torch",
                f"{factories}:torch_loader",
                "--ms",
                f"{factories}:ms_good",
                "--batches",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rep = json.loads((out / "report.json").read_text())
    assert rep["ok"] and rep["torch"]["batches_per_epoch"] == rep["mindspore"]["batches_per_epoch"] == 3
    assert rep["columns"][0]["d_mean"] < 1e-3 and "pipelines agree" in (out / "report.md").read_text()
    assert "pipelines agree" in capsys.readouterr().out
    assert (
        main(
            ["check-data", "--torch", f"{factories}:torch_loader", "--ms", f"{factories}:ms_default_shuffle", "--json"]
        )
        == 1
    )
    # A random shuffle can, by chance, keep the first labels in order: then pixels differ first, and the
    # shuffle is still named (from the pipelines' settings).
    assert "shuffle" in [f["pitfall"] for f in json.loads(capsys.readouterr().out)["findings"]]


@pytest.mark.parametrize("spec", ["no_colon", "{f}:missing_factory", "/nonexistent/pipes.py:f"])
def test_r25_cli_usage_errors_exit_2(factories, spec):
    assert main(["check-data", "--torch", f"{factories}:torch_loader", "--ms", spec.format(f=factories)]) == 2
