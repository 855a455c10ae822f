"""Issue 24, class 6: ``kwargs.update(...)`` on a forward's own ``**kwargs`` before ``self.fn(x,
**kwargs)`` (perceiver's PreNorm). GRAPH_MODE compiled the updated dict to "Got an unexpected keyword
argument 'context'"; the converter writes item assignments, which it compiles.

A generated matrix of update spellings (one keyword, several, a dict display, the ``**`` parameter
named otherwise) × callers (with the keyword, without it, the branch taken or not): equal to torch in
PyNative and GRAPH_MODE.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

UPDATES = {
    "keyword": "{kw}.update(context=self.norm({kw}['context']))",
    "keywords": "{kw}.update(context=self.norm({kw}['context']), scale=2.0)",
    "dict": "{kw}.update({{'context': self.norm({kw}['context']), 'scale': 0.5}})",
}
NAMES = ("kwargs", "kw")
SOURCE = """\
import torch
import torch.nn as nn


class Attend(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def forward(self, x, context=None, scale=1.0):
        context = x if context is None else context
        return self.proj(x) * scale + context


class PreNorm(nn.Module):
    def __init__(self, with_context):
        super().__init__()
        self.fn = Attend()
        self.norm = nn.LayerNorm(3)
        self.with_context = with_context

    def forward(self, x, **{kw}):
        x = self.norm(x)
        if self.with_context:
            {update}
        return self.fn(x, **{kw})


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.cross = PreNorm(True)
        self.plain = PreNorm(False)

    def forward(self, x, c):
        return self.cross(x, context=c) + self.plain(x) + self.plain(x, context=c * 2)
"""


@pytest.mark.parametrize("kw", NAMES)
@pytest.mark.parametrize("update", UPDATES)
def test_kwargs_update_matches_torch_in_both_modes(tmp_path, update, kw):
    import mindspore as ms
    import torch

    source = SOURCE.format(kw=kw, update=UPDATES[update].format(kw=kw))
    tmod, mmod, code = convert_pair(source, tmp_path)
    assert ".update(" not in code, code
    torch.manual_seed(0)
    tnet = tmod.Net().eval()
    rng = np.random.default_rng(0)
    x, c = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x), torch.from_numpy(c))
    state = {k: v.numpy() for k, v in tnet.state_dict().items()}
    renames = {"gamma": "weight", "beta": "bias"}
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            mnet = mmod.Net()
            for p in mnet.get_parameters():
                head, _, last = p.name.rpartition(".")
                p.set_data(ms.Tensor(state[f"{head}.{renames.get(last, last)}"]))
            got = mnet(ms.Tensor(x), ms.Tensor(c))
        assert relative_error(expected, got) <= 1e-5, (mode, code)
