"""Issue 11, classes 7 and 8 (R6, R27): forward code GRAPH_MODE cannot compile as written, and
torch's call-time keywords of converted layers.

A causal mask cached on the module in forward (``self.mask`` None in __init__, built when missing),
``del`` of locals, a subclass of nn.Transformer calling ``self.encoder(src, mask=...)`` and an
encoder called with ``src_key_padding_mask=`` / ``is_causal=``: the converted model matches torch in
PyNative and GRAPH_MODE. A try/except in forward cannot be rewritten: the converted code and the
report say so, with the line."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair
from requires_support import require_module

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

SOURCE = textwrap.dedent("""\
    import math
    import torch
    import torch.nn as nn


    class CausalLM(nn.Transformer):
        def __init__(self, vocab=30, d=16, heads=2, ff=32, layers=2):
            super().__init__(d_model=d, nhead=heads, dim_feedforward=ff, num_encoder_layers=layers, dropout=0.0)
            self.mask = None
            self.emb = nn.Embedding(vocab, d)
            self.out = nn.Linear(d, vocab)
            self.d = d

        def forward(self, src):
            n = src.size(0)
            if self.mask is None or self.mask.size(0) != n:
                self.mask = torch.log(torch.tril(torch.ones(n, n)))
            h = self.emb(src) * math.sqrt(self.d)
            h = self.encoder(h, mask=self.mask)
            scores = self.out(h)
            del h, n
            return scores


    class Tagger(nn.Module):
        def __init__(self, d=16):
            super().__init__()
            layer = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

        def forward(self, x, pad):
            return self.enc(x, src_key_padding_mask=pad, is_causal=False)
    """)

TRY_IN_FORWARD = textwrap.dedent("""\
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            try:
                return self.fc(x)
            except RuntimeError:
                return x
    """)


def test_r6_forward_cache_and_del_are_rewritten_for_graph_mode(tmp_path):
    require_module("torch")
    _, _, code = convert_pair(SOURCE, tmp_path)
    assert "mask = self.mask" in code and "self.mask =" not in code.split("def construct")[1]
    assert "del h" not in code
    assert "mask=mask" in code and "src_key_padding_mask=pad, is_causal=False" in code


@pytest.mark.slow
def test_r27_transformer_keywords_and_cached_mask_match_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(SOURCE, tmp_path)
    torch.manual_seed(0)
    ids = np.random.default_rng(0).integers(0, 30, (7, 2)).astype(np.int64)
    errors = compare_modes(tmod.CausalLM(), mmod.CausalLM, [ids], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors
    x = np.random.default_rng(1).standard_normal((2, 4, 16)).astype(np.float32)
    pad = np.array([[False, False, False, True], [False, False, False, False]])
    errors = compare_modes(tmod.Tagger(), mmod.Tagger, [x, pad], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors


def test_r27_try_in_forward_is_reported_with_its_line():
    res = convert_source(TRY_IN_FORWARD, "net.py")
    assert "GRAPH_MODE — try/except in construct is not compiled" in res.code
    flagged = [c for c in res.changes if c.action == "review" and "try/except" in c.note]
    assert flagged and flagged[0].line == 10
