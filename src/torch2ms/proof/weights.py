"""Give a MindSpore cell a torch module's weights through the KB's rename rules (the path users take)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..kb import KB
from ..weights.layers import layer_types
from ..weights.rename import convert_state_dict
from .compare import CaseFailure

__all__ = ["converted_state", "copy_torch_weights"]


def converted_state(tmod: Any, kb: KB) -> dict[str, np.ndarray]:
    """The torch module's state dict (parameters and buffers), renamed and re-laid-out for MindSpore."""
    state = {k: v.detach().cpu().numpy() for k, v in tmod.state_dict().items()}
    return convert_state_dict(state, layer_types(tmod, kb), kb)


def copy_torch_weights(tmod: Any, mcell: Any, kb: KB) -> None:
    """Load a torch module's parameters and buffers into a MindSpore cell; every parameter must get one."""
    import mindspore as ms

    converted = converted_state(tmod, kb)
    params = dict(mcell.parameters_and_names())
    missing = [n for n in params if n not in converted]
    unexpected = [n for n in converted if n not in params]
    if missing or unexpected:
        raise CaseFailure(f"weights: MindSpore params not loaded {missing}, torch keys unused {unexpected}")
    for name, p in params.items():
        arr = converted[name]
        if tuple(arr.shape) != tuple(p.shape):
            raise CaseFailure(f"weights: {name} torch shape {arr.shape} vs MindSpore {tuple(p.shape)}")
        p.set_data(ms.Tensor(np.ascontiguousarray(arr), dtype=p.dtype))
