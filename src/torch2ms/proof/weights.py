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
    # torch buffers the converted cell keeps as MindSpore buffers (register_buffer), loaded by name
    buffers = {n: b for n, b in mcell.named_buffers() if n in converted and n not in params}
    missing = [n for n in params if n not in converted]
    unexpected = [n for n in converted if n not in params and n not in buffers]
    if missing or unexpected:
        raise CaseFailure(f"weights: MindSpore params not loaded {missing}, torch keys unused {unexpected}")
    for name, p in params.items():
        arr = converted[name]
        if tuple(arr.shape) != tuple(p.shape):
            raise CaseFailure(f"weights: {name} torch shape {arr.shape} vs MindSpore {tuple(p.shape)}")
        p.set_data(ms.Tensor(np.ascontiguousarray(arr), dtype=p.dtype))
    for name, b in buffers.items():
        if tuple(converted[name].shape) != tuple(b.shape):
            raise CaseFailure(
                f"weights: buffer {name} torch shape {converted[name].shape} vs MindSpore {tuple(b.shape)}"
            )
    if buffers:
        mcell.load_state_dict(
            {n: ms.Tensor(np.ascontiguousarray(converted[n]), dtype=b.dtype) for n, b in buffers.items()}, strict=False
        )
