"""Packed sequences: ``pack_padded_sequence`` / ``pack_sequence`` → LSTM/GRU/RNN → ``pad_packed_sequence``.

A packed sequence is torch's ``PackedSequence`` layout, as a namedtuple (it passes through GRAPH_MODE):
``data`` holds the valid steps only, time-major, the sequences of each step in decreasing-length order
(``(sum(lengths), *)``: what ``packed.data`` / ``packed[0]`` give in torch, e.g. into a Linear),
``batch_sizes`` the number of sequences at each step (int64), ``sorted_indices`` / ``unsorted_indices``
the order (always given here: torch leaves them None for an already sorted batch). The recurrent layers
below take one where torch does: MindSpore's layers run the padded batch with ``seq_length`` (outputs past
a length are zeros, the final state is the one of the last valid step, as torch's packed path gives) and
the result is packed again. Packing reads the lengths as numbers: a list, or a Tensor in PyNative.
"""

from __future__ import annotations

import collections
from typing import Any

import mindspore
from mindspore import nn, ops
from mindspore.ops import constexpr

__all__ = ["LSTM", "GRU", "RNN", "PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence"]

PackedSequence = collections.namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


@constexpr
def _pynative() -> bool:
    """Whether this runs eagerly (evaluated when a graph is compiled, so False there)."""
    return bool(mindspore.get_context("mode") == mindspore.PYNATIVE_MODE)


def _packed(data: Any, batch_sizes: Any, sorted_indices: Any, unsorted_indices: Any) -> Any:
    """A PackedSequence; in GRAPH_MODE the plain tuple (a namedtuple passed between functions loses its
    fields' types there): ``[0]``/``[1]`` work in both modes, ``.data``/``.batch_sizes`` in PyNative."""
    if _pynative():
        return PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices)
    return data, batch_sizes, sorted_indices, unsorted_indices


def _arange(n: int) -> Any:
    # ops.arange's result carried in a namedtuple loses its dtype in GRAPH_MODE ("Cast ... AbstractNegligible")
    return ops.cumsum(ops.ones((n,), mindspore.int64), 0) - 1


def _int_list(lengths: Any) -> Any:
    if isinstance(lengths, mindspore.Tensor):
        return [int(v) for v in lengths.asnumpy().reshape(-1)]
    return [int(v) for v in lengths]


def _gather_packed(x_tm: Any, batch_sizes: Any, n: int) -> Any:
    """The packed rows of a time-major batch in sorted order: row i is step t(i), sequence b(i)."""
    batch = x_tm.shape[1]
    ends = ops.cumsum(batch_sizes, 0)
    starts = ends - batch_sizes
    i = _arange(n)
    t = (ends.expand_dims(0) <= i.expand_dims(1)).astype(mindspore.int64).sum(1)
    b = i - ops.gather(starts, t, 0)
    flat = x_tm.reshape((x_tm.shape[0] * batch,) + x_tm.shape[2:])
    return ops.gather(flat, t * batch + b, 0)


def _unpack(packed: Any) -> tuple:
    """A packed sequence's padded batch (time-major, sorted order) and its sorted lengths."""
    data, batch_sizes = packed[0], packed[1]
    steps, batch = batch_sizes.shape[0], packed[2].shape[0]
    starts = ops.cumsum(batch_sizes, 0) - batch_sizes
    cols = _arange(batch)
    valid = cols.expand_dims(0) < batch_sizes.expand_dims(1)  # (time, batch)
    index = ops.where(valid, starts.expand_dims(1) + cols.expand_dims(0), ops.zeros(valid.shape, mindspore.int64))
    rows = ops.gather(data, index.reshape(-1), 0).reshape((steps, batch) + data.shape[1:])
    mask = valid.reshape((steps, batch) + (1,) * (data.ndim - 1))
    return ops.where(mask, rows, ops.zeros_like(rows)), valid.astype(mindspore.int32).sum(0)


def pack_padded_sequence(input: Any, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True) -> Any:
    """torch's packing: the valid steps of a padded batch, time-major, longest sequence first."""
    if isinstance(lengths, mindspore.Tensor) and not _pynative():
        # GRAPH_MODE with run-time lengths: torch's layout would need dynamic shapes; the padded batch
        # with its lengths runs through the recurrent layers and pad_packed_sequence alike
        return input, lengths.astype(mindspore.int32), batch_first
    lens = _int_list(lengths)
    batch = len(lens)
    total, steps = sum(lens), max(lens)
    lens_t = mindspore.Tensor(lens, mindspore.int64)
    if enforce_sorted:
        order = _arange(batch)
    else:  # decreasing length, ties in batch order (torch's sort on CPU is stable)
        key = lens_t * batch + (batch - 1 - _arange(batch))
        order = ops.sort(key.astype(mindspore.float32), descending=True)[1].astype(mindspore.int64)
    unsorted = ops.sort(order.astype(mindspore.float32))[1].astype(mindspore.int64)
    x_tm = input.swapaxes(0, 1) if batch_first else input
    x_tm = ops.gather(x_tm[:steps], order, 1)
    lens_sorted = ops.gather(lens_t, order, 0)
    batch_sizes = (lens_sorted.expand_dims(0) > _arange(steps).expand_dims(1)).astype(mindspore.int64).sum(1)
    return _packed(_gather_packed(x_tm, batch_sizes, total), batch_sizes, order, unsorted)


