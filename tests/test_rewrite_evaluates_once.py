"""Issue 22 §2 class 10's random part / issue 23 §1 (verdict): a rewrite must not duplicate an argument.

``torch.full(shape, random.random())`` became ``ops.full(shape, random.random(), dtype=(... isinstance(
random.random(), bool) ... random.random().dtype ...))``: four draws where torch makes one, and another
fill value than the draw the script saw. The class is any template or handler that writes an argument
expression more than once: with a side effect (a draw, ``next(it)``, a layer's forward that moves
BatchNorm's statistics) it runs several times. kb/once.py binds such arguments once.

Generated matrices: (1) every KB entry with a template or handler × each of its parameters (and the
receiver of a method) given a call with a side effect: the call appears once in the rewritten source
(222 duplications on main before the fix); (2) side-effecting expressions (a counter, ``random.random()``
under a seed, ``next(iterator)``, ``list.pop()``) × rewritten calls that wrote their argument twice ×
where the call sits (module level, a function, a Cell's construct in PyNative and GRAPH_MODE):
converted with ``convert_source`` and run with MindSpore — the expression runs as often as in torch and
the result equals torch's on the same values.
"""

from __future__ import annotations

import ast
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

from torch2ms.convert import convert_source
from torch2ms.kb import load_kb
from torch2ms.kb.rewrite import rewrite_call

sys.path.insert(0, str(Path(__file__).parent))
from requires_support import require_modules
from script_support import load_script


def _probe_calls(src: str) -> int:
    tree = ast.parse(src, mode="eval")
    return sum(
        isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "probe" for c in ast.walk(tree)
    )


def _calls(entry) -> list[tuple[str, list[str], list[tuple[str, str]], str | None]]:
    """One call per parameter (and the receiver): that argument is ``probe()``, the others plain names."""
    sig = [p for p in entry.sig if not p.startswith("**") and p != "*"]
    targets = (["self"] if entry.is_method else []) + [p.split("=")[0].lstrip("*") for p in sig]
    out = []
    for target in targets:
        args: list[str] = []
        kwargs: list[tuple[str, str]] = []
        keyword_only = False
        for p in entry.sig:
            if p == "*" or p.startswith("**"):
                keyword_only = True
                continue
            name = p.split("=")[0].lstrip("*")
            value = "probe()" if name == target else f"a_{name}"
            if p.startswith("*"):
                args.append(value)
                keyword_only = True
            elif "=" in p:
                if name == target:
                    kwargs.append((name, value))
            elif keyword_only:
                kwargs.append((name, value))
            else:
                args.append(value)
        out.append((target, args, kwargs, ("probe()" if target == "self" else "x") if entry.is_method else None))
    return out


def _kb_cases() -> list[tuple[str, str, list[str], list[tuple[str, str]], str | None]]:
    return [
        (e.torch, *call)
        for e in load_kb()
        if e.template and e.kind in ("function", "method", "class")
        for call in _calls(e)
    ]


def test_no_template_or_handler_writes_an_argument_twice():
    kb = load_kb()
    cases = _kb_cases()
    assert len(cases) > 1000, len(cases)  # the matrix covers the KB, not a sample
    twice = []
    checked = 0
    for name, target, args, kwargs, receiver in cases:
        try:
            res = rewrite_call(kb.get(name), args, kwargs, receiver)
        except Exception:  # noqa: BLE001 - a handler that refuses plain names: nothing written, nothing to count
            continue
        if not res.ok or not res.source:
            continue
        try:
            n = _probe_calls(res.source)
        except SyntaxError:
            continue
        checked += 1
        if n > 1:
            twice.append((name, target, n, res.source))
    assert checked > 1000, checked
    assert not twice, f"{len(twice)} rewrites run an argument more than once, e.g. {twice[:5]}"


def test_a_plain_name_is_not_bound_again():
    """Only an argument with a possible side effect is bound: names, attributes and constants stay written out."""
    res = rewrite_call(load_kb().get("torch.full"), ["(2, 2)", "v"], [])
    assert "lambda" not in res.source and res.source.count("v") >= 2, res.source


# ---- differential: the converted call runs the expression as torch does --------------------------

