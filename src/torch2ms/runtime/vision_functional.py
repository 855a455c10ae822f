"""torchvision.transforms.functional for converted code: PIL images in, PIL images out, as torchvision.

On a PIL image torchvision's functional ops are PIL calls; these make the same calls (or MindSpore's
vision ops where they give PIL's pixels: AdjustBrightness/Contrast/Saturation/Hue/Gamma, Resize, Pad).
MindSpore tensors are CHW like torch's: the geometric ops that only move pixels (flips, crops,
constant padding) and normalize/erase also take them; the ones that resample raise on a tensor
(torchvision's tensor kernels are not MindSpore's). Nothing from torch2ms is imported.
"""

from __future__ import annotations

from typing import Any

from .vision_transforms import ToPILImage, affine, gaussian_blur, perspective

__all__ = [
    "adjust_brightness",
    "adjust_contrast",
    "adjust_gamma",
    "adjust_hue",
    "adjust_saturation",
    "adjust_sharpness",
    "affine",
    "autocontrast",
    "center_crop",
    "crop",
    "equalize",
    "erase",
    "five_crop",
    "gaussian_blur",
    "get_dimensions",
    "get_image_size",
    "hflip",
    "invert",
    "normalize",
    "pad",
    "perspective",
    "pil_to_tensor",
    "posterize",
    "resize",
    "resized_crop",
    "rotate",
    "rgb_to_grayscale",
    "solarize",
    "ten_crop",
    "to_grayscale",
    "to_pil_image",
    "to_tensor",
    "vflip",
]


def _is_tensor(img: Any) -> bool:
    return hasattr(img, "asnumpy")


def _pil_only(img: Any, name: str) -> None:
    if _is_tensor(img):
        raise NotImplementedError(
            f"{name} on a tensor: torchvision's tensor kernel has no MindSpore form; pass a PIL image (before ToTensor)"
        )


def hflip(img: Any) -> Any:
    """Mirror left-right."""
    from mindspore import ops
    from PIL import Image

    return ops.flip(img, (-1,)) if _is_tensor(img) else img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)


def vflip(img: Any) -> Any:
    """Mirror top-bottom."""
    from mindspore import ops
    from PIL import Image

    return ops.flip(img, (-2,)) if _is_tensor(img) else img.transpose(Image.Transpose.FLIP_TOP_BOTTOM)


def crop(img: Any, top: int, left: int, height: int, width: int) -> Any:
    """The (height, width) window at (top, left); PIL fills outside the image with zeros, as torchvision."""
    if _is_tensor(img):
        return img[..., top : top + height, left : left + width]
    return img.crop((left, top, left + width, top + height))


def get_image_size(img: Any) -> list[int]:
    """[width, height]."""
    return [int(img.shape[-1]), int(img.shape[-2])] if _is_tensor(img) else list(img.size)


def get_dimensions(img: Any) -> list[int]:
    """[channels, height, width]."""
    if _is_tensor(img):
        return [int(img.shape[-3]) if img.ndim > 2 else 1, int(img.shape[-2]), int(img.shape[-1])]
    return [len(img.getbands()), img.size[1], img.size[0]]


def center_crop(img: Any, output_size: Any) -> Any:
    """The centred window; offsets rounded as torchvision rounds them (padding first if the image is smaller)."""
    height, width = (
        (output_size, output_size) if isinstance(output_size, int) else tuple(output_size) * (3 - len(output_size))
    )
    _, image_h, image_w = get_dimensions(img)
    if width > image_w or height > image_h:
        pads = [
            (width - image_w) // 2,
            (height - image_h) // 2,
            (width - image_w + 1) // 2,
            (height - image_h + 1) // 2,
        ]
        img = pad(img, [max(p, 0) for p in pads])
        _, image_h, image_w = get_dimensions(img)
    return crop(img, int(round((image_h - height) / 2.0)), int(round((image_w - width) / 2.0)), height, width)


