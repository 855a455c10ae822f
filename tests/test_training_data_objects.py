"""R11 / issue 12: a batch drawn from an object of a data-only class of the file (makemore's
``InfiniteDataLoader``: ``batch = batch_loader.next()``) stays in the loop, outside the compiled step
(inside ``@ms.jit`` its ``try``/``next()`` does not compile); a class that reads the model does not.
A comprehension's own variable (``[t.to(d) for t in batch]``) is not a loop local.
"""

from __future__ import annotations

import textwrap

import pytest

from torch2ms.convert import convert_source

LOOP = """
import torch
import torch.nn as nn

model = nn.Linear(3, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


{cls}


batch_loader = Batches(torch.randn(20, 3))
for step in range(4):
    batch = batch_loader.next()
    batch = [t.float() for t in batch]
    (x,) = batch
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

DATA_ONLY = '''class Batches:
    """Rows in turn, again from the start when they run out."""

    def __init__(self, data):
        self.data, self.at = data, 0

    def next(self):
        try:
            row = self.data[self.at:self.at + 4]
        except IndexError:
            row = self.data[:4]
        self.at = (self.at + 4) % 20
        return [row]'''


def _forward_fn(code: str) -> str:
    start = code.index("def forward_fn")
    return code[start : code.index("return", start)]


def test_r11_batch_from_a_data_only_object_stays_in_the_loop():
    code = convert_source(textwrap.dedent(LOOP.format(cls=DATA_ONLY))).code
    assert "batch_loader.next()" not in _forward_fn(code)
    assert "def forward_fn(x):" in code  # the comprehension's t is not an argument
    loop = code[code.index("for step in range(4):") :]
    assert loop.index("batch = batch_loader.next()") < loop.index("train_step(x)")


@pytest.mark.parametrize(
    "change",
    [
        ("return [row]", "return [model(row)]"),  # reads the model: its output depends on the parameters
        ("class Batches:", "class Batches(nn.Module):"),  # a module
        ("row = self.data[:4]", "row = helper(self.data)"),  # calls code of the file it cannot see through
    ],
)
def test_r11_objects_that_touch_the_model_or_unseen_code_stay_in_the_step(change):
    cls = DATA_ONLY.replace(*change)
    code = convert_source(textwrap.dedent(LOOP.format(cls=f"def helper(d):\n    return d\n\n\n{cls}"))).code
    assert "batch_loader.next()" in _forward_fn(code)
