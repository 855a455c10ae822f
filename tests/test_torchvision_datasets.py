"""R14/R25: torchvision datasets beyond MNIST/CIFAR10/ImageFolder (kb/data/torchvision_datasets.toml).

Unit tests pin each rewrite; the differential test converts a torch script that loads FashionMNIST
and SVHN through DataLoader, runs it with torch and the converted one with MindSpore on the same
files (written here, no download), and compares the batches.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

HEAD = "from torch.utils.data import DataLoader\nfrom torchvision import datasets, transforms\n"


def conv(src: str) -> str:
    res = convert_source(textwrap.dedent(src))
    assert res.error is None, res.error
    return res.code


def line_with(code: str, needle: str) -> str:
    hits = [line.strip() for line in code.splitlines() if line.strip().startswith(needle)]
    assert hits, f"{needle!r} not in:\n{code}"
    return hits[0]


def test_r14_cifar100_reads_the_binary_release_with_fine_labels_and_the_loaders_shuffle():
    code = conv(HEAD + "c = datasets.CIFAR100(root, train=flag)\nloader = DataLoader(c, batch_size=4, shuffle=True)\n")
    assert line_with(code, "c =") == (
        "c = ds.Cifar100Dataset(str(root) + '/cifar-100-binary', usage=('train' if flag else 'test'), shuffle=True)"
        ".project(['image', 'fine_label']).rename(['fine_label'], ['label'])"
        ".map(operations=[vision.ToPIL()], input_columns='image')"
        ".map(operations=transforms.TypeCast(ms.int32), input_columns='label')"
    )
    assert line_with(code, "loader =") == "loader = c.batch(4, drop_remainder=False)"


@pytest.mark.parametrize(
    "call, reader",
    [
        (
            "datasets.FashionMNIST('d', train=False)",
            "ds.FashionMnistDataset('d/FashionMNIST/raw', usage='test'",
        ),
        ("datasets.KMNIST('d')", "ds.KMnistDataset('d/KMNIST/raw', usage='train'"),
        ("datasets.SVHN('d', split='extra')", "ds.SVHNDataset('d', usage='extra'"),
        (
            "datasets.Flowers102('d', split='val')",
            "ds.Flowers102Dataset('d/flowers-102', task='Classification', usage='valid', decode=False",
        ),
        ("datasets.FakeData(size=8, num_classes=3)", "ds.GeneratorDataset(FakeData(8, (3, 224, 224), 3, 0)"),
    ],
)
def test_r14_torchvision_datasets_read_torchvision_folders(call, reader):
    assert line_with(conv(HEAD + f"d = {call}\n"), "d =").startswith(f"d = {reader}")


@pytest.mark.parametrize(
    "call, why",
    [
        ("datasets.SVHN('d', split='val')", "split='val'"),  # SVHN has no validation split
        ("datasets.SVHN('d', split=name)", "split=name"),  # MindSpore checks usage when the reader is built
        ("datasets.CocoDetection('imgs', 'ann.json')", "mindspore.dataset.CocoDataset"),
        ("datasets.VOCSegmentation('d', year=y)", "literal year"),
        ("datasets.VOCDetection('d', download=True)", "download=True"),  # no fetch_dataset release for VOC
        ("datasets.VOCSegmentation('d', transforms=both)", "transforms=..."),
    ],
)
def test_r14_dataset_calls_without_a_reader_form_are_marked(call, why):
    code = conv(HEAD + f"d = {call}\n")
    mark = line_with(code, "# torch2ms: not converted — torchvision.datasets.")
    assert why in mark and line_with(code, "d =") == f"d = {call}"


def test_r14_voc_segmentation_reads_torchvisions_folder_and_keeps_the_mask_mode():
    code = conv(
        HEAD + "s = datasets.VOCSegmentation(root, year='2011', image_set='val', target_transform=t)\n"
        "loader = DataLoader(s, batch_size=2, shuffle=True)\n"
    )
    assert line_with(code, "s =") == (
        "s = ds.VOCDataset(str(root) + '/TrainVal/VOCdevkit/VOC2011', task='Segmentation', usage='val', "
        "decode=False, shuffle=True).map(operations=[vision.Decode(to_pil=True)], input_columns='image')"
        ".map(operations=[open_image, t], input_columns='target')"
    )


@pytest.mark.parametrize(
    "call, source",
    [
        ("datasets.VOCDetection(r, image_set='val', target_transform=enc)", "VOCDetection(r, '2012', 'val', enc)"),
        ("datasets.CocoDetection('i', 'a.json', target_transform=enc)", "CocoDetection('i', 'a.json', enc)"),
        ("datasets.CocoCaptions(root='i', annFile='c.json')", "CocoCaptions('i', 'c.json', None)"),
    ],
)
def test_r14_voc_and_coco_annotations_come_from_runtime_sources_as_torchvision_parses_them(call, source):
    assert line_with(conv(HEAD + f"d = {call}\n"), "d =").startswith(
        f"d = ds.GeneratorDataset({source}, column_names=['image', 'target'], shuffle=False)"
        ".map(operations=[vision.Decode(to_pil=True)], input_columns='image')"
    )


# ---- differential: the converted loaders against torchvision's (R25) ------------------------------

TORCH_LOADERS = """
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

