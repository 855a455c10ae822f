"""Issue 11, classes 1 and 2 (R6, R21, R27): GPT-style containers (a ModuleDict holding a
ModuleList and a ModuleDict MLP called through a lambda) keep torch's parameter names, and weight
tying (Embedding ↔ Linear, either direction) gives one shared MindSpore Parameter that
`torch2ms weights` fills without being told the network; parameter renames under an isinstance
guard over several layer classes pick the name by class. Real torch vs real MindSpore, both modes."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair

pytestmark = pytest.mark.differential

GPT = textwrap.dedent("""\
    import math
    import torch
    import torch.nn as nn
    from torch.nn import functional as F


    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.attn = nn.Linear(d, 3 * d)
            self.heads = heads
            self.ln_2 = nn.LayerNorm(d)
            self.mlp = nn.ModuleDict(dict(fc=nn.Linear(d, 4 * d), proj=nn.Linear(4 * d, d), act=nn.GELU()))
            m = self.mlp
            self.mlpf = lambda x: m.proj(m.act(m.fc(x)))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.attn(self.ln_1(x)).split(C, dim=2)
            q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            att = F.softmax((q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1)), dim=-1)
            x = x + (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return x + self.mlpf(self.ln_2(x))


    class TinyGPT(nn.Module):
        def __init__(self, vocab=40, block=16, d=16, heads=2, layers=2):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, d),
                wpe=nn.Embedding(block, d),
                h=nn.ModuleList([Block(d, heads) for _ in range(layers)]),
                ln_f=nn.LayerNorm(d),
            ))
            self.lm_head = nn.Linear(d, vocab, bias=False)
            self.transformer.wte.weight = self.lm_head.weight
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.data.normal_(mean=0.0, std=0.02)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.LayerNorm):
                module.bias.data.zero_()
                module.weight.data.fill_(1.0)

        def forward(self, idx):
            pos = torch.arange(0, idx.size(1), dtype=torch.long).unsqueeze(0)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            return self.lm_head(self.transformer.ln_f(x))
    """)

LSTM_LM = textwrap.dedent("""\
    import torch.nn as nn


    class TiedLM(nn.Module):
        def __init__(self, ntoken=30, nhid=12, tie=True):
            super().__init__()
            self.encoder = nn.Embedding(ntoken, nhid)
            self.rnn = nn.LSTM(nhid, nhid, 1)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie:
                self.decoder.weight = self.encoder.weight

        def forward(self, x):
            out, _ = self.rnn(self.encoder(x))
            return self.decoder(out)
    """)


def _ids(shape, high):
    return np.random.default_rng(1).integers(0, high, shape).astype(np.int64)


def test_r6_gpt_containers_keep_torch_parameter_names_and_one_tied_parameter(tmp_path):
    tmod, mmod, code = convert_pair(GPT, tmp_path)
    assert "review" not in code  # every parameter rename was decided
    tnet, mnet = tmod.TinyGPT(), mmod.TinyGPT()
    names = [n for n, _ in mnet.parameters_and_names()]
    assert "transformer.h.1.mlp.fc.weight" in names and "transformer.h.0.ln_1.gamma" in names
    assert "transformer.wte.embedding_table" in names and "lm_head.weight" not in names  # one Parameter
    assert mnet.lm_head.weight is mnet.transformer.wte.embedding_table
    # _init_weights reached every Embedding, Dense and LayerNorm (normal(0, 0.02), zeros, ones)
    wpe = mnet.transformer.wpe.embedding_table.asnumpy()
    assert 0.01 < wpe.std() < 0.03 and np.all(mnet.transformer.ln_f.gamma.asnumpy() == 1.0)
    assert len(names) == len({n for n, _ in tnet.named_parameters()})


@pytest.mark.slow
def test_r27_tied_gpt_matches_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(GPT, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.TinyGPT()
    errors = compare_modes(tnet, mmod.TinyGPT, [_ids((2, 12), 40)], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors


@pytest.mark.slow
@pytest.mark.parametrize("tie", [True, False])
def test_r21_embedding_decoder_lm_matches_torch_in_both_modes(tmp_path, tie):
    """An Embedding named ``encoder`` (no name hint): `weights` tells it from a bias-less Linear by
    the tie, or else by the width the LSTM after it reads (weights/dataflow.py)."""
    import torch

    tmod, mmod, _ = convert_pair(LSTM_LM, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.TiedLM(tie=tie)
    for p in tnet.parameters():  # every weight matters, the tied one included
        torch.nn.init.uniform_(p, -0.5, 0.5)
    errors = compare_modes(tnet, lambda: mmod.TiedLM(tie=tie), [_ids((5, 2), 30)], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors


def test_r21_weights_writes_a_tied_tensor_under_each_name(tmp_path):
    import torch

    from torch2ms.weights.ckpt_io import read_ckpt
    from torch2ms.weights.convert import convert_checkpoint

    tmod, _, _ = convert_pair(LSTM_LM, tmp_path)
    torch.save(tmod.TiedLM().state_dict(), tmp_path / "lm.pth")
    res = convert_checkpoint(tmp_path / "lm.pth", tmp_path / "lm.ckpt")
    assert res.tied == [["encoder.weight", "decoder.weight"]]
    assert res.layer_types["encoder"] == "torch.nn.Embedding"
    ckpt = read_ckpt(tmp_path / "lm.ckpt")
    assert np.array_equal(ckpt["encoder.embedding_table"][0], ckpt["decoder.weight"][0])
