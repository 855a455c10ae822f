"""Issue 24: ``kl_divergence`` where GRAPH_MODE compiles is marked by the converter (the runtime's dispatch on
the distributions' classes does not compile inside construct: tests/test_runtime_graph_mode.py proves the
failure in NOT_COMPILED). A generated matrix: every import spelling × where the call sits (forward, a method
forward calls: marked, with the line in the report; ``__init__``, a method forward does not call: not marked,
and the unmarked call runs in PyNative equal to torch)."""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import convert_pair

from torch2ms.convert import convert_source

SPELLINGS = {
    "from_package": ("from torch.distributions import Normal, kl_divergence", "kl_divergence"),
    "from_kl": (
        "from torch.distributions import Normal\nfrom torch.distributions.kl import kl_divergence",
        "kl_divergence",
    ),
    "module_alias": ("import torch.distributions as D\nfrom torch.distributions import Normal", "D.kl_divergence"),
    "kl_module": ("import torch.distributions as D\nfrom torch.distributions import Normal", "D.kl.kl_divergence"),
    "full_name": ("from torch.distributions import Normal", "torch.distributions.kl_divergence"),
}
PLACES = {"forward": True, "helper": True, "init": False, "other": False}

SOURCE = """\
import torch
import torch.nn as nn
{imports}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.k0 = {init}

    def helper(self, x):
        return {helper}

    def other(self, x):
        return {other}

    def forward(self, x):
        return self.helper(x) + {forward}
"""


def _source(spelling: str, place: str) -> str:
    imports, kl = SPELLINGS[spelling]
    call = f"{kl}(Normal(x, 1.0), Normal(0.5, 2.0))"
    fields = {"init": "0.0", "helper": "x", "other": "x", "forward": "x"}
    fields[place] = call.replace("(x, 1.0)", "(0.0, 1.0)") if place == "init" else call
    return SOURCE.format(imports=imports, **fields)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_kl_divergence_marked_where_graph_mode_compiles(spelling, place):
    res = convert_source(_source(spelling, place), "net.py")
    assert res.error is None, res.error
    marked = [c for c in res.changes if c.action == "review" and "kl_divergence in construct" in c.note]
    line = {"forward": 19, "helper": 13, "init": 10, "other": 16}[place] + SPELLINGS[spelling][0].count("\n")
    assert [c.line for c in marked] == ([line] if PLACES[place] else []), (res.changes, res.code)
    assert ("dispatches on the distributions' classes" in res.code) == PLACES[place], res.code


@pytest.mark.differential
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_unmarked_kl_divergence_equals_torch(tmp_path, spelling):
    import mindspore as ms
    import torch

    tmod, mmod, _ = convert_pair(_source(spelling, "other"), tmp_path)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    expected = tmod.Net().other(torch.from_numpy(x)).numpy()
    got = mmod.Net().other(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
