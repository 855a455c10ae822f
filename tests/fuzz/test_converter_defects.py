"""R20 / issue 15: the converter defects the fuzzer found, each as its smallest reproducer, grouped by
cause, now fixed: valid input gives valid output (a torch name assigned to or used as a class pattern is
marked, a one-line ``with torch.no_grad(): ...`` unwraps to a line), comments of removed lines stay, and
converting converted code changes nothing. ``convert_tree`` still protects the user from any future
invalid output: a file whose conversion does not parse is copied unchanged and reported."""

from __future__ import annotations

import ast
import io
import tokenize

import pytest

from torch2ms.convert import convert_source, convert_tree

# ---- valid input, invalid output ----------------------------------------------------------------------

INVALID_OUTPUT = {
    # `nn.Linear` in a class pattern becomes a TorchCompat(...) call: not a pattern
    "match_class_pattern": "import torch.nn as nn\n\n\ndef kind(m):\n    match m:\n        case nn.Linear(in_features=4):\n"
    "            return 1\n    return 0\n",
    # the body of a one-line `with torch.no_grad(): ...` is unwrapped at the wrong indentation
    "no_grad_one_liner_in_block": "import torch\n\n\ndef f(x):\n    if x is not None:\n        with torch.no_grad(): y = x * 2\n"
    "    return x\n",
    # an assignment target naming a torch function becomes a call: `TorchCompat(...) = None`
    "assignment_to_torch_attribute": "import torch.nn.functional as F\n\ntry:\n"
    "    from torch.nn.functional import scaled_dot_product_attention\nexcept ImportError:\n"
    "    F.scaled_dot_product_attention = None\n",
}


@pytest.mark.parametrize("case", sorted(INVALID_OUTPUT))
def test_r20_defect_valid_input_gives_valid_output(case):
    res = convert_source(INVALID_OUTPUT[case], "m.py")
    ast.parse(res.code)


