"""Issue 24, class 7: a greedy ``generate`` loop (``for _ in range(n): logits = self(idx); idx =
torch.cat((idx, next), dim=1)``: llama2.c's and minGPT's). GRAPH_MODE compiled the converted method to
"The object is not callable" (a Cell calling itself); ``self.construct(...)`` compiles.

A generated matrix of the ways such loops are written — ``self(idx)`` / ``self.forward(idx)``, the
logits cropped by slicing or by ``[:, [-1], :]``, the next token by ``argmax(keepdim=True)``,
``torch.topk(k=1)`` or ``torch.argmax(...).unsqueeze``, the sequence grown by ``torch.cat`` or
``torch.concat``, a context crop ``idx[:, -block:]``, a ``while`` loop: token ids equal to torch's
in PyNative and GRAPH_MODE (the method run through a Cell, as the kit runs it).
"""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import covering
from rc_models_support import convert_pair, ms_mode

pytestmark = pytest.mark.differential

CALLS = {"call": "self(idx_cond)", "forward": "self.forward(idx_cond)"}
CROPS = {"slice": "logits[:, -1, :]", "list_index": "logits[:, [-1], :].squeeze(1)"}
PICKS = {
    "argmax": "torch.argmax(last, dim=-1, keepdim=True)",
    "topk": "torch.topk(last, k=1, dim=-1)[1]",
    "method": "last.argmax(-1).unsqueeze(-1)",
}
GROWS = {"cat": "torch.cat((idx, nxt), dim=1)", "concat": "torch.concat([idx, nxt], 1)"}
LOOPS = {"for": "for _ in range(steps):", "while": "while idx.shape[1] < start + steps:"}
SOURCE = """\
import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self, vocab=11, dim=8, block=4):
        super().__init__()
        self.block = block
        self.emb = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        h = torch.tanh(self.emb(idx))
        h = h + h.mean(dim=1, keepdim=True)
        return self.head(h)

    @torch.no_grad()
    def generate(self, idx, steps):
        start = idx.shape[1]
        {loop}
            idx_cond = idx if idx.shape[1] <= self.block else idx[:, -self.block:]
            logits = {call}
            last = {crop}
            nxt = {pick}
            idx = {grow}
        return idx
"""


def _method_cell(net, method):
    import mindspore as ms

    class MethodCell(ms.nn.Cell):
        def __init__(self):
            super().__init__()
            self.net = net

        def construct(self, *args):
            return getattr(self.net, method)(*args)

    return MethodCell()


CASES = [
    (call, crop, pick, grow, loop)
    for call in CALLS
    for crop in CROPS
    for pick in PICKS
    for grow in GROWS
    for loop in LOOPS
    if (call, crop) in (("call", "slice"), ("forward", "list_index")) and (grow, loop) != ("concat", "while")
]


@pytest.mark.parametrize("call, crop, pick, grow, loop", covering(CASES, pairs=True))
def test_greedy_generate_loop_matches_torch_in_both_modes(tmp_path, call, crop, pick, grow, loop):
    import mindspore as ms
    import torch

    source = SOURCE.format(call=CALLS[call], crop=CROPS[crop], pick=PICKS[pick], grow=GROWS[grow], loop=LOOPS[loop])
    tmod, mmod, code = convert_pair(source, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.LM().eval()
    idx = np.array([[1, 5, 2], [3, 3, 7]], np.int64)
    expected = tnet.generate(torch.from_numpy(idx), 4).numpy()
    weights = {k: v.numpy() for k, v in tnet.state_dict().items()}
    renames = {"emb.embedding_table": "emb.weight"}
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            mnet = mmod.LM()
            for p in mnet.get_parameters():
                p.set_data(ms.Tensor(weights[renames.get(p.name, p.name)]))
            got = _method_cell(mnet, "generate")(ms.Tensor(idx), 4).asnumpy()
        assert got.dtype == expected.dtype and (got == expected).all(), (mode, got, expected, code)
