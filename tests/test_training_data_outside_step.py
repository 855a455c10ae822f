"""R11 / issue 13: data sampling stays outside the compiled training step.

A loop whose forward starts with ``xb, yb = get_batch(...)`` (a function of the file that only samples
data) keeps that line in the loop and hands the batch to the step: the gradients do not depend on it,
and inside ``@ms.jit`` it was compiled into every step (a 64 s first step became 30 s by hand). A helper
that reads the model, or calls code the converter cannot see, stays inside the step.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

SCRIPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(17, 8)
        self.head = nn.Linear(8, 17)

    def forward(self, idx):
        return self.head(torch.tanh(self.emb(idx)))


def get_batch(data, i, block=6):
    start = (i * 5) % (data.shape[0] - block - 1)
    x = torch.stack([data[start + k:start + k + block] for k in range(3)])
    y = torch.stack([data[start + k + 1:start + k + block + 1] for k in range(3)])
    return x, y


def train(model, data, steps):
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-2)
    losses = []
    for it in range(steps):
        xb, yb = get_batch(data, it)
        logits = model(xb)
        loss = F.cross_entropy(logits.view(-1, 17), yb.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
"""


def _convert(src: str) -> str:
    res = convert_source(textwrap.dedent(src))
    assert res.error is None, res.error
    return res.code


def _body_of(code: str, header: str) -> str:
    """The indented block under the first line that starts with ``header``."""
    lines = code.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith(header))
    indent = len(lines[at]) - len(lines[at].lstrip())
    body = []
    for line in lines[at + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return "\n".join(body)


def test_r11_data_sampling_function_is_called_in_the_loop_not_in_the_compiled_step():
    code = _convert(SCRIPT)
    assert "get_batch" not in _body_of(code, "def forward_fn")
    assert "def forward_fn(xb, yb):" in code
    loop = _body_of(code, "for it in range(steps):")
    assert "xb, yb = get_batch(data, it)" in loop
    assert loop.index("get_batch") < loop.index("train_step(xb, yb)")


@pytest.mark.parametrize(
    "helper",
    [
        # reads the model: its output depends on the trained parameters
        "def get_batch(data, i):\n    return model.emb(data[i:i + 3]), data[i + 1:i + 4]\n",
        # calls a function of the file: not seen through
        "def pick(d, i):\n    return d[i:i + 3]\n\n\ndef get_batch(data, i):\n    return pick(data, i), pick(data, i + 1)\n",
        # global state
        "def get_batch(data, i):\n    global seen\n    seen = i\n    return data[i:i + 3], data[i + 1:i + 4]\n",
    ],
)
def test_r11_helpers_that_touch_the_model_or_unseen_code_stay_in_the_step(helper):
    src = f"""
import torch
import torch.nn as nn

model = nn.Embedding(9, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.arange(40) % 9
seen = 0


{helper}

for it in range(5):
    xb, yb = get_batch(data, it)
    loss = (model(xb) if xb.dtype == torch.long else xb).sum() + yb.sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""
    assert "get_batch" in _body_of(_convert(src), "def forward_fn")


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.differential
@pytest.mark.parametrize("mode", ["PYNATIVE_MODE", "GRAPH_MODE"])
def test_r11_loop_with_sampling_outside_the_step_trains_like_torch(tmp_path, mode):
    ms = require_module("mindspore")
    torch = require_module("torch")
    from torch2ms.kb import load_kb
    from torch2ms.proof import copy_torch_weights

    (tmp_path / "t.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "m.py").write_text(_convert(SCRIPT), encoding="utf-8")
    names = (f"t2m_sample_t_{mode}", f"t2m_sample_m_{mode}")
    tmod, mmod = _load(tmp_path / "t.py", names[0]), _load(tmp_path / "m.py", names[1])
    try:
        torch.manual_seed(0)
        tnet, mnet = tmod.Net(), mmod.Net()
        copy_torch_weights(tnet, mnet, load_kb())
        data = np.arange(200) * 3 % 17  # next token determined: learnable
        expected = np.array(tmod.train(tnet, torch.from_numpy(data), 12))
        ms.set_context(mode=getattr(ms, mode))
        try:
            got = np.array(mmod.train(mnet, ms.Tensor(data, ms.int32), 12))
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
    finally:
        for name in names:
            sys.modules.pop(name, None)
    assert expected[-3:].mean() < expected[:3].mean()  # it trained (batches differ, so the curve is noisy)
    rel = np.abs(got - expected) / np.abs(expected)
    assert rel.max() <= 1e-4, f"max rel {rel.max():.2e}: {list(zip(expected, got))}"
