"""Which torch layer class each submodule of a live torch model is, for the KB's rename rules.

Needs a torch module object (torch is not imported here: the caller already has one).
"""

from __future__ import annotations

from typing import Any

from ..kb import KB

__all__ = ["layer_types"]


def layer_types(module: Any, kb: KB) -> dict[str, str]:
    """Prefix → canonical torch class name, for every submodule the KB knows (``""``: the root)."""
    out = {}
    for prefix, sub in module.named_modules():
        entry = kb.get(f"torch.nn.{type(sub).__name__}")
        if entry is not None:
            out[prefix] = entry.torch
    return out
