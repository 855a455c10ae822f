"""Issue 21 §3: ``x.to(DEVICE)`` where ``DEVICE = torch.device(...)`` converted to ``x.astype(DEVICE.dtype)``
(pytorch/examples language_translation): the device test of ``Tensor.to``'s argument read ``device`` /
``dev`` / ``cuda`` / ``cpu`` case-sensitively, so an upper-case name was taken for a tensor whose dtype to
copy — a cast no one writes, and an AttributeError at run time (a Device has no dtype).

A generated matrix of device spellings (module constant, class attribute, argparse-style attribute, upper,
title and lower case) × receivers (a torch call chain, a parameter after a cast), converted and run in
MindSpore against torch: the values and the dtype are torch's, and no ``.dtype`` of a device is read. A
tensor argument (``x.to(other)``) still copies the other tensor's dtype.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from rc_models_support import convert_pair, relative_error
from requires_support import require_modules

pytestmark = pytest.mark.differential

DEVICES = {
    "DEVICE": "DEVICE",
    "Device": "Device",
    "TORCH_DEVICE": "TORCH_DEVICE",
    "DEV": "DEV",
    "class_attr": "Cfg.DEVICE",
    "args_attr": "args.Device",
    "lower": "device",
}
RECEIVERS = {
    "torch_chain": "torch.ones(2, 3).type(torch.long).to({d}) + x.long()",
    "cast_parameter": "x.double().to({d}) * 2",
}
SOURCE = """\
import types

import torch

DEVICE = Device = TORCH_DEVICE = DEV = device = torch.device("cpu")


class Cfg:
    DEVICE = torch.device("cpu")


args = types.SimpleNamespace(Device=torch.device("cpu"))


def f(x, other):
    box = types.SimpleNamespace(t=other)
    return {expr}
"""


@pytest.mark.parametrize(("device", "receiver"), list(itertools.product(DEVICES, RECEIVERS)))
def test_a_device_name_in_any_case_is_dropped(tmp_path, device, receiver):
    require_modules("torch", "mindspore")
    import mindspore as ms
    import torch

    expr = RECEIVERS[receiver].format(d=DEVICES[device])
    tmod, mmod, code = convert_pair(SOURCE.format(expr=expr), tmp_path, allow_marks=True)
    assert f"{DEVICES[device]}.dtype" not in code, code
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    expected = tmod.f(torch.from_numpy(x), None)
    got = mmod.f(ms.Tensor(x), None)
    assert relative_error(expected, got) == 0.0
    assert str(expected.dtype).rsplit(".", 1)[-1] == str(got.dtype).lower(), (expected.dtype, got.dtype)


@pytest.mark.parametrize("other", ["other", "box.t"])
def test_a_tensor_argument_still_gives_its_dtype(tmp_path, other):
    require_modules("torch", "mindspore")
    import mindspore as ms
    import torch

    source = SOURCE.format(expr=f"torch.ones(2, 3).to({other}) + x.int()")
    tmod, mmod, code = convert_pair(source, tmp_path, allow_marks=True)
    assert f"{other}.dtype" in code, code
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    expected = tmod.f(torch.from_numpy(x), torch.zeros(1, dtype=torch.int32))
    got = mmod.f(ms.Tensor(x), ms.Tensor(np.zeros(1, np.int32)))
    assert relative_error(expected, got) == 0.0 and str(got.dtype) == "Int32"
