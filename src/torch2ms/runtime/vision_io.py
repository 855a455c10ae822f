"""torchvision.io for converted code: mindspore.dataset.vision's readers and encoders, with torch's
CHW layout and MindSpore tensors in and out. Nothing from torch2ms is imported."""

from __future__ import annotations

import os
import tempfile
from typing import Any

__all__ = [
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "encode_jpeg",
    "encode_png",
    "read_file",
    "read_image",
    "write_file",
    "write_jpeg",
    "write_png",
]


def _numpy(x: Any) -> Any:
    import numpy as np

    return x.asnumpy() if hasattr(x, "asnumpy") else np.asarray(x)


def _chw(hwc: Any) -> Any:
    import mindspore

    return mindspore.Tensor(hwc.transpose(2, 0, 1).copy() if hwc.ndim == 3 else hwc[None].copy())


def _hwc(chw: Any) -> Any:
    a = _numpy(chw)
    return a.transpose(1, 2, 0).copy() if a.shape[0] != 1 else a[0].copy()


def _mode(mode: Any) -> Any:
    """vision.ImageReadMode from MindSpore's own or torchvision's names (GRAY, RGB, UNCHANGED)."""
    from mindspore.dataset import vision

    if mode is None:
        return vision.ImageReadMode.UNCHANGED
    name = getattr(mode, "name", str(mode)).upper()
    modes = {"UNCHANGED": "UNCHANGED", "GRAY": "GRAYSCALE", "GRAYSCALE": "GRAYSCALE", "RGB": "COLOR", "COLOR": "COLOR"}
    if name not in modes:
        raise NotImplementedError(f"ImageReadMode {name}: MindSpore reads UNCHANGED, GRAY and RGB only")
    return getattr(vision.ImageReadMode, modes[name])


def read_file(path: str) -> Any:
    """The file's bytes as a uint8 tensor."""
    import mindspore
    from mindspore.dataset import vision

    return mindspore.Tensor(vision.read_file(os.fspath(path)))


def write_file(filename: str, data: Any) -> None:
    """A uint8 tensor's bytes to a file."""
    from mindspore.dataset import vision

    vision.write_file(os.fspath(filename), _numpy(data))


def read_image(path: str, mode: Any = None, apply_exif_orientation: bool = False) -> Any:
    """A JPEG/PNG/... file as a CHW uint8 tensor (vision.read_image reads HWC)."""
    from mindspore.dataset import vision

    if apply_exif_orientation:
        raise NotImplementedError("read_image(apply_exif_orientation=True): MindSpore's reader ignores EXIF")
    return _chw(vision.read_image(os.fspath(path), _mode(mode)))


def decode_image(input: Any, mode: Any = None, apply_exif_orientation: bool = False) -> Any:
    """Encoded bytes (a uint8 tensor) → CHW uint8 tensor, through MindSpore's file reader."""
    fd, path = tempfile.mkstemp()
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_numpy(input).tobytes())
        return read_image(path, mode, apply_exif_orientation)
    finally:
        os.unlink(path)


def decode_jpeg(input: Any, mode: Any = None, device: Any = "cpu", apply_exif_orientation: bool = False) -> Any:
    """decode_image for JPEG bytes."""
    return decode_image(input, mode, apply_exif_orientation)


def decode_png(input: Any, mode: Any = None, apply_exif_orientation: bool = False) -> Any:
    """decode_image for PNG bytes."""
    return decode_image(input, mode, apply_exif_orientation)


def encode_jpeg(input: Any, quality: int = 75) -> Any:
    """A CHW uint8 image → JPEG bytes (the same bytes as torchvision: both use libjpeg)."""
    import mindspore
    from mindspore.dataset import vision

    return mindspore.Tensor(vision.encode_jpeg(_hwc(input), quality))


def encode_png(input: Any, compression_level: int = 6) -> Any:
    """A CHW uint8 image → PNG bytes (other bytes than torchvision's encoder, the same pixels)."""
    import mindspore
    from mindspore.dataset import vision

    return mindspore.Tensor(vision.encode_png(_hwc(input), compression_level))


def write_jpeg(input: Any, filename: str, quality: int = 75) -> None:
    """encode_jpeg to a file."""
    from mindspore.dataset import vision

    vision.write_jpeg(os.fspath(filename), _hwc(input), quality)


def write_png(input: Any, filename: str, compression_level: int = 6) -> None:
    """encode_png to a file."""
    from mindspore.dataset import vision

    vision.write_png(os.fspath(filename), _hwc(input), compression_level)
