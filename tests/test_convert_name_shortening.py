"""Short MindSpore names are made on parsed nodes: the user's string literals are never rewritten.

The converter's rules speak full names (``mindspore.nn.Conv2d``, ``torch2ms.runtime.ckpt_path``) and the
output reads ``nn.Conv2d`` / ``ckpt_path``. The shortening once ran as a regex over the generated text,
which also rewrote a literal such as ``"mindspore.nn.weights.pt"`` (and added an import it then
needed). Each literal below sits in an argument of a call that *is* converted; the file converted with
it must be the file converted with a neutral literal of the same kind, the literal put back byte for
byte: same code, same imports.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch  # noqa: F401  # the torch side of the differential test below execs torch code

from torch2ms.convert import convert_source

# Dotted names a literal may hold: MindSpore's (what the regex matched), torch's, and the runtime's.
_NAMES = [
    "mindspore.nn.weights.pt",
    "mindspore.ops.foo",
    "mindspore.scipy.linalg",
    "torch2ms.runtime.ckpt_path",
    "torch.nn.Linear",
    "x mindspore.Tensor y",
]

# Literal spellings: each a function of the text, and the neutral twin has the same spelling.
_KINDS = {
    "double": lambda t: f'"{t}"',
    "single": lambda t: f"'{t}'",
    "raw": lambda t: f'r"{t}"',
    "fstring": lambda t: f'f"{t}{{n}}"',
    "fstring_expr": lambda t: f"f\"{{n}}{{'{t}'}}\"",
    "bytes": lambda t: f'b"{t}".decode()',
    "triple": lambda t: f'"""{t}"""',
    "implicit_concat": lambda t: f'"{t[:5]}" "{t[5:]}"',
    "concat_raw_f": lambda t: f'r"{t[:9]}" f"{t[9:]}"',
}

# Calls the converter rewrites, holding the literal as an argument (a str where a str is taken,
# its length where a number is).
_CALLS = {
    "load": "state = torch.load({lit})",
    "zeros_len": "z = torch.zeros(len({lit}))",
    "method_view": "v = torch.ones(4, 2).view(len({lit}), -1)",
    "layer_arg": "layer = nn.Linear(len({lit}), 2)",
    "functional": "y = F.relu(torch.full((2,), float(len({lit}))))",
    "nested_generated": "y = torch.cat([torch.zeros(len({lit})), torch.ones(2)], dim=0)",
}

_HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nn = 3\n"
_NEUTRAL = "qqqqqqqqqqqq"


def _module(call: str, lit: str) -> str:
    docstring = f"def f():\n    {lit}\n    return torch.zeros(2)\n"
    return _HEAD + call.format(lit=lit) + "\n" + docstring


@pytest.mark.parametrize(
    ("name", "kind", "call"), list(itertools.product(_NAMES, _KINDS, _CALLS)), ids=lambda v: str(v)[:24]
)
def test_literal_survives_byte_for_byte(name, kind, call):
    spell = _KINDS[kind]
    lit, neutral = spell(name), spell(_NEUTRAL[: len(name)])
    got = convert_source(_module(_CALLS[call], lit)).code
    want = convert_source(_module(_CALLS[call], neutral)).code
    assert neutral in want, want  # the neutral twin survives: the comparison below means something
    assert got == want.replace(neutral, lit), got
    # and the rewrite happened (these are converted calls, not skipped statements)
    assert "import torch\n" not in got


def test_issue_examples():
    got = convert_source(
        'import torch\nw = torch.load("mindspore.nn.weights.pt")\nz = torch.zeros(len("mindspore.ops.foo"))\n'
    ).code
    assert 'load_checkpoint("mindspore.nn.weights.pt")' in got
    assert 'ops.zeros(len("mindspore.ops.foo"))' in got
    assert "from mindspore import ops\n" in got and "from mindspore import nn" not in got


def test_code_names_still_shortened_in_fstring_expressions():
    # names inside an f-string's braces are code, not text: they are shortened like any other
    got = convert_source('import torch\ns = f"{torch.zeros(2).sum()} mindspore.nn"\n').code
    assert 'ops.zeros(2).sum()} mindspore.nn"' in got, got


def test_taken_alias_falls_back_and_loads_scipy():
    # `linalg` is the user's own name: the short form is ms.scipy.linalg, and that submodule is imported
    src = "import torch\nlinalg = 1\nlu, piv = torch.linalg.lu_factor(torch.eye(3))\n"
    got = convert_source(src).code
    assert "ms.scipy.linalg.lu_factor(" in got
    assert "import mindspore.scipy.linalg\n" in got and "from mindspore.scipy import linalg" not in got
    assert "__import__(" not in got


@pytest.mark.parametrize("linalg_taken", [False, True])
@pytest.mark.parametrize(
    "expr",
    [
        "torch.linalg.lu_factor(a)[0]",
        "torch.linalg.lu_factor(a)[1]",
        "torch.linalg.lu(a)[2]",
        "b.triangular_solve(torch.triu(a), upper=True)[0]",
        "torch.tensor([torch.finfo(torch.float16).eps, torch.finfo().max, torch.finfo(a.dtype).tiny])",
        "torch.tensor([torch.iinfo(torch.int8).max, torch.iinfo(torch.int32).min])",
    ],
)
def test_converted_short_names_run_like_torch(expr, linalg_taken):
    # The names the linalg and finfo rules now write (`from mindspore.scipy import linalg`, the finfo
    # helper), run from the converted text with MindSpore alone, against torch on the same inputs.

    rng = np.random.default_rng(0)
    a_np = (rng.standard_normal((3, 3)) + 3 * np.eye(3)).astype(np.float32)
    b_np = rng.standard_normal((3, 2)).astype(np.float32)
    taken = "linalg = None\n" if linalg_taken else ""
    src = (
        f"import torch\n{taken}\n\ndef f(a: torch.Tensor, b: torch.Tensor):\n    return {expr}\n\n\n"
        "out = f(torch.tensor(A), torch.tensor(B))\n"
    )
    code = convert_source(src).code
    assert "__import__(" not in code and "import torch" not in code, code
    ms_ns: dict = {"A": a_np, "B": b_np}
    exec(compile(code, "<converted>", "exec"), ms_ns)
    t_ns: dict = {"A": a_np, "B": b_np}
    exec(compile(src, "<torch>", "exec"), t_ns)
    want = t_ns["out"].numpy()
    got = ms_ns["out"].asnumpy()
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-5)
