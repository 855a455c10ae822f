"""Dataset sources for converted torchvision datasets that MindSpore has no reader for.

Nothing from torch2ms is imported: a converted project can carry this file on its own.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CocoCaptions", "CocoDetection", "FakeData", "VOCDetection", "open_image"]


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


def open_image(data: Any) -> Any:
    """Encoded image bytes → a PIL image in the file's own mode (a VOC mask stays 'P', as torchvision opens it).

    MindSpore's ``vision.Decode(to_pil=True)`` converts every image to RGB, which turns class indices into colours.
    """
    import io

    import numpy as np
    from PIL import Image

    image = Image.open(io.BytesIO(np.asarray(data).tobytes()))
    image.load()
    return image


def _file_bytes(path: str) -> Any:
    import numpy as np

    with open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8)


def _xml_dict(node: Any) -> dict[str, Any]:
    """torchvision's VOCDetection.parse_voc_xml: children grouped by tag, 'object' always a list."""
    children = list(node)
    if not children:
        return {node.tag: node.text}
    grouped: dict[str, Any] = {}
    for child in map(_xml_dict, children):
        for tag, value in child.items():
            grouped.setdefault(tag, []).append(value)
    return {node.tag: {tag: (v[0] if len(v) == 1 and tag != "object" else v) for tag, v in grouped.items()}}


class VOCDetection:
    """torchvision.datasets.VOCDetection as a GeneratorDataset source: (encoded image, the annotation as a dict).

    MindSpore's VOCDataset reads the same folder but yields bbox/label columns, not the XML as a dict, which is
    what code written for torchvision reads. ``target_transform`` runs here, on the plain dict (MindSpore turns
    the strings of a dict it passes on into 0-d numpy arrays).
    """

    def __init__(self, root: Any, year: str = "2012", image_set: str = "train", target_transform: Any = None) -> None:
        import os

        # torchvision's folders: VOC2011 sits under TrainVal/, "2007-test" is VOC2007's test release
        base = os.path.join(str(root), "TrainVal" if year == "2011" else "", "VOCdevkit", f"VOC{year[:4]}")
        with open(os.path.join(base, "ImageSets", "Main", image_set.rstrip("\n") + ".txt")) as f:
            names = [line.strip() for line in f if line.strip()]
        self.images = [os.path.join(base, "JPEGImages", f"{n}.jpg") for n in names]
        self.targets = [os.path.join(base, "Annotations", f"{n}.xml") for n in names]
        self.target_transform = target_transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        import xml.etree.ElementTree as ET

        target = _xml_dict(ET.parse(self.targets[index]).getroot())
        if self.target_transform is not None:
            target = self.target_transform(target)
        return _file_bytes(self.images[index]), target


class _Coco:
    """The part of pycocotools' COCO that torchvision's Coco datasets use: images by id, their annotations in order."""

    def __init__(self, root: Any, ann_file: Any, target_transform: Any) -> None:
        import json

        with open(str(ann_file)) as f:
            data = json.load(f)
        self.root, self.target_transform = str(root), target_transform
        self.files = {img["id"]: img["file_name"] for img in data.get("images", [])}
        self.ids = sorted(self.files)
        self.anns: dict[Any, list[dict[str, Any]]] = {i: [] for i in self.ids}
        for ann in data.get("annotations", []):
            self.anns.setdefault(ann["image_id"], []).append(ann)

    def __len__(self) -> int:
        return len(self.ids)

    def _sample(self, index: int, target: Any) -> tuple[Any, Any]:
        import os

        if self.target_transform is not None:
            target = self.target_transform(target)
        return _file_bytes(os.path.join(self.root, self.files[self.ids[index]])), target


class CocoDetection(_Coco):
    """torchvision.datasets.CocoDetection as a GeneratorDataset source: (encoded image, its annotation dicts).

    Read with json alone (no pycocotools): images in id order, each image's annotations in the file's order.
    """

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        return self._sample(index, self.anns[self.ids[index]])


class CocoCaptions(_Coco):
    """torchvision.datasets.CocoCaptions as a GeneratorDataset source: (encoded image, its captions)."""

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        return self._sample(index, [ann["caption"] for ann in self.anns[self.ids[index]]])
