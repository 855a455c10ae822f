"""Layer constructor arguments whose MindSpore form depends on a value known only at run time.

``nn.Conv2d(c, c, k, padding=pad)``: torch takes an int, a per-dimension tuple or 'same'/'valid';
MindSpore takes ``pad_mode`` plus an int or a (before, after) pair per dimension. The converter
writes ``pad_mode=conv_pad_mode(pad), padding=conv_padding(pad, 2)`` when ``pad`` is a name.
Plain Python (no MindSpore import).
"""

from __future__ import annotations

from typing import Any

__all__ = ["conv_pad_mode", "conv_padding"]


def conv_pad_mode(padding: Any) -> str:
    """MindSpore's ``pad_mode`` for a torch ``padding`` value."""
    return padding if isinstance(padding, str) else "pad"


def conv_padding(padding: Any, dims: int) -> Any:
    """MindSpore's ``padding`` for a torch ``padding`` value of a ``dims``-D convolution:
    'same'/'valid' → 0 (pad_mode says it), an int stays, (h, w) → (h, h, w, w)."""
    if isinstance(padding, str):
        return 0
    if isinstance(padding, (tuple, list)):
        values = tuple(int(p) for p in padding)
        if len(values) == 1 or dims == 1:
            return values[0]
        if len(values) != dims:
            raise ValueError(f"padding {padding!r} for a {dims}-D convolution")
        return tuple(p for p in values for _ in (0, 1))
    return int(padding)
