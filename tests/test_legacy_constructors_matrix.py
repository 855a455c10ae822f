"""Issue 23, crash class "legacy constructor refuses an argument form": ``torch.LongTensor(range(n))``
became ``mindspore.Tensor(input_data=range(n), ...)`` ("got type 'range'"), a generator argument
gave invalid Python. Every legacy constructor × every argument form × where the call lives
(a function, a Module's ``__init__``, its ``forward``) runs in real torch and, converted, in real
MindSpore: the same values and dtype (the same shape and dtype for the size form, whose memory is
uninitialised in torch). Forms torch itself refuses are left out of the comparison but must still
convert to valid Python."""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import convert_pair
from requires_support import require_module

pytestmark = pytest.mark.differential

CTORS = ["FloatTensor", "LongTensor", "DoubleTensor", "IntTensor", "BoolTensor", "ByteTensor", "Tensor"]
# name → expression (``n`` is an int parameter of unknown type to the converter, ``C`` the constructor)
FORMS = {
    "sizes": "C(2, 3)",
    "one_int": "C(4)",
    "int_param": "C(n)",
    "star_sizes": "C(*[n, 2])",
    "list": "C([1, 0, 1])",
    "tuple": "C((1, 0))",
    "range": "C(range(n))",
    "range_literal": "C(range(3))",
    "numpy": "C(np.array([1, 0, 1]))",
    "generator": "C(x % 2 for x in range(n))",
    "list_of_generator": "C(list(x % 2 for x in range(n)))",
    "map": "C(map(int, [1, 0]))",
    "nested": "C([[1, 0], [0, 1]])",
    "tensor": "C(C([1, 0]))",
    "tensor_name": "C(self_t)",
}
SIZE_FORMS = {"sizes", "one_int", "int_param", "star_sizes"}


def _source() -> str:
    lines = ["import numpy as np", "import torch", "import torch.nn as nn", ""]
    for ctor in CTORS:
        for form, expr in FORMS.items():
            e = expr.replace("C(", f"torch.{ctor}(")
            lines += [f"def f_{ctor}_{form}(n):", f"    self_t = torch.{ctor}([1, 0])", f"    return {e}", ""]
    lines += ["class M(nn.Module):", "    def __init__(self, n):", "        super().__init__()"]
    for ctor in CTORS:
        lines.append(f"        self.{ctor}_range = torch.{ctor}(range(n))")
        lines.append(f"        self.{ctor}_sorted = torch.{ctor}(sorted({{1, 0}}))")
    lines += ["", "    def forward(self, n):", "        return ["]
    lines += [f"            torch.{ctor}(range(n))," for ctor in CTORS]
    lines += ["        ]", ""]
    return "\n".join(lines)


def _torch_or_none(fn, *args):
    try:
        return fn(*args)
    except (TypeError, RuntimeError):
        return None  # torch refuses this form (a generator, a tensor of another dtype)


def _same(t, m, shape_only: bool) -> None:
    assert tuple(m.shape) == tuple(t.shape)
    assert str(m.dtype).lower().replace("bool_", "bool") == str(t.dtype).replace("torch.", "").lower()
    if not shape_only:
        np.testing.assert_array_equal(m.asnumpy(), t.numpy())


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    tmod, mmod, code = convert_pair(_source(), tmp_path_factory.mktemp("legacy"))
    return tmod, mmod, code


@pytest.mark.parametrize(("form", "ctor"), product(list(FORMS), CTORS, pairs=False))
def test_legacy_constructor_form_matches_torch(pair, ctor, form):
    tmod, mmod, _ = pair
    name = f"f_{ctor}_{form}"
    t = _torch_or_none(getattr(tmod, name), 3)
    m = getattr(mmod, name)(3) if t is not None else None
    if t is None:
        return  # torch refuses it: the converted file still imported (valid Python), nothing to match
    _same(t, m, shape_only=form in SIZE_FORMS)


def test_legacy_constructor_in_module_init_and_forward_matches_torch(pair):
    tmod, mmod, _ = pair
    tnet, mnet = tmod.M(4), mmod.M(4)
    for ctor in CTORS:
        for kind in ("range", "sorted"):
            _same(getattr(tnet, f"{ctor}_{kind}"), getattr(mnet, f"{ctor}_{kind}"), shape_only=False)
    for t, m in zip(tnet(3), mnet(3), strict=True):
        _same(t, m, shape_only=False)


def test_iterable_forms_go_through_the_runtime_helper(pair):
    code = pair[2]
    assert "input_data=range(" not in code and "input_data=map(" not in code
    assert "legacy_tensor((x % 2 for x in range(n)), ms.float32)" in code
