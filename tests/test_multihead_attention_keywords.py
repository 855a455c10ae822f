"""Issue 24, class 5: ``MultiheadAttention(q, k, value=v)`` (DETR) failed in MindSpore's ``__call__``
("tuple index out of range": it reads ``args[2]``).

A generated matrix of call spellings — query/key/value positional or keyword in every split, masks as
keywords, self-attention with one tensor for all three — converted and run in PyNative and GRAPH_MODE
against torch, weights carried by name.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

CALLS = {
    "positional": "self.attn(q, k, v)",
    "value_kw": "self.attn(q, k, value=v)",
    "key_value_kw": "self.attn(q, key=k, value=v)",
    "all_kw": "self.attn(query=q, key=k, value=v)",
    "all_kw_shuffled": "self.attn(value=v, query=q, key=k)",
    "value_kw_masks": "self.attn(q, k, value=v, attn_mask=None, key_padding_mask=pad)",
    "self_attention": "self.attn(q, q, value=q, need_weights=False)",
}
SOURCE = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, dropout=0.0)

    def forward(self, q, k, v, pad):
        return {call}[0]
"""


@pytest.mark.parametrize("call", CALLS)
def test_multihead_attention_call_spellings_match_torch_in_both_modes(tmp_path, call):
    import mindspore as ms
    import torch

    tmod, mmod, code = convert_pair(SOURCE.format(call=CALLS[call]), tmp_path)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((n, 2, 8)).astype(np.float32) for n in (4, 5, 5))
    pad = np.array([[False] * 4 + [True], [False] * 5])
    torch.manual_seed(0)
    tnet = tmod.Net().eval()
    with torch.no_grad():
        expected = tnet(*[torch.from_numpy(a) for a in (q, k, v, pad)])
    weights = {n: p.detach().numpy() for n, p in tnet.named_parameters()}
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            mnet = mmod.Net()
            mnet.set_train(False)
            params = {p.name: p for p in mnet.get_parameters()}
            assert sorted(params) == sorted(weights), (sorted(params), sorted(weights))
            for name, w in weights.items():
                params[name].set_data(ms.Tensor(w))
            got = mnet(*[ms.Tensor(a) for a in (q, k, v, pad)])
        assert relative_error(expected, got) <= 1e-5, (mode, code)
