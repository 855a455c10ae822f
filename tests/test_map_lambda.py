"""Issue 24, class 6: ``map(lambda ...)`` / ``filter(lambda ...)`` in a forward (mlp-mixer's
permutator: ``sum(map(lambda fn: fn(x), self.fns))``). GRAPH_MODE compiles no lambda reading a variable
of its function ("The Map operator don't support Closure with free variable yet"); the converter writes
the list comprehension that yields the same sequence.

A generated matrix: map over a ModuleList, a tuple, two iterables (zip), filter; consumed by ``sum``,
``list``, ``tuple``, unpacking, a ``for`` loop and indexing; written in forward and in a method forward
calls: equal to torch in PyNative and GRAPH_MODE. A ``for`` over a map whose lambda reads a name the
loop body rebinds stays lazy (a list would be computed before the first rebinding): PyNative only.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

EXPRESSIONS = {
    "sum_modules": "sum(map(lambda fn: fn(x), self.fns))",
    "list_index": "list(map(lambda fn: fn(x) * 2, self.fns))[1]",
    "tuple_scale": "tuple(map(lambda t: t * scale, (x, x + 1)))[0]",
    "unpack": "self._unpacked(x)",
    "zip_two": "sum(map(lambda fn, t: fn(t), self.fns, (x, x * 0.5)))",
    "filter_shape": "sum(filter(lambda t: t.shape[-1] == 4, (x, self.fns[0](x))))",
    "for_loop": "self._looped(x)",
    "for_loop_lazy": "self._lazy(x)",
}
SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fns = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def _unpacked(self, x):
        q, k = map(lambda fn: fn(x), self.fns)
        return q * k

    def _looped(self, x):
        out = x
        for y in map(lambda fn: torch.tanh(fn(x)), self.fns):
            out = out + y
        return out

    def _lazy(self, x):
        out = x
        for y in map(lambda fn: torch.tanh(fn(out)), self.fns):
            out = out + y
        return out

    def forward(self, x):
        scale = 3.0
        return {expr}
"""


@pytest.mark.parametrize("form", EXPRESSIONS)
def test_map_and_filter_of_lambdas_match_torch_in_both_modes(tmp_path, form):
    import mindspore as ms
    import torch

    tmod, mmod, code = convert_pair(SOURCE.format(expr=EXPRESSIONS[form]), tmp_path)
    assert (
        "lambda" not in code.split("def construct")[1]
        and "lambda" not in code.split("def _unpacked")[1].split("def _lazy")[0]
    ), code
    assert "map(lambda fn: ops.tanh(fn(out))" in code  # the loop body rebinds what the lambda reads: kept lazy
    modes = ("PYNATIVE_MODE",) if form == "for_loop_lazy" else ("PYNATIVE_MODE", "GRAPH_MODE")
    torch.manual_seed(0)
    tnet = tmod.Net().eval()
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x))
    weights = {k: v.numpy() for k, v in tnet.state_dict().items()}
    for mode in modes:
        with ms_mode(mode):
            mnet = mmod.Net()
            for p in mnet.get_parameters():
                p.set_data(ms.Tensor(weights[p.name]))
            got = mnet(ms.Tensor(x))
        assert relative_error(expected, got) <= 1e-5, (mode, code)