fashion = DataLoader(datasets.FashionMNIST({root!r}, train=False, transform=transforms.ToTensor()), batch_size=2)
svhn = DataLoader(
    datasets.SVHN({root!r}, split='test', transform=transforms.Compose([transforms.Resize(16), transforms.ToTensor()])),
    batch_size=3,
    drop_last=True,
)
"""


def _write_files(root) -> None:
    """5 FashionMNIST images (idx files) and 7 SVHN test images (a .mat file, label 10 for digit 0)."""
    import scipy.io

    raw = root / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(3)
    header = bytes([0, 0, 8, 3, 0, 0, 0, 5, 0, 0, 0, 28, 0, 0, 0, 28])
    pixels = rng.integers(0, 256, 5 * 28 * 28, np.uint8).tobytes()
    for part in ("train", "t10k"):  # torchvision wants both parts present
        (raw / f"{part}-images-idx3-ubyte").write_bytes(header + pixels)
        (raw / f"{part}-labels-idx1-ubyte").write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 5, 9, 0, 4, 7, 2]))
    images = rng.integers(0, 256, (32, 32, 3, 7), np.uint8)
    labels = np.array([[10], [1], [5], [10], [3], [9], [2]], np.uint8)
    scipy.io.savemat(root / "test_32x32.mat", {"X": images, "y": labels})


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        sys.modules.pop(name, None)
    return module


@pytest.mark.differential
def test_r25_converted_fashionmnist_and_svhn_loaders_give_torchvisions_batches(tmp_path, monkeypatch):
    torchvision = require_module("torchvision")
    require_module("mindspore")
    require_module("scipy")
    _write_files(tmp_path)
    # torchvision checks the md5 of the real SVHN release; these files are written here
    monkeypatch.setattr(torchvision.datasets.SVHN, "_check_integrity", lambda self: True)
    source = TORCH_LOADERS.format(root=str(tmp_path))
    (tmp_path / "torch_loaders.py").write_text(source)
    (tmp_path / "ms_loaders.py").write_text(conv(source))
    tmod = _load(tmp_path / "torch_loaders.py", "t2m_torch_tv_loaders")
    mmod = _load(tmp_path / "ms_loaders.py", "t2m_ms_tv_loaders")
    for name, n_batches in (("fashion", 3), ("svhn", 2)):
        t_batches = [tuple(v.numpy() for v in b) for b in getattr(tmod, name)]
        m_batches = [tuple(v.asnumpy() for v in b) for b in getattr(mmod, name).create_tuple_iterator()]
        assert len(t_batches) == len(m_batches) == n_batches, name
        for (t_img, t_lab), (m_img, m_lab) in zip(t_batches, m_batches):
            assert t_img.shape == m_img.shape
            np.testing.assert_allclose(m_img, t_img, atol=1e-6)
            np.testing.assert_array_equal(m_lab, t_lab)  # digit 0: label 0 on both sides
            assert m_lab.dtype == np.int32


VOC_LOADER = """
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

voc = DataLoader(
    datasets.VOCSegmentation({root!r}, transform=transforms.ToTensor(), target_transform=transforms.PILToTensor()),
    batch_size=2,
)
"""


def _write_voc(root) -> None:
    """3 VOC2012 images with palette masks (class indices 0..3), torchvision's folder layout."""
    from PIL import Image

    base = root / "VOCdevkit" / "VOC2012"
    for sub in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (base / sub).mkdir(parents=True)
    rng = np.random.default_rng(5)
    names = ["2007_000032", "2007_000039", "2008_000001"]
    for name in names:
        Image.fromarray(rng.integers(0, 256, (10, 12, 3), np.uint8)).save(base / "JPEGImages" / f"{name}.jpg")
        mask = Image.fromarray(rng.integers(0, 4, (10, 12), np.uint8), mode="P")
        mask.putpalette([0, 0, 0, 128, 0, 0, 0, 128, 0, 128, 128, 0] + [0] * 756)
        mask.save(base / "SegmentationClass" / f"{name}.png")
    (base / "ImageSets" / "Segmentation" / "train.txt").write_text("\n".join(names) + "\n")


@pytest.mark.differential
def test_r25_converted_voc_segmentation_loader_gives_torchvisions_batches(tmp_path):
    require_module("torchvision")
    require_module("mindspore")
    _write_voc(tmp_path)
    source = VOC_LOADER.format(root=str(tmp_path))
    (tmp_path / "torch_voc.py").write_text(source)
    (tmp_path / "ms_voc.py").write_text(conv(source))
    t_batches = [tuple(v.numpy() for v in b) for b in _load(tmp_path / "torch_voc.py", "t2m_torch_voc").voc]
    m_loader = _load(tmp_path / "ms_voc.py", "t2m_ms_voc").voc
    m_batches = [tuple(v.asnumpy() for v in b) for b in m_loader.create_tuple_iterator()]
    assert len(t_batches) == len(m_batches) == 2
    for (t_img, t_mask), (m_img, m_mask) in zip(t_batches, m_batches):
        np.testing.assert_allclose(m_img, t_img, atol=1e-6)
        np.testing.assert_array_equal(m_mask, t_mask)  # class indices, not palette colours
        assert int(t_mask.max()) == 3
