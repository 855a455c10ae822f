"""Dataset sources for converted torchvision datasets that MindSpore has no reader for.

Nothing from torch2ms is imported: a converted project can carry this file on its own.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FakeData"]


class FakeData:
    """torchvision.datasets.FakeData as a GeneratorDataset source: (HWC uint8 image, int64 label).

    torchvision draws each sample with torch's generator seeded by index + random_offset, which numpy
    cannot replay: the images differ, their distribution does not (N(0, 1) · 255 cast to uint8, which
    wraps as torch's byte() does), nor the labels' (uniform over num_classes).
    """

    def __init__(
        self, size: int = 1000, image_size: Any = (3, 224, 224), num_classes: int = 10, random_offset: int = 0
    ) -> None:
        self.size, self.image_size = int(size), tuple(image_size)
        self.num_classes, self.random_offset = int(num_classes), int(random_offset)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        import numpy as np

        if index >= self.size:
            raise IndexError(f"{type(self).__name__} index out of range")
        rng = np.random.default_rng(int(index) + self.random_offset)
        # int64 first: the float → uint8 cast then wraps modulo 256, as torch's byte() does on CPU
        chw = (rng.standard_normal(self.image_size, dtype=np.float32) * 255).astype(np.int64).astype(np.uint8)
        image = chw.transpose(1, 2, 0)
        label = np.array(rng.integers(0, self.num_classes), dtype=np.int64)
        return (image[:, :, 0] if image.shape[2] == 1 else image), label