def pad_packed_sequence(
    sequence: Any, batch_first: bool = False, padding_value: float = 0.0, total_length: Any = None
) -> tuple:
    """The padded batch in the requested layout, ``padding_value`` past each length, as long as the
    longest sequence (or ``total_length``), in the original batch order, and the lengths (int64)."""
    if len(sequence) == 3:
        return _pad_padded(sequence, batch_first, padding_value, total_length)
    padded, lengths = _unpack(sequence)
    padded = ops.gather(padded, sequence[3], 1)
    lengths = ops.gather(lengths, sequence[3], 0)
    steps = padded.shape[0]
    if total_length is not None and total_length > steps:
        extra = ops.zeros((total_length - steps,) + padded.shape[1:], padded.dtype)
        padded = ops.cat((padded, extra), 0)
        steps = total_length
    valid = _arange(steps).expand_dims(1) < lengths.expand_dims(0)  # (time, batch)
    valid = valid.reshape(valid.shape + (1,) * (padded.ndim - 2))
    padded = ops.where(valid, padded, ops.full_like(padded, padding_value))
    if batch_first:
        padded = padded.swapaxes(0, 1)
    return padded, lengths.astype(mindspore.int64)


def _pad_padded(sequence: tuple, batch_first: bool, padding_value: float, total_length: Any) -> tuple:
    """pad_packed_sequence of the padded form (GRAPH_MODE, run-time lengths)."""
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


def pack_sequence(sequences: Any, enforce_sorted: bool = True) -> Any:
    """torch's pack_sequence: variable-length (T_i, *) tensors packed as pack_padded_sequence does."""
    lengths = [int(s.shape[0]) for s in sequences]
    longest = max(lengths)
    padded = [ops.pad(s, (0, 0) * (s.ndim - 1) + (0, longest - s.shape[0])) for s in sequences]
    return pack_padded_sequence(ops.stack(padded, 1), lengths, False, enforce_sorted)


def _packed_in(packed: Any, hx: Any, batch_first: bool) -> tuple:
    """A packed sequence as a recurrent layer's padded input (sorted order), seq_length, and hx in that
    order (torch permutes hx by sorted_indices)."""
    padded, lengths = _unpack(packed)
    order = packed[2]
    if hx is not None:
        hx = tuple(ops.gather(h, order, 1) for h in hx) if isinstance(hx, tuple) else ops.gather(hx, order, 1)
    return (padded.swapaxes(0, 1) if batch_first else padded), hx, lengths


def _packed_out(out: Any, state: Any, packed: Any, batch_first: bool) -> tuple:
    """A recurrent layer's padded output packed again, its final state back in the caller's batch order."""
    out = out.swapaxes(0, 1) if batch_first else out
    data = _gather_packed(out, packed[1], packed[0].shape[0])
    unsorted = packed[3]
    if isinstance(state, tuple):
        state = tuple(ops.gather(s, unsorted, 1) for s in state)
    else:
        state = ops.gather(state, unsorted, 1)
    return _packed(data, packed[1], packed[2], unsorted), state


class LSTM(nn.LSTM):
    """mindspore.nn.LSTM that also takes (and then returns) a packed sequence."""

    def construct(self, x, hx=None, seq_length=None):
        if isinstance(hx, list):  # states = [s.detach() for s in states]: torch takes a list as the (h, c) pair
            hx = tuple(hx)
        if isinstance(x, tuple) and len(x) == 3:  # the padded form (GRAPH_MODE, run-time lengths)
            data = x[0] if x[2] == self.batch_first else x[0].swapaxes(0, 1)
            out, state = super().construct(data, hx, x[1])
            return (out, x[1], self.batch_first), state
        if isinstance(x, tuple):
            data, hx, lengths = _packed_in(x, hx, self.batch_first)
            out, state = super().construct(data, hx, lengths)
            return _packed_out(out, state, x, self.batch_first)
        return super().construct(x, hx, seq_length)


class GRU(nn.GRU):
    """mindspore.nn.GRU that also takes (and then returns) a packed sequence."""

    def construct(self, x, hx=None, seq_length=None):
        if isinstance(hx, list):  # states = [s.detach() for s in states]: torch takes a list as the (h, c) pair
            hx = tuple(hx)
        if isinstance(x, tuple) and len(x) == 3:  # the padded form (GRAPH_MODE, run-time lengths)
            data = x[0] if x[2] == self.batch_first else x[0].swapaxes(0, 1)
            out, state = super().construct(data, hx, x[1])
            return (out, x[1], self.batch_first), state
        if isinstance(x, tuple):
            data, hx, lengths = _packed_in(x, hx, self.batch_first)
            out, state = super().construct(data, hx, lengths)
            return _packed_out(out, state, x, self.batch_first)
        return super().construct(x, hx, seq_length)


class RNN(nn.RNN):
    """mindspore.nn.RNN that also takes (and then returns) a packed sequence."""

    def construct(self, x, hx=None, seq_length=None):
        if isinstance(hx, list):  # states = [s.detach() for s in states]: torch takes a list as the (h, c) pair
            hx = tuple(hx)
        if isinstance(x, tuple) and len(x) == 3:  # the padded form (GRAPH_MODE, run-time lengths)
            data = x[0] if x[2] == self.batch_first else x[0].swapaxes(0, 1)
            out, state = super().construct(data, hx, x[1])
            return (out, x[1], self.batch_first), state
        if isinstance(x, tuple):
            data, hx, lengths = _packed_in(x, hx, self.batch_first)
            out, state = super().construct(data, hx, lengths)
            return _packed_out(out, state, x, self.batch_first)
        return super().construct(x, hx, seq_length)
