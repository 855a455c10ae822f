"""``--fake-data``: small generated stand-ins for datasets that need a download or files the user lacks.

numpy only, loaded by both sides, so the torch dataset and its MindSpore counterpart serve the same
pixels and labels: image i of a class carries a brighter patch whose place depends on the class, over
noise (the model can learn it, so the loss moves, but not to zero in a few steps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TRAIN_SIZE, TEST_SIZE = 512, 256  # a test split at least one usual batch (VAE's test view()s 128)


@dataclass(frozen=True)
class FakeSpec:
    height: int
    width: int
    channels: int  # 1: a grey PIL image ('L'), 3: 'RGB'
    classes: int


SPECS = {
    "MNIST": FakeSpec(28, 28, 1, 10),
    "FashionMNIST": FakeSpec(28, 28, 1, 10),
    "KMNIST": FakeSpec(28, 28, 1, 10),
    "EMNIST": FakeSpec(28, 28, 1, 10),
    "CIFAR10": FakeSpec(32, 32, 3, 10),
    "CIFAR100": FakeSpec(32, 32, 3, 100),
    "SVHN": FakeSpec(32, 32, 3, 10),
    "ImageFolder": FakeSpec(32, 32, 3, 3),
    "FakeData": FakeSpec(224, 224, 3, 10),
}


def fake_arrays(spec: FakeSpec, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n HWC uint8 images and their int64 labels, the same for the same (spec, n, seed)."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n, dtype=np.int64) % spec.classes
    rng.shuffle(labels)
    images = rng.integers(0, 140, (n, spec.height, spec.width, spec.channels), dtype=np.int64)
    ph, pw = max(1, spec.height // 4), max(1, spec.width // 4)
    cells = max(1, (spec.height // ph) * (spec.width // pw))
    for i, c in enumerate(labels):
        cell = int(c) % cells
        r, q = divmod(cell, spec.width // pw)
        images[i, r * ph : (r + 1) * ph, q * pw : (q + 1) * pw] += 60 + rng.integers(0, 56)
    return images.astype(np.uint8), labels


def split_seed(name: str, train: bool, seed: int) -> int:
    """Distinct but reproducible content per dataset and split."""
    return seed * 1000 + sum(map(ord, name)) + (0 if train else 500)


def sized(spec: FakeSpec, image_size: tuple[int, int] | None, num_classes: int | None) -> FakeSpec:
    """torchvision FakeData's own size/classes arguments override the defaults."""
    h, w = (image_size[-2], image_size[-1]) if image_size else (spec.height, spec.width)
    c = image_size[0] if image_size and len(image_size) == 3 else spec.channels
    return FakeSpec(h, w, c, num_classes or spec.classes)