@pytest.mark.parametrize("case", sorted(INVALID_OUTPUT))
def test_r20_invalid_converter_output_never_written(case, tmp_path):
    """Whatever the converter does with these, the user gets a file that parses (or the original) and a reason."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(INVALID_OUTPUT[case])
    report = convert_tree(src, tmp_path / "out", jobs=1)
    out = (tmp_path / "out" / "m.py").read_text()
    ast.parse(out)
    try:
        ast.parse(convert_source(INVALID_OUTPUT[case], "m.py").code)
    except SyntaxError:  # the defect is still there: the file was kept as it was, and the report says why
        assert out == INVALID_OUTPUT[case]
        assert "the converter produced invalid Python (SyntaxError" in (report.files[0].error or "")


# ---- text lost ----------------------------------------------------------------------------------------

COMMENT_LOST = {
    # the comment on a torch import that is rewritten (or dropped) goes with it
    "comment_on_torch_import": ("import torch.nn as nn  # 中文注释\n\nlayer = nn.Linear(2, 2)\n", "# 中文注释"),
    "comment_on_plain_torch_import": ("import torch  # For ML\n\nx = torch.zeros(2)\n", "# For ML"),
    # the comment on `with torch.no_grad():` is dropped when the block is unwrapped
    "comment_on_no_grad": (
        "import torch\n\n\ndef f(x):\n    with torch.no_grad():  # 不记录梯度\n        return x * 2\n",
        "# 不记录梯度",
    ),
}


@pytest.mark.parametrize("case", sorted(COMMENT_LOST))
def test_r20_defect_comment_kept(case):
    src, comment = COMMENT_LOST[case]
    res = convert_source(src, "m.py")
    comments = [
        t.string for t in tokenize.generate_tokens(io.StringIO(res.code).readline) if t.type == tokenize.COMMENT
    ]
    assert comment in comments, res.code


# ---- converting twice changes the code ----------------------------------------------------------------

NOT_IDEMPOTENT = {
    # A file that keeps a torch import (something in it is not converted) is read again as torch code on
    # the second pass: converted MindSpore calls are taken for torch calls. argmax(axis=1, keepdims=True)
    # becomes flatten().argmax(): the meaning changes.
    "argmax_when_torch_import_kept": "import torch\n\n\ndef f(x):\n    return x.argmax(dim=1, keepdim=True)\n\n\n"
    "torch.backends.cudnn.benchmark = True\n",
    "softmax_when_torch_import_kept": "import torch\nimport torch.nn as nn\n\n\ndef f(x):\n    return x.softmax(dim=-1)\n\n\n"
    "w = nn.utils.weight_norm(nn.Linear(2, 2))\n",
    "std_when_torch_import_kept": "import torch\n\n\ndef f(x):\n    return x.std()\n\n\ntorch.backends.cudnn.benchmark = True\n",
    # ... topk's (values, int64 indices) wrapper is applied again around itself; norm(2) flattens again
    "topk_when_torch_import_kept": "import torch\n\n\ndef f(x):\n    v, i = x.topk(3, dim=1)\n    return v, i\n\n\n"
    "torch.backends.cudnn.benchmark = True\n",
    "norm_when_torch_import_kept": "import torch\n\n\ndef f(p):\n    return p.grad.data.norm(2)\n\n\n"
    "torch.backends.cudnn.benchmark = True\n",
    # A torch name read only by an argument the rule drops (layout=torch.strided) kept its import with a
    # mark; the second pass, seeing no reader, dropped the import under the stale mark.
    "torch_import_read_only_by_dropped_argument": "import torch\n\n\ndef f(b):\n"
    "    return torch.full_like(b, 1, layout=torch.strided)\n",
    # A tensor typed through a torch call the first pass kept (interpolate with antialias): its
    # methods, converted then, were taken for torch's again and stride() wrapped a second time.
    "method_of_tensor_from_kept_torch_call": "from torch.nn.functional import interpolate\n\n\ndef f(x):\n"
    "    x = interpolate(x, size=[2, 2], antialias=True)\n    return x.stride(), x.argmax(), x.topk(2)\n",
    # `from torch import *` binds int/range/max...: the builtin int(...) torch.range's rewrite writes was
    # taken for torch's int, so the star import stayed, and the second pass made it ms.int32.
    "builtin_written_by_converter_under_torch_star_import": "from torch import *\n\n\ndef f(x, n):\n"
    "    return x.to(int), range(n)\n",
    # the training-loop mark is added again, below the marks of the first pass
    "training_loop_mark_added_again": "import torch.optim as optim\n\n\nclass Sequence:\n"
    "    optimizer = optim.LBFGS(seq.parameters(), lr=0.8)\n    for i in range(steps):\n        loss.backward()\n",
}


@pytest.mark.parametrize("case", sorted(NOT_IDEMPOTENT))
def test_r20_defect_converting_twice_changes_nothing(case):
    once = convert_source(NOT_IDEMPOTENT[case], "m.py").code
    assert convert_source(once, "m.py").code == once


def test_r20_defect_stale_torch_kept_mark_goes_with_its_import():
    """A "torch import kept" mark above an import nothing reads any more (the user ported the rest by
    hand) goes with the import; the user's own comment there stays."""
    src = (
        "import mindspore as ms\n# why torch\n# torch2ms: torch import kept: unconverted code still uses it\n"
        "import torch\n\nx = ms.Tensor([1.0])\n"
    )
    out = convert_source(src, "m.py").code
    assert "import torch\n" not in out and "torch import kept" not in out, out
    assert "# why torch" in out, out


def test_r20_cookie_that_lies_keeps_the_text_python_reads(tmp_path):
    """Not a converter defect, a fuzzer one: UTF-8 bytes under a latin-1 cookie read as mojibake in
    Python, and that text (not the UTF-8 one meant) is what the output keeps (written as UTF-8 when the
    marks need it, the cookie saying so); the fuzzer now checks what Python reads."""
    src = tmp_path / "src"
    src.mkdir()
    data = "# -*- coding: latin-1 -*-\n# café naïve\nimport torch\n\nx = torch.no_such_api(2.0)\n".encode()
    (src / "m.py").write_bytes(data)
    convert_tree(src, tmp_path / "out", jobs=1)
    out = (tmp_path / "out" / "m.py").read_bytes()
    assert out.startswith(b"# -*- coding: utf-8 -*-\n")  # the "not converted" mark's dash is not latin-1
    read = lambda b: b.decode(tokenize.detect_encoding(io.BytesIO(b).readline)[0])  # noqa: E731
    assert "# café naïve".encode().decode("latin-1") in read(out).splitlines()
    assert read(out).splitlines()[1] == read(data).splitlines()[1]
