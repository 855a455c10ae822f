"""torchvision.utils.make_grid / save_image for converted code: the same arithmetic in numpy, on
MindSpore tensors (or lists of them). Nothing from torch2ms is imported."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["make_grid", "save_image"]


def _stack(tensor: Any) -> Any:
    """A (N, C, H, W) float array from a tensor, an array or a list of (C, H, W) ones; grey → 3 channels."""
    import numpy as np

    def arr(t: Any) -> Any:
        return t.asnumpy() if hasattr(t, "asnumpy") else np.asarray(t)

    x = np.stack([arr(t) for t in tensor]) if isinstance(tensor, (list, tuple)) else arr(tensor)
    if x.ndim == 2:
        x = x[None]
    if x.ndim == 3:
        x = (np.concatenate([x, x, x], 0) if x.shape[0] == 1 else x)[None]
    if x.ndim == 4 and x.shape[1] == 1:
        x = np.concatenate([x, x, x], 1)
    return x


def _normalize(x: Any, value_range: Any, scale_each: bool) -> Any:
    """torchvision's in-place clamp, subtract, divide (float32, as torch computes it)."""
    import numpy as np

    def norm(t: Any) -> Any:
        low, high = (float(t.min()), float(t.max())) if value_range is None else value_range
        return (np.clip(t, low, high) - np.float32(low)) / np.float32(max(high - low, 1e-5))

    x = x.astype(np.float32)
    return np.stack([norm(t) for t in x]) if scale_each else norm(x)


def _grid_array(
    tensor: Any, nrow: int, padding: int, normalize: bool, value_range: Any, scale_each: bool, pad_value: float
) -> Any:
    import numpy as np

    x = _stack(tensor)
    if normalize:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
        x = _normalize(x, value_range, scale_each)
    if x.shape[0] == 1:
        return x[0]
    nmaps = x.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = x.shape[2] + padding, x.shape[3] + padding
    grid = np.full((x.shape[1], height * ymaps + padding, width * xmaps + padding), pad_value, dtype=x.dtype)
    for k in range(nmaps):
        y0, x0 = (k // xmaps) * height + padding, (k % xmaps) * width + padding
        grid[:, y0 : y0 + height - padding, x0 : x0 + width - padding] = x[k]
    return grid


def make_grid(
    tensor: Any,
    nrow: int = 8,
    padding: int = 2,
    normalize: bool = False,
    value_range: Any = None,
    scale_each: bool = False,
    pad_value: float = 0.0,
) -> Any:
    """torchvision.utils.make_grid: images tiled nrow per row with ``padding`` pixels of ``pad_value``."""
    import mindspore

    return mindspore.Tensor(_grid_array(tensor, nrow, padding, normalize, value_range, scale_each, pad_value))


def save_image(tensor: Any, fp: Any, format: str | None = None, **kwargs: Any) -> None:
    """torchvision.utils.save_image: make_grid, then x · 255 + 0.5 clamped to uint8, saved by PIL."""
    import numpy as np
    from PIL import Image

    grid = make_grid(tensor, **kwargs).asnumpy().astype(np.float32)
    ndarr = np.clip(grid * np.float32(255) + np.float32(0.5), 0, 255).transpose(1, 2, 0).astype(np.uint8)
    Image.fromarray(ndarr).save(fp, format=format)
