"""Issue 11, class 6 (R6, R27): pack_padded_sequence / pad_packed_sequence around nn.LSTM and
nn.GRU convert to MindSpore's seq_length masking (torch2ms.runtime.packed) and give torch's
numbers on the valid steps, the padding and the final states, in PyNative and GRAPH_MODE."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair
from requires_support import require_module

pytestmark = pytest.mark.differential

SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


    class Tagger(nn.Module):
        def __init__(self, vocab=20, d=8, h=6, tags=5):
            super().__init__()
            self.emb = nn.Embedding(vocab, d, padding_idx=0)
            self.lstm = nn.LSTM(d, h, batch_first=True, bidirectional=True)
            self.gru = nn.GRU(2 * h, h)
            self.out = nn.Linear(h, tags)

        def forward(self, tokens, lengths):
            packed = pack_padded_sequence(self.emb(tokens), lengths, batch_first=True, enforce_sorted=False)
            out, (h, c) = self.lstm(packed)
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=tokens.size(1))
            packed = nn.utils.rnn.pack_padded_sequence(out.transpose(0, 1), lengths, enforce_sorted=False)
            out2, last = self.gru(packed)
            out2, lens = nn.utils.rnn.pad_packed_sequence(out2, padding_value=-1.0, total_length=tokens.size(1))
            return self.out(out2), h, c, last, lens
    """)


def test_r6_packing_converts_without_marks(tmp_path):
    require_module("torch")
    _, _, code = convert_pair(SOURCE, tmp_path)
    assert "pack_padded_sequence(" in code and "from torch2ms.runtime import" in code
    assert "LSTM(" in code and "nn.LSTM" not in code


@pytest.mark.slow
def test_r27_packed_lstm_gru_match_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(SOURCE, tmp_path)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    lengths = np.array([3, 6, 1, 4], dtype=np.int64)
    tokens = rng.integers(1, 20, (4, 6)).astype(np.int64)
    tokens[np.arange(6)[None, :] >= lengths[:, None]] = 0
    errors = compare_modes(tmod.Tagger(), mmod.Tagger, [tokens, lengths], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors
