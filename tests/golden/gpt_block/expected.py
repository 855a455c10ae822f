"""A decoder-only transformer block stack (golden input: written for torch2ms)."""

import math

import mindspore as ms
from mindspore import nn, ops
from mindspore.common import initializer as init


class SelfAttention(nn.Cell):
    def __init__(self, width: int, heads: int, context: int, dropout: float = 0.0):
        super().__init__()
        assert width % heads == 0
        self.qkv = nn.Dense(width, 3 * width)
        self.out = nn.Dense(width, width)
        self.attn_drop = nn.Dropout(p=dropout)
        self.heads = heads
        # lower-triangular mask: a position sees itself and the past
        self.register_buffer("mask", ops.tril(ops.ones((context, context))).view(1, 1, context, context))

    def construct(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, axis=2)
        q = q.view(b, t, self.heads, c // self.heads).swapaxes(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).swapaxes(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).swapaxes(1, 2)
        att = (q @ k.swapaxes(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = self.attn_drop(ops.softmax(att, axis=-1))
        y = (att @ v).swapaxes(1, 2).contiguous().view(b, t, c)
        return self.out(y)


class Block(nn.Cell):
    def __init__(self, width: int, heads: int, context: int):
        super().__init__()
        self.ln1 = nn.LayerNorm((width,), epsilon=1e-05)
        self.attn = SelfAttention(width, heads, context)
        self.ln2 = nn.LayerNorm((width,), epsilon=1e-05)
        self.mlp = nn.SequentialCell(nn.Dense(width, 4 * width), nn.GELU(approximate=False), nn.Dense(4 * width, width))

    def construct(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Cell):
    def __init__(self, vocab: int = 50, width: int = 32, heads: int = 4, layers: int = 2, context: int = 16):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = ms.Parameter(ops.zeros((1, context, width)))
        self.blocks = nn.CellList([Block(width, heads, context) for _ in range(layers)])
        self.ln_f = nn.LayerNorm((width,), epsilon=1e-05)
        self.head = nn.Dense(width, vocab, has_bias=False)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Dense):
            module.weight.set_data(init.initializer(init.Normal(sigma=0.02, mean=0.0), module.weight.shape, module.weight.dtype))
            if module.bias is not None:
                module.bias.set_data(init.initializer('zeros', module.bias.shape, module.bias.dtype))
        elif isinstance(module, nn.Embedding):
            module.embedding_table.set_data(init.initializer(init.Normal(sigma=0.02, mean=0.0), module.embedding_table.shape, module.embedding_table.dtype))

    def construct(self, idx, targets=None):
        x = self.tok(idx) + self.pos[:, : idx.shape[1], :]
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = ops.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        return logits, loss