EXPRESSIONS = {
    "counter": ("_n = [0]\ndef tick():\n    _n[0] += 1\n    return 0.25 * _n[0]\n", "tick()", "_n[0]"),
    "random": (
        "import random\nrandom.seed(3)\n_draws = []\n",
        "(_draws.append(random.random()) or _draws[-1])",
        "len(_draws)",
    ),
    "next": (
        "_it = iter([0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5])\n_used = [0]\n",
        "(_used.__setitem__(0, _used[0] + 1), next(_it))[1]",
        "_used[0]",
    ),
    "pop": ("_stack = [0.75] * 20\n", "_stack.pop()", "20 - len(_stack)"),
    "method": (  # a user object's method (a batch source, a sampler): it may draw or consume
        "class _Src:\n    n = 0\n\n    def get(self):\n        _Src.n += 1\n        return 0.5 * _Src.n\n\n\n_src = _Src()\n",
        "_src.get()",
        "_Src.n",
    ),
}
CALLS = {
    "full": ("torch.full((2, 3), {e})", "{e}"),
    "normalize": ("F.normalize(torch.ones(2, 3) * {e})", "{e}"),
    "elu": ("F.elu(torch.ones(2, 3) * {e} - 1.0)", "{e}"),
    "new_full": ("torch.zeros(2).new_full((2, 2), {e})", "{e}"),
}
PLACES = ("module", "function")

SCRIPT = """import torch
import torch.nn.functional as F
{prelude}
{body}
"""


def _script(expr: str, call: str, place: str) -> str:
    prelude, value, _count = EXPRESSIONS[expr]
    text = CALLS[call][0].format(e=value)
    if place == "function":
        body = f"def make():\n    return {text}\n\n\nout = make()\nout2 = make()\n"
    else:
        body = f"out = {text}\nout2 = {text}\n"
    return SCRIPT.format(prelude=prelude, body=body)


@pytest.mark.differential
@pytest.mark.parametrize("expr, call, place", list(itertools.product(EXPRESSIONS, CALLS, PLACES)))
def test_side_effect_arguments_run_once_and_give_torchs_values(expr, call, place, tmp_path):
    require_modules("torch", "mindspore")
    src = _script(expr, call, place)
    name = f"once_{expr}_{call}_{place}"
    (tmp_path / f"{name}_t.py").write_text(src, encoding="utf-8")
    t = load_script(tmp_path / f"{name}_t.py", f"{name}_t")
    res = convert_source(src)
    assert not res.error and "not converted" not in res.code, res.code
    assert "import torch" not in res.code, res.code
    (tmp_path / f"{name}_m.py").write_text(res.code, encoding="utf-8")
    m = load_script(tmp_path / f"{name}_m.py", f"{name}_m")
    count = EXPRESSIONS[expr][2]
    assert eval(count, vars(m)) == eval(count, vars(t)) == 2
    for a, b in ((t.out, m.out), (t.out2, m.out2)):
        np.testing.assert_allclose(b.asnumpy(), a.numpy(), rtol=1e-6, atol=1e-6)


FORWARD = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        return {call}
"""
FORWARD_CALLS = {
    "normalize": "F.normalize(self.bn(self.fc(x)))",
    "elu": "F.elu(self.bn(self.fc(x)))",
    "full_like_sum": "torch.full((3, 3), 1.0) * self.bn(self.fc(x)).sum()",
}


@pytest.mark.differential
@pytest.mark.parametrize("call, mode", list(itertools.product(FORWARD_CALLS, ("pynative", "graph"))))
def test_a_layer_in_a_rewritten_argument_runs_once_in_forward(call, mode, tmp_path):
    """BatchNorm's statistics move once per forward, as in torch (the layer ran twice before)."""
    require_modules("torch", "mindspore")
    import mindspore as ms
    import torch

    src = FORWARD.format(call=FORWARD_CALLS[call])
    name = f"once_fwd_{call}_{mode}"
    (tmp_path / f"{name}_t.py").write_text(src, encoding="utf-8")
    t = load_script(tmp_path / f"{name}_t.py", f"{name}_t")
    (tmp_path / f"{name}_m.py").write_text(convert_source(src).code, encoding="utf-8")
    m = load_script(tmp_path / f"{name}_m.py", f"{name}_m")
    torch.manual_seed(0)
    tnet, mnet = t.Net(), m.Net()
    for p, q in zip(tnet.parameters(), mnet.trainable_params()):
        q.set_data(ms.Tensor(p.detach().numpy()))
    mnet.set_train(True)
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    try:
        got = mnet(ms.Tensor(x)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    want = tnet(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mnet.bn.moving_mean.asnumpy(), tnet.bn.running_mean.numpy(), rtol=1e-5, atol=1e-6)


def test_two_arguments_written_alike_stay_two_evaluations():
    """``Normalize([0.5 for _ in c], [0.5 for _ in c])``: torch evaluates each argument once, so twice in
    all; the rewrite keeps both (binding them to one value would alias two arguments)."""
    src = "import torchvision.transforms as T\nt = T.Normalize([0.5 for _ in range(3)], [0.5 for _ in range(3)])\n"
    code = convert_source(src).code
    assert "lambda" not in code and code.count("[0.5 for _ in range(3)]") == 2, code
