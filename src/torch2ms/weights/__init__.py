"""Weight conversion: torch checkpoints → MindSpore .ckpt (and back), driven by the KB, without torch.

Public entry points (imported lazily: ``torch2ms.cli`` imports this package and must stay free of
numpy/torch/MindSpore until a command needs them):
  * :func:`convert_checkpoint` — a .pth/.pt/.bin/.safetensors file → .ckpt (``torch2ms weights``)
  * :func:`ckpt_to_torch` — a .ckpt → a torch-loadable .pth (or .safetensors)
  * :func:`read_state_dict` / :func:`load_any` — the restricted, lazy, torch-free reader
  * :func:`convert_state_dict` / :func:`rename_key` — KB renames of an in-memory state dict
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "convert_state_dict": "rename",
    "rename_key": "rename",
    "convert_checkpoint": "convert",
    "ckpt_to_torch": "convert",
    "read_state_dict": "convert",
    "guess_layer_types": "convert",
    "match_to_shapes": "convert",
    "WeightsError": "convert",
    "load_any": "torch_format",
    "load_torch_file": "torch_format",
    "load_safetensors": "torch_format",
    "save_torch_zip": "torch_format",
    "UnsafePickleError": "torch_format",
    "write_ckpt": "ckpt_io",
    "read_ckpt": "ckpt_io",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
