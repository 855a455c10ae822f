"""Weight conversion: torch checkpoints → MindSpore .ckpt (and back), driven by the KB, without torch.

Public entry points:
  * :func:`convert_checkpoint` — a .pth/.pt/.bin/.safetensors file → .ckpt (``torch2ms weights``)
  * :func:`ckpt_to_torch` — a .ckpt → a torch-loadable .pth (or .safetensors)
  * :func:`read_state_dict` / :func:`load_any` — the restricted, lazy, torch-free reader
  * :func:`convert_state_dict` / :func:`rename_key` — KB renames of an in-memory state dict
"""

from .rename import convert_state_dict, rename_key  # noqa: F401
