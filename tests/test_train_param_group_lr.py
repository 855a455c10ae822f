"""Issue 22, class 4 and its companion: a learning rate set by hand in a param group (warm-up and cosine
schedules written out: ``for g in optimizer.param_groups: g['lr'] = lr``), often a numpy float64
(``base_lr * 0.5 * (1 + np.cos(...))``). Converted, the assignment put a number where MindSpore's optimizer
keeps a Parameter: the step compiled before never read it and trained on at the first lr (the generator's
``sched=groups_np`` idiom: DIFFERENT from the first change on).

Every spelling of the assignment (a loop over the groups, an indexed group, double quotes, a helper
function ``adjust_learning_rate(optimizer, epoch)``, a method) × every kind of value (a Python float, a
numpy float64, a numpy expression, an int), each case on one of SGD, SGD with momentum and Adam in turn, runs in real
torch and, converted, on a MindSpore optimizer stepped by a compiled step: the same parameters after each
of several steps whose lr changes.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import convert_pair
from requires_support import require_module

pytestmark = pytest.mark.differential

VALUES = {
    "float": "0.05 / (step + 1)",
    "np_float64": "np.float64(0.04) * (step + 1)",
    "np_expr": "0.1 * 0.5 * (1 + np.cos(np.pi * step / 4))",
    "int_then_float": "1 if step == 0 else 0.01",
}
SPELLINGS = {
    "loop": ["for g in optimizer.param_groups:", "    g['lr'] = VALUE"],
    "indexed": ["optimizer.param_groups[0]['lr'] = VALUE"],
    "double_quotes": ["for param_group in optimizer.param_groups:", '    param_group["lr"] = VALUE'],
    "comprehension_read": [
        "lr = VALUE",
        "for g in optimizer.param_groups:",
        "    g['lr'] = lr",
        "_ = [g['lr'] for g in optimizer.param_groups]",
    ],
}
OPTIMIZERS = {
    "sgd": "torch.optim.SGD(params, lr=0.1)",
    "momentum": "torch.optim.SGD(params, lr=0.1, momentum=0.9)",
    "adam": "torch.optim.Adam(params, lr=0.01)",
}


def _source() -> str:
    lines = ["import numpy as np", "import torch", ""]
    for opt, ctor in OPTIMIZERS.items():
        lines += [f"def make_{opt}(params):", f"    return {ctor}", ""]
    for spelling, body in SPELLINGS.items():
        for value, expr in VALUES.items():
            lines.append(f"def adjust_{spelling}_{value}(optimizer, step):")
            lines += ["    " + line.replace("VALUE", expr) for line in body]
            lines.append("")
    lines += ["class Trainer:", "    def __init__(self, optimizer):", "        self.optimizer = optimizer", ""]
    lines += ["    def warmup(self, step):", "        for g in self.optimizer.param_groups:"]
    lines += ["            g['lr'] = np.float64(0.02) * min(1.0, (step + 1) / 2)", ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    tmod, mmod, code = convert_pair(_source(), tmp_path_factory.mktemp("group-lr"))
    return tmod, mmod, code


def _w0():
    rng = np.random.RandomState(3)
    return rng.randn(2, 3).astype(np.float32), rng.randn(4, 3).astype(np.float32), rng.randn(4, 2).astype(np.float32)


def _torch_run(tmod, opt: str, adjust):
    import torch

    w0, x, y = _w0()
    w = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    optimizer = getattr(tmod, f"make_{opt}")([w])
    out = []
    for step in range(4):
        adjust(optimizer, step)
        optimizer.zero_grad()
        loss = ((torch.from_numpy(x) @ w.t() - torch.from_numpy(y)) ** 2).mean()
        loss.backward()
        optimizer.step()
        out.append(w.detach().numpy().copy())
    return out


def _ms_run(mmod, opt: str, adjust):
    import mindspore as ms

    w0, x, y = _w0()
    w = ms.Parameter(ms.Tensor(w0.copy()), name="w")
    optimizer = getattr(mmod, f"make_{opt}")([w])
    xt, yt = ms.Tensor(x), ms.Tensor(y)

    def forward(xx, yy):
        return ((ms.ops.matmul(xx, w.T) - yy) ** 2).mean()

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)

    @ms.jit
    def train_step(xx, yy):
        loss, grads = grad_fn(xx, yy)
        optimizer(grads)
        return loss

    out = []
    for step in range(4):
        adjust(optimizer, step)
        train_step(xt, yt)  # compiled at the first step: later lr changes must still reach it
        out.append(w.asnumpy().copy())
    return out


# every spelling × every value, the optimizer turning with them (each optimizer meets every spelling and
# every value; the full product costs a compiled step per case)
CASES = [
    (spelling, value, list(OPTIMIZERS)[(i + j) % len(OPTIMIZERS)])
    for i, spelling in enumerate(SPELLINGS)
    for j, value in enumerate(VALUES)
]


@pytest.mark.parametrize(("spelling", "value", "opt"), CASES)
def test_i22_param_group_lr_set_by_hand_reaches_the_compiled_step(pair, spelling, value, opt):
    tmod, mmod, _ = pair
    name = f"adjust_{spelling}_{value}"
    want = _torch_run(tmod, opt, getattr(tmod, name))
    got = _ms_run(mmod, opt, getattr(mmod, name))
    for step, (t, m) in enumerate(zip(want, got, strict=True)):
        np.testing.assert_allclose(m, t, rtol=1e-5, atol=1e-6, err_msg=f"after step {step + 1}")


def test_i22_param_group_lr_in_a_method(pair):
    tmod, mmod, code = pair
    want = _torch_run(tmod, "momentum", lambda o, s: tmod.Trainer(o).warmup(s))
    got = _ms_run(mmod, "momentum", lambda o, s: mmod.Trainer(o).warmup(s))
    for t, m in zip(want, got, strict=True):
        np.testing.assert_allclose(m, t, rtol=1e-5, atol=1e-6)
    assert "['lr'] =" not in code and '["lr"] =' not in code
