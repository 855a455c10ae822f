"""R11 / issue 12: a loop local the forward reads on one branch only (word_language_model's ``hidden``,
assigned under ``if args.model != 'Transformer'``) becomes a forward_fn argument, so the converted loop
reads it at every call; a guard before the loop binds it to None where torch left it unbound (the
converted script raised UnboundLocalError for the Transformer). Names bound on every path get no guard.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import textwrap

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source
from torch2ms.convert.constructs.training.bindings import maybe_unbound

SCRIPT = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, state):
        h = torch.tanh(self.lin(x) + state)
        return h, h


def train(model, data, steps, stateful):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if stateful:
        state = torch.zeros(3, 4)
    losses = []
    for it in range(steps):
        x = data[it]
        if stateful:
            state = state.detach()
            out, state = model(x, state)
        else:
            out = model(x, torch.ones(3, 4))[0]
        loss = (out - 0.5).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
"""

GUARD = 'state = state if "state" in locals() else None'


def _convert(src: str) -> str:
    res = convert_source(textwrap.dedent(src))
    assert res.error is None, res.error
    return res.code


def test_r11_local_bound_on_one_branch_gets_a_guard_before_the_loop():
    code = _convert(SCRIPT)
    assert code.count(GUARD) == 1
    assert code.index(GUARD) < code.index("for it in range(steps):")
    assert code.index("    if stateful:\n        state = ") < code.index(GUARD)  # after torch's own binding


def test_r11_local_bound_on_every_path_gets_no_guard():
    bound_both = SCRIPT.replace(
        "    if stateful:\n        state = torch.zeros(3, 4)\n",
        "    if stateful:\n        state = torch.zeros(3, 4)\n    else:\n        state = torch.ones(3, 4)\n",
    )
    assert "locals()" not in _convert(bound_both)


@pytest.mark.parametrize(
    ("src", "unbound"),
    [
        ("def f(a):\n    for i in a:\n        g(i, a)\n", []),  # arguments and loop targets
        ("def f(a):\n    if a:\n        h = 1\n    for i in a:\n        g(h)\n", ["h"]),
        ("def f(a):\n    if a:\n        h = 1\n    else:\n        h = 2\n    for i in a:\n        g(h)\n", []),
        ("def f(a):\n    for k in a:\n        h = k\n    for i in a:\n        g(h)\n", ["h"]),  # may run 0 times
        ("h = 1\ndef f(a):\n    for i in a:\n        g(h)\n", ["h"]),  # another scope's binding
        ("import h\nwith a as b:\n    g(h, b)\n", []),
    ],
)
def test_r11_maybe_unbound_follows_every_path(src, unbound):
    tree = ast.parse(src)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Expr))
    names = sorted({n.id for n in ast.walk(call) if isinstance(n, ast.Name)} - {"g"})
    assert maybe_unbound(tree, call, names) == unbound


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.differential
@pytest.mark.parametrize("stateful", [False, True])
def test_r11_loop_with_a_branch_only_local_trains_like_torch(tmp_path, stateful):
    ms = require_module("mindspore")
    torch = require_module("torch")
    from torch2ms.kb import load_kb
    from torch2ms.proof import copy_torch_weights

    (tmp_path / "t.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "m.py").write_text(_convert(SCRIPT), encoding="utf-8")
    names = (f"t2m_unbound_t_{stateful}", f"t2m_unbound_m_{stateful}")
    tmod, mmod = _load(tmp_path / "t.py", names[0]), _load(tmp_path / "m.py", names[1])
    try:
        torch.manual_seed(0)
        tnet, mnet = tmod.Net(), mmod.Net()
        copy_torch_weights(tnet, mnet, load_kb())
        data = np.random.default_rng(0).standard_normal((5, 3, 4)).astype(np.float32)
        expected = np.array(tmod.train(tnet, torch.from_numpy(data), 5, stateful))
        got = np.array(mmod.train(mnet, ms.Tensor(data), 5, stateful))
    finally:
        for name in names:
            sys.modules.pop(name, None)
    rel = np.abs(got - expected) / np.abs(expected)
    assert rel.max() <= 1e-4, f"max rel {rel.max():.2e}: {list(zip(expected, got))}"
