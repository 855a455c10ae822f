"""Known torchvision → mindspore.dataset pitfalls, keyed for findings.

Each entry: a short title and the fix. Findings point at a key so the report can say *why* the
numbers differ, not only *that* they differ.
"""

from __future__ import annotations

PITFALLS: dict[str, tuple[str, str]] = {
    "decode": (
        "Decode missing",
        "ImageFolderDataset yields encoded bytes: put vision.Decode(to_pil=True) first in map.",
    ),
    "decode_pil": (
        "OpenCV decode/resize instead of PIL",
        "vision.Decode() gives a numpy image and Resize then takes the OpenCV path (no antialias, max |Δ| ≈ 0.96 "
        "after Normalize); vision.Decode(to_pil=True) makes Resize use PIL, matching torchvision to 3.6e-7.",
    ),
    "interpolation": (
        "interpolation differs",
        "torchvision BICUBIC ↔ vision.Inter.PILCUBIC (Inter.BICUBIC is OpenCV's, max |Δ| 1.22); keep a PIL image "
        "(Decode(to_pil=True)) so Resize uses PIL; NEAREST also differs between the two libraries.",
    ),
    "center_crop": (
        "CenterCrop offset rounding",
        "on a numpy image MindSpore floors the crop offset, torchvision rounds it half to even: 1 px shift where "
        "(size − crop) % 4 == 3 (111 − 64 is one such case). Decode(to_pil=True) crops with "
        "PIL like torchvision, or crop with explicit offsets (vision.Crop).",
    ),
    "layout": (
        "HWC vs CHW layout",
        "torch ToTensor gives CHW; on MindSpore add vision.ToTensor() or vision.HWC2CHW() (there is no error: "
        "accuracy silently collapses).",
    ),
    "to_tensor": (
        "ToTensor / scaling to [0, 1] missing",
        "values are on the 0–255 scale: add vision.ToTensor() (or Rescale(1/255, 0)) before Normalize.",
    ),
    "normalize": (
        "Normalize missing, different or misplaced",
        "use the torch mean/std, after ToTensor with vision.Normalize(mean, std, is_hwc=False) "
        "(or Rescale + Normalize(is_hwc=True) + HWC2CHW); Normalize before scaling shifts each channel's mean.",
    ),
    "normalize_hwc": (
        "Normalize is_hwc on CHW data",
        "vision.Normalize defaults to is_hwc=True; after ToTensor (CHW) pass is_hwc=False.",
    ),
    "drop_last": (
        "drop_last vs drop_remainder",
        "batches per epoch differ: make DataLoader(drop_last=...) and dataset.batch(drop_remainder=...) equal; "
        "drop_remainder defaults to False, like drop_last.",
    ),
    "shuffle": (
        "shuffle default",
        "ImageFolderDataset/GeneratorDataset shuffle=None means shuffle; DataLoader shuffle defaults to False: "
        "pass shuffle=False (or True) explicitly on both sides.",
    ),
    "batch_size": ("batch size differs", "use the same batch size in DataLoader and dataset.batch."),
    "resize_size": (
        "image size differs",
        "Resize(int) sets the short side, Resize((h, w)) the exact size, on both sides; check Resize/Crop sizes.",
    ),
    "dtype": ("dtype differs", "cast with transforms.TypeCast in map, or fix the source's numpy dtype."),
    "label_dtype": (
        "labels int64 vs int32",
        "MindSpore losses want int32 labels: map(transforms.TypeCast(mindspore.int32), input_columns='label'). "
        "Labels are compared by value.",
    ),
    "class_index": (
        "class index mapping differs",
        "labels agree up to a relabelling: pass class_indexing= to ImageFolderDataset (torchvision sorts class folders).",
    ),
    "columns": ("column count differs", "both pipelines must yield the same columns in the same order (image, label)."),
    "values": ("values differ", "compare the transforms one by one (shape, dtype, per-channel mean/std)."),
    "error": ("pipeline raised", "the pipeline fails before the first batches could be compared."),
}


def title(key: str) -> str:
    return PITFALLS.get(key, (key, ""))[0]


def fix(key: str) -> str:
    return PITFALLS.get(key, ("", ""))[1]
