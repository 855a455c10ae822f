"""``F.relu(x, inplace=True)`` as a statement changes ``x`` in torch; converted, ``ops.relu(x)`` returns
the result and leaves ``x`` as it was, so the statement fixes assign it back (statement_fixes.py).

The functions are every KB function with an ``inplace=`` argument; each is spelled with the keyword,
positionally, with a variable, on a name, an attribute, a subscript, in a forward, a function, a loop
and at module level, and also assigned (``y = F.relu(x, inplace=True)``: torch's x changes too)."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from matrix_support import covering

from torch2ms.convert import convert_source
from torch2ms.kb import load_kb

_KB = load_kb()
FUNCTIONS = sorted(
    e.torch for e in _KB if e.kind == "function" and e.sig_names()[:1] == ["input"] and "inplace" in e.sig_names()
)
# values for arguments with no default; deterministic ones for the random functions
# training: False in the differential tests (a random mask cannot be compared), torch's default in the
# static ones (alpha_dropout's training=True is not converted; with training=False it is the identity and
# the statement goes)
_VALUES = {"threshold": "0.1", "value": "-2.0"}
_SHAPES = {"dropout1d": (2, 3, 4), "dropout3d": (1, 2, 3, 4, 5)}


def _short(api: str) -> str:
    return api.rsplit(".", 1)[1]


def _middle(api: str, training: str = "") -> list[str]:
    """The arguments between input and inplace, as source text."""
    entry = _KB.get(api)
    assert entry is not None
    names, defaults = entry.sig_names(), entry.sig_defaults()
    values = {**_VALUES, "training": training} if training else _VALUES
    return [values.get(n, defaults.get(n, "")) for n in names[1 : names.index("inplace")]]


def _call(api: str, target: str, spelling: str, training: str = "") -> str:
    middle = _middle(api, training)
    name = f"F.{_short(api)}"
    if spelling == "positional":
        return f"{name}({', '.join([target, *middle, 'True'])})"
    entry = _KB.get(api)
    assert entry is not None
    keywords = [f"{n}={v}" for n, v in zip(entry.sig_names()[1:], middle)]
    inplace = {"keyword": ["inplace=True"], "variable": ["inplace=flag"], "false": ["inplace=False"], "absent": []}
    return f"{name}({', '.join([target, *keywords, *inplace[spelling]])})"


def test_the_list_comes_from_the_kb():
    shorts = {_short(a) for a in FUNCTIONS}
    assert {"relu", "relu6", "leaky_relu", "elu", "selu", "celu", "hardtanh", "threshold", "rrelu"} <= shorts
    assert {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"} <= shorts
    assert {"hardswish", "hardsigmoid", "silu", "mish"} <= shorts


# ---- conversion matrix (static) ---------------------------------------------------------------

_CONTEXTS = {
    "forward": "class Net(nn.Module):\n    def forward(self, x, xs):\n        flag = True\n        {stmt}\n        return x\n",
    "function": "def f(x, xs, flag):\n    {stmt}\n    return x\n",
    "loop": "def f(x, xs, flag):\n    for _ in range(2):\n        {stmt}\n    return x\n",
    "module": "x = torch.ones(3)\nxs = [x]\nflag = True\n{stmt}\n",
}
_HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def _convert(context: str, stmt: str) -> str:
    res = convert_source(_HEAD + _CONTEXTS[context].format(stmt=stmt), "m.py")
    assert res.error is None
    lines = [li.replace("torch2ms", "") for li in res.code.splitlines() if not li.lstrip().startswith("#")]
    assert "torch" not in "".join(lines)
    return res.code


def _statements(code: str) -> list[str]:
    return [ast.unparse(n) for n in ast.walk(ast.parse(code)) if isinstance(n, (ast.Assign, ast.Expr))]


_TARGETS = {"x": ("x",), "self.h": ("self.h", "h"), "xs[0]": ("xs[0]",)}


@pytest.mark.parametrize(
    "api, spelling, target, context",
    covering(
        list(itertools.product(FUNCTIONS, ["keyword", "positional", "variable"], list(_TARGETS), list(_CONTEXTS))),
        pairs=True,
    ),
)
def test_inplace_statement_is_assigned_back(api, spelling, target, context):
    if target == "self.h" and context != "forward":
        target = "x"
    stmt = _call(api, target, spelling)
    code = _convert(context, stmt)
    rebinds = [
        s for s in _statements(code) if any(s.startswith(f"{t} = ") for t in _TARGETS[target]) and "ones(" not in s
    ]
    if not rebinds:  # the identity (alpha_dropout, training=False): nothing is left of the statement
        assert not [s for s in _statements(code) if "(" in s and "ones(" not in s], code
        return
    if spelling == "variable":
        assert rebinds[-1].endswith(f"if flag else {rebinds[-1].split(' = ')[0]}"), code
    else:
        assert " if " not in rebinds[-1], code


@pytest.mark.parametrize(
    "api, spelling, context",
    covering(list(itertools.product(FUNCTIONS, ["false", "absent"], list(_CONTEXTS))), pairs=True),
)
def test_not_inplace_statement_is_left_alone(api, spelling, context):
    code = _convert(context, _call(api, "x", spelling))
    assert not [s for s in _statements(code) if s.startswith("x = ") and "ones" not in s], code


@pytest.mark.parametrize("api", FUNCTIONS)
@pytest.mark.parametrize("spelling", ["keyword", "positional", "variable"])
def test_assigned_result_rebinds_the_input(api, spelling):
    code = _convert("function", "y = " + _call(api, "x", spelling))
    lines = [line.strip() for line in code.splitlines()]
    i = next(i for i, line in enumerate(lines) if line.startswith("y = "))
    assert lines[i + 1] == ("x = y if flag else x" if spelling == "variable" else "x = y"), code


@pytest.mark.parametrize("api", ["torch.nn.functional.relu", "torch.nn.functional.dropout"])
def test_assigned_to_the_input_itself_adds_nothing(api):
    code = _convert("function", "x = " + _call(api, "x", "keyword"))
    assert [line.strip() for line in code.splitlines() if line.strip().startswith("x =")] == [
        line.strip() for line in code.splitlines() if line.strip().startswith("x = ") and "ops." in line
    ]
    assert "x = x" not in code


def test_temporary_input_and_loop_variable_are_marked():
    code = _convert("function", "F.relu(x.view(-1), inplace=True)")
    assert "torch2ms: review" in code and "temporary" in code
    code = _convert("function", "for t in xs:\n        F.relu(t, inplace=True)")
    assert "torch2ms: review" in code and "t = ops.relu(t)" in code


# ---- differential: the value of the input after the statement ----------------------------------


def _net_source(api: str) -> str:
    kw, pos, var, plain = (_call(api, "{t}", s, "False") for s in ("keyword", "positional", "variable", "absent"))
    body = f"""\
        a = x * 1.0
        {kw.format(t="a")}
        self.h = x * 2.0
        {kw.format(t="self.h")}
        xs = [x * 3.0, x]
        {pos.format(t="xs[0]")}
        b = x * 1.5
        y = {kw.format(t="b")}
        c = x * 0.5
        {plain.format(t="c")}
        flag = True
        e = x - 0.25
        {var.format(t="e")}
        d = x - 0.5
        for _ in range(2):
            {pos.format(t="d")}
        return a, self.h, xs[0], b, y, c, e, d, x
