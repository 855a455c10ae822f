"""Issue 22, class 9: an optimizer given its parameters as a one-pass iterator.

torch's optimizers take any iterable of parameters (``itertools.chain(G_AB.parameters(), G_BA.parameters())``,
a generator expression, ``filter(...)``); MindSpore's want a list. The converted call wraps an iterator in
``list(...)``. Generated matrix: the iterator's spelling x the optimizer x where the optimizer is built (at
module level, in the training function). Each case trains torch and the conversion from the same weights on
the same batches and compares the losses and the parameters after the steps.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from requires_support import require_module
from script_support import load_script

from torch2ms.convert import convert_source

SPELLINGS = {
    "chain": "itertools.chain(enc.parameters(), dec.parameters())",
    "chain_imported": "chain(enc.parameters(), dec.parameters())",
    "from_iterable": "itertools.chain.from_iterable([enc.parameters(), dec.parameters()])",
    "generator": "(p for m in (enc, dec) for p in m.parameters())",
    "filter": "filter(lambda p: p.requires_grad, itertools.chain(enc.parameters(), dec.parameters()))",
    "iter": "iter(list(enc.parameters()) + list(dec.parameters()))",
}
OPTIMIZERS = {"SGD": "torch.optim.SGD({params}, lr=0.1, momentum=0.9)", "Adam": "torch.optim.Adam({params}, lr=0.01)"}

HEAD = """
import itertools
from itertools import chain

import torch
import torch.nn as nn


class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 4)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class Dec(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(4, 2)  # a name of its own: MindSpore's optimizer wants unique parameter names

    def forward(self, x):
        return self.out(x)


enc, dec = Enc(), Dec()
"""

LOOP = """
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = ((dec(enc(x)) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
"""


def _script(spelling: str, optimizer: str, where: str) -> str:
    build = OPTIMIZERS[optimizer].format(params=SPELLINGS[spelling])
    if where == "module":
        return HEAD + f"opt = {build}\n\n\ndef train(batches):\n" + LOOP
    return HEAD + f"\n\ndef train(batches):\n    opt = {build}\n" + LOOP


CASES = list(itertools.product(SPELLINGS, OPTIMIZERS, ("module", "function")))


@pytest.mark.differential
@pytest.mark.parametrize(("spelling", "optimizer", "where"), CASES)
def test_optimizer_on_an_iterator_trains_as_torch(tmp_path, spelling, optimizer, where):
    torch = require_module("torch")
    ms = require_module("mindspore")
    from torch2ms.kb import load_kb
    from torch2ms.proof import copy_torch_weights

    src = _script(spelling, optimizer, where)
    conv = convert_source(src)
    assert not conv.error, conv.error
    assert "list(" in conv.code and "not converted" not in conv.code, conv.code
    tag = f"oi_{spelling}_{optimizer}_{where}"
    (tmp_path / f"t_{tag}.py").write_text(src, encoding="utf-8")
    (tmp_path / f"m_{tag}.py").write_text(conv.code, encoding="utf-8")
    torch.manual_seed(0)
    t = load_script(tmp_path / f"t_{tag}.py", f"t2m_t_{tag}")
    m = load_script(tmp_path / f"m_{tag}.py", f"t2m_m_{tag}")
    copy_torch_weights(t.enc, m.enc, load_kb())
    copy_torch_weights(t.dec, m.dec, load_kb())
    rng = np.random.default_rng(2)
    data = [(rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32))]
    data = data * 4
    want = t.train([(torch.from_numpy(x), torch.from_numpy(y)) for x, y in data])
    got = m.train([(ms.Tensor(x), ms.Tensor(y)) for x, y in data])
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-4, atol=1e-6)
    for tm, mm in ((t.enc, m.enc), (t.dec, m.dec)):
        for a, b in zip([p.detach().numpy() for p in tm.parameters()], [p.asnumpy() for p in mm.trainable_params()]):
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
