"""R6 (issue 13): where the source shows an argument is an int, the converter writes the simple form a person
would (``nn.LayerNorm(n_embd)`` → ``nn.LayerNorm((n_embd,), epsilon=1e-05)``); where it cannot be shown (an
unannotated parameter, a config attribute, a name rebound by a loop) it keeps the run-time form, which is right
for ints and sequences alike. The simple form is run against torch on the same input."""

from __future__ import annotations

import ast
import textwrap

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.analysis.int_names import function_int_names, module_int_names
from torch2ms.convert import convert_source

SOURCE = textwrap.dedent("""
    import torch.nn as nn

    N_EMBD = 6
    HIDDEN = 2 * N_EMBD - 4


    class Block(nn.Module):
        def __init__(self, width: int, other=6, cfg=None):
            super().__init__()
            inner = width + 2
            self.a = nn.LayerNorm(width)
            self.b = nn.LayerNorm(other)
            self.c = nn.LayerNorm(N_EMBD)
            self.d = nn.LayerNorm(inner)
            self.f = nn.LayerNorm(HIDDEN)

        def forward(self, x, y):
            return self.a(x) + self.b(x) + self.c(x), self.d(y), self.f(y[..., :8])


    class Loop(nn.Module):
        def __init__(self, width: int, cfg=None):
            super().__init__()
            for width in (1, 2):
                pass
            self.a = nn.LayerNorm(width)
            self.e = nn.LayerNorm(cfg.n_embd)
""")
RUNTIME_FORM = "isinstance("


def test_r6_names_shown_int_by_the_source():
    tree = ast.parse(SOURCE)
    module_ints = module_int_names(tree)
    assert module_ints == {"N_EMBD", "HIDDEN"}
    block, loop = (n for n in tree.body if isinstance(n, ast.ClassDef))
    init = block.body[0]
    assert function_int_names(init, module_ints) == {"width", "inner", "N_EMBD", "HIDDEN"}
    assert "width" not in function_int_names(loop.body[0], module_ints)  # rebound by the loop


def test_r6_layernorm_of_an_int_name_is_the_simple_form():
    converted = convert_source(SOURCE)
    assert not converted.error, converted.error
    simple = [ln for ln in converted.code.splitlines() if "nn.LayerNorm((" in ln and RUNTIME_FORM not in ln]
    runtime = [ln for ln in converted.code.splitlines() if "nn.LayerNorm(" in ln and RUNTIME_FORM in ln]
    assert [ln.strip() for ln in simple] == [
        "self.a = nn.LayerNorm((width,), epsilon=1e-05)",
        "self.c = nn.LayerNorm((N_EMBD,), epsilon=1e-05)",
        "self.d = nn.LayerNorm((inner,), epsilon=1e-05)",
        "self.f = nn.LayerNorm((HIDDEN,), epsilon=1e-05)",
    ]
    # not shown to be an int: an unannotated parameter, a loop-rebound name, a config attribute
    assert [ln.strip().split(" = ")[0] for ln in runtime] == ["self.b", "self.a", "self.e"]


@pytest.mark.differential
def test_r6_simple_layernorm_form_runs_like_torch():
    torch = require_module("torch")
    ms = require_module("mindspore")
    converted = convert_source(SOURCE)
    tns: dict = {}
    exec(compile(SOURCE, "<torch block>", "exec"), tns)
    mns: dict = {}
    exec(compile(converted.code, "<converted block>", "exec"), mns)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 6)).astype(np.float32)
    y = rng.standard_normal((2, 3, 8)).astype(np.float32)
    torch.manual_seed(0)
    net = tns["Block"](6)
    with torch.no_grad():  # not the default ones/zeros: a weight that is not carried over shows
        for p in net.parameters():
            p.copy_(torch.randn_like(p))
    expected = [t.detach().numpy() for t in net(torch.from_numpy(x), torch.from_numpy(y))]
    port = mns["Block"](6)
    torch_params = [p.detach().numpy() for p in net.parameters()]
    for param, value in zip(port.get_parameters(), torch_params):
        param.set_data(ms.Tensor(value))
    got = [t.asnumpy() for t in port(ms.Tensor(x), ms.Tensor(y))]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


CONFIG_SOURCE = textwrap.dedent("""
    from dataclasses import dataclass

    import torch.nn as nn


    @dataclass
    class Config:
        n_embd: int = 32
        name: str = "gpt"


    class Block(nn.Module):
        def __init__(self, config: Config):
            super().__init__()
            self.ln = nn.LayerNorm(config.n_embd)


    class Rebinds(nn.Module):
        def __init__(self, config: Config):
            super().__init__()
            config = make(config)
            self.ln = nn.LayerNorm(config.n_embd)
""")


def test_r6_dataclass_field_declared_int_is_the_simple_form():
    code = convert_source(CONFIG_SOURCE).code
    layernorms = [ln.strip() for ln in code.splitlines() if "nn.LayerNorm(" in ln]
    assert layernorms[0] == "self.ln = nn.LayerNorm((config.n_embd,), epsilon=1e-05)"
    assert RUNTIME_FORM in layernorms[1]  # the parameter is rebound: its type is no longer shown
