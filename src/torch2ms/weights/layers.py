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
        entry = kb.get(f"torch.nn.{type(sub).__name__}") or _torch_base_entry(type(sub), kb)
        if entry is not None:
            out[prefix] = entry.torch
    return out


def _torch_base_entry(cls: type, kb: KB) -> Any:
    """The KB entry of the torch.nn layer a library subclass derives from (torchvision's LayerNorm2d:
    LayerNorm), whose parameters it keeps and the converted subclass renames the same way."""
    for base in cls.__mro__[1:]:
        if base.__module__.startswith("torch.nn.") and base.__name__ != "Module":
            entry = kb.get(f"torch.nn.{base.__name__}")
            if entry is not None:
                return entry
    return None