def pad(img: Any, padding: Any, fill: Any = 0, padding_mode: str = "constant") -> Any:
    """Pad by one number, (left/right, top/bottom) or (left, top, right, bottom)."""
    from mindspore.dataset import vision

    if _is_tensor(img):
        if padding_mode != "constant":
            raise NotImplementedError(f"pad(padding_mode={padding_mode!r}) on a tensor: pass a PIL image")
        from mindspore import ops

        p = [padding] * 4 if isinstance(padding, int) else list(padding) * (4 // len(padding))
        return ops.pad(img, (p[0], p[2], p[1], p[3]), value=fill)
    border = getattr(vision.Border, padding_mode.upper())
    return vision.Pad(padding, fill_value=fill, padding_mode=border)(img)


def resize(img: Any, size: Any, interpolation: Any = None, max_size: Any = None, antialias: Any = True) -> Any:
    """PIL's resize: an int sets the shorter side (the longer one scaled, truncated), as torchvision."""
    from mindspore.dataset import vision

    _pil_only(img, "resize")
    if max_size is not None:
        raise NotImplementedError("resize(max_size=...): compute the size first")
    inter = vision.Inter.BILINEAR if interpolation is None else interpolation
    return vision.Resize(size, inter)(img)


def resized_crop(
    img: Any, top: int, left: int, height: int, width: int, size: Any, interpolation: Any = None, antialias: Any = True
) -> Any:
    """crop, then resize (PIL's filter)."""
    return resize(crop(img, top, left, height, width), size, interpolation)


def five_crop(img: Any, size: Any) -> tuple:
    """The four corner crops and the centre crop (torchvision's order: tl, tr, bl, br, centre)."""
    crop_h, crop_w = (size, size) if isinstance(size, int) else tuple(size) * (3 - len(size))
    _, image_h, image_w = get_dimensions(img)
    return (
        crop(img, 0, 0, crop_h, crop_w),
        crop(img, 0, image_w - crop_w, crop_h, crop_w),
        crop(img, image_h - crop_h, 0, crop_h, crop_w),
        crop(img, image_h - crop_h, image_w - crop_w, crop_h, crop_w),
        center_crop(img, [crop_h, crop_w]),
    )


def ten_crop(img: Any, size: Any, vertical_flip: bool = False) -> tuple:
    """five_crop of the image and of its mirror image."""
    return five_crop(img, size) + five_crop(vflip(img) if vertical_flip else hflip(img), size)


def rotate(
    img: Any, angle: float, interpolation: Any = None, expand: bool = False, center: Any = None, fill: Any = None
) -> Any:
    """PIL's rotate (counter-clockwise degrees, about the centre unless given)."""
    from .vision_transforms import _fill, _pil_filter

    _pil_only(img, "rotate")
    opts = {} if fill is None else {"fillcolor": _fill(fill, img)}
    return img.rotate(angle, _pil_filter(interpolation, "NEAREST"), expand, center, **opts)


def _adjust(op_name: str, img: Any, *args: Any) -> Any:
    from mindspore.dataset import vision

    _pil_only(img, op_name)
    return getattr(vision, op_name)(*args)(img)


def adjust_brightness(img: Any, brightness_factor: float) -> Any:
    """PIL's ImageEnhance.Brightness (vision.AdjustBrightness on a PIL image)."""
    return _adjust("AdjustBrightness", img, brightness_factor)


def adjust_contrast(img: Any, contrast_factor: float) -> Any:
    """PIL's ImageEnhance.Contrast (vision.AdjustContrast on a PIL image)."""
    return _adjust("AdjustContrast", img, contrast_factor)


def adjust_saturation(img: Any, saturation_factor: float) -> Any:
    """PIL's ImageEnhance.Color (vision.AdjustSaturation on a PIL image)."""
    return _adjust("AdjustSaturation", img, saturation_factor)


def adjust_hue(img: Any, hue_factor: float) -> Any:
    """Hue shifted in HSV (vision.AdjustHue on a PIL image)."""
    return _adjust("AdjustHue", img, hue_factor)


def adjust_gamma(img: Any, gamma: float, gain: float = 1) -> Any:
    """gain · 255 · (x / 255) ** gamma per channel (vision.AdjustGamma on a PIL image)."""
    return _adjust("AdjustGamma", img, gamma, gain)


def adjust_sharpness(img: Any, sharpness_factor: float) -> Any:
    """PIL's ImageEnhance.Sharpness."""
    from PIL import ImageEnhance

    _pil_only(img, "adjust_sharpness")
    return ImageEnhance.Sharpness(img).enhance(sharpness_factor)


def _image_ops(name: str, img: Any, *args: Any) -> Any:
    from PIL import ImageOps

    _pil_only(img, name)
    return getattr(ImageOps, name)(img, *args)


def invert(img: Any) -> Any:
    """255 − x (PIL's ImageOps.invert)."""
    return _image_ops("invert", img)


def posterize(img: Any, bits: int) -> Any:
    """Keep the top ``bits`` bits (PIL's ImageOps.posterize)."""
    return _image_ops("posterize", img, bits)


def solarize(img: Any, threshold: float) -> Any:
    """Invert the pixels ≥ threshold (PIL's ImageOps.solarize)."""
    return _image_ops("solarize", img, threshold)


def autocontrast(img: Any) -> Any:
    """Stretch each channel to 0..255 (PIL's ImageOps.autocontrast)."""
    return _image_ops("autocontrast", img)


def equalize(img: Any) -> Any:
    """Histogram equalisation (PIL's ImageOps.equalize; MindSpore's Equalize differs by up to 23)."""
    return _image_ops("equalize", img)


def to_grayscale(img: Any, num_output_channels: int = 1) -> Any:
    """PIL's 'L' conversion (ITU-R 601-2 luma), repeated to 3 channels if asked."""
    import numpy as np
    from PIL import Image

    _pil_only(img, "to_grayscale")
    gray = img.convert("L")
    if num_output_channels == 3:
        g = np.asarray(gray, dtype=np.uint8)
        gray = Image.fromarray(np.dstack([g, g, g]), "RGB")
    return gray


def rgb_to_grayscale(img: Any, num_output_channels: int = 1) -> Any:
    """to_grayscale (torchvision's name for tensors; on PIL images the same)."""
    return to_grayscale(img, num_output_channels)


def to_tensor(pic: Any) -> Any:
    """A PIL image or HWC uint8 array → a CHW float32 MindSpore tensor in [0, 1]."""
    import mindspore
    from mindspore.dataset import vision

    return mindspore.Tensor(vision.ToTensor()(pic))


def pil_to_tensor(pic: Any) -> Any:
    """A PIL image → a CHW MindSpore tensor of its values (no scaling)."""
    import mindspore
    import numpy as np

    arr = np.asarray(pic)
    return mindspore.Tensor(arr[:, :, None].transpose(2, 0, 1) if arr.ndim == 2 else arr.transpose(2, 0, 1).copy())


def to_pil_image(pic: Any, mode: str | None = None) -> Any:
    """A CHW tensor or an HWC array → PIL image (floats × 255, truncated)."""
    return ToPILImage(mode)(pic)


def normalize(tensor: Any, mean: Any, std: Any, inplace: bool = False) -> Any:
    """(x − mean) / std per channel of a CHW (or NCHW) tensor."""
    import mindspore

    m = mindspore.Tensor(list(mean), tensor.dtype).reshape(-1, 1, 1)
    s = mindspore.Tensor(list(std), tensor.dtype).reshape(-1, 1, 1)
    return (tensor - m) / s


def erase(img: Any, i: int, j: int, h: int, w: int, v: Any, inplace: bool = False) -> Any:
    """The (h, w) window at (i, j) of a CHW tensor set to v."""
    out = img.copy()
    out[..., i : i + h, j : j + w] = v
    return out