"""
    return (
        _HEAD
        + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.h = None\n\n"
        + "    def forward(self, x):\n"
        + textwrap.indent(textwrap.dedent(body), "        ")
        + f"\n\ndef g(x):\n    {kw.format(t='x')}\n    return x\n\n"
        + f"Z = torch.linspace(-2.0, 2.0, 24).reshape(2, 3, 4)\n{kw.format(t='Z')}\n"
    )


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # GRAPH_MODE reads construct's source through the module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.differential
@pytest.mark.parametrize("api", FUNCTIONS)
def test_input_after_the_statement_matches_torch(api, tmp_path):
    import mindspore as ms
    import torch

    source = _net_source(api)
    res = convert_source(source, "net.py")
    assert res.error is None and "import torch" not in res.code, res.code
    tag = re.sub(r"\W", "_", api)
    (tmp_path / "t.py").write_text(source)
    (tmp_path / "m.py").write_text(res.code)
    tmod, mmod = _import(tmp_path / "t.py", f"t2m_ipf_t_{tag}"), _import(tmp_path / "m.py", f"t2m_ipf_m_{tag}")
    try:
        shape = _SHAPES.get(_short(api), (2, 3, 4, 5))
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        with torch.no_grad():
            want = [t.numpy() for t in tmod.Net().eval()(torch.from_numpy(x))]
            want_g = tmod.g(torch.from_numpy(x.copy())).numpy()
        np.testing.assert_allclose(mmod.g(ms.Tensor(x)).asnumpy(), want_g, atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(mmod.Z.asnumpy(), tmod.Z.numpy(), atol=1e-5, rtol=1e-5)
        for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
            ms.set_context(mode=getattr(ms, mode))
            try:
                net = mmod.Net()
                net.set_train(False)
                got = [t.asnumpy() for t in net(ms.Tensor(x))]
            finally:
                ms.set_context(mode=ms.PYNATIVE_MODE)
            for i, (g, w) in enumerate(zip(got, want)):
                np.testing.assert_allclose(g, w, atol=1e-5, rtol=1e-5, err_msg=f"{mode} output {i}\n{res.code}")
    finally:
        sys.modules.pop(f"t2m_ipf_t_{tag}", None)
        sys.modules.pop(f"t2m_ipf_m_{tag}", None)
