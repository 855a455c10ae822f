"""torchvision transforms that mindspore.dataset.vision has no exact form of, on PIL images.

Converted pipelines decode to PIL (``Decode(to_pil=True)``), where torchvision's transforms are PIL
calls; these helpers make the same calls with the same random draws (Python's ``random``, which
``mindspore.dataset.config.set_seed`` seeds), and MindSpore's own ops where those give the same
pixels (measured: AdjustBrightness/Contrast/Saturation/Hue, Posterize, Solarize). Each is a
callable, usable in ``dataset.map(operations=[...])``. Nothing from torch2ms is imported.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Sequence
from typing import Any

__all__ = [
    "ColorJitter",
    "GaussianBlur",
    "Lambda",
    "RandomAffine",
    "RandomEqualize",
    "RandomPerspective",
    "RandomPosterize",
    "PILToTensor",
    "RandomSolarize",
    "ToDtype",
    "ToPILImage",
    "affine",
    "gaussian_blur",
    "perspective",
]

_MINDSPORE_OPS_LOCK = threading.Lock()


def _pil_filter(interpolation: Any, default: str) -> int:
    """A PIL resampling filter from a vision.Inter, a torchvision InterpolationMode name or a PIL int."""
    from PIL import Image

    if interpolation is None:
        name = default
    elif isinstance(interpolation, int):
        return interpolation
    else:
        name = getattr(interpolation, "name", str(interpolation)).upper()
    r = Image.Resampling
    filters = {"NEAREST": r.NEAREST, "BILINEAR": r.BILINEAR, "LINEAR": r.BILINEAR, "BICUBIC": r.BICUBIC}
    if name not in filters:
        raise ValueError(f"interpolation {interpolation} has no PIL filter here (NEAREST, BILINEAR, BICUBIC)")
    return filters[name]


def _fill(fill: Any, img: Any) -> Any:
    """PIL's fillcolor for a torchvision fill (a number for every band, or one per band)."""
    bands = len(img.getbands())
    if fill is None:
        return None
    if isinstance(fill, (int, float)):
        return tuple([int(fill)] * bands) if bands > 1 else int(fill)
    return tuple(int(v) for v in fill) if bands > 1 else int(fill[0])


