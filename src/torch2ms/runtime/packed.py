"""Packed sequences: ``pack_padded_sequence`` → LSTM/GRU/RNN → ``pad_packed_sequence``.

MindSpore's recurrent layers take the padded batch and ``seq_length`` (the valid length of each
sequence): the outputs past a sequence's length are zeros and the final state is the one of its
last valid step, as torch's packed path gives. A packed sequence here is the padded batch with
its lengths and layout, ``(data, lengths, batch_first)``, a plain tuple so that it passes through
GRAPH_MODE; the recurrent layers below take it where torch takes a PackedSequence and return one.
"""

from __future__ import annotations

from typing import Any

import mindspore
from mindspore import nn, ops

__all__ = ["LSTM", "GRU", "RNN", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence"]


def _lengths(lengths: Any) -> Any:
    if isinstance(lengths, mindspore.Tensor):
        return lengths.astype(mindspore.int32)
    return mindspore.Tensor(lengths, mindspore.int32)


def pack_padded_sequence(input: Any, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True) -> tuple:
    """torch's packing: the padded batch with its lengths (any order: no sorting is needed)."""
    return input, _lengths(lengths), batch_first


def pad_packed_sequence(
    sequence: tuple, batch_first: bool = False, padding_value: float = 0.0, total_length: Any = None
) -> tuple:
    """The padded batch in the requested layout, ``padding_value`` past each length, as long as the
    longest sequence (or ``total_length``), and the lengths (int64, as torch's)."""
    data, lengths, data_batch_first = sequence
    if data_batch_first != batch_first:
        data = data.swapaxes(0, 1)
    steps = data.shape[1] if batch_first else data.shape[0]
    valid = ops.arange(steps).expand_dims(0) < lengths.expand_dims(1)  # (batch, time)
    if not batch_first:
        valid = valid.swapaxes(0, 1)
    data = ops.where(valid.expand_dims(-1), data, ops.full_like(data, padding_value))
    keep = total_length if total_length is not None else int(lengths.max())
    data = data[:, :keep] if batch_first else data[:keep]
    return data, lengths.astype(mindspore.int64)


def pack_sequence(sequences: Any, enforce_sorted: bool = True) -> tuple:
    """torch's pack_sequence: variable-length (T_i, *) tensors padded to the longest, time-major."""
    lengths = [int(s.shape[0]) for s in sequences]
    longest = max(lengths)
    padded = [ops.pad(s, (0, 0) * (s.ndim - 1) + (0, longest - s.shape[0])) for s in sequences]
    return ops.stack(padded, 1), _lengths(lengths), False


def _padded(packed: tuple, batch_first: bool) -> tuple:
    """A packed sequence's padded batch in a layer's layout, and its lengths."""
    data, lengths, data_batch_first = packed
    if data_batch_first != batch_first:
        data = data.swapaxes(0, 1)
    return data, lengths


class LSTM(nn.LSTM):
    """mindspore.nn.LSTM that also takes (and then returns) a packed sequence."""

    def construct(self, x, hx=None, seq_length=None):
        if isinstance(x, tuple):
            data, lengths = _padded(x, self.batch_first)
            out, state = super().construct(data, hx, lengths)
            return (out, lengths, self.batch_first), state
        return super().construct(x, hx, seq_length)


class GRU(nn.GRU):
    """mindspore.nn.GRU that also takes (and then returns) a packed sequence."""

    def construct(self, x, hx=None, seq_length=None):
        if isinstance(x, tuple):
            data, lengths = _padded(x, self.batch_first)
            out, state = super().construct(data, hx, lengths)
            return (out, lengths, self.batch_first), state
        return super().construct(x, hx, seq_length)


class RNN(nn.RNN):
    """mindspore.nn.RNN that also takes (and then returns) a packed sequence."""

    def construct(self, x, hx=None, seq_length=None):
        if isinstance(x, tuple):
            data, lengths = _padded(x, self.batch_first)
            out, state = super().construct(data, hx, lengths)
            return (out, lengths, self.batch_first), state
        return super().construct(x, hx, seq_length)
