"""Issue 23 §2 (crashes seen), "the converter writes ``ops.randint``, which MindSpore itself marks deprecated".

MindSpore 2.10 warns that ops.randint ('UniformInt') is deprecated in favour of ``mint.randint``, but
``mint.randint`` has no CPU kernel in 2.10 ("Create kernelmod for op InplaceRandom failed"): the converter keeps
``ops.randint`` and the KB note says why (the warning is expected). This test holds both facts against the installed
MindSpore, so the choice is revisited the day mint.randint runs on CPU, and checks every spelling of torch.randint
converts to an ops.randint call that draws what torch's contract says (shape, range, dtype), against real torch.
"""

from __future__ import annotations

import pytest
from requires_support import require_modules

from torch2ms.convert import convert_source

SPELLINGS = {
    "high_only": "torch.randint(5, (3,))",
    "low_high": "torch.randint(0, 5, (3,))",
    "size_kw": "torch.randint(2, 9, size=(2, 3))",
    "all_kw": "torch.randint(low=1, high=4, size=(4,))",
    "dtype": "torch.randint(0, 7, (2, 2), dtype=torch.int32)",
}


def _converted(expr: str) -> str:
    res = convert_source(f"import torch\ny = {expr}\n")
    assert not res.error and "not converted" not in res.code, res.code
    return next(ln for ln in res.code.splitlines() if ln.startswith("y = "))


@pytest.mark.parametrize("name", SPELLINGS)
def test_torch_randint_converts_to_ops_randint(name):
    line = _converted(SPELLINGS[name])
    assert "ops.randint(" in line and "mint." not in line, line


def test_the_kb_note_says_why_ops_randint_stays():
    from torch2ms.kb import load_kb

    note = load_kb().get("torch.randint").note
    assert "deprecated" in note and "mint.randint" in note and "CPU kernel" in note, note


@pytest.mark.differential
def test_mint_randint_has_no_cpu_kernel_in_this_mindspore():
    require_modules("mindspore")
    import mindspore as ms
    from mindspore import mint

    ms.set_context(device_target="CPU")
    with pytest.raises(RuntimeError, match="InplaceRandom"):
        mint.randint(0, 5, (3,)).asnumpy()


@pytest.mark.differential
@pytest.mark.parametrize("name", SPELLINGS)
def test_the_converted_draw_keeps_torchs_contract(name):
    require_modules("torch", "mindspore")
    import mindspore as ms
    import torch
    from mindspore import ops

    t = eval(SPELLINGS[name], {"torch": torch})
    rhs = _converted(SPELLINGS[name]).split("=", 1)[1].split("#")[0]
    m = eval(rhs, {"ops": ops, "ms": ms, "mindspore": ms})
    got = m.asnumpy()
    assert got.shape == tuple(t.shape), (got.shape, t.shape)
    assert str(got.dtype) == str(t.dtype).replace("torch.", ""), (got.dtype, t.dtype)
    low, high = {"high_only": (0, 5), "low_high": (0, 5), "size_kw": (2, 9), "all_kw": (1, 4), "dtype": (0, 7)}[name]
    for values in (got, t.numpy()):
        assert values.min() >= low and values.max() < high, values
