"""torch's LSTMCell / GRUCell / RNNCell on MindSpore: any float dtype, optional state.

MindSpore's cells check for float16/float32 input (a ``model.double()`` network such as the
time-sequence LSTM fails: "the 'x' should be one of [float32, float16]") and require the state
argument that torch defaults to zeros. These subclasses keep MindSpore's parameters
(``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``, laid out as torch's) and compute torch's
cell equations with plain ops, which run in float64 too; unbatched (1-D) input works as in torch.
"""

from __future__ import annotations

from typing import Any

from mindspore import nn, ops

__all__ = ["LSTMCell", "GRUCell", "RNNCell"]


def _linear(x: Any, weight: Any, bias: Any) -> Any:
    out = ops.matmul(x, weight.swapaxes(0, 1))
    return out if bias is None else out + bias


def _gates(cell: Any, x: Any, h: Any) -> tuple[Any, Any]:
    bias_ih = cell.bias_ih if cell.has_bias else None
    bias_hh = cell.bias_hh if cell.has_bias else None
    return _linear(x, cell.weight_ih, bias_ih), _linear(h, cell.weight_hh, bias_hh)


def _batched(x: Any) -> Any:
    return x.expand_dims(0) if x.ndim == 1 else x


def _zeros(cell: Any, x: Any) -> Any:
    return ops.zeros((x.shape[0], cell.hidden_size), x.dtype)


class LSTMCell(nn.LSTMCell):
    """torch ``LSTMCell.forward(input, hx=None)`` → (h, c)."""

    def construct(self, x, hx=None):
        unbatched = x.ndim == 1
        x = _batched(x)
        h, c = (_zeros(self, x), _zeros(self, x)) if hx is None else (_batched(hx[0]), _batched(hx[1]))
        gi, gh = _gates(self, x, h)
        i, f, g, o = ops.chunk(gi + gh, 4, 1)
        c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
        h = ops.sigmoid(o) * ops.tanh(c)
        if unbatched:
            return h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(nn.GRUCell):
    """torch ``GRUCell.forward(input, hx=None)`` → h."""

    def construct(self, x, hx=None):
        unbatched = x.ndim == 1
        x = _batched(x)
        h = _zeros(self, x) if hx is None else _batched(hx)
        gi, gh = _gates(self, x, h)
        i_r, i_z, i_n = ops.chunk(gi, 3, 1)
        h_r, h_z, h_n = ops.chunk(gh, 3, 1)
        r = ops.sigmoid(i_r + h_r)
        z = ops.sigmoid(i_z + h_z)
        n = ops.tanh(i_n + r * h_n)
        h = (1 - z) * n + z * h
        return h.squeeze(0) if unbatched else h


class RNNCell(nn.RNNCell):
    """torch ``RNNCell.forward(input, hx=None)`` → h (tanh or relu)."""

    def construct(self, x, hx=None):
        unbatched = x.ndim == 1
        x = _batched(x)
        h = _zeros(self, x) if hx is None else _batched(hx)
        gi, gh = _gates(self, x, h)
        h = ops.tanh(gi + gh) if self.nonlinearity == "tanh" else ops.relu(gi + gh)
        return h.squeeze(0) if unbatched else h
