"""Issue 23 §2.3: checkpoints with non-tensor entries survive the converted torch.save / torch.load.

The failure class: ``state_dict['mask_values'] = [0, 1]`` saved with the weights, or ``torch.save({'epoch':
3, 'model': sd, 'config': {...}}, p)``: ``mindspore.save_checkpoint`` dropped or refused the entries, so a
resumed run failed with KeyError. The converted code now keeps the tensors as checkpoint parameters and
the rest as one JSON string in the same file (runtime/checkpoints.py), and restores the object on load.

Matrix: entry kind (int, float, str, bool, None, list, tuple, nested dict, nested state dict) × how the
object is built (an entry set on a state dict / a dict literal / ``dict(...)``) × how it is loaded
(``torch.load(p)`` / with ``map_location``). Each converted save/load round trip gives what torch's gives.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

sys.path.insert(0, str(Path(__file__).parent))
from script_support import load_script

ENTRIES = {
    "int": "3",
    "float": "0.25",
    "str": "'unet'",
    "bool": "True",
    "none": "None",
    "list": "[0, 1]",
    "tuple": "(4, 'a', 1.5)",
    "config": "{'lr': 0.1, 'sizes': [1, 2], 'name': 'x', 'deep': {'k': None}}",
    "state": "model.state_dict()",
}
BUILDS = {
    "set_entry": "obj = model.state_dict()\n    obj['extra'] = {value}",
    "literal": "obj = {{'model': model.state_dict(), 'extra': {value}, 'epoch': 7}}",
    "dict_call": "obj = dict(model=model.state_dict(), extra={value}, epoch=7)",
}
LOADS = {"plain": "torch.load(path)", "map_location": "torch.load(path, map_location='cpu')"}

TEMPLATE = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


def round_trip(model, path):
    {build}
    torch.save(obj, path)
    return {load}
"""

CASES = list(itertools.product(ENTRIES, BUILDS, LOADS))


def _plain(value, torch, ms):
    """Tensors as numpy, the rest as is (tuples stay tuples)."""
    if isinstance(value, dict):
        return {k: _plain(v, torch, ms) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v, torch, ms) for v in value)
    if isinstance(value, torch.Tensor):
        return ("tensor", value.detach().numpy().tolist())
    if isinstance(value, ms.Tensor):
        return ("tensor", value.asnumpy().tolist())
    return value


@pytest.mark.differential
@pytest.mark.parametrize("case", CASES, ids="-".join)
def test_converted_checkpoint_keeps_every_entry(case, tmp_path):
    torch = require_module("torch")
    ms = require_module("mindspore")
    entry, build, load = case
    src = TEMPLATE.format(build=BUILDS[build].format(value=ENTRIES[entry]), load=LOADS[load])
    code = convert_source(src).code
    assert "not converted" not in code, code
    name = "_".join(case)
    (tmp_path / "t.py").write_text(src, encoding="utf-8")
    (tmp_path / "m.py").write_text(code, encoding="utf-8")
    tmod, mmod = load_script(tmp_path / "t.py", f"t2m_ck_t_{name}"), load_script(tmp_path / "m.py", f"t2m_ck_m_{name}")
    tnet, mnet = tmod.Net(), mmod.Net()
    for pname, p in mnet.parameters_and_names():
        p.set_data(ms.Tensor(tnet.state_dict()[pname].numpy()))
    want = _plain(tmod.round_trip(tnet, str(tmp_path / "t.pth")), torch, ms)
    got = _plain(mmod.round_trip(mnet, str(tmp_path / "m.pth")), torch, ms)
    assert got == want


def test_a_plain_state_dict_stays_a_plain_mindspore_checkpoint(tmp_path):
    """No extra entry: the file is what mindspore.save_checkpoint writes, no JSON key in it."""
    ms = require_module("mindspore")
    from torch2ms.runtime.checkpoints import EXTRA_KEY, load_checkpoint, save_checkpoint

    net = ms.nn.Dense(3, 2)
    save_checkpoint({n: p for n, p in net.parameters_and_names()}, str(tmp_path / "a.pth"))
    raw = ms.load_checkpoint(str(tmp_path / "a.pth.ckpt"))
    assert EXTRA_KEY not in raw and sorted(raw) == ["bias", "weight"]
    assert sorted(load_checkpoint(str(tmp_path / "a.pth"))) == ["bias", "weight"]
    with pytest.raises(TypeError, match="set"):
        save_checkpoint({"weight": net.weight, "bad": {1, 2}}, str(tmp_path / "b.pth"))
    np.testing.assert_array_equal(raw["weight"].asnumpy(), net.weight.asnumpy())


NET = """import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)
"""


@pytest.mark.differential
@pytest.mark.parametrize("layout", ["state_dict_with_extras", "wrapped_with_extras"])
def test_compare_weights_accepts_what_torch2ms_weights_accepts(layout, tmp_path):
    """A torch checkpoint with non-tensor entries: `torch2ms weights` converts it, and `compare --weights`
    loads it too (it refused it: "no state dict of tensors"), naming the entries it left out."""
    torch = require_module("torch")
    require_module("mindspore")
    from torch2ms.align import CompareOptions, compare_models
    from torch2ms.convert import convert_tree
    from torch2ms.weights import convert_checkpoint

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "net.py").write_text(NET, encoding="utf-8")
    convert_tree(str(tmp_path / "t"), str(tmp_path / "m"))
    mod = load_script(tmp_path / "t" / "net.py", f"t2m_ckw_{layout}")
    torch.manual_seed(3)
    sd = mod.Net().state_dict()
    extras = {"mask_values": [0, 1], "epoch": 4, "name": "unet", "config": {"lr": 0.1}}
    obj = {**sd, **extras} if layout == "state_dict_with_extras" else {"model": sd, **extras}
    torch.save(obj, tmp_path / "w.pth")
    convert_checkpoint(str(tmp_path / "w.pth"), str(tmp_path / "w.ckpt"))
    assert (tmp_path / "w.ckpt").stat().st_size > 0
    opts = CompareOptions(weights=str(tmp_path / "w.pth"), input_shapes=[(2, 3)], graph=False)
    rep = compare_models(f"{tmp_path}/t/net.py:Net", f"{tmp_path}/m/net.py:Net", opts)
    assert rep.status == "match", rep.first_divergence
    load = rep.weights["torch_load"]
    assert load["missing"] == [] and load["unexpected"] == []
    if layout == "state_dict_with_extras":
        assert load["not_tensors"] == sorted(extras)
