"""Issue 22 class 11: ``nn.Embedding.from_pretrained`` (a sinusoid table in a Transformer tutorial, word
vectors in an NLP script) was left as torch with a "not in the knowledge base" mark. It converts to
``torch2ms.runtime.embedding_from_pretrained``: the table as given (MindSpore's constructor zeroes the
padding row, in place through the array it is handed: torch keeps the row), frozen unless
``freeze=False``, padding lookups without gradient. Real torch against real MindSpore, over the
spellings of the call (how the class is reached, positional/keyword, freeze and padding_idx forms) and
the places it sits (module level, a Cell's __init__)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from torch2ms.convert import convert_source

IMPORTS = {
    "nn": ("import torch\nimport torch.nn as nn\n", "nn.Embedding.from_pretrained"),
    "torch": ("import torch\n", "torch.nn.Embedding.from_pretrained"),
    "class": ("import torch\nfrom torch.nn import Embedding\n", "Embedding.from_pretrained"),
}
ARGS = {
    "plain": "W",
    "frozen_kw": "embeddings=W, freeze=True",
    "trainable": "W, freeze=False",
    "pad0": "W, freeze=False, padding_idx=0",
    "pad_neg": "W, padding_idx=-1, freeze=False",
    "pad_pos": "W, False, 2",
}


def _source(imp: str, args: str, place: str) -> str:
    head, call = IMPORTS[imp]
    table = "W = torch.from_numpy(TABLE)\n"
    if place == "module":
        return head + table + f"emb = {call}({args})\n"
    return (
        head
        + ("import torch.nn as nn\n" if imp != "nn" else "")
        + table
        + "\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        + f"        self.emb = {call}({args})\n\n    def forward(self, x):\n        return self.emb(x).sum(-1)\n\n\n"
        + "emb = Net()\n"
    )


CASES = [(i, a, p) for i, a, p in itertools.product(IMPORTS, ARGS, ["module", "cell"])]


@pytest.mark.parametrize("imp,args,place", CASES[::2] + [CASES[-1]])
def test_from_pretrained_converts_to_the_runtime_helper(imp, args, place):
    code = convert_source(_source(imp, ARGS[args], place), "m.py").code
    assert "embedding_from_pretrained(" in code and "from_pretrained" not in code.replace(
        "embedding_from_pretrained", ""
    )
    assert "torch" not in code.replace("torch2ms", ""), code


@pytest.mark.differential
@pytest.mark.parametrize("imp,args,place", CASES)
def test_from_pretrained_forward_table_and_training_as_torch(imp, args, place):
    import mindspore as ms
    import torch

    rng = np.random.default_rng(len(imp) + len(args))
    table = rng.standard_normal((5, 3)).astype(np.float32)
    ids = np.array([[0, 1, 2, 4], [2, 2, 3, 0]])
    src = _source(imp, ARGS[args], place)
    t_ns: dict = {"TABLE": table.copy()}
    exec(src, t_ns)
    m_ns: dict = {"TABLE": table.copy()}
    exec(convert_source(src, "m.py").code, m_ns)
    t, m = t_ns["emb"], m_ns["emb"]
    np.testing.assert_array_equal(m_ns["TABLE"], table)  # the given table is not written through
    t_out = t(torch.from_numpy(ids))
    m_out = m(ms.Tensor(ids))
    np.testing.assert_allclose(m_out.asnumpy(), t_out.detach().numpy(), rtol=1e-6, atol=1e-6)

    # one SGD step over what each side trains: a frozen table stays, padding rows keep their values
    t_params = [p for p in t.parameters() if p.requires_grad]
    m_params = m.trainable_params()
    assert len(m_params) == len(t_params)
    if not t_params:
        return
    t_out.pow(2).sum().backward()
    with torch.no_grad():
        for p in t_params:
            p -= 0.1 * p.grad
    grads = ms.grad(lambda x: m(x).pow(2).sum(), None, m_params)(ms.Tensor(ids))
    for p, g in zip(m_params, grads):
        p.set_data(p - 0.1 * g)
    t_table = t.emb.weight if place == "cell" else t.weight
    m_table = m.emb.embedding_table if place == "cell" else m.embedding_table
    np.testing.assert_allclose(m_table.asnumpy(), t_table.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_from_pretrained_refuses_max_norm_with_its_note():
    code = convert_source(
        "import torch.nn as nn\nimport torch\nW = torch.ones(3, 2)\ne = nn.Embedding.from_pretrained(W, max_norm=1.0)\n",
        "m.py",
    ).code
    assert "torch2ms:" in code and "max_norm" in code


@pytest.mark.parametrize("imp", list(IMPORTS))
def test_the_layer_map_records_a_pretrained_embedding_as_an_embedding(imp, tmp_path):
    """`torch2ms weights --project OUT` renames its weight to embedding_table without guessing."""
    import json

    from torch2ms.convert import convert_tree

    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text(_source(imp, ARGS["pad0"], "cell"), encoding="utf-8")
    convert_tree(src, tmp_path / "out", jobs=1)
    classes = json.loads((tmp_path / "out" / "torch2ms_layers.json").read_text("utf-8"))["classes"]
    assert classes["m.Net"]["attrs"]["emb"] == {"layer": "torch.nn.Embedding"}


TRAIN = """
import torch
import torch.nn as nn

torch.manual_seed(0)
TABLE = torch.randn(6, 4)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(TABLE{freeze})
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(self.emb(x)).sum(1)


model = Net()
opt = torch.optim.{opt}(model.parameters(), lr=0.05)
ids = torch.randint(0, 6, (16, 3))
y = torch.randn(16, 1)
for step in range(5):
    opt.zero_grad()
    loss = ((model(ids) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("freeze,opt", [("", "SGD"), (", freeze=False", "Adam")])
def test_a_training_script_with_a_pretrained_table_trains_the_same(tmp_path, freeze, opt):
    """compare-train: a frozen table in torch's optimizer is not a parameter torch trains (it has no grad)."""
    from requires_support import require_module

    from torch2ms.convert import convert_tree
    from torch2ms.trainrun import compare_train

    require_module("torch")
    require_module("mindspore")
    source = TRAIN.format(freeze=freeze, opt=opt)
    (tmp_path / "train.py").write_text(source)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(source)
    convert_tree(str(tmp_path / "src"), str(tmp_path / "out"))
    rep = compare_train(
        str(tmp_path / "train.py"),
        str(tmp_path / "out" / "train.py"),
        steps=5,
        out_dir=str(tmp_path / "c"),
        cwd=str(tmp_path),
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