def _range(value: Any, name: str, centre: float = 1.0, bound: float | None = None) -> tuple[float, float] | None:
    """torchvision's ColorJitter argument: v → [centre − v, centre + v] (clipped at 0), or a (min, max) pair."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        low, high = centre - float(value), centre + float(value)
        if bound is None:
            low = max(low, 0.0)
    else:
        low, high = float(value[0]), float(value[1])
    if bound is not None and not (-bound <= low <= high <= bound):
        raise ValueError(f"{name} values should be between {(-bound, bound)}, but got {(low, high)}.")
    return None if low == high == centre else (low, high)


class ColorJitter:
    """torchvision.transforms.ColorJitter on PIL images: the four adjustments in a random order, each
    with a factor drawn uniformly from its range (MindSpore's AdjustBrightness/... give PIL's pixels)."""

    def __init__(self, brightness: Any = 0, contrast: Any = 0, saturation: Any = 0, hue: Any = 0) -> None:
        self.brightness = _range(brightness, "brightness")
        self.contrast = _range(contrast, "contrast")
        self.saturation = _range(saturation, "saturation")
        self.hue = _range(hue, "hue", centre=0.0, bound=0.5)

    def __call__(self, img: Any) -> Any:
        from mindspore.dataset import vision

        ops = (
            (self.brightness, vision.AdjustBrightness),
            (self.contrast, vision.AdjustContrast),
            (self.saturation, vision.AdjustSaturation),
            (self.hue, vision.AdjustHue),
        )
        for i in random.sample(range(4), 4):
            bounds, op = ops[i]
            if bounds is not None:
                img = op(random.uniform(*bounds))(img)
        return img


def _kernel1d(size: int, sigma: float) -> Any:
    import numpy as np

    half = (size - 1) * 0.5
    x = np.linspace(-half, half, size, dtype=np.float32)
    pdf = np.exp(-0.5 * (x / np.float32(sigma)) ** 2).astype(np.float32)
    return (pdf / pdf.sum()).astype(np.float32)


def gaussian_blur(img: Any, kernel_size: Any, sigma: Any = None) -> Any:
    """torchvision.transforms.functional.gaussian_blur on a PIL image or an HWC uint8 array: the same
    float32 kernel and reflect padding (a pixel within float rounding of .5 may round the other way)."""
    import numpy as np
    from PIL import Image

    ksize = [kernel_size, kernel_size] if isinstance(kernel_size, int) else list(kernel_size)
    if sigma is None:
        sigma = [k * 0.15 + 0.35 for k in ksize]
    sigmas = [float(sigma)] * 2 if isinstance(sigma, (int, float)) else [float(s) for s in sigma] * (3 - len(sigma))
    arr = np.asarray(img)
    a = arr.astype(np.float32).reshape(arr.shape[0], arr.shape[1], -1)
    kernel = np.outer(_kernel1d(ksize[1], sigmas[1]), _kernel1d(ksize[0], sigmas[0])).astype(np.float32)
    py, px = ksize[1] // 2, ksize[0] // 2
    padded = np.pad(a, ((py, py), (px, px), (0, 0)), mode="reflect")
    out = np.zeros_like(a)
    for i in range(ksize[1]):
        for j in range(ksize[0]):
            out += kernel[i, j] * padded[i : i + a.shape[0], j : j + a.shape[1]]
    out = np.round(out).clip(0, 255).astype(np.uint8).reshape(arr.shape)
    return Image.fromarray(out, mode=img.mode) if isinstance(img, Image.Image) else out


class GaussianBlur:
    """torchvision.transforms.GaussianBlur: sigma drawn uniformly from its range at every call."""

    def __init__(self, kernel_size: Any, sigma: Any = (0.1, 2.0)) -> None:
        self.kernel_size = [kernel_size, kernel_size] if isinstance(kernel_size, int) else list(kernel_size)
        self.sigma = (float(sigma), float(sigma)) if isinstance(sigma, (int, float)) else tuple(sigma)

    def __call__(self, img: Any) -> Any:
        s = random.uniform(self.sigma[0], self.sigma[1])
        return gaussian_blur(img, self.kernel_size, [s, s])


def _inverse_affine(
    center: Sequence[float], angle: float, translate: Sequence[float], scale: float, shear: Any
) -> list:
    """The output → input pixel map of a rotation/scale/shear about ``center`` then a translation."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    return m


def affine(
    img: Any,
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: Any,
    interpolation: Any = None,
    fill: Any = None,
    center: Sequence[float] | None = None,
) -> Any:
    """torchvision.transforms.functional.affine on a PIL image (PIL's AFFINE transform)."""
    from PIL import Image

    # torchvision: a number shears along x only; a one-element sequence shears both ways alike
    shear = [float(shear), 0.0] if isinstance(shear, (int, float)) else [float(v) for v in shear] * (3 - len(shear))
    width, height = img.size
    centre = [width * 0.5, height * 0.5] if center is None else list(center)
    matrix = _inverse_affine(centre, float(angle), translate, scale, shear)
    opts = {} if fill is None else {"fillcolor": _fill(fill, img)}
    return img.transform(img.size, Image.Transform.AFFINE, matrix, _pil_filter(interpolation, "NEAREST"), **opts)


def _pair_range(value: Any, name: str) -> list[float]:
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-float(value), float(value)]
    return [float(v) for v in value]


