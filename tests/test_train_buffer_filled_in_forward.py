"""A tensor made in the training step and filled item by item by the forward (seq2seq's
``encoder_outputs = torch.zeros(...)`` then ``encoder_outputs[ei] = out[0, 0]``) belongs to the forward: the
fill is part of the loss's slice (``buf[i] = y`` changes ``buf``), and the tensor is made inside ``forward_fn``.
As a step argument MindSpore refuses the assignment ("Can not modify tensor id of input tensor"); the fill left
outside the gradient call would not reach the gradients (the encoder would not train). The draws that only feed
the forward (a WGAN-GP's ``alpha``) still leave it (tests/test_train_gradient_penalty.py).

Generated matrix: how the buffer is made (torch.zeros / torch.empty / torch.zeros_like / x.new_zeros /
torch.full) × how an item is stored (``buf[i] =``, ``buf[i] +=``, ``buf[i, :] =``, ``buf[i][0] =``) × where
the fill is (a loop in the step, a helper function of the file, statements of their own, those with the buffer
made before the first model call) × the optimizers (one: the fused TrainStep where the forward is plain
statements, the general step where it holds a loop or a call; two; two stepped through a list). A pairwise
covering slice is converted (every case under ``make test-full``): ``forward_fn`` takes no buffer, and the fill
is inside it; a covering slice × PyNative / GRAPH_MODE is trained side by side with the real compare-train (SAME).
"""

from __future__ import annotations

import itertools
import re

import pytest
from matrix_support import convert_cases, converted_trains_like_torch, covering
from requires_support import require_module

from torch2ms.convert import convert_tree

MAKE = {
    "zeros": "torch.zeros(4, 3)",
    "empty": "torch.empty(4, 3)",
    "zeros_like": "torch.zeros_like(x)",
    "new_zeros": "x.new_zeros(4, 3)",
    "full": "torch.full((4, 3), 0.5)",
}
STORE = {
    "item": "buf[{i}] = out[{i}]",
    "aug": "buf[{i}] += out[{i}]",
    "slice": "buf[{i}, :] = out[{i}]",
    "nested": "buf[{i}][0] = out[{i}][0]",
}
WHERE = ["loop", "helper", "unrolled", "made_first"]
OPTS = ["one", "two", "list"]
MODES = ["pynative", "graph"]
CASES = list(itertools.product(MAKE, STORE, WHERE, OPTS))
# make test: every pair of values; the 8 spellings first seen open (a loop in the step, two optimizers) always
CONVERTED = covering(CASES, pairs=True, keep=lambda c: c[0] in ("zeros", "empty") and c[2:] == ("loop", "two"))

HEAD = """import torch
import torch.nn as nn

{helper}
torch.manual_seed(0)
X = torch.randn(12, 3)
encoder, decoder = nn.Linear(3, 3), nn.Linear(3, 3)
"""
HELPER = """

def fill(buf, out):
    for i in range(4):
        {store}

"""
OPTIMIZERS = {
    "one": (
        ["opt = torch.optim.SGD([*encoder.parameters(), *decoder.parameters()], lr=0.1)"],
        ["opt.zero_grad()"],
        ["opt.step()"],
    ),
    "two": (
        [
            "enc_opt = torch.optim.SGD(encoder.parameters(), lr=0.1)",
            "dec_opt = torch.optim.SGD(decoder.parameters(), lr=0.1)",
        ],
        ["enc_opt.zero_grad()", "dec_opt.zero_grad()"],
        ["enc_opt.step()", "dec_opt.step()"],
    ),
    "list": (
        [
            "enc_opt = torch.optim.SGD(encoder.parameters(), lr=0.1)",
            "dec_opt = torch.optim.SGD(decoder.parameters(), lr=0.1)",
            "opts = [enc_opt, dec_opt]",
        ],
        ["for o in opts:", "    o.zero_grad()"],
        ["for o in opts:", "    o.step()"],
    ),
}


