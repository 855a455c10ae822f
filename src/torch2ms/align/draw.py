"""Seeded inputs, training batches and targets (numpy only: the torch side draws them, in any interpreter).

Integer inputs are token ids or indices: they are drawn below the size of the model's first Embedding
(the caller passes it as ``int_high``), so that a language model accepts them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..i18n import _
from .options import LossSpec

DEFAULT_INT_HIGH = 16  # integer inputs of a model without an Embedding: small indices


def draw_array(rng: np.random.Generator, shape: Sequence[int], dtype: str, int_high: int) -> np.ndarray:
    kind = np.dtype(dtype).kind
    if kind == "f":
        return rng.standard_normal(tuple(shape)).astype(dtype)
    if kind in "iu":
        return rng.integers(0, max(int_high, 1), tuple(shape)).astype(dtype)
    if kind == "b":
        return rng.integers(0, 2, tuple(shape)).astype(bool)
    raise ValueError(_("cannot draw {dtype} inputs").format(dtype=dtype))


def draw_inputs(
    shapes: Sequence[Sequence[int]], dtypes: Sequence[str], seed: int, int_high: int
) -> dict[str, np.ndarray]:
    """``x0..xN`` for the forward, one per shape; ``dtypes`` has one entry for all or one per shape."""
    rng = np.random.default_rng(seed)
    per_input = list(dtypes) * len(shapes) if len(dtypes) == 1 else list(dtypes)
    return {f"x{i}": draw_array(rng, shape, dt, int_high) for i, (shape, dt) in enumerate(zip(shapes, per_input))}


def class_axis(loss: LossSpec, ndim: int) -> int:
    """The class axis of the logits cross-entropy reads: 1 (torch's convention) unless ``ce:AXIS``."""
    axis = loss.axis if loss.axis is not None else (1 if ndim >= 2 else 0)
    if not -ndim <= axis < ndim:
        raise ValueError(_("--loss ce:{axis}: the output has {ndim} axes").format(axis=axis, ndim=ndim))
    return axis % ndim


def target_shape(loss: LossSpec, out_shape: Sequence[int]) -> tuple[int, ...]:
    if loss.kind == "ce":
        axis = class_axis(loss, len(out_shape))
        return tuple(s for k, s in enumerate(out_shape) if k != axis)
    return tuple(out_shape)


def draw_training_inputs(
    forward_inputs: dict[str, np.ndarray], steps: int, seed: int, int_high: int
) -> dict[str, np.ndarray]:
    """``train_x0..``: one batch per step for each forward input, with its shape and dtype."""
    rng = np.random.default_rng(seed + 7)
    return {
        f"train_{k}": draw_array(rng, (steps, *x.shape), str(x.dtype), int_high)
        for k, x in sorted(forward_inputs.items())
    }


def draw_targets(out_shape: Sequence[int], loss: LossSpec, steps: int, seed: int) -> dict[str, np.ndarray]:
    """``train_y`` for the loss, one per step; ``out_shape`` is the shape of the tensor the loss reads.

    Cross-entropy targets are class ids below the size of the class axis: labels for a classifier
    (N, C), per-pixel classes for segmentation (N, C, H, W), per-token ids for a sequence (B, T, V)
    with ``ce:-1``. mse/l1 targets are normal with the output's shape; ``model`` needs none.
    """
    if loss.kind == "model":
        return {}
    rng = np.random.default_rng(seed + 8)
    shape = (steps, *target_shape(loss, out_shape))
    if loss.kind == "ce":
        n_classes = out_shape[class_axis(loss, len(out_shape))]
        return {"train_y": rng.integers(0, n_classes, shape).astype(np.int64)}
    return {"train_y": rng.standard_normal(shape).astype(np.float32)}


def numbered(arrays: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
    """``prefix0, prefix1, ...`` in numeric order (x10 after x9)."""
    keys = [k for k in arrays if k.startswith(prefix) and k[len(prefix) :].isdigit()]
    return [arrays[k] for k in sorted(keys, key=lambda k: int(k[len(prefix) :]))]
