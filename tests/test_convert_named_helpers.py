"""The immediately-invoked lambdas the kit's output held are named runtime helpers now:
``with_int64_indices`` (a (values, indices) result with torch's int64 indices) and ``pad_sequence``.
A generated matrix of spellings (functions, methods, import forms, positional and keyword arguments,
unpacked or indexed results), converted, run with MindSpore and compared with torch on the same inputs.
"""

from __future__ import annotations

import ast
import itertools

import numpy as np
import pytest
import torch  # noqa: F401  # the torch side: the sources the tests exec import it

from torch2ms.convert import convert_source

_INDEXED = {
    "topk_fn": "torch.topk(x, 2)",
    "topk_method": "x.topk(2, dim=-1, largest=False)",
    "topk_kw": "torch.topk(x, k=3, dim=0)",
    "sort_fn": "torch.sort(x, dim=1, descending=True)",
    "sort_method": "x.sort(0)",
    "cummax": "torch.cummax(x, 1)",
    "cummin_method": "x.cummin(dim=0)",
    "adaptive_pool": "torch.nn.functional.adaptive_max_pool2d_with_indices(x[None], 2)",
}
_USES = {
    "unpack": "v, i = {call}\nout = (v, i)\n",
    "index": "r = {call}\nout = (r[0], r[1])\n",
    "in_expr": "out = ({call}[1] + 1, {call}[0])\n",
}


def _run(src: str) -> tuple[list, list, str]:
    code = convert_source(src).code
    assert "import torch" not in code, code
    assert not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Lambda) for n in ast.walk(ast.parse(code))), code
    x = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    t_ns: dict = {"X": x}
    exec(compile(src, "<torch>", "exec"), t_ns)
    m_ns: dict = {"X": x}
    exec(compile(code, "<converted>", "exec"), m_ns)
    return list(t_ns["out"]), list(m_ns["out"]), code


@pytest.mark.parametrize(("call", "use"), list(itertools.product(_INDEXED, _USES)))
def test_values_and_int64_indices_match_torch(call, use):
    body = _USES[use].format(call=_INDEXED[call])
    src = f"import torch\n\n\ndef f(x: torch.Tensor):\n{_indent(body)}    return out\n\n\nout = f(torch.tensor(X))\n"
    want, got, code = _run(src)
    assert "with_int64_indices(" in code, code
    for t, m in zip(want, got):
        assert str(m.dtype).rsplit(".", 1)[-1].lower() == str(t.dtype).rsplit(".", 1)[-1], (m.dtype, t.dtype)
        np.testing.assert_allclose(m.asnumpy(), t.numpy(), rtol=1e-6)


_PAD_SPELLINGS = {
    "rnn_module": ("from torch.nn.utils import rnn\n", "rnn.pad_sequence"),
    "full_name": ("", "torch.nn.utils.rnn.pad_sequence"),
    "from_import": ("from torch.nn.utils.rnn import pad_sequence\n", "pad_sequence"),
}
_PAD_ARGS = {
    "default": "",
    "batch_first_kw": ", batch_first=True",
    "positional": ", True, -1.0",
    "left": ", padding_value=3.0, padding_side='left'",
    "variable_batch_first": ", batch_first=BF",
}


@pytest.mark.parametrize(("spelling", "args"), list(itertools.product(_PAD_SPELLINGS, _PAD_ARGS)))
def test_pad_sequence_matches_torch(spelling, args):
    imp, name = _PAD_SPELLINGS[spelling]
    src = (
        f"import torch\n{imp}BF = True\n"
        "seqs = [torch.tensor(X[:3]), torch.tensor(X[:1]), torch.tensor(X)]\n"
        f"out = [{name}(seqs{_PAD_ARGS[args]})]\n"
    )
    want, got, code = _run(src)
    assert "pad_sequence(seqs" in code and "from torch2ms.runtime import" in code, code
    np.testing.assert_allclose(got[0].asnumpy(), want[0].numpy(), rtol=1e-6)


def _indent(body: str) -> str:
    return "".join(f"    {line}\n" for line in body.splitlines())
