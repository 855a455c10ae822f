"""Framework-neutral walks over a model's output (a tensor, tuple/list, dict or namedtuple).

Standard library only: both the torch side (in any interpreter) and the MindSpore side use them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..i18n import _
from .options import CompareUsageError


def flatten_tensors(obj: Any, is_tensor: Callable[[Any], bool]) -> list[Any]:
    """Tensors in an output, depth first, in order."""
    if is_tensor(obj):
        return [obj]
    if isinstance(obj, dict):
        return [t for k in obj for t in flatten_tensors(obj[k], is_tensor)]
    if isinstance(obj, (tuple, list)):
        return [t for v in obj for t in flatten_tensors(v, is_tensor)]
    return []


def parse_output_index(text: str | None) -> int | str | None:
    """``--output-index 1`` → 1 (a tuple position); ``--output-index logits`` → "logits" (a dict key)."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return text


def select_output(out: Any, index: int | str | None, is_tensor: Callable[[Any], bool]) -> Any:
    """The tensor the loss reads: the output itself, ``out[index]`` of a tuple/list, or ``out[key]`` of a dict."""
    if is_tensor(out) and index in (None, 0):
        return out
    if isinstance(out, dict):
        keys = list(out)
        if index is None:
            tensors = [k for k in keys if is_tensor(out[k])]
            if len(tensors) == 1:
                return out[tensors[0]]
            raise CompareUsageError(
                _(
                    "the model returns a dict with keys {keys}: name the tensor the loss reads with --output-index KEY"
                ).format(keys=keys)
            )
        if index not in out:
            raise CompareUsageError(
                _("--output-index {index!r}: the model's output dict has keys {keys}").format(index=index, keys=keys)
            )
        chosen = out[index]
    elif isinstance(out, (tuple, list)):
        position = 0 if index is None else index
        if not isinstance(position, int) or not -len(out) <= position < len(out):
            raise CompareUsageError(
                _("--output-index {index!r}: the model returns a {type} of {n_out} elements").format(
                    index=index, type=type(out).__name__, n_out=len(out)
                )
            )
        chosen = out[position]
    else:
        raise CompareUsageError(
            _("--output-index {index!r}: the model returns a single {type}").format(
                index=index, type=type(out).__name__
            )
        )
    if not is_tensor(chosen):
        raise CompareUsageError(
            _("--output-index {index!r}: that element is a {type}, not a tensor").format(
                index=index, type=type(chosen).__name__
            )
        )
    return chosen