class RandomAffine:
    """torchvision.transforms.RandomAffine on PIL images: angle, translation, scale and shear drawn as
    torchvision draws them, applied with PIL's affine transform."""

    def __init__(
        self,
        degrees: Any,
        translate: Any = None,
        scale: Any = None,
        shear: Any = None,
        interpolation: Any = None,
        fill: Any = 0,
        center: Any = None,
    ) -> None:
        self.degrees = _pair_range(degrees, "degrees")
        self.translate, self.scale, self.center = translate, scale, center
        self.shear = None if shear is None else _pair_range(shear, "shear")
        self.interpolation, self.fill = interpolation, fill

    def params(self, size: tuple[int, int]) -> tuple[float, tuple[int, int], float, tuple[float, float]]:
        angle = random.uniform(self.degrees[0], self.degrees[1])
        tx = ty = 0
        if self.translate is not None:
            max_dx, max_dy = float(self.translate[0] * size[0]), float(self.translate[1] * size[1])
            tx, ty = int(round(random.uniform(-max_dx, max_dx))), int(round(random.uniform(-max_dy, max_dy)))
        scale = 1.0 if self.scale is None else random.uniform(self.scale[0], self.scale[1])
        shear_x = shear_y = 0.0
        if self.shear is not None:
            shear_x = random.uniform(self.shear[0], self.shear[1])
            if len(self.shear) == 4:
                shear_y = random.uniform(self.shear[2], self.shear[3])
        return angle, (tx, ty), scale, (shear_x, shear_y)

    def __call__(self, img: Any) -> Any:
        angle, translate, scale, shear = self.params(img.size)
        return affine(img, angle, translate, scale, shear, self.interpolation, self.fill, self.center)


def _perspective_coeffs(startpoints: Sequence[Sequence[float]], endpoints: Sequence[Sequence[float]]) -> list:
    """The 8 coefficients PIL's PERSPECTIVE transform takes, mapping endpoints back to startpoints."""
    import numpy as np

    a = np.zeros((8, 8), dtype=np.float64)
    for i, (p1, p2) in enumerate(zip(endpoints, startpoints)):
        a[2 * i] = [p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]]
        a[2 * i + 1] = [0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]]
    b = np.array(startpoints, dtype=np.float64).reshape(8)
    return np.linalg.lstsq(a, b, rcond=None)[0].astype(np.float32).tolist()


def perspective(img: Any, startpoints: Any, endpoints: Any, interpolation: Any = None, fill: Any = None) -> Any:
    """torchvision.transforms.functional.perspective on a PIL image."""
    from PIL import Image

    coeffs = _perspective_coeffs(startpoints, endpoints)
    opts = {} if fill is None else {"fillcolor": _fill(fill, img)}
    return img.transform(img.size, Image.Transform.PERSPECTIVE, coeffs, _pil_filter(interpolation, "BILINEAR"), **opts)


class RandomPerspective:
    """torchvision.transforms.RandomPerspective on PIL images: with probability p, each corner moves
    inwards by a random amount up to distortion_scale · half the side."""

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5, interpolation: Any = None, fill: Any = 0) -> None:
        self.distortion_scale, self.p = distortion_scale, p
        self.interpolation, self.fill = interpolation, fill

    def points(self, width: int, height: int) -> tuple[list, list]:
        half_h, half_w = height // 2, width // 2
        dx, dy = int(self.distortion_scale * half_w), int(self.distortion_scale * half_h)
        top_left = [random.randint(0, dx), random.randint(0, dy)]
        top_right = [width - 1 - random.randint(0, dx), random.randint(0, dy)]
        bottom_right = [width - 1 - random.randint(0, dx), height - 1 - random.randint(0, dy)]
        bottom_left = [random.randint(0, dx), height - 1 - random.randint(0, dy)]
        start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return start, [top_left, top_right, bottom_right, bottom_left]

    def __call__(self, img: Any) -> Any:
        if random.random() >= self.p:
            return img
        start, end = self.points(*img.size)
        return perspective(img, start, end, self.interpolation, self.fill)


class _RandomlyApplied:
    """Apply ``op`` with probability ``p`` (torchvision's Random* pixel transforms)."""

    def __init__(self, p: float) -> None:
        self.p = p

    def op(self, img: Any) -> Any:
        raise NotImplementedError

    def __call__(self, img: Any) -> Any:
        return self.op(img) if random.random() < self.p else img


class RandomEqualize(_RandomlyApplied):
    """torchvision.transforms.RandomEqualize: PIL's ImageOps.equalize (MindSpore's Equalize differs by up to 23)."""

    def op(self, img: Any) -> Any:
        from PIL import ImageOps

        return ImageOps.equalize(img)


class RandomPosterize(_RandomlyApplied):
    """torchvision.transforms.RandomPosterize(bits, p): vision.Posterize with probability p."""

    def __init__(self, bits: int, p: float = 0.5) -> None:
        super().__init__(p)
        self.bits = bits

    def op(self, img: Any) -> Any:
        from mindspore.dataset import vision

        return vision.Posterize(self.bits)(img)


