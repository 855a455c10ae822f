"""Issue 22, named classes 3 and 5 of training scripts.

Class 5, legacy tensor types: ``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`` then
``x.type(Tensor)`` / ``Tensor(n, d).fill_(1.0)`` / ``Variable(Tensor(np.random.normal(...)))``, and
``x.type(torch.FloatTensor)`` / ``.type(torch.LongTensor)``, became ``x.type(TorchCompat(...))``
(Tensor.astype TypeError) and a ``TorchCompat`` call MindSpore cannot compile in a step. Every legacy
type × every spelling of the type (``torch.X``, an alias bound by ``torch.cuda.X if cuda else torch.X``
or the other way round at module level, a plain alias bound in the function, the conditional written
inline) × every use (``.type(T)``, ``.type(dtype=T)``, the size form filled, numpy data, ``Variable`` of
numpy data) × where the use lives (a function, a method, a Module's forward in PyNative and compiled)
runs in real torch and, converted, in real MindSpore: the same values and dtype.

Class 3, recurrent state: the state carried as a list (``states = [s.detach() for s in states]``,
``list(init_hidden())``) reached MindSpore's LSTM as a list (TypeError: 'hx' must be a Tuple). Every
recurrent layer × every state spelling × PyNative and a compiled step gives torch's outputs and states.

The generated training scripts of both classes (tests/fuzz/train_idioms.py) are compared with compare-train
at the end: SAME.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from rc_models_support import convert_pair, load_all, weights_by_converter
from requires_support import require_module

pytestmark = pytest.mark.differential

TYPES = {  # legacy type -> a numpy input it casts
    "FloatTensor": "np.arange(6, dtype=np.float64).reshape(2, 3) / 7",
    "DoubleTensor": "np.arange(6, dtype=np.float32).reshape(2, 3) / 7",
    "LongTensor": "np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5",
    "IntTensor": "np.arange(6, dtype=np.float64).reshape(2, 3) * 2.5",
    "ByteTensor": "np.arange(6, dtype=np.float32).reshape(2, 3) * 3",
}
# how the script names the type: (alias line or "", the name used)
SPELLINGS = {
    "plain": ("", "torch.{t}"),
    "alias_ifexp": ("T_{t} = torch.cuda.{t} if cuda else torch.{t}", "T_{t}"),
    "alias_ifexp_not": ("U_{t} = torch.{t} if not cuda else torch.cuda.{t}", "U_{t}"),
    "alias_plain": ("T_{t} = torch.{t}", "T_{t}"),
    "ifexp_inline": ("", "(torch.cuda.{t} if cuda else torch.{t})"),
}
USES = {
    "type": "torch.from_numpy(DATA).type(T)",
    "type_kw": "torch.from_numpy(DATA).type(dtype=T)",
    "sizes_fill": "T(n, 3).fill_(1)",
    "numpy": "T(DATA)",
    "variable": "Variable(T(DATA))",
}
# uses whose torch form needs a numpy array of the type's own kind
FLOAT_ONLY = {"numpy", "variable"}


def _use(spelling: str, t: str, use: str) -> str:
    name = SPELLINGS[spelling][1].format(t=t)
    if spelling == "ifexp_inline" and use not in ("type", "type_kw"):
        return ""  # (a if c else b)(...) is no idiom anyone writes
    if use in FLOAT_ONLY and t != "FloatTensor" and t != "DoubleTensor":
        return ""  # torch.LongTensor(float array) is refused by torch itself
    return (
        USES[use].replace("DATA", TYPES[t]).replace("T", name, 1) if use != "sizes_fill" else f"{name}(n, 3).fill_(1)"
    )


def _source() -> str:
    lines = ["import numpy as np", "import torch", "import torch.nn as nn", "from torch.autograd import Variable", ""]
    lines += ["cuda = torch.cuda.is_available()"]
    for t in TYPES:
        for spelling, (alias, _name) in SPELLINGS.items():
            if alias and spelling.startswith("alias_ifexp"):
                lines.append(alias.format(t=t))  # at module level
    lines.append("")
    for t in TYPES:
        for spelling, (alias, _name) in SPELLINGS.items():
            for use in USES:
                expr = _use(spelling, t, use)
                if not expr:
                    continue
                lines += [f"def f_{t}_{spelling}_{use}(n):"]
                if alias and spelling == "alias_plain":  # bound in the function itself
                    lines.append("    " + alias.format(t=t))
                lines += [f"    return {expr}", ""]
    # a method of a plain class and a Module's forward (compiled in GRAPH_MODE)
    lines += ["class Caster:", "    def cast(self, x, n):"]
    lines += ["        return x.type(T_FloatTensor), T_LongTensor(n, 2).fill_(3), x.type(U_LongTensor)", ""]
    lines += [
        "class Net(nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.fc = nn.Linear(3, 2)",
        "",
        "    def forward(self, x):",
        "        ones = T_FloatTensor(x.size(0), 2).fill_(1.0)",
        "        y = self.fc(x.type(T_FloatTensor)) * ones",
        "        return y, x.type(torch.LongTensor), (x > 0).type(U_FloatTensor)",
        "",
    ]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def legacy_pair(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    return convert_pair(_source(), tmp_path_factory.mktemp("legacy-types"))


def _same(t, m) -> None:
    assert tuple(m.shape) == tuple(t.shape)
    assert str(m.dtype).lower() == str(t.dtype).replace("torch.", "").lower()
    np.testing.assert_allclose(m.asnumpy(), t.numpy(), rtol=1e-6, atol=1e-6)


def _names() -> list[str]:
    return [f"f_{t}_{s}_{u}" for t in TYPES for s in SPELLINGS for u in USES if _use(s, t, u)]


@pytest.mark.parametrize("name", _names())
def test_i22_class5_legacy_type_spelling_and_use_match_torch(legacy_pair, name):
    tmod, mmod, _code = legacy_pair
    t, m = getattr(tmod, name)(2), getattr(mmod, name)(2)
    _same(t, m)


def test_i22_class5_no_runtime_compat_for_types_standing_for_dtypes(legacy_pair):
    code = legacy_pair[2]
    assert "TorchCompat" not in code, code
    assert "import torch\n" not in code


def test_i22_class5_method_and_forward_in_both_modes(legacy_pair, tmp_path):
    import mindspore as ms

    tmod, mmod, _code = legacy_pair
    x = np.array([[0.5, -1.5, 2.25], [-0.75, 1.0, 3.5]], dtype=np.float64)
    import torch

    for t, m in zip(tmod.Caster().cast(torch.from_numpy(x), 3), mmod.Caster().cast(ms.Tensor(x), 3), strict=True):
        _same(t, m)
    tnet = tmod.Net()
    ckpt = weights_by_converter(tnet, tmp_path)
    want = tnet(torch.from_numpy(x).float())
    for mode in ("pynative", "graph"):
        mnet = mmod.Net()
        load_all(mnet, ckpt)
        run = mnet if mode == "pynative" else ms.jit(mnet.construct)
        for t, m in zip(want, run(ms.Tensor(x, ms.float32)), strict=True):
            _same(t.detach(), m)


# ---- class 3: recurrent state as a list / tuple ------------------------------------------------------------

CELLS = ["LSTM", "GRU", "RNN"]
STATES = {  # how the caller carries the state from one call to the next
    "tuple": "state = tuple(s.detach() for s in state)",
    "list": "state = [s.detach() for s in state]",
    "list_call": "state = list(state)",
    "none_first": "",
}


def _rnn_source() -> str:
    lines = ["import torch", "import torch.nn as nn", ""]
    for cell in CELLS:
        lines += [
            f"class Net{cell}(nn.Module):",
            "    def __init__(self):",
            "        super().__init__()",
            f"        self.rnn = nn.{cell}(3, 4, num_layers=2, batch_first=True)",
            "",
            "    def forward(self, x, state):",
            "        out, state = self.rnn(x, state)",
            "        return out.sum(-1), state",
            "",
        ]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def rnn_pair(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    return convert_pair(_rnn_source(), tmp_path_factory.mktemp("rnn-state"))


def _first_state(cell: str, spelling: str, lib, tensor):
    if spelling == "none_first":
        return None
    z = tensor(np.zeros((2, 2, 4), np.float32) + 0.1)
    if cell != "LSTM":
        return z
    pair = (z, tensor(np.zeros((2, 2, 4), np.float32) - 0.2))
    return list(pair) if spelling.startswith("list") else pair


def _carry(state, spelling: str, detach):
    if spelling == "none_first" or not isinstance(state, (tuple, list)):
        return state
    return tuple(detach(s) for s in state) if spelling == "tuple" else [detach(s) for s in state]


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("spelling", list(STATES))
@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_i22_class3_state_as_list_or_tuple_matches_torch(rnn_pair, tmp_path, cell, spelling, mode):
    import mindspore as ms
    import torch

    tmod, mmod, _code = rnn_pair
    tnet = getattr(tmod, f"Net{cell}")()
    mnet = getattr(mmod, f"Net{cell}")()
    load_all(mnet, weights_by_converter(tnet, tmp_path))
    run = mnet if mode == "pynative" else ms.jit(mnet.construct)
    rng = np.random.RandomState(0)
    ts = _first_state(cell, spelling, torch, torch.from_numpy)
    ms_ = _first_state(cell, spelling, ms, ms.Tensor)
    for _step in range(2):
        x = rng.randn(2, 5, 3).astype(np.float32)
        tout, ts = tnet(torch.from_numpy(x), ts)
        mout, ms_ = run(ms.Tensor(x), ms_)
        np.testing.assert_allclose(mout.asnumpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
        tstates = ts if isinstance(ts, tuple) else (ts,)
        mstates = ms_ if isinstance(ms_, (tuple, list)) else (ms_,)
        for a, b in zip(tstates, mstates, strict=True):
            np.testing.assert_allclose(b.asnumpy(), a.detach().numpy(), rtol=1e-4, atol=1e-5)
        if spelling == "none_first":
            spelling_next = "tuple"
        else:
            spelling_next = spelling
        ts = _carry(ts, spelling_next, lambda s: s.detach())
        ms_ = _carry(ms_, spelling_next, ms.ops.stop_gradient)


# ---- the generated training scripts of both classes: compare-train SAME ----------------------------------

IDIOMS = [  # (axis, value, base, GRAPH_MODE)
    ("hidden", "list", "rnn", True),
    ("legacy", "tensor_type", "cnn", False),
    ("legacy", "type_float", "mlp", True),
    ("legacy", "tensor_fill", "mlp", False),
    ("gan", "legacy_fill", "gan", False),
]


@pytest.mark.slow
def test_i22_classes_3_and_5_generated_scripts_train_the_same(tmp_path):
    require_module("torch")
    require_module("mindspore")
    sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))
    from fuzz_train import run_campaign, summary
    from train_idioms import make_case

    cases = []
    for axis, value, model, graph in IDIOMS:
        c = make_case(axis, value, model, seed=7, batch=4, lr=0.1)
        c.graph = graph
        assert c.known() is None, c.idiom
        cases.append(c)
    results = run_campaign(cases, jobs=2, workdir=tmp_path)
    assert all(r.ok for r in results), summary(results)
