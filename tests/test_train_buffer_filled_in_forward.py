"""A tensor made after the forward starts and filled item by item inside it (seq2seq's
``encoder_outputs = torch.zeros(...)`` then ``encoder_outputs[ei] = out[0, 0]``) stays in ``forward_fn``:
as a step argument MindSpore refuses the assignment ("Can not modify tensor id of input tensor"). The
draws that only feed the forward (a WGAN-GP's ``alpha``) still leave it (tests/test_train_gradient_penalty.py)."""

from __future__ import annotations

import itertools
import re

import pytest
from matrix_support import convert_cases

MAKE = {"zeros": "torch.zeros(4, 3)", "empty": "torch.empty(4, 3)", "new_zeros": "out.new_zeros(4, 3)"}
STORE = {
    "item": "buf[i] = out[i]",
    "aug": "buf[i] += out[i]",
    "slice": "buf[i, :] = out[i]",
    "nested": "buf[i][0] = out[i][0]",
}
CASES = list(itertools.product(MAKE, STORE))

SCRIPT = """import torch
import torch.nn as nn

encoder, decoder = nn.Linear(3, 3), nn.Linear(3, 3)
enc_opt = torch.optim.SGD(encoder.parameters(), lr=0.1)
dec_opt = torch.optim.SGD(decoder.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(4, 3)
    enc_opt.zero_grad()
    dec_opt.zero_grad()
    out = encoder(x)
    buf = {make}
    for i in range(4):
        {store}
    loss = decoder(buf).sum()
    loss.backward()
    enc_opt.step()
    dec_opt.step()
"""


def _script(make: str, store: str) -> str:
    return SCRIPT.format(make=MAKE[make], store=STORE[store])


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    return convert_cases(tmp_path_factory.mktemp("buffers"), CASES, _script)


# Open (found at the stop of session 25): a buffer made by a torch factory after two optimizers' zero_grad
# still becomes forward_fn's argument in the general step; only seq2seq's spelling is fixed (kit tu_seq2seq).
OPEN = pytest.mark.xfail(strict=True, reason="factory-made buffer still a step argument in the general step")
PARAMS = [pytest.param(*c, id="-".join(c), marks=[OPEN] if c[0] != "new_zeros" else []) for c in CASES]


@pytest.mark.parametrize(("make", "store"), PARAMS)
def test_buffer_filled_inside_the_forward_is_not_a_step_argument(converted, make, store):
    out = converted[(make, store)]
    params = re.findall(r"def forward_fn\(([^)]*)\)", out)
    assert params, out
    assert all("buf" not in p for p in params), out
