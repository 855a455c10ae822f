"""Issue 22, class 2: ``zero_grad()`` inside a helper (``def reset_grad(): d_optimizer.zero_grad(); ...``).

The helper call in the loop clears gradients as the calls it holds do: it becomes the reset of the gradient
tuples (MindSpore's optimizers have no ``zero_grad``), so gradients do not pile up across steps. Generated
matrix: the helper's form (module function on one or two optimizers, on the model, ``set_to_none=True``,
with a docstring, a method called on ``self``) x the step (one backward: the fused TrainStep; two
backwards and two optimizers: a GAN-style block). Each case trains torch and the conversion from the same
weights on the same batches and compares the losses.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from requires_support import require_module
from script_support import load_script

from torch2ms.convert import convert_source

NETS = """
import torch
import torch.nn as nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 1)

    def forward(self, x):
        return self.lin(x)


class Gen(nn.Module):
    def __init__(self):
        super().__init__()
        self.gen_lin = nn.Linear(2, 3)

    def forward(self, z):
        return torch.tanh(self.gen_lin(z))
"""

HELPERS = {
    "two_optimizers": "d_opt.zero_grad()\ng_opt.zero_grad()",
    "set_to_none": "d_opt.zero_grad(set_to_none=True)\ng_opt.zero_grad(set_to_none=True)",
    "on_models": "D.zero_grad()\nG.zero_grad()",
    "docstring": '"""Clear both networks\' gradients."""\nd_opt.zero_grad()\ng_opt.zero_grad()',
}

ONE = """
losses = []
for x in batches:
    loss = (D(x) - x[:, :1]).pow(2).mean()
    {call}
    loss.backward()
    d_opt.step()
    losses.append(loss.item())
return losses
"""

TWO = """
losses = []
for x in batches:
    d_loss = (D(x) - 1).pow(2).mean() + D(G(x[:, :2]).detach()).pow(2).mean()
    {call}
    d_loss.backward()
    d_opt.step()
    g_loss = (D(G(x[:, :2])) - 1).pow(2).mean()
    {call}
    g_loss.backward()
    g_opt.step()
    losses.append([d_loss.item(), g_loss.item()])
return losses
"""


def _indent(text: str, n: int) -> str:
    return "\n".join((" " * n + ln) if ln else ln for ln in text.strip("\n").splitlines()) + "\n"


def _script(helper: str, step: str, where: str) -> str:
    body = HELPERS[helper]
    loop = ONE if step == "one" else TWO
    if where == "function":
        head = "D, G = Critic(), Gen()\nd_opt = torch.optim.SGD(D.parameters(), lr=0.1)\n"
        head += "g_opt = torch.optim.SGD(G.parameters(), lr=0.1)\n\n\n"
        return (
            NETS
            + head
            + "def reset_grad():\n"
            + _indent(body, 4)
            + "\n\ndef train(batches):\n"
            + _indent(loop.format(call="reset_grad()"), 4)
        )
    # a Trainer whose method clears the gradients: self.<name> everywhere
    body, loop = (re.sub(r"(?<![\w.])(d_opt|g_opt|D|G)(?=[.(])", r"self.\1", t) for t in (body, loop))
    init = "self.D, self.G = Critic(), Gen()\nself.d_opt = torch.optim.SGD(self.D.parameters(), lr=0.1)\n"
    init += "self.g_opt = torch.optim.SGD(self.G.parameters(), lr=0.1)\n"
    return (
        NETS
        + "\n\nclass Trainer:\n    def __init__(self):\n"
        + _indent(init, 8)
        + "\n    def reset_grad(self):\n"
        + _indent(body, 8)
        + "\n    def fit(self, batches):\n"
        + _indent(loop.format(call="self.reset_grad()"), 8)
        + "\n\ntrainer = Trainer()\nD, G = trainer.D, trainer.G\n\n\ndef train(batches):\n    return trainer.fit(batches)\n"
    )


CASES = list(itertools.product(HELPERS, ("one", "two"), ("function", "method")))


@pytest.mark.differential
@pytest.mark.parametrize(("helper", "step", "where"), CASES)
def test_zero_grad_in_a_helper_trains_as_torch(tmp_path, helper, step, where):
    torch = require_module("torch")
    ms = require_module("mindspore")
    from torch2ms.kb import load_kb
    from torch2ms.proof import copy_torch_weights

    src = _script(helper, step, where)
    conv = convert_source(src)
    assert not conv.error, conv.error
    loop = conv.code[conv.code.index("for x in batches") :]
    assert "reset_grad()" not in loop.split("#")[0] and "zero_grad" not in loop.split("#")[0], conv.code
    tag = f"zh_{helper}_{step}_{where}"
    (tmp_path / f"t_{tag}.py").write_text(src, encoding="utf-8")
    (tmp_path / f"m_{tag}.py").write_text(conv.code, encoding="utf-8")
    torch.manual_seed(0)
    t = load_script(tmp_path / f"t_{tag}.py", f"t2m_t_{tag}")
    m = load_script(tmp_path / f"m_{tag}.py", f"t2m_m_{tag}")
    copy_torch_weights(t.D, m.D, load_kb())
    copy_torch_weights(t.G, m.G, load_kb())
    rng = np.random.default_rng(5)
    data = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(4)]
    want = t.train([torch.from_numpy(x) for x in data])
    got = m.train([ms.Tensor(x) for x in data])
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-4, atol=1e-6)
