"""torchvision datasets' whole-set attributes (``.data``, ``.targets``; the MNIST family's old ``.train_data``,
``.test_data``, ``.train_labels``, ``.test_labels``) on the converted MindSpore pipeline.

torchvision's MNIST family and CIFAR keep every image and label in memory, and scripts read them
(``mnist.data.unsqueeze(1)``, ``np.array(mnist.targets)``); a MindSpore reader only streams samples.
``with_torchvision_arrays(pipeline)`` gives the pipeline object both attributes, read on first use from
the files its reader reads, with torchvision's shapes and types: MNIST, FashionMNIST, KMNIST: ``data``
a uint8 Tensor (N, 28, 28), ``targets`` an int64 Tensor (N,); CIFAR10/100: ``data`` a uint8 numpy array
(N, 32, 32, 3), ``targets`` a list of ints (CIFAR100: the fine labels). Needs MindSpore and numpy only.
"""

from __future__ import annotations

import os
from typing import Any

import mindspore as ms
import numpy as np

__all__ = ["with_torchvision_arrays"]

_IDX_PREFIX = {"train": ("train",), "test": ("t10k",), "all": ("train", "t10k")}
_CIFAR10_FILES = {
    "train": tuple(f"data_batch_{i}.bin" for i in range(1, 6)),
    "test": ("test_batch.bin",),
    "all": tuple(f"data_batch_{i}.bin" for i in range(1, 6)) + ("test_batch.bin",),
}
_CIFAR100_FILES = {"train": ("train.bin",), "test": ("test.bin",), "all": ("train.bin", "test.bin")}
_IDX_READERS = ("MnistDataset", "FashionMnistDataset", "KMnistDataset")
_SUBCLASSES: dict[type, type] = {}


def with_torchvision_arrays(pipeline: Any) -> Any:
    """The pipeline itself, its class swapped for a subclass with lazy ``data`` / ``targets`` properties
    (MindSpore copies a pipeline with its class and ``__dict__``, so copies keep them)."""
    cls = type(pipeline)
    if cls not in _SUBCLASSES:
        members = {"data": property(_data), "targets": property(_targets), "__module__": cls.__module__}
        # torchvision's MNIST family still answers its old names (the tutorials of its first years read them)
        members.update({name: property(_data) for name in ("train_data", "test_data")})
        members.update({name: property(_targets) for name in ("train_labels", "test_labels")})
        _SUBCLASSES[cls] = type(cls.__name__, (cls,), members)
    pipeline.__class__ = _SUBCLASSES[cls]
    return pipeline


def _data(pipeline: Any) -> Any:
    return _arrays(pipeline)[0]


def _targets(pipeline: Any) -> Any:
    return _arrays(pipeline)[1]


def _arrays(pipeline: Any) -> tuple[Any, Any]:
    cached = pipeline.__dict__.get("_torch2ms_arrays")
    if cached is None:
        reader = _source_reader(pipeline)
        # a reader that holds its arrays itself (a generated stand-in) keeps them under the same name
        cached = reader.__dict__.get("_torch2ms_arrays") or _read_source(reader)
        pipeline.__dict__["_torch2ms_arrays"] = cached
    return cached


def _source_reader(pipeline: Any) -> Any:
    node = pipeline
    while getattr(node, "children", None):
        node = node.children[0]
    return node


def _read_source(reader: Any) -> tuple[Any, Any]:
    name, folder, usage = type(reader).__name__, reader.dataset_dir, reader.usage
    if name in _IDX_READERS:
        images = np.concatenate([_idx(folder, f"{p}-images-idx3-ubyte") for p in _IDX_PREFIX[usage]])
        labels = np.concatenate([_idx(folder, f"{p}-labels-idx1-ubyte") for p in _IDX_PREFIX[usage]])
        return ms.Tensor(images), ms.Tensor(labels.astype(np.int64))
    if name == "Cifar10Dataset":
        return _cifar(folder, _CIFAR10_FILES[usage], label_bytes=1)
    if name == "Cifar100Dataset":
        return _cifar(folder, _CIFAR100_FILES[usage], label_bytes=2)
    raise AttributeError(f"{name} has no torchvision .data / .targets here (MNIST, FashionMNIST, KMNIST, CIFAR only)")


def _idx(folder: str, file_name: str) -> np.ndarray:
    """An idx file as torchvision reads it: big-endian dims after a 4-byte magic, then the uint8 values."""
    with open(os.path.join(folder, file_name), "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw, ">u4", count=ndim, offset=4)
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(tuple(int(d) for d in dims))


def _cifar(folder: str, files: tuple[str, ...], label_bytes: int) -> tuple[np.ndarray, list[int]]:
    """CIFAR's binary release: per record the label byte(s) (CIFAR100: coarse, fine), then CHW pixels."""
    records = np.concatenate(
        [np.fromfile(os.path.join(folder, f), np.uint8).reshape(-1, label_bytes + 3072) for f in files]
    )
    images = records[:, label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), records[:, label_bytes - 1].astype(int).tolist()
