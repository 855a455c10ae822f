"""replay compares a call torch answers with None by the tensor it changed (issue 25).

On the kit, makemore's ``x[:, 0] = 27`` and segment-anything's prompt encoder (``coords[:, :, 0] = ...``,
``pe[labels == -1] = 0.0``, ``pe[labels == 0] += w``) were reported beyond tolerance (error inf): torch's
``__setitem__`` returns None, MindSpore's the tensor, and the two return values were compared. The class:
item assignment over the key forms (int, slices, an Ellipsis, a boolean mask, an integer index tensor) and
value forms (a Python number, a tensor that broadcasts, an in-place add), in a module's forward and in a
helper function of the file. Recorded and regenerated inputs; a broken __setitem__ rule is still caught.
"""

from __future__ import annotations

import dataclasses
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.differential

KEYS = {
    "int": "0",
    "slices": "(slice(None), 1)",
    "ellipsis": "(Ellipsis, 2)",
    "mask": "x > 0.5",
    "index": "torch.tensor([0, 2])",
}
VALUES = {"number": "27.0", "tensor": "torch.ones(1) * 3", "add": None}
LOCATIONS = ["forward", "helper"]


def _source(key: str, value: str, location: str) -> str:
    k = KEYS[key]
    body = f"y[{k}] += 1.5\n" if VALUES[value] is None else f"y[{k}] = {VALUES[value]}\n"
    helper = "def change(x, y):\n" + textwrap.indent(body, "    ") + "    return y\n\n\n"
    call = "y = change(x, y)" if location == "helper" else body.strip()
    return (
        "import torch\nimport torch.nn as nn\n\n\n"
        + helper
        + "class Net(nn.Module):\n    def forward(self, x):\n        y = x.clone()\n"
        + f"        {call}\n        return y * 2\n"
    )


@pytest.mark.parametrize("location", LOCATIONS)
@pytest.mark.parametrize("value", sorted(VALUES))
@pytest.mark.parametrize("key", sorted(KEYS))
def test_item_assignment_is_compared_by_the_receiver(tmp_path, key, value, location):
    from torch2ms.align.torch_worker import build_model
    from torch2ms.kb import KB, load_kb
    from torch2ms.replay.record import record_calls
    from torch2ms.replay.run import replay

    (tmp_path / "m.py").write_text(_source(key, value, location), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        model = build_model({"torch": f"{tmp_path / 'm.py'}:Net()", "seed": 0}).eval()
    finally:
        sys.path.remove(str(tmp_path))
    x = np.random.default_rng(0).random((3, 4)).astype(np.float32)
    log = record_calls(model, [x])
    configs = list(log.configs.values())
    assert any(c.api == "torch.Tensor.__setitem__" for c in configs), [c.call for c in configs]
    for regenerate in (False, True):
        rep = replay(configs, regenerate=regenerate)
        assert rep.failing() == [], [(r.config.call, r.ms_call, r.error, r.detail) for r in rep.failing()]
        assert any(r.config.api == "torch.Tensor.__setitem__" and r.status == "ok" for r in rep.results)
    kb = load_kb()
    setitem = kb.get("torch.Tensor.__setitem__")
    wrong = dataclasses.replace(setitem, status="composite", template="{self}.__setitem__({key}, {value} * 2)")
    broken = replay(configs, kb=KB([wrong if e is setitem else e for e in kb]))
    assert {r.config.api for r in broken.failing()} == {"torch.Tensor.__setitem__"}, broken.to_dict()