class RandomSolarize(_RandomlyApplied):
    """torchvision.transforms.RandomSolarize(threshold, p): pixels ≥ threshold inverted, with probability p."""

    def __init__(self, threshold: float, p: float = 0.5) -> None:
        super().__init__(p)
        self.threshold = float(threshold)

    def op(self, img: Any) -> Any:
        from mindspore.dataset import vision

        return vision.Solarize(self.threshold)(img)


class ToPILImage:
    """torchvision.transforms.ToPILImage: a CHW tensor (MindSpore) or an HWC array → PIL image; floats
    are scaled by 255 and truncated to uint8, as torch's ``mul(255).byte()``."""

    def __init__(self, mode: str | None = None) -> None:
        self.mode = mode

    def __call__(self, pic: Any) -> Any:
        import numpy as np
        from PIL import Image

        arr = pic.asnumpy() if hasattr(pic, "asnumpy") else np.asarray(pic)
        # a MindSpore tensor is CHW, as torch's; so is an array from a converted ToTensor (vision.ToTensor)
        chw = hasattr(pic, "asnumpy") or (arr.ndim == 3 and arr.shape[0] in (1, 3, 4) and arr.shape[2] not in (1, 3, 4))
        if chw and arr.ndim == 3:
            arr = arr.transpose(1, 2, 0)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        if np.issubdtype(arr.dtype, np.floating):
            arr = (arr * 255).astype(np.uint8)
        if arr.shape[2] == 1:
            arr = arr[:, :, 0]
        return Image.fromarray(arr, mode=self.mode)


class PILToTensor:
    """torchvision.transforms.PILToTensor: a PIL image → uint8 CHW array, no scaling; a one-band image ('L', 'P',
    a mask) gets its channel axis (1×H×W), which ``vision.HWC2CHW`` leaves out."""

    def __call__(self, pic: Any) -> Any:
        import numpy as np

        arr = np.asarray(pic)
        return arr[None] if arr.ndim == 2 else np.ascontiguousarray(arr.transpose(2, 0, 1))


class ToDtype:
    """torchvision.transforms.v2.ToDtype: cast; with scale=True an integer image becomes floats in [0, 1]."""

    def __init__(self, dtype: Any, scale: bool = False) -> None:
        self.dtype, self.scale = dtype, scale

    def __call__(self, img: Any) -> Any:
        import mindspore
        import numpy as np

        arr = img.asnumpy() if hasattr(img, "asnumpy") else np.asarray(img)
        target = mindspore.dtype_to_nptype(self.dtype) if isinstance(self.dtype, mindspore.dtype.Type) else self.dtype
        if self.scale and np.issubdtype(arr.dtype, np.integer) and np.issubdtype(target, np.floating):
            return (arr.astype(target) / np.iinfo(arr.dtype).max).astype(target)
        return arr.astype(target)


class Lambda:
    """torchvision.transforms.Lambda: the function, called with what torch would give it. After ToTensor
    torch passes a Tensor, and the converted body calls MindSpore ops (``ops.flatten``) that reject the
    numpy arrays a ``dataset.map`` hands over: a numpy array goes in as a Tensor and what comes back
    goes out as numpy again (Tensors inside tuples/lists too). Anything else (a PIL image, a Tensor
    in an eager call) is passed to the function and returned as it is."""

    def __init__(self, lambd: Any) -> None:
        self.lambd = lambd

    def __call__(self, *args: Any) -> Any:
        import numpy as np

        if not any(isinstance(a, np.ndarray) for a in args):
            return self.lambd(*args)
        import mindspore

        with _MINDSPORE_OPS_LOCK:  # dataset workers are threads; concurrent PyNative ops abort the process
            tensors = [mindspore.Tensor(a) if isinstance(a, np.ndarray) else a for a in args]
            return _to_numpy(self.lambd(*tensors))


def _to_numpy(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return type(value)(_to_numpy(v) for v in value)
    return value.asnumpy() if hasattr(value, "asnumpy") else value
