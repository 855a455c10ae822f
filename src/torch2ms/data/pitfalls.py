"""Known torchvision → mindspore.dataset pitfalls, keyed for findings.

Each entry: a short title and the fix. Findings point at a key so the report can say *why* the
numbers differ, not only *that* they differ.
"""

from __future__ import annotations

from ..i18n import N_, _

PITFALLS: dict[str, tuple[str, str]] = {
    "decode": (
        N_("Decode missing"),
        N_("ImageFolderDataset yields encoded bytes: put vision.Decode(to_pil=True) first in map."),
    ),
    "decode_pil": (
        N_("OpenCV decode/resize instead of PIL"),
        N_(
            "vision.Decode() gives a numpy image and Resize then takes the OpenCV path (no antialias, max |Δ| ≈ "
            "0.96 after Normalize); vision.Decode(to_pil=True) makes Resize use PIL, matching torchvision to "
            "3.6e-7."
        ),
    ),
    "interpolation": (
        N_("interpolation differs"),
        N_(
            "torchvision BICUBIC ↔ vision.Inter.PILCUBIC (Inter.BICUBIC is OpenCV's, max |Δ| 1.22); keep a PIL "
            "image (Decode(to_pil=True)) so Resize uses PIL; NEAREST also differs between the two libraries."
        ),
    ),
    "center_crop": (
        N_("CenterCrop offset rounding"),
        N_(
            "on a numpy image MindSpore floors the crop offset, torchvision rounds it half to even: 1 px shift "
            "where (size − crop) % 4 == 3 (111 − 64 is one such case). Decode(to_pil=True) crops with PIL like "
            "torchvision, or crop with explicit offsets (vision.Crop)."
        ),
    ),
    "layout": (
        N_("HWC vs CHW layout"),
        N_(
            "torch ToTensor gives CHW; on MindSpore add vision.ToTensor() or vision.HWC2CHW() (there is no error: "
            "accuracy silently collapses)."
        ),
    ),
    "to_tensor": (
        N_("ToTensor / scaling to [0, 1] missing"),
        N_("values are on the 0–255 scale: add vision.ToTensor() (or Rescale(1/255, 0)) before Normalize."),
    ),
    "normalize": (
        N_("Normalize missing, different or misplaced"),
        N_(
            "use the torch mean/std, after ToTensor with vision.Normalize(mean, std, is_hwc=False) (or Rescale + "
            "Normalize(is_hwc=True) + HWC2CHW); Normalize before scaling shifts each channel's mean."
        ),
    ),
    "normalize_hwc": (
        N_("Normalize is_hwc on CHW data"),
        N_("vision.Normalize defaults to is_hwc=True; after ToTensor (CHW) pass is_hwc=False."),
    ),
    "drop_last": (
        N_("drop_last vs drop_remainder"),
        N_(
            "batches per epoch differ: make DataLoader(drop_last=...) and dataset.batch(drop_remainder=...) "
            "equal; drop_remainder defaults to False, like drop_last."
        ),
    ),
    "shuffle": (
        N_("shuffle default"),
        N_(
            "ImageFolderDataset/GeneratorDataset shuffle=None means shuffle; DataLoader shuffle defaults to "
            "False: pass shuffle=False (or True) explicitly on both sides."
        ),
    ),
    "batch_size": (N_("batch size differs"), N_("use the same batch size in DataLoader and dataset.batch.")),
    "resize_size": (
        N_("image size differs"),
        N_("Resize(int) sets the short side, Resize((h, w)) the exact size, on both sides; check Resize/Crop sizes."),
    ),
    "dtype": (N_("dtype differs"), N_("cast with transforms.TypeCast in map, or fix the source's numpy dtype.")),
    "label_dtype": (
        N_("labels int64 vs int32"),
        N_(
            "MindSpore losses want int32 labels: map(transforms.TypeCast(mindspore.int32), "
            "input_columns='label'). Labels are compared by value."
        ),
    ),
    "class_index": (
        N_("class index mapping differs"),
        N_(
            "labels agree up to a relabelling: pass class_indexing= to ImageFolderDataset (torchvision sorts "
            "class folders)."
        ),
    ),
    "columns": (
        N_("column count differs"),
        N_("both pipelines must yield the same columns in the same order (image, label)."),
    ),
    "values": (N_("values differ"), N_("compare the transforms one by one (shape, dtype, per-channel mean/std).")),
    "error": (N_("pipeline raised"), N_("the pipeline fails before the first batches could be compared.")),
}


def title(key: str) -> str:
    return _(PITFALLS[key][0]) if key in PITFALLS else key


def fix(key: str) -> str:
    return _(PITFALLS[key][1]) if key in PITFALLS else ""
