"""Rename and re-lay-out torch parameters by the KB's per-layer rules (numpy only, no torch)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ..kb import KB

# Layout changes a KB entry names in its ``layout`` table.
LAYOUTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    # MindSpore's Conv1d is a Conv2d over a height-1 image: weight (out, in, 1, k).
    "conv1d_weight": lambda a: a[:, :, None, :],
}
# Layouts that only insert/remove unit axes: C-order bytes are unchanged, so the writer may copy
# the tensor's bytes straight from the source file.
RESHAPE_ONLY_LAYOUTS = frozenset({"conv1d_weight"})
INVERSE_LAYOUTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "conv1d_weight": lambda a: a[:, :, 0, :],
}


def rename_key(key: str, layer_types: Mapping[str, str], kb: KB) -> tuple[str | None, str | None]:
    """Map one torch state-dict key to (MindSpore name or None if dropped, layout name or None).

    ``layer_types`` maps a module prefix (``features.1``; ``""`` for the root) to its torch class
    name (``torch.nn.BatchNorm2d``).
    """
    # An enclosing layer may rename a nested path (TransformerEncoderLayer: linear1.weight →
    # dense1.weight); outermost layer first, so it wins over the inner layer's own leaf rule.
    prefix, _, leaf = key.rpartition(".")
    dot = -1
    while True:  # every proper prefix of the module path, "" first (no str.join: this runs per key)
        outer = key[:dot] if dot > 0 else ""
        if outer == prefix:
            break
        if outer in layer_types:
            outer_entry = kb.get(layer_types[outer])
            rest = key[dot + 1 :]
            if outer_entry is not None and rest in outer_entry.params:
                new_rest = outer_entry.params[rest]
                if new_rest is None:
                    return None, None
                return (f"{outer}.{new_rest}" if outer else new_rest), outer_entry.layout.get(rest)
        dot = key.find(".", dot + 1)
    entry = kb.get(layer_types.get(prefix, ""))
    if entry is None or leaf not in entry.params:
        return key, None
    new_leaf = entry.params[leaf]
    if new_leaf is None:
        return None, None
    new_key = f"{prefix}.{new_leaf}" if prefix else new_leaf
    return new_key, entry.layout.get(leaf)


def convert_state_dict(
    state: Mapping[str, np.ndarray], layer_types: Mapping[str, str], kb: KB
) -> dict[str, np.ndarray]:
    """A torch state dict (numpy values) → MindSpore parameter names and layouts."""
    out: dict[str, np.ndarray] = {}
    for key, value in state.items():
        new_key, layout = rename_key(key, layer_types, kb)
        if new_key is None:
            continue
        out[new_key] = LAYOUTS[layout](value) if layout else value
    return out
