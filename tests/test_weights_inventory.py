"""Issue 24: `weights --project` renames a layer certainly where the converted project proves its type.

Where the layer map cannot say which layer an attribute holds (a ``Sequential`` built from a list in
a loop, a class passed in as an argument, a ``partial``, an alias, a factory function), the rename is
certain when every layer type the project constructs anywhere that could hold the key group gives
the same MindSpore names; the world is open (a guess, exit 3) when the project could build a layer
the inventory cannot see (``getattr(nn, name)``), and a user class with its own 1-D ``weight`` is a
candidate that keeps the names. A generated matrix: containers × how the layer class reaches the
constructor × layer kinds (every pair of the three covered; ``T2M_FULL_MATRIX=1``: the whole
product), and the open-world spoilers × layer kinds. Each case is its own project: converted, the
torch model built with random parameters and buffers, its state dict saved, ``torch2ms weights
--project`` run (exit 0 when certain, 3 when open), the .ckpt loaded strictly into the converted
MindSpore network, one forward compared with torch's.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import textwrap

import numpy as np
import pytest
from requires_support import require_module
from script_support import load_script

from torch2ms.cli import main
from torch2ms.convert import convert_tree

torch = require_module("torch")
ms = require_module("mindspore")
pytestmark = pytest.mark.differential

# kind → (torch class, constructor arguments, input shape, input dtype, a head layer the project
# also builds, applied after the container's sum)
KINDS = {
    "BatchNorm1d": ("nn.BatchNorm1d", "4", (3, 4), "float", ""),
    "BatchNorm2d": ("nn.BatchNorm2d", "4", (2, 4, 3, 3), "float", ""),
    "LayerNorm": ("nn.LayerNorm", "4", (2, 4), "float", ""),
    "GroupNorm": ("nn.GroupNorm", "2, 4", (2, 4, 3, 3), "float", ""),
    "Conv1d": ("nn.Conv1d", "4, 4, 3, padding=1", (2, 4, 5), "float", "nn.Linear(5, 3)"),
    "Linear": ("nn.Linear", "4, 4", (2, 4), "float", "nn.Conv1d(1, 2, 3)"),
    "Embedding": ("nn.Embedding", "10, 4", (2, 5), "int", ""),
    "PReLU": ("nn.PReLU", "4", (2, 4, 3), "float", ""),
}
CONTAINERS = ("seq_loop", "modulelist", "moduledict", "nested")
REACHES = ("direct", "default", "passed", "partial", "alias", "factory", "subclass")
SPOILERS = ("user_weight", "getattr_nn")


def _make_expr(reach: str, cls: str, args: str) -> tuple[str, str, str]:
    """(module-level code, Body.__init__'s extra parameter, the expression that builds one layer)."""
    if reach == "direct":
        return "", "", f"{cls}({args})"
    if reach == "default":
        return "", f", layer={cls}", f"layer({args})"
    if reach == "passed":
        return "", ", layer=None", f"layer({args})"
    if reach == "partial":
        return "", "", f"partial({cls}, {args})()"
    if reach == "alias":
        return f"Layer = {cls}\n", "", f"Layer({args})"
    if reach == "factory":
        return f"def make_layer():\n    return {cls}({args})\n", "", "make_layer()"
    return f"class MyLayer({cls}):\n    pass\n", "", f"MyLayer({args})"


def _container(container: str, make: str) -> tuple[str, str]:
    """(Body.__init__'s lines that set self.c, forward's loop over the layers)."""
    if container == "seq_loop":
        build = f"layers = []\nfor _ in range(2):\n    layers.append({make})\nself.c = nn.Sequential(*layers)"
        return build, "for m in self.c:\n    y = y + m(x)"
    if container == "modulelist":
        return f"self.c = nn.ModuleList([{make} for _ in range(2)])", "for m in self.c:\n    y = y + m(x)"
    if container == "moduledict":
        return f'self.c = nn.ModuleDict({{"a": {make}, "b": {make}}})', "for m in self.c.values():\n    y = y + m(x)"
    build = f"inner = []\nfor _ in range(2):\n    inner.append({make})\nself.c = nn.ModuleList([nn.Sequential(*inner)])"
    return build, "for s in self.c:\n    for m in s:\n        y = y + m(x)"


SPOILER_CODE = {
    "user_weight": '''
class Scale(nn.Module):
    """The user's own layer: its 1-D weight and bias keep their names in MindSpore."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n))

    def forward(self, x):
        return x * self.weight + self.bias
''',
    "getattr_nn": """
def layer_by_name(name, *args):
    return getattr(nn, name)(*args)
""",
}


def case_source(container: str, reach: str, kind: str, spoiler: str = "") -> str:
    cls, args, _shape, _dtype, head = KINDS[kind]
    top, param, make = _make_expr(reach, cls, args)
    build, loop = _container(container, make)
    passed = f"layer={cls}" if reach == "passed" else ""
    head_line = f"self.head = {head}" if head else "self.head = nn.Identity()"
    head_call = "self.head(y.reshape(y.shape[0], -1, y.shape[-1]))" if head else "y"
    return (
        "from functools import partial\n\nimport torch\nimport torch.nn as nn\n\n"
        + top
        + SPOILER_CODE.get(spoiler, "")
        + f"\n\nclass Body(nn.Module):\n    def __init__(self{param}):\n        super().__init__()\n"
        + textwrap.indent(build, " " * 8)
        + "\n\n    def forward(self, x):\n        y = 0\n"
        + textwrap.indent(loop, " " * 8)
        + "\n        return y\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        + f"        self.body = Body({passed})\n        {head_line}\n\n"
        + f"    def forward(self, x):\n        y = self.body(x)\n        return {head_call}\n"
    )


def _cases() -> list[tuple[str, str, str, str]]:
    if os.environ.get("T2M_FULL_MATRIX"):
        plain = [(c, r, k, "") for c, r, k in itertools.product(CONTAINERS, REACHES, KINDS)]
    else:  # every (reach, kind), (reach, container) and (kind, container) pair, once at least
        plain = [
            (CONTAINERS[(i + j) % len(CONTAINERS)], r, k, "")
            for (i, r), (j, k) in itertools.product(enumerate(REACHES), enumerate(KINDS))
        ]
    spoiled = [  # in containers whose layers the attribute map cannot see
        (("seq_loop", "nested")[j % 2], REACHES[j % len(REACHES)], k, s) for s in SPOILERS for j, k in enumerate(KINDS)
    ]
    return plain + spoiled


CASES = _cases()


def expected_exit(kind: str, spoiler: str) -> int:
    """0 where the project proves every rename; 3 where a candidate it cannot rule out names the key
    otherwise. A Linear's names are the same in MindSpore (nothing to guess), and a BatchNorm's
    running statistics rule the user's Scale out."""
    if spoiler == "user_weight":
        return 0 if kind in ("Linear", "BatchNorm1d", "BatchNorm2d") else 3
    if spoiler == "getattr_nn":
        return 0 if kind == "Linear" else 3
    return 0


def _ids() -> list[str]:
    return ["-".join(x for x in case if x) for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_inventory_makes_renames_certain(case, tmp_path, capsys):
    container, reach, kind, spoiler = case
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "model.py").write_text(case_source(container, reach, kind, spoiler))
    report = convert_tree(src, out, runtime="package")
    assert not report.failed, [f.error for f in report.failed]
    tag = "_".join(x for x in case if x)
    tmod = load_script(src / "model.py", f"t2m_inv_torch_{tag}")
    torch.manual_seed(0)
    tnet = tmod.Net().eval()
    with torch.no_grad():  # every tensor non-trivial, so a value not carried over shows
        for t in tnet.state_dict().values():
            if t.dtype.is_floating_point:
                t.copy_(torch.rand_like(t) + 0.25)
    pth, ckpt = tmp_path / "model.pth", tmp_path / "model.ckpt"
    torch.save(tnet.state_dict(), pth)
    capsys.readouterr()
    rc = main(["weights", str(pth), "-o", str(ckpt), "--project", str(out)])
    text = capsys.readouterr()
    assert rc == expected_exit(kind, spoiler), text.out + text.err
    if rc == 3:  # a guess: the command it lists makes it certain
        line = next(ln for ln in (text.out + text.err).splitlines() if ln.startswith("to make them certain:"))
        argv = shlex.split(line.split(":", 1)[1])
        assert argv[0] == "torch2ms" and argv[1] == "weights", line
        assert main([*argv[1:], "--force"]) == 0, capsys.readouterr()
    mnet = load_script(out / "model.py", f"t2m_inv_ms_{tag}").Net()
    not_loaded, unused = ms.load_param_into_net(mnet, ms.load_checkpoint(str(ckpt)), strict_load=True)
    assert not_loaded == [] and unused == [], (not_loaded, unused)
    mnet.set_train(False)
    _cls, _args, shape, dtype, _head = KINDS[kind]
    rng = np.random.default_rng(1)
    x = rng.integers(0, 10, shape) if dtype == "int" else rng.standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        want = tnet(torch.from_numpy(x)).numpy()
    got = mnet(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_empty_state_dict_is_refused_with_a_clear_line(tmp_path, capsys):
    """A model without parameters or buffers: MindSpore 2.10 cannot load a .ckpt with no entries, so
    nothing is written (exit 2) and the line says why."""
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "model.py").write_text(
        "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
    )
    convert_tree(src, out, runtime="package")
    tnet = load_script(src / "model.py", "t2m_inv_torch_empty").Net()
    assert tnet.state_dict() == {}
    torch.save(tnet.state_dict(), tmp_path / "e.pth")
    ckpt = tmp_path / "e.ckpt"
    with pytest.raises(ValueError):  # why it is refused: MindSpore reads no empty checkpoint
        empty = tmp_path / "empty.ckpt"
        ms.save_checkpoint([], str(empty))
        ms.load_checkpoint(str(empty))
    capsys.readouterr()
    rc = main(["weights", str(tmp_path / "e.pth"), "-o", str(ckpt), "--project", str(out)])
    text = capsys.readouterr()
    assert rc == 2
    assert "empty state dict" in text.err and "no checkpoint" in text.err
    assert not ckpt.exists()
    # a checkpoint without a state dict in it is still an error of its own
    torch.save({"epoch": 3}, tmp_path / "meta.pth")
    assert main(["weights", str(tmp_path / "meta.pth"), "-o", str(ckpt)]) == 2
    assert "holds no tensors" in capsys.readouterr().err


INVENTORY_SPELLINGS = [  # (source lines inside a function, the layers it records, whether the world opens)
    ("x = nn.GroupNorm(2, 4)", "torch.nn.GroupNorm", False),
    ("x = partial(nn.Conv1d, kernel_size=1)", "torch.nn.Conv1d", False),
    ("Norm = nn.LayerNorm", "torch.nn.LayerNorm", False),
    ("def f(norm_layer=nn.BatchNorm2d): return norm_layer", "torch.nn.BatchNorm2d", False),
    ("x = getattr(nn, 'PReLU')(4)", "torch.nn.PReLU", False),
    ("ok = isinstance(m, (nn.Embedding, nn.Linear))", "", False),
    ("types = (nn.Embedding, nn.Linear); ok = isinstance(m, types)", "", False),
    (
        "types = (nn.Embedding, nn.Linear); ok = isinstance(m, types); x = types[0](2, 2)",
        "torch.nn.Embedding torch.nn.Linear",
        False,
    ),
    ("sd = torch.hub.load_state_dict_from_url(url)", "", False),
    ("import tensorflow as tf; tf.constant(1)", "", False),
    ("x = getattr(nn, name)(4)", "", True),
    ("x = eval('nn.Linear(2, 2)')", "", True),
    ("setattr(self, name, nn.Parameter(w))", "", True),
    ("import timm; x = timm.create_model('vit')", "", True),
    ("x = torch.hub.load('repo', 'model')", "", True),
    ("import torchvision; x = torchvision.models.resnet18()", "", True),
]


@pytest.mark.parametrize(("line", "layer", "opens"), INVENTORY_SPELLINGS)
def test_layer_map_inventory_records_each_spelling(line, layer, opens, tmp_path):
    """What `torch2ms convert` records in the layer map's inventory, spelling by spelling (the
    isinstance check builds nothing; a state dict from torch.hub or another framework's objects
    build no torch layer)."""
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    body = textwrap.indent(line.replace("; ", "\n"), " " * 8)
    (src / "model.py").write_text(
        "from functools import partial\n\nimport torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self, m=None, name='', url='', w=None):\n        super().__init__()\n"
        f"{body}\n        self.fc = nn.Identity()\n"
    )
    convert_tree(src, out, runtime="package")
    inv = json.loads((out / "torch2ms_layers.json").read_text())["inventory"]
    assert set(inv["layers"]) - {"torch.nn.Module", "torch.nn.Identity", "torch.nn.Parameter"} == set(layer.split()), (
        inv
    )
    assert bool(inv["open"]) == opens, inv
