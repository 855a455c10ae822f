"""A GPT written by hand in MindSpore, the way a MindSpore user would: the reference of the GPT bench.

The same architecture as minGPT's GPT (token and position embeddings, pre-LayerNorm blocks of causal
self-attention and a 4x MLP with tanh-GELU, final LayerNorm, a bias-free head; dropout 0.1) and the same
parameter names, so the bench can load one set of weights into both and check they compute the same
function before it times them. Written with mindspore.nn / ops only.
"""

from __future__ import annotations

import math

import mindspore as ms
import numpy as np
from mindspore import nn, ops


class CausalSelfAttention(nn.Cell):
    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float) -> None:
        super().__init__()
        self.n_head, self.head_dim = n_head, n_embd // n_head
        self.c_attn = nn.Dense(n_embd, 3 * n_embd)
        self.c_proj = nn.Dense(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(p=dropout)
        self.resid_dropout = nn.Dropout(p=dropout)
        mask = np.tril(np.ones((block_size, block_size), dtype=np.float32))
        self.neg = ms.Tensor((1.0 - mask)[None, None] * -1e9, ms.float32)
        self.scale = 1.0 / math.sqrt(self.head_dim)

    def construct(self, x):
        b, t, c = x.shape
        q, k, v = ops.split(self.c_attn(x), c, axis=2)
        q = q.reshape(b, t, self.n_head, self.head_dim).transpose(0, 2, 1, 3)
        k = k.reshape(b, t, self.n_head, self.head_dim).transpose(0, 2, 3, 1)
        v = v.reshape(b, t, self.n_head, self.head_dim).transpose(0, 2, 1, 3)
        att = ops.matmul(q, k) * self.scale + self.neg[:, :, :t, :t]
        att = self.attn_dropout(ops.softmax(att, axis=-1))
        y = ops.matmul(att, v).transpose(0, 2, 1, 3).reshape(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class Mlp(nn.Cell):
    def __init__(self, n_embd: int, dropout: float) -> None:
        super().__init__()
        self.c_fc = nn.Dense(n_embd, 4 * n_embd)
        self.c_proj = nn.Dense(4 * n_embd, n_embd)
        self.act = nn.GELU(approximate=True)
        self.dropout = nn.Dropout(p=dropout)

    def construct(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class Block(nn.Cell):
    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm((n_embd,), epsilon=1e-5)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, dropout)
        self.ln_2 = nn.LayerNorm((n_embd,), epsilon=1e-5)
        self.mlp = Mlp(n_embd, dropout)

    def construct(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Cell):
    def __init__(self, vocab: int, block_size: int, n_layer: int, n_head: int, n_embd: int, dropout: float) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(p=dropout)
        self.h = nn.CellList([Block(n_embd, n_head, block_size, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm((n_embd,), epsilon=1e-5)


class GPT(nn.Cell):
    """Returns (logits, loss) as minGPT's GPT: the loss is cross-entropy over the vocabulary."""

    def __init__(self, vocab: int, block_size: int, n_layer: int, n_head: int, n_embd: int, dropout: float = 0.1):
        super().__init__()
        self.transformer = Transformer(vocab, block_size, n_layer, n_head, n_embd, dropout)
        self.lm_head = nn.Dense(n_embd, vocab, has_bias=False)

    def construct(self, idx, targets):
        t = idx.shape[1]
        pos = ops.arange(0, t, dtype=ms.int32)[None]
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = ops.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss
