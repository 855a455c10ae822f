"""Issue 24: `torch2ms weights` never guesses a layer type wrong in silence.

`torch2ms convert` writes the layer map (which attribute of which class is which layer) into OUT;
`weights --project` renames by it. A generated matrix of layer kinds (torch layers, and the user's own
classes named like torch layers, with their own parameter names) × where they are held (a plain
attribute with a name that suggests another type, a ModuleList index, a comprehension, a ModuleDict,
a Sequential of an OrderedDict, a Block inside a ModuleList): each case's torch source is converted,
both models are built, `weights --project` writes the .ckpt, MindSpore loads it strictly and the
outputs are compared with torch's. Without the map, a name the guesser had to guess is listed and the
exit code is 3.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from requires_support import require_module
from script_support import load_script

from torch2ms.cli import main
from torch2ms.convert import convert_tree

torch = require_module("torch")
ms = require_module("mindspore")
pytestmark = pytest.mark.differential

HEAD = '''\
import collections
import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm(nn.Module):
    """A user's own LayerNorm: weight/bias keep their names in the converted Cell."""

    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n))
        self.bias = nn.Parameter(torch.rand(n))
        self.eps = eps

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        return self.weight * (x - u) / torch.sqrt(s + self.eps) + self.bias


class LayerNorm2d(nn.Module):
    """SAM's channels-first LayerNorm."""

    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n))
        self.bias = nn.Parameter(torch.rand(n))
        self.eps = eps

    def forward(self, x):
        x = x[:, :, None, None]
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return (self.weight[:, None, None] * x + self.bias[:, None, None])[:, :, 0, 0]


