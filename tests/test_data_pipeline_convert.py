"""R14–R16, R25: `convert` turns torch data pipelines into idiomatic mindspore.dataset pipelines.

Unit tests pin each rewrite (before → after); the pitfall tests fail if a converter regression brings
back a silent trap (GeneratorDataset's shuffle default, drop_last, Decode, Normalize layout, label
dtype). The differential tests convert a torch pipeline module, run the original with torch and the
converted one with MindSpore on the same files, and compare them with check-data (R25).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from requires_support import require_module
from script_support import load_script

from torch2ms.convert import convert_source

HEAD = "import torch\nfrom torch.utils.data import DataLoader, Dataset, TensorDataset\n"
VISION = "from torchvision import datasets, transforms\n"

PAIRS = (
    HEAD
    + """

class Pairs(Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        image = self.x[idx]
        label = self.y[idx]
        return image, label
"""
)


def conv(src: str):
    res = convert_source(textwrap.dedent(src))
    assert res.error is None, res.error
    return res


def line_with(code: str, needle: str) -> str:
    hits = [line.strip() for line in code.splitlines() if line.strip().startswith(needle)]
    assert hits, f"{needle!r} not in:\n{code}"
    return hits[0]


# ---- unit: before → after ----------------------------------------------------------------------


def test_r14_dataset_subclass_becomes_plain_generator_source():
    code = conv(PAIRS).code
    assert "class Pairs:" in code and "Dataset" not in code.split("class Pairs")[1].split(":")[0]
    body = code.split("def __getitem__(self, idx):")[1]
    # GeneratorDataset hands numpy.int64 indices to __getitem__; MindSpore Tensors reject them.
    assert body.lstrip().startswith("idx = int(idx)")


def test_r14_dataloader_becomes_generator_dataset_then_batch():
    code = conv(
        PAIRS + "\nloader = DataLoader(Pairs(a, b), batch_size=4, shuffle=True, num_workers=2, drop_last=True)\n"
    ).code
    assert line_with(code, "loader =") == (
        "loader = ds.GeneratorDataset(Pairs(a, b), column_names=['image', 'label'], shuffle=True, "
        "num_parallel_workers=2).batch(4, drop_remainder=True)"
    )
    assert "import mindspore.dataset as ds" in code and "DataLoader" not in code


def test_r14_columns_follow_getitem_return_arity():
    three = (
        HEAD
        + """
class Three(Dataset):
    def __len__(self):
        return 3

    def __getitem__(self, i):
        return self.a[i], self.b[i] * 2, self.c[i]

loader = DataLoader(Three(), batch_size=2)
"""
    )
    assert "column_names=['column_0', 'column_1', 'column_2']" in conv(three).code


def test_r14_unknown_dataset_columns_are_assumed_and_marked_for_review():
    res = conv(HEAD + "from mydata import Faces\nloader = DataLoader(Faces('x'), batch_size=2)\n")
    assert "column_names=['data', 'label']" in res.code
    assert "# torch2ms: review — torch.utils.data.DataLoader: column names assumed" in res.code
    assert any(c.api == "torch.utils.data.DataLoader" and c.action == "review" for c in res.changes)


def test_r14_tensor_dataset_becomes_numpy_slices():
    code = conv(
        HEAD + "ds_ = TensorDataset(x, y)\nloader = DataLoader(ds_, batch_size=3)\n"
        "inline = DataLoader(TensorDataset(x, y), batch_size=3)\n"
    ).code
    assert line_with(code, "loader =") == (
        "loader = ds.NumpySlicesDataset(tuple(t.asnumpy() for t in ds_.tensors), column_names=['data', 'label'], "
        "shuffle=False).batch(3, drop_remainder=False)"
    )
    assert line_with(code, "inline =") == (
        "inline = ds.NumpySlicesDataset((x.asnumpy(), y.asnumpy()), column_names=['data', 'label'], "
        "shuffle=False).batch(3, drop_remainder=False)"
    )


def test_r14_loops_use_tuple_iterator_and_len_is_dataset_size():
    src = (
        PAIRS
        + """
train_loader = DataLoader(Pairs(a, b), batch_size=4)


def run(model, loader):
    for i, (x, y) in enumerate(loader):
        model(x)
    return len(loader)


def main(model):
    steps = len(train_loader)
    for x, y in train_loader:
        model(x)
    run(model, train_loader)
"""
    )
    code = conv(src).code
    assert "for x, y in train_loader.create_tuple_iterator():" in code
    # The loader passed to run() is a MindSpore dataset there too.
    assert "for i, (x, y) in enumerate(loader.create_tuple_iterator()):" in code
    assert "return loader.get_dataset_size()" in code
    assert "steps = train_loader.get_dataset_size()" in code


def test_r14_collate_fn_keeps_the_torch_style_loader():
    code = conv(
        PAIRS + "loader = DataLoader(Pairs(a, b), batch_size=2, collate_fn=my_collate)\nfor x in loader:\n    pass\n"
    ).code
    assert (
        line_with(code, "loader =")
        == "loader = ds.dataloader.DataLoader(Pairs(a, b), batch_size=2, collate_fn=my_collate)"
    )
    assert "create_tuple_iterator" not in code  # the torch-style loader iterates like torch's


def test_r14_imagefolder_pipeline_decode_map_batch_int32():
    src = (
        HEAD
        + VISION
        + """
tf = transforms.Compose([transforms.Resize(40), transforms.CenterCrop(32), transforms.ToTensor(),
                         transforms.Normalize([0.5, 0.5, 0.5], [0.2, 0.2, 0.2])])
train_set = datasets.ImageFolder(root, transform=tf)
loader = DataLoader(train_set, batch_size=4, shuffle=True, num_workers=4)
"""
    )
    code = conv(src).code
    assert line_with(code, "train_set =") == (
        "train_set = ds.ImageFolderDataset(root, shuffle=True, num_parallel_workers=4)"
        ".map(operations=[vision.Decode(to_pil=True), tf], input_columns='image')"
        ".map(operations=transforms.TypeCast(ms.int32), input_columns='label')"
    )
    # shuffle and workers moved into the dataset: the loader only batches.
    assert line_with(code, "loader =") == "loader = train_set.batch(4, drop_remainder=False)"


def test_r14_inline_compose_is_spliced_after_decode():
    src = (
        HEAD
        + VISION
        + (
            "loader = DataLoader(datasets.ImageFolder(root, transforms.Compose([transforms.Resize(40), "
            "transforms.ToTensor()])), batch_size=8)\n"
        )
    )
    assert line_with(conv(src).code, "loader =") == (
        "loader = ds.ImageFolderDataset(root, shuffle=False).map(operations=[vision.Decode(to_pil=True), "
        "vision.Resize(40), vision.ToTensor()], input_columns='image').map(operations=transforms.TypeCast(ms.int32), "
        "input_columns='label').batch(8, drop_remainder=False)"
    )


def test_r14_shared_torchvision_dataset_shuffles_per_loader():
    src = (
        HEAD
        + VISION
        + (
            "data = datasets.ImageFolder(root)\na = DataLoader(data, batch_size=2, shuffle=True)\n"
            "b = DataLoader(data, batch_size=2)\n"
        )
    )
    code = conv(src).code
    assert "ImageFolderDataset(root, shuffle=False)" in code
    assert line_with(code, "a =") == "a = data.shuffle(data.get_dataset_size()).batch(2, drop_remainder=False)"
    assert line_with(code, "b =") == "b = data.batch(2, drop_remainder=False)"


def test_r14_mnist_and_cifar10_read_torchvision_folders():
    src = (
        HEAD
        + VISION
        + (
            "m = datasets.MNIST('data', train=False, transform=transforms.ToTensor())\n"
            "c = datasets.CIFAR10(root, train=flag)\n"
        )
    )
    code = conv(src).code
    assert line_with(code, "m =") == (
        "m = ds.MnistDataset('data/MNIST/raw', usage='test', shuffle=False).map(operations=[vision.ToPIL(), "
        "vision.ToTensor()], input_columns='image').map(operations=transforms.TypeCast(ms.int32), input_columns='label')"
    )
    assert (
        "ds.Cifar10Dataset(str(root) + '/cifar-10-batches-bin', usage=('train' if flag else 'test'), shuffle=False)"
        in code
    )


def test_r14_download_and_datasets_without_a_reader_are_marked_not_dropped():
    res = conv(
        HEAD
        + VISION
        + "m = datasets.VOCDetection('data', download=True)\nv = datasets.CocoDetection('imgs', 'a.json')\n"
    )
    assert "# torch2ms: not converted — torchvision.datasets.VOCDetection: download=True" in res.code
    assert "# torch2ms: not converted — torchvision.datasets.CocoDetection" in res.code
    assert {c.api for c in res.changes if c.action == "not-converted"} >= {
        "torchvision.datasets.VOCDetection",
        "torchvision.datasets.CocoDetection",
    }


def test_r14_mnist_download_fetches_the_files_then_reads_them():
    code = conv(
        HEAD
        + VISION
        + "m = datasets.MNIST('data', download=True)\nc = datasets.CIFAR10(root, train=False, download=args.download)\n"
    ).code
    assert "not converted" not in code
    assert "from torch2ms.runtime import fetch_dataset" in code
    assert line_with(code, "m =").startswith(
        "m = ds.MnistDataset(str(fetch_dataset('MNIST', 'data')) + '/MNIST/raw', usage='train', shuffle=False)"
    )
    assert line_with(code, "c =").startswith(
        "c = ds.Cifar10Dataset(str(fetch_dataset('CIFAR10', root, download=args.download)) + '/cifar-10-batches-bin'"
    )


@pytest.mark.parametrize(
    "torch_call, ms_call",
    [
        ("transforms.RandomHorizontalFlip()", "vision.RandomHorizontalFlip()"),
        ("transforms.RandomHorizontalFlip(p=0.3)", "vision.RandomHorizontalFlip(prob=0.3)"),
        (
            "transforms.RandomCrop(32, padding=4, padding_mode='reflect')",
            "vision.RandomCrop(32, padding=4, padding_mode=vision.Border.REFLECT)",
        ),
        ("transforms.RandomResizedCrop(224, scale=(0.5, 1.0))", "vision.RandomResizedCrop(224, scale=(0.5, 1.0))"),
        (
            "transforms.Resize(64, interpolation=transforms.InterpolationMode.BICUBIC)",
            "vision.Resize(64, vision.Inter.BICUBIC)",
        ),
        ("transforms.Resize((32, 32), interpolation=3)", "vision.Resize((32, 32), vision.Inter.BICUBIC)"),
        ("transforms.CenterCrop(224)", "vision.CenterCrop(224)"),
    ],
)
def test_r14_transforms_map_to_vision_ops(torch_call, ms_call):
    assert line_with(conv(VISION + f"t = {torch_call}\n").code, "t =") == f"t = {ms_call}"


# ---- pitfalls: these fail if the converter regresses ---------------------------------------------


def test_r16_shuffle_is_always_written_because_generator_dataset_shuffles_by_default():
    code = conv(PAIRS + "loader = DataLoader(Pairs(a, b), batch_size=4)\n").code
    assert "shuffle=False" in line_with(code, "loader =")  # torch's default; GeneratorDataset's is to shuffle


@pytest.mark.parametrize(
    "arg, expected",
    [
        ("", "drop_remainder=False"),
        (", drop_last=True", "drop_remainder=True"),
        (", drop_last=flag", "drop_remainder=flag"),
    ],
)
def test_r16_drop_last_becomes_drop_remainder(arg, expected):
    line = line_with(conv(PAIRS + f"loader = DataLoader(Pairs(a, b), batch_size=4{arg})\n").code, "loader =")
    assert line.endswith(f".batch(4, {expected})")


@pytest.mark.parametrize(
    "arg, expected",
    [
        ("num_workers=0", None),
        ("num_workers=8", "num_parallel_workers=8"),
        ("num_workers=args.workers", "num_parallel_workers=max(1, args.workers)"),
    ],
)
def test_r14_num_workers_become_num_parallel_workers(arg, expected):
    line = line_with(conv(PAIRS + f"loader = DataLoader(Pairs(a, b), batch_size=4, {arg})\n").code, "loader =")
    if expected is None:
        assert "num_parallel_workers" not in line  # 0 = torch's main process; MindSpore needs >= 1
    else:
        assert expected in line


def test_r14_decode_to_pil_comes_first_and_labels_are_int32():
    code = conv(
        HEAD + VISION + "d = datasets.ImageFolder(root, transforms.Compose([transforms.Resize(8), "
        "transforms.ToTensor()]))\n"
    ).code
    ops = line_with(code, "d =").split("operations=[", 1)[1]
    assert ops.startswith("vision.Decode(to_pil=True), vision.Resize(8)")  # PIL decode first: torchvision's path
    assert ".map(operations=transforms.TypeCast(ms.int32), input_columns='label')" in code
    assert "shuffle=False" in line_with(code, "d =")  # ImageFolderDataset also shuffles by default


def test_r15_normalize_after_totensor_is_chw():
    code = conv(VISION + "t = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))])\n").code
    assert "vision.Normalize((0.5,), (0.5,), is_hwc=False)" in code
    assert code.index("vision.ToTensor()") < code.index("vision.Normalize")


def test_r11_loop_rewrite_composes_with_the_training_pass():
    src = (
        PAIRS
        + """
import torch.nn as nn


def train(model, x, y):
    loader = DataLoader(Pairs(x, y), batch_size=8, shuffle=False)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
"""
    )
    code = conv(src).code
    assert "for images, labels in loader.create_tuple_iterator():" in code
    assert "value_and_grad" in code and "loss.backward()\n" not in code


# ---- differential: converted pipelines against the torch originals (R25) ------------------------

TORCH_IMAGES = """
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

ROOT = {root!r}
tf = transforms.Compose([
    transforms.Resize(40),
    transforms.CenterCrop(32),
    transforms.ToTensor(),
    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])
train_set = datasets.ImageFolder(ROOT, transform=tf)
loader = DataLoader(train_set, batch_size={bs}, shuffle=False, drop_last={drop})
"""

TORCH_NUMPY = """
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset


class Points(Dataset):
    def __init__(self, n):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((n, 5)).astype(np.float32)
        self.y = rng.integers(0, 3, n).astype(np.int64)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        features = self.x[idx] * 2.0
        target = self.y[idx]
        return features, target


loader = DataLoader(Points(11), batch_size=4, shuffle=False)
shuffled = DataLoader(Points(11), batch_size=4, shuffle=True, drop_last=True)
points = Points(11)
tensors = DataLoader(TensorDataset(torch.from_numpy(points.x), torch.from_numpy(points.y)), batch_size=3)
"""


def _both(tmp_path, source: str, tag: str):
    """The torch module and its converted MindSpore twin, each imported from its own file."""
    torch_file, ms_file = tmp_path / f"torch_{tag}.py", tmp_path / f"ms_{tag}.py"
    torch_file.write_text(source)
    ms_file.write_text(conv(source).code)
    return load_script(torch_file, f"t2m_torch_{tag}"), load_script(ms_file, f"t2m_ms_{tag}")


@pytest.fixture(scope="module")
def image_root(tmp_path_factory):
    """3 classes × 4 RGB PNGs of varying sizes (44–70 × 40–66); class folders not in sorted order on disk."""
    from PIL import Image

    root = tmp_path_factory.mktemp("folder")
    rng = np.random.default_rng(1)
    for cls in ("zebra", "ant", "moth"):
        (root / cls).mkdir()
        for i in range(4):
            h, w = int(rng.integers(44, 71)), int(rng.integers(40, 67))
            Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(root / cls / f"{i}.png")
    return str(root)


@pytest.mark.differential
@pytest.mark.slow
@pytest.mark.parametrize("bs, drop, batches", [(4, False, 3), (5, True, 2)])
def test_r25_converted_imagefolder_pipeline_matches_torchvision(tmp_path, image_root, bs, drop, batches):
    require_module("torchvision")
    require_module("mindspore")
    from torch2ms.data import check_data

    tmod, mmod = _both(tmp_path, TORCH_IMAGES.format(root=image_root, bs=bs, drop=drop), f"img{bs}")
    rep = check_data(tmod.loader, mmod.loader, batches=batches)
    img, lab = rep.columns
    assert rep.torch.batches_per_epoch == rep.ms.batches_per_epoch == batches  # R16
    assert img.torch_shape == img.ms_shape == [bs, 3, 32, 32]  # R15: CHW after ToTensor
    assert img.d_mean < 1e-3 and img.d_std < 1e-3  # per-channel mean/std (R25)
    assert img.max_abs is not None and img.max_abs < 1e-3  # same pixels: PIL decode path
    assert lab.label_agreement == 1.0 and lab.ms_dtype == "int32"  # sorted class folders, int32 labels
    assert not [f.pitfall for f in rep.findings if f.level == "error"], rep.to_markdown()


@pytest.mark.differential
def test_r25_converted_dataset_subclass_gives_identical_batches(tmp_path):
    require_module("mindspore")
    tmod, mmod = _both(tmp_path, TORCH_NUMPY, "np")
    t_batches = [tuple(v.numpy() for v in b) for b in tmod.loader]
    m_batches = [tuple(v.asnumpy() for v in b) for b in mmod.loader.create_tuple_iterator()]
    assert len(t_batches) == len(m_batches) == mmod.loader.get_dataset_size() == 3
    for (tx, ty), (mx, my) in zip(t_batches, m_batches):
        np.testing.assert_array_equal(tx, mx)
        np.testing.assert_array_equal(ty, my)
        assert (tx.dtype, ty.dtype) == (mx.dtype, my.dtype)


def test_r14_torchvision_dataset_without_a_loader_converts_through_the_kb():
    code = conv(VISION + "d = datasets.ImageFolder('imgs', transform=transforms.ToTensor())\n").code
    assert line_with(code, "d =") == (
        "d = ds.ImageFolderDataset('imgs', shuffle=False).map(operations=[vision.Decode(to_pil=True), vision.ToTensor()], "
        "input_columns='image').map(operations=transforms.TypeCast(ms.int32), input_columns='label')"
    )


def test_r14_imagefolder_classes_come_from_class_indexing():
    src = (
        HEAD
        + VISION
        + (
            "train_set = datasets.ImageFolder(root)\nloader = DataLoader(train_set, batch_size=2)\n"
            "n = len(train_set.classes)\nm = train_set.class_to_idx\nk = loader.dataset.classes\n"
        )
    )
    code = conv(src).code
    assert line_with(code, "n =") == "n = len(list(train_set.get_class_indexing()))"
    assert line_with(code, "m =") == "m = train_set.get_class_indexing()"
    assert line_with(code, "k =") == "k = list(loader.get_class_indexing())"


@pytest.mark.differential
def test_r16_shuffled_loader_keeps_steps_per_epoch_and_samples(tmp_path):
    require_module("mindspore")
    tmod, mmod = _both(tmp_path, TORCH_NUMPY, "shuf")
    t_batches = [b[0].numpy() for b in tmod.shuffled]
    m_batches = [b[0].asnumpy() for b in mmod.shuffled.create_tuple_iterator()]
    assert len(t_batches) == len(m_batches) == 2  # 11 samples, batch 4, drop_last → drop_remainder
    assert all(len(b) == 4 for b in m_batches)
    rows = {tuple(r) for r in np.concatenate([tmod.points.x * 2.0])}
    assert {tuple(r) for r in np.concatenate(m_batches)} <= rows


@pytest.mark.differential
def test_r14_converted_tensor_dataset_loader_gives_identical_batches(tmp_path):
    require_module("mindspore")
    tmod, mmod = _both(tmp_path, TORCH_NUMPY, "tds")
    t_batches = [tuple(v.numpy() for v in b) for b in tmod.tensors]
    m_batches = [tuple(v.asnumpy() for v in b) for b in mmod.tensors.create_tuple_iterator()]
    assert len(t_batches) == len(m_batches) == 4
    for t, m in zip(t_batches, m_batches):
        for a, b in zip(t, m):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
