"""MindSpore's Transformer layers called with torch's keywords.

The layers compute the same thing, but their ``construct`` keywords differ from torch's ``forward``:
torch's ``TransformerEncoder(x, mask=..., src_key_padding_mask=..., is_causal=...)`` is MindSpore's
``src_mask=`` (and no ``is_causal``); the decoder takes ``tgt_is_causal``/``memory_is_causal`` in
torch. These subclasses take torch's keywords (and MindSpore's), build the causal mask an
``is_causal`` asks for when none is given, and leave parameters and numbers as MindSpore's.
``nn.Transformer``'s own encoder and decoder take torch's keywords too (a subclass of it calls
``self.encoder(src, mask=...)``).
"""

from __future__ import annotations

from typing import Any

import mindspore
from mindspore import nn, ops

__all__ = [
    "Transformer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "square_subsequent_mask",
]


def square_subsequent_mask(size: int, dtype: Any = mindspore.float32) -> Any:
    """torch's causal mask: -inf above the diagonal, 0 elsewhere."""
    upper = ops.triu(ops.ones((size, size), mindspore.float32), 1).astype(mindspore.bool_)
    return ops.masked_fill(ops.zeros((size, size), dtype), upper, float("-inf"))


def _causal(mask: Any, is_causal: Any, x: Any, batch_first: bool) -> Any:
    if mask is None and is_causal:
        return square_subsequent_mask(x.shape[1] if batch_first else x.shape[0], x.dtype)
    return mask


def _batch_first(layer: Any) -> bool:
    return bool(getattr(layer, "batch_first", False))


class TransformerEncoderLayer(nn.TransformerEncoderLayer):
    """torch's ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``."""

    def construct(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        src_mask = _causal(src_mask, is_causal, src, _batch_first(self))
        return super().construct(src, src_mask, src_key_padding_mask)


class TransformerEncoder(nn.TransformerEncoder):
    """torch's ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``."""

    def construct(self, src, mask=None, src_key_padding_mask=None, is_causal=None, src_mask=None):
        mask = mask if mask is not None else src_mask
        mask = _causal(mask, is_causal, src, _batch_first(self.layers[0]))
        return super().construct(src, mask, src_key_padding_mask)


class TransformerDecoderLayer(nn.TransformerDecoderLayer):
    """torch's ``forward(tgt, memory, ..., tgt_is_causal=False, memory_is_causal=False)``."""

    def construct(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=False,
        memory_is_causal=False,
    ):
        tgt_mask = _causal(tgt_mask, tgt_is_causal, tgt, _batch_first(self))
        return super().construct(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask)


class TransformerDecoder(nn.TransformerDecoder):
    """torch's ``forward(tgt, memory, ..., tgt_is_causal=None, memory_is_causal=False)``."""

    def construct(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        tgt_mask = _causal(tgt_mask, tgt_is_causal, tgt, _batch_first(self.layers[0]))
        return super().construct(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask)


class Transformer(nn.Transformer):
    """torch's ``forward`` keywords (``src_is_causal``, ``tgt_is_causal``, ...), and its own
    encoder/decoder take torch's keywords as well."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Built by MindSpore's __init__: same parameters, torch's call keywords.
        if type(self.encoder) is nn.TransformerEncoder:
            self.encoder.__class__ = TransformerEncoder
        if type(self.decoder) is nn.TransformerDecoder:
            self.decoder.__class__ = TransformerDecoder

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Any:
        return square_subsequent_mask(sz, dtype or mindspore.float32)

    def construct(
        self,
        src,
        tgt,
        src_mask=None,
        tgt_mask=None,
        memory_mask=None,
        src_key_padding_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        src_is_causal=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        src_mask = _causal(src_mask, src_is_causal, src, self.batch_first)
        tgt_mask = _causal(tgt_mask, tgt_is_causal, tgt, self.batch_first)
        return super().construct(
            src,
            tgt,
            src_mask,
            tgt_mask,
            memory_mask,
            src_key_padding_mask,
            tgt_key_padding_mask,
            memory_key_padding_mask,
        )