class BatchNorm(nn.Module):
    """Looks like a BatchNorm in the state dict (running_mean), is not one."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n))
        self.bias = nn.Parameter(torch.rand(n))
        self.register_buffer("running_mean", torch.full((n,), 0.1))

    def forward(self, x):
        return (x - self.running_mean) * self.weight + self.bias


class Embedding(nn.Module):
    def __init__(self, v, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(v, n))

    def forward(self, x):
        return x * self.weight.sum(0)


class PReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.full((1,), 0.3))

    def forward(self, x):
        return torch.where(x > 0, x, self.weight * x)


class Emb(nn.Module):
    """An nn.Embedding applied to fixed ids, so every layer kind maps (2, 8) → (2, 8)."""

    def __init__(self):
        super().__init__()
        self.lookup = nn.Embedding(5, 8)

    def forward(self, x):
        return x + self.lookup(((x[:, :2] > 0).long() * 3 + 1)).sum(1)
'''

# kind → (constructor, does it rename in MindSpore when it is a torch layer)
KINDS = {
    "nn.LayerNorm": "nn.LayerNorm(8)",
    "nn.BatchNorm2d": "nn.BatchNorm2d(8)",
    "nn.PReLU": "nn.PReLU()",
    "nn.PReLU8": "nn.PReLU(8)",
    "nn.Embedding": "nn.Embedding(5, 8)",
    "nn.Linear_nobias": "nn.Linear(8, 8, bias=False)",
    "user.LayerNorm": "LayerNorm(8)",
    "user.LayerNorm2d": "LayerNorm2d(8)",
    "user.BatchNorm": "BatchNorm(8)",
    "user.Embedding": "Embedding(5, 8)",
    "user.PReLU": "PReLU()",
}
# names that suggest another type than the layer's
NAMES = ["ln_1", "lut", "prelu", "bn", "emb", "proj", "norm"]
HOLDERS = ["attr", "list_index", "comprehension", "dict", "ordered_seq", "block_in_list"]


def _apply(kind: str, ref: str) -> str:
    if kind == "nn.Embedding":
        return f"x + {ref}(((x[:, :2] > 0).long() * 3 + 1)).sum(1)"
    if kind == "nn.BatchNorm2d":
        return f"{ref}(x[:, :, None, None])[:, :, 0, 0]"
    return f"{ref}(x)"


def _case_source(kind: str, holder: str, name: str) -> str:
    ctor = KINDS[kind]
    if holder == "attr":
        init, ref = f"self.{name} = {ctor}", f"self.{name}"
    elif holder == "list_index":  # SAM's self.point_embeddings[i]
        init, ref = f"self.{name}s = nn.ModuleList([nn.Linear(8, 8), {ctor}])", f"self.{name}s[1]"
    elif holder == "comprehension":
        init, ref = f"self.{name} = nn.ModuleList([{ctor} for _ in range(2)])", f"self.{name}[1]"
    elif holder == "dict":
        init, ref = f'self.{name} = nn.ModuleDict({{"a": {ctor}, "b": nn.Linear(8, 8)}})', f'self.{name}["a"]'
    elif holder == "ordered_seq":
        init = f'self.{name} = nn.Sequential(collections.OrderedDict([("fc", nn.Linear(8, 8)), ("x", {ctor})]))'
        ref = f"self.{name}.x"
    else:  # a Block in a ModuleList
        init, ref = "self.blocks = nn.ModuleList([Block(), Block()])", "self.blocks[1]"
    block = textwrap.dedent(f"""
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.{name} = {ctor}
                self.fc = nn.Linear(8, 8)

            def forward(self, x):
                return self.fc({_apply(kind, f"self.{name}")})
    """)
    apply = "self.blocks[0](self.blocks[1](x))" if holder == "block_in_list" else _apply(kind, ref)
    if holder == "ordered_seq" and kind == "nn.Embedding":
        init = f'self.{name} = nn.Sequential(collections.OrderedDict([("x", {ctor})]))'
        apply = _apply(kind, f"self.{name}.x")
    if holder in ("dict", "list_index", "ordered_seq"):
        apply = _apply(kind, ref)
    model = textwrap.dedent(f"""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                {init}
                self.out = nn.Linear(8, 3)

            def forward(self, x):
                return self.out({apply})


        def make():
            torch.manual_seed(0)
            return Model()
    """)
    return HEAD + block + model


def _cases() -> list[tuple[str, str, str]]:
    out = []
    for i, kind in enumerate(KINDS):
        for j, holder in enumerate(HOLDERS):
            out.append((kind, holder, NAMES[(i + j) % len(NAMES)]))
    return out


CASES = _cases()
SPECIALS = {
    # DETR's own encoder layer: self_attn + linear1 like torch's TransformerEncoderLayer, is not one
    "detr_layer": HEAD
    + textwrap.dedent("""
        class TransformerEncoderLayer(nn.Module):
            def __init__(self):
                super().__init__()
                self.self_attn = nn.MultiheadAttention(8, 2)
                self.linear1 = nn.Linear(8, 16)
                self.linear2 = nn.Linear(16, 8)
                self.norm1 = nn.LayerNorm(8)

            def forward(self, x):
                q = x[:, None, :]
                a = self.self_attn(q, q, q)[0][:, 0, :]
                return self.norm1(x + self.linear2(F.relu(self.linear1(a))))


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([TransformerEncoderLayer() for _ in range(2)])
                self.out = nn.Linear(8, 3)

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return self.out(x)


        def make():
            torch.manual_seed(0)
            return Model()
    """),
    # GPT's weight tying, the embedding held as self.lut, a PReLU named act
    "tied": HEAD
    + textwrap.dedent("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.lut = nn.Embedding(8, 8)
                self.act = nn.PReLU()
                self.ln_f = LayerNorm(8)
                self.lm_head = nn.Linear(8, 8, bias=False)
                self.lut.weight = self.lm_head.weight

            def forward(self, x):
                h = x + self.lut(((x[:, :2] > 0).long() * 3 + 1)).sum(1)
                return self.lm_head(self.ln_f(self.act(h)))


        def make():
            torch.manual_seed(0)
            return Model()
    """),
}