def buffer_script(make: str, store: str, where: str, opts: str) -> str:
    build, zero, step = OPTIMIZERS[opts]
    made = [f"buf = {MAKE[make]}"]
    fill = {
        "loop": ["for i in range(4):", "    " + STORE[store].format(i="i")],
        "helper": ["fill(buf, out)"],
        "unrolled": [STORE[store].format(i=k) for k in range(4)],
        "made_first": [STORE[store].format(i=k) for k in range(4)],
    }[where]
    forward = ["out = encoder(x)", *fill] if where == "made_first" else ["out = encoder(x)", *made, *fill]
    body = [
        "x = X[step * 4:step * 4 + 4]",
        *(made if where == "made_first" else []),
        *zero,
        *forward,
        "loss = decoder(buf).pow(2).sum()",
        "loss.backward()",
        *step,
    ]
    head = HEAD.format(helper=HELPER.format(store=STORE[store].format(i="i")) if where == "helper" else "")
    return (
        head + "".join(f"{line}\n" for line in build) + "for step in range(3):\n" + "".join(f"    {s}\n" for s in body)
    )


def _id(case) -> str:
    return "-".join(map(str, case))


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    return convert_cases(tmp_path_factory.mktemp("buffers"), CONVERTED, buffer_script)


@pytest.mark.parametrize("case", CONVERTED, ids=_id)
def test_buffer_filled_inside_the_forward_is_not_a_step_argument(converted, case):
    out = converted[case]
    assert "import torch" not in out and "port by hand" not in out and "not converted" not in out, out
    params = re.findall(r"def forward_fn\(([^)]*)\)", out)
    assert params, out
    assert all("buf" not in p for p in params), out
    forward = out[out.index("def forward_fn(") : out.index("value_and_grad(")]
    # the buffer is made in forward_fn, and filled there (directly or by the helper, which returns it: a compiled
    # graph sees no item assignment a called function makes to its argument)
    assert "buf = " in forward, out
    if case[2] == "helper":
        assert "buf = fill(buf, out)" in forward and "        return buf\n" not in out and "    return buf\n" in out, (
            out
        )
    else:
        assert "buf[" in forward, out


# torch.empty leaves the items a fill does not write (or adds to) undefined: no comparison for those
DEFINED = [c for c in CASES if not (c[0] == "empty" and c[1] in ("aug", "nested"))]
KEEP = (
    ("zeros", "item", "loop", "two", "graph"),  # the general step (seq2seq's form)
    ("new_zeros", "slice", "unrolled", "one", "pynative"),  # the fused TrainStep
    ("zeros", "item", "helper", "one", "graph"),  # a helper filling its argument, compiled by GRAPH_MODE
)
DIFFERENTIAL = covering(
    [(*c, m) for c, m in itertools.product(DEFINED, MODES)],
    pairs=False,
    keep=lambda c: c in KEEP,
)


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("case", DIFFERENTIAL, ids=_id)
def test_buffer_filled_inside_the_forward_trains_as_torch(tmp_path, case):
    require_module("torch")
    require_module("mindspore")
    *spelling, mode = case
    rep = converted_trains_like_torch(tmp_path, buffer_script(*spelling), mode)
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 3 * (1 if spelling[-1] == "one" else 2)


SHOW = """

def show(xs):
    for i in range(len(xs)):
        print(xs[i])

"""


@pytest.mark.slow
@pytest.mark.differential
def test_a_function_s_own_loop_variable_is_not_returned_from_forward_fn(tmp_path):
    """The fill's loop variable ``i`` is read by another function of the file, as its own local: forward_fn
    returns no ``i`` (in GRAPH_MODE a loop variable used after its loop stops the compile)."""
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = buffer_script("zeros", "item", "loop", "two").replace(
        "import torch.nn as nn\n", "import torch.nn as nn\n" + SHOW
    )
    (tmp_path / "train.py").write_text(source)
    (tmp_path / "c" / "src").mkdir(parents=True)
    (tmp_path / "c" / "src" / "train.py").write_text(source)
    convert_tree(str(tmp_path / "c" / "src"), str(tmp_path / "c" / "out"))
    out = (tmp_path / "c" / "out" / "train.py").read_text()
    forward = out[out.index("def forward_fn(") : out.index("value_and_grad(")]
    assert "return loss\n" in forward, out
    rep = compare_train(
        str(tmp_path / "train.py"), str(tmp_path / "c" / "out" / "train.py"), steps=3, mode="graph", cwd=str(tmp_path)
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
