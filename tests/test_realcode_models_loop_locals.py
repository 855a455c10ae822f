"""Issue 11, class 8 (R6, R27): a local first set inside a loop of forward and read after it.

An LSTMCell unrolled over the input's time steps, then ``future`` more steps fed from the last
output of the first loop (the time-sequence-prediction idiom), the loop variable itself read after
its loop, and a while loop: GRAPH_MODE refuses each read unless the name is defined before its
loop. The converted model defines it as None there (never read: the loop sets it) and matches torch
in PyNative and GRAPH_MODE; a name bound before the loop keeps its value."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Sequence(nn.Module):
        def __init__(self, hidden=8):
            super().__init__()
            self.hidden = hidden
            self.cell = nn.LSTMCell(1, hidden)
            self.lin = nn.Linear(hidden, 1)

        def forward(self, x, future=0):
            outs = []
            h = torch.zeros(x.size(0), self.hidden)
            c = torch.zeros(x.size(0), self.hidden)
            for x_t in x.split(1, dim=1):
                h, c = self.cell(x_t, (h, c))
                out = self.lin(h)
                outs += [out]
            for i in range(future):
                h, c = self.cell(out, (h, c))
                out = self.lin(h)
                outs += [out]
            n = 0
            while n < 2:
                n += 1
                last = outs[-n]
            return torch.cat(outs, dim=1), last * x_t
    """)

BOUND_BEFORE = textwrap.dedent("""\
    import torch.nn as nn


    class Net(nn.Module):
        def forward(self, x, steps=2):
            out = x
            for _ in range(steps):
                out = out * 2
            if steps:
                for k in range(steps):
                    y = out + k
            return out, y
    """)


def test_r6_loop_local_read_after_the_loop_is_defined_before_it():
    code = convert_source(SOURCE, "seq.py").code
    body = code.split("def construct")[1]
    assert body.index("out = None") < body.index("for x_t in") and "x_t = None" in body
    assert body.index("last = None") < body.index("while n < 2")
    assert "out = None" not in body.split("for x_t in")[1]  # the second loop reads the first one's value


def test_r6_loop_local_bound_before_or_in_a_nested_loop_is_left_alone():
    code = convert_source(BOUND_BEFORE, "net.py").code
    assert "= None" not in code


@pytest.mark.slow
def test_r27_unrolled_cell_with_future_steps_matches_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(SOURCE, tmp_path)
    torch.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    errors = compare_modes(tmod.Sequence(), mmod.Sequence, [x], tmp_path, call=lambda net, xs: net(xs[0], 3))
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors


COMPREHENSION_AFTER = textwrap.dedent("""\
    import torch.nn as nn


    class Net(nn.Module):
        def groups(self):
            names = set()
            for mn, m in self.named_modules():
                for pn, p in m.named_parameters():
                    names.add(mn + pn)
            return {pn: p for pn, p in self.named_parameters() if pn in names}
    """)


def test_r6_comprehension_targets_after_the_loop_are_not_reads():
    code = convert_source(COMPREHENSION_AFTER, "net.py").code
    assert "= None" not in code