_BLOCK2 = """
import copy


class Block2(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(self.norm(x))


def _get_clones(module, n):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])
"""
# the ways a model's source builds its layers that the map follows (or tells by attribute names)
_BUILT = {
    # minGPT: ModuleDict(dict(...)), tied embedding, a user LayerNorm
    "mingpt_like": (
        "self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(8, 8), "
        "h=nn.ModuleList([Block2() for _ in range(2)]), ln_f=LayerNorm(8)))\n"
        "        self.lm_head = nn.Linear(8, 8, bias=False)\n"
        "        self.transformer.wte.weight = self.lm_head.weight",
        "x + self.transformer.wte(((x[:, :2] > 0).long() * 3 + 1)).sum(1)",
        "self.lm_head(self.transformer.ln_f(self.transformer.h[1](self.transformer.h[0](h))))",
    ),
    # llama2.c: a ModuleList filled by append in a loop
    "appended": (
        "self.layers = nn.ModuleList()\n        for _ in range(2):\n            self.layers.append(Block2())",
        "x",
        "self.layers[1](self.layers[0](h))",
    ),
    # DETR: _get_clones(layer, n)
    "clones": ("self.layers = _get_clones(Block2(), 2)", "x", "self.layers[1](self.layers[0](h))"),
    # SAM: a ModuleList of a local list comprehension
    "local_list": (
        "embs = [nn.Embedding(5, 8) for _ in range(2)]\n        self.point_embeddings = nn.ModuleList(embs)",
        "x + self.point_embeddings[1](((x[:, :2] > 0).long() * 3 + 1)).sum(1)",
        "h + self.point_embeddings[0](((x[:, 2:4] > 0).long() + 2)).sum(1)",
    ),
    # pytorch-cifar's ResNet: nn.Sequential(), then nn.Sequential(conv, bn) when it downsamples
    "shortcut": (
        "self.shortcut = nn.Sequential()\n        if cross:\n"
        "            self.shortcut = nn.Sequential(nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8))",
        "x[:, :, None, None]",
        "self.shortcut(h)[:, :, 0, 0]",
    ),
    # whisper: `... if cross_attention else None`
    "optional": (
        "self.cross_attn_ln = nn.LayerNorm(8) if cross else None\n        self.unused = None if cross else nn.Linear(8, 8)",
        "x",
        "self.cross_attn_ln(h)",
    ),
}
for _tag, (_init, _pre, _post) in _BUILT.items():
    SPECIALS[_tag] = (
        HEAD
        + _BLOCK2
        + f"""

class Model(nn.Module):
    def __init__(self, cross=True):
        super().__init__()
        {_init}
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        h = {_pre}
        return self.out({_post})


def make():
    torch.manual_seed(0)
    return Model()
"""
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """Every case's torch source in one tree, converted once (its layer map with it)."""
    root = tmp_path_factory.mktemp("layer_map")
    src, out = root / "src", root / "out"
    src.mkdir()
    for i, (kind, holder, name) in enumerate(CASES):
        (src / f"c{i}.py").write_text(_case_source(kind, holder, name))
    for tag, text in SPECIALS.items():
        (src / f"{tag}.py").write_text(text)
    report = convert_tree(src, out, runtime="package")
    assert not report.failed, [f.error for f in report.failed]
    assert (out / "torch2ms_layers.json").is_file()
    return src, out


def _run_case(project, tag: str, tmp_path: Path, extra: list[str]) -> tuple[int, Path]:
    src, out = project
    tmod = load_script(src / f"{tag}.py", f"t2m_lm_torch_{tag}")
    tnet = tmod.make().eval()
    with torch.no_grad():  # every parameter and buffer non-trivial, so a value not carried over shows
        for t in tnet.parameters():  # (buffers: the converted network builds its own, issue 24's own class)
            if t.dtype.is_floating_point:
                t.copy_(torch.rand_like(t) + 0.25)
    pth, ckpt = tmp_path / f"{tag}.pth", tmp_path / f"{tag}.ckpt"
    torch.save(tnet.state_dict(), pth)
    rc = main(["weights", str(pth), "-o", str(ckpt), *extra])
    return rc, ckpt


def _check_outputs(project, tag: str, ckpt: Path) -> None:
    src, out = project
    tmod = load_script(src / f"{tag}.py", f"t2m_lm_torch2_{tag}")
    tnet = tmod.make().eval()
    tnet.load_state_dict(torch.load(ckpt.with_suffix(".pth")))
    mmod = load_script(out / f"{tag}.py", f"t2m_lm_ms_{tag}")
    mnet = mmod.make()
    not_loaded, unused = ms.load_param_into_net(mnet, ms.load_checkpoint(str(ckpt)), strict_load=True)
    assert not_loaded == [] and unused == [], (not_loaded, unused)
    mnet.set_train(False)
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    with torch.no_grad():
        want = tnet(torch.from_numpy(x)).numpy()
    got = mnet(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("idx", range(len(CASES)), ids=[f"{k}-{h}-{n}" for k, h, n in CASES])
def test_weights_by_layer_map_load_strictly_and_match_torch(project, tmp_path, idx, capsys):
    tag = f"c{idx}"
    rc, ckpt = _run_case(project, tag, tmp_path, ["--project", str(project[1] / f"{tag}.py")])
    assert rc == 0, capsys.readouterr().out
    _check_outputs(project, tag, ckpt)


@pytest.mark.parametrize("tag", sorted(SPECIALS))
def test_weights_by_layer_map_specials(project, tmp_path, tag, capsys):
    rc, ckpt = _run_case(project, tag, tmp_path, ["--project", f"{project[1] / tag}.py:Model"])
    assert rc == 0, capsys.readouterr().out
    _check_outputs(project, tag, ckpt)


@pytest.mark.parametrize("tag", ["tied", "mingpt_like"])
def test_tied_weights_load_strictly_with_net(project, tmp_path, tag, capsys):
    """One shared Parameter in MindSpore, named by the network: --net writes it under that name."""
    rc, ckpt = _run_case(project, tag, tmp_path, ["--net", f"{project[1] / tag}.py:make"])
    assert rc == 0, capsys.readouterr().out
    _check_outputs(project, tag, ckpt)


@pytest.mark.parametrize("idx", range(len(CASES)), ids=[f"{k}-{h}-{n}" for k, h, n in CASES])
def test_weights_without_map_lists_what_it_guessed(project, tmp_path, idx, capsys, monkeypatch):
    """No map, no net: every name that rests on a guessed type is listed, exit 3 — so a wrong guess
    (a user LayerNorm renamed gamma, a PReLU left as weight) is never silent."""
    kind, _holder, _name = CASES[idx]
    tag = f"c{idx}"
    monkeypatch.chdir(tmp_path)  # no layer map here
    capsys.readouterr()
    rc, ckpt = _run_case(project, tag, tmp_path, ["--json"])
    data = json.loads(capsys.readouterr().out)
    listed = {g["name"] for g in data["guessed"]}
    # the parameters of the layer under test: every one whose name MindSpore changes or that
    # could be either of two layers is listed
    sd = torch.load(tmp_path / f"{tag}.pth")
    suspects = {k for k in sd if k.rpartition(".")[2] in ("weight", "bias", "running_mean") and sd[k].dim() == 1}
    suspects |= {
        k for k in sd if kind.endswith(("Embedding", "nobias")) and sd[k].dim() == 2 and f"{k[:-6]}bias" not in sd
    }
    suspects -= {k for k in sd if k.endswith("bias") and f"{k[:-4]}weight" in sd and sd[f"{k[:-4]}weight"].dim() == 2}
    assert suspects <= listed, (suspects - listed, data["guessed"])
    assert rc == (3 if listed else 0)


def test_layer_map_file_name_is_the_one_weights_reads():
    from torch2ms.convert.layer_map import LAYER_MAP_FILE as written
    from torch2ms.weights.project_map import LAYER_MAP_FILE as read

    assert written == read


# Norms whose MindSpore layer has gamma/beta where torch's has no parameters (issue 24, item 2)
_GRID = "torch.arange(12.0).reshape(3, 4)"
NEUTRAL = {
    "instance_norm2d": ("nn.InstanceNorm2d(8)", f"x[:, :, None, None] * {_GRID} + {_GRID}.cos()", "[:, :, 1, 2]"),
    "instance_norm2d_in_list": ("nn.InstanceNorm2d(8)", f"x[:, :, None, None] + {_GRID}.cos()", "[:, :, 2, 1]"),
    "instance_norm1d": (
        "nn.InstanceNorm1d(8)",
        "x[:, :, None] * torch.arange(4.0) + torch.arange(4.0).sin()",
        "[:, :, 1]",
    ),
    "group_norm_no_affine": ("nn.GroupNorm(2, 8, affine=False)", "x", ""),
}


def _neutral_source(tag: str) -> str:
    ctor, pre, post = NEUTRAL[tag]
    init = f"self.norms = nn.ModuleList([nn.Identity(), {ctor}])" if tag.endswith("in_list") else f"self.norm = {ctor}"
    ref = "self.norms[1]" if tag.endswith("in_list") else "self.norm"
    return HEAD + textwrap.dedent(f"""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                {init}
                self.out = nn.Linear(8, 3)

            def forward(self, x):
                return self.out({ref}({pre}){post})


        def make():
            torch.manual_seed(0)
            return Model()
    """)


@pytest.mark.parametrize("tag", sorted(NEUTRAL))
def test_weights_fill_parameters_torch_lacks(tmp_path, tag, capsys):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / f"{tag}.py").write_text(_neutral_source(tag))
    report = convert_tree(src, out, runtime="package")
    assert not report.failed
    rc, ckpt = _run_case((src, out), tag, tmp_path, ["--net", f"{out / tag}.py:make", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0, data
    assert data["filled"], data  # gamma/beta written with 1 and 0
    _check_outputs((src, out), tag, ckpt)


def test_guess_listing_names_the_command_that_makes_it_certain(project, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no layer map here
    capsys.readouterr()
    rc, _ = _run_case(project, "tied", tmp_path, [])
    text = capsys.readouterr().out
    assert rc == 3
    assert "ln_f.weight → ln_f.gamma" in text  # the user LayerNorm's wrong guess is listed, not silent
    assert f"torch2ms weights {tmp_path / 'tied.pth'} -o {tmp_path / 'tied.ckpt'} --project CONVERTED" in text
    # and that command, with the converted folder, makes every name certain
    rc, _ = _run_case(project, "tied", tmp_path, ["--project", str(project[1])])
    assert rc == 0, capsys.readouterr().out
