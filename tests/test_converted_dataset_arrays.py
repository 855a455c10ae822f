"""R13 torchvision datasets' whole-set ``.data`` / ``.targets`` on the converted pipeline: real torchvision
and the converted script read the same generated files (MNIST's idx files; CIFAR10's Python and binary
releases) and give the same arrays, shapes and dtypes."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from requires_support import require_module
from script_support import load_script, write_mnist_raw

from torch2ms.convert import convert_source

TORCH_ARRAYS = """
import numpy as np
from torchvision import datasets

train = datasets.{cls}({root!r}, train=True, download=False)
test = datasets.{cls}({root!r}, train=False)
images = train.data.unsqueeze(1).clone()
labels = np.array(test.targets.clone())
"""


def _compare(tmp_path: Path, source: str, name: str) -> tuple[object, object]:
    (tmp_path / f"torch_{name}.py").write_text(source)
    converted = convert_source(source)
    assert converted.error is None and "with_torchvision_arrays(" in converted.code
    (tmp_path / f"ms_{name}.py").write_text(converted.code)
    return load_script(tmp_path / f"torch_{name}.py", f"t2m_t_{name}"), load_script(
        tmp_path / f"ms_{name}.py", f"t2m_m_{name}"
    )


@pytest.mark.differential
def test_r13_converted_mnist_data_and_targets_equal_torchvisions(tmp_path):
    require_module("torchvision")
    ms = require_module("mindspore")
    write_mnist_raw(tmp_path / "data", n=7)
    tmod, mmod = _compare(tmp_path, TORCH_ARRAYS.format(cls="MNIST", root=str(tmp_path / "data")), "mnist")
    for attr in ("data", "targets"):
        for split in ("train", "test"):
            t_value, m_value = getattr(getattr(tmod, split), attr), getattr(getattr(mmod, split), attr)
            assert isinstance(m_value, ms.Tensor)
            assert m_value.shape == tuple(t_value.shape) and str(t_value.dtype).endswith(str(m_value.dtype).lower())
            np.testing.assert_array_equal(m_value.asnumpy(), t_value.numpy())
    np.testing.assert_array_equal(mmod.images.asnumpy(), tmod.images.numpy())  # (N, 1, 28, 28), via .clone()
    np.testing.assert_array_equal(mmod.labels, tmod.labels)
    batches = list(mmod.train.create_tuple_iterator())  # still a MindSpore pipeline
    assert len(batches) == 7


def _write_cifar10(root: Path, per_file: int = 3) -> None:
    """torchvision's Python release and MindSpore's binary release of the same images and labels."""
    rng = np.random.default_rng(4)
    py_dir, bin_dir = root / "cifar-10-batches-py", root / "cifar-10-batches-bin"
    py_dir.mkdir(parents=True)
    bin_dir.mkdir(parents=True)
    (py_dir / "batches.meta").write_bytes(pickle.dumps({"label_names": [str(i) for i in range(10)]}))
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, (per_file, 3072), np.uint8)
        labels = rng.integers(0, 10, per_file).tolist()
        (py_dir / name).write_bytes(pickle.dumps({"data": data, "labels": labels}))
        (bin_dir / f"{name}.bin").write_bytes(b"".join(bytes([k]) + row.tobytes() for k, row in zip(labels, data)))


TORCH_CIFAR = """
from torchvision import datasets

train = datasets.CIFAR10({root!r}, train=True)
test = datasets.CIFAR10({root!r}, train=False)
first_pixels, last_labels = train.data[0], test.targets[-2:]
"""


@pytest.mark.differential
def test_r13_converted_cifar10_data_and_targets_equal_torchvisions(tmp_path, monkeypatch):
    torchvision = require_module("torchvision")
    require_module("mindspore")
    _write_cifar10(tmp_path / "data")
    # the generated files are not the release torchvision's md5s name
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "_check_integrity", lambda self: True)
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda *a, **k: True)
    tmod, mmod = _compare(tmp_path, TORCH_CIFAR.format(root=str(tmp_path / "data")), "cifar")
    for split in ("train", "test"):
        t_set, m_set = getattr(tmod, split), getattr(mmod, split)
        assert isinstance(m_set.data, np.ndarray) and m_set.data.dtype == t_set.data.dtype
        np.testing.assert_array_equal(m_set.data, t_set.data)  # (N, 32, 32, 3)
        assert m_set.targets == t_set.targets and isinstance(m_set.targets, list)
    np.testing.assert_array_equal(mmod.first_pixels, tmod.first_pixels)
    assert mmod.last_labels == tmod.last_labels


def test_r13_dataset_arrays_only_where_the_script_reads_them():
    source = (
        "import torchvision\nfrom torchvision import datasets\n"
        "a = datasets.MNIST('d')\nb = datasets.MNIST('d', train=False)\nc = torchvision.datasets.KMNIST('d')\n"
        "class Pairs:\n    def __init__(self):\n        self.mnist = datasets.FashionMNIST('d')\n"
        "        self.images = self.mnist.data\n"
        "n = len(a.targets) + len(datasets.CIFAR10('d').data)\n"
    )
    lines = {line.split(" = ")[0].strip(): line for line in convert_source(source).code.splitlines() if " = " in line}
    assert "with_torchvision_arrays(" in lines["a"] and "with_torchvision_arrays(" in lines["self.mnist"]
    assert "with_torchvision_arrays(" not in lines["b"] and "with_torchvision_arrays(" not in lines["c"]
    assert "with_torchvision_arrays(ds.Cifar10Dataset(" in lines["n"]
