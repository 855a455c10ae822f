"""Helpers shared by tests that run a generated or converted script as a module, and that give it MNIST
files to read (torchvision's idx format, written here, never downloaded)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np

IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def load_script(path: Path, name: str) -> Any:
    """Run ``path`` as module ``name``, left registered: GRAPH_MODE finds construct's source through the
    module, also when a test compiles after the import (names are unique per test)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def mnist_idx(name: str, count: int, rng: np.random.Generator) -> bytes:
    """One MNIST idx file (images 28x28 uint8, or labels 0-9) of ``count`` items, as torchvision reads it."""
    if "images" in name:
        head = bytes([0, 0, 8, 3]) + np.array([count, 28, 28], ">u4").tobytes()
        return head + rng.integers(0, 256, count * 28 * 28, np.uint8).tobytes()
    return bytes([0, 0, 8, 1]) + np.array([count], ">u4").tobytes() + rng.integers(0, 10, count, np.uint8).tobytes()


def write_mnist_raw(root: Path, n: int = 6) -> None:
    """n train and n-1 test images as torchvision's unpacked idx files in root/MNIST/raw."""
    rng = np.random.default_rng(5)
    raw_dir = root / "MNIST" / "raw"
    raw_dir.mkdir(parents=True, exist_ok=True)
    for name in IDX_NAMES:
        (raw_dir / name).write_bytes(mnist_idx(name, n if name.startswith("train") else n - 1, rng))
