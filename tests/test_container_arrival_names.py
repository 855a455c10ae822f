"""Issue 24, class 1: cells that arrive in an ``nn.ModuleList`` / ``nn.Sequential`` other than through
its constructor list. MindSpore names them from a guessed prefix (``CellList.append`` reads the first
key it meets in a sibling's name: ``input_blocks.0.0.weight`` gives ``input_blocks.0.``, so guided
diffusion's ``input_blocks.1.0.weight`` became ``input_blocks.0.1.0.weight``).

A generated matrix: container × how the cells arrive (constructor, append, extend, ``+=``, insert,
append after the list is assigned to its parent, append before) × nesting depth 1–3 × PyNative and
GRAPH_MODE. The converted net's parameter names are torch's state-dict keys (after the KB's layer
renames), and the torch state dict converted by ``torch2ms weights --project`` loads strictly and gives
torch's forward.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest
from rc_models_support import import_file, ms_mode, relative_error

pytestmark = pytest.mark.differential

CONTAINERS = {"ModuleList": "nn.ModuleList([{}])", "Sequential": "nn.Sequential({})"}
# (statements building self.blocks from cells a, b, c) — `{C}` is the container around a cell list
ARRIVALS = {
    "constructor": ["self.blocks = {C(a, b, c)}"],
    "append": ["self.blocks = {C(a)}", "for cell in (b, c):", "    self.blocks.append(cell)"],
    "extend": ["self.blocks = {C(a)}", "self.blocks.extend([b, c])"],
    "iadd": ["self.blocks = {C(a)}", "self.blocks += {C(b, c)}"],
    "insert": ["self.blocks = {C(b, c)}", "self.blocks.insert(0, a)"],
    "append_after_assign": ["self.blocks = {C()}", "for cell in (a, b, c):", "    self.blocks.append(cell)"],
    "append_before_assign": [
        "blocks = {C()}",
        "for cell in (a, b, c):",
        "    blocks.append(cell)",
        "self.blocks = blocks",
    ],
}
# depth 1: a layer; 2: a Sequential of layers; 3: a Sequential holding a Sequential (a Sequential subclass)
CELLS = {
    1: "nn.Linear(4, 4)",
    2: "nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))",
    3: "Chain(nn.Sequential(nn.Linear(4, 4), nn.Tanh()), nn.Linear(4, 4))",
}
HEAD = """\
import torch
import torch.nn as nn


class Chain(nn.Sequential):
    def forward(self, x):
        for layer in self:
            x = layer(x)
        return x
"""
NET = """

class Net_{tag}(nn.Module):
    def __init__(self):
        super().__init__()
        a, b, c = {cell}, {cell}, {cell}
{body}
        self.head = nn.Linear(4, 2)

    def forward(self, x):
{walk}
        return self.head(x)
"""
# Never changed after construction: the user's idiomatic MindSpore stays (SequentialCell, CellList).
FIXED = """

class Net_fixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4)))
        self.stages = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(2)])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        x = self.mlp(x)
        for stage in self.stages:
            x = stage(x)
        return self.head(x)
"""
RENAMES = {"gamma": "weight", "beta": "bias"}
CASES = list(itertools.product(CONTAINERS, ARRIVALS, CELLS))


def _tag(container: str, arrival: str, depth: int) -> str:
    return f"{container}_{arrival}_{depth}"


def _net(container: str, arrival: str, depth: int) -> str:
    if container == "ModuleList":
        walk = "        for block in self.blocks:\n            x = torch.tanh(block(x))"
    else:
        walk = "        x = self.blocks(x)"
    lines = []
    for line in ARRIVALS[arrival]:
        for n in (3, 2, 1):  # the container of n cells, or of none
            for names in itertools.combinations("abc", n):
                args = ", ".join(names)
                line = line.replace(f"{{C({args})}}", CONTAINERS[container].format(args))
        lines.append("        " + line.replace("{C()}", CONTAINERS[container].format("")))
    body = "\n".join(lines)
    return NET.format(tag=_tag(container, arrival, depth), cell=CELLS[depth], body=body, walk=walk)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """All the nets as one torch project, converted once by `torch2ms convert`."""
    from torch2ms.cli import main

    root = tmp_path_factory.mktemp("arrivals")
    src, out = root / "src", root / "out"
    src.mkdir()
    (src / "nets.py").write_text(HEAD + "".join(_net(*case) for case in CASES) + FIXED)
    assert main(["convert", str(src), "-o", str(out)]) == 0
    sys.path.insert(0, str(out))  # the converted module imports the helpers vendored beside it
    _forget_runtime()  # another test's vendored (trimmed) runtime may be cached in this worker
    try:
        yield import_file(src / "nets.py", "t2m_arrivals_torch"), import_file(out / "nets.py", "t2m_arrivals_ms"), out
    finally:
        sys.path.remove(str(out))
        _forget_runtime()


def _forget_runtime() -> None:
    for name in [m for m in sys.modules if m == "torch2ms_runtime" or m.startswith("torch2ms_runtime.")]:
        del sys.modules[name]


@pytest.mark.parametrize(("container", "arrival", "depth"), CASES)
def test_arrived_cells_keep_torch_names_and_load_in_both_modes(project, tmp_path, container, arrival, depth):
    import mindspore as ms
    import torch

    from torch2ms.cli import main

    tmod, mmod, out = project
    name = f"Net_{_tag(container, arrival, depth)}"
    torch.manual_seed(depth)
    tnet = getattr(tmod, name)().eval()
    pth, ckpt = tmp_path / "t.pth", tmp_path / "m.ckpt"
    torch.save(tnet.state_dict(), pth)
    assert main(["weights", str(pth), "-o", str(ckpt), "--project", str(out)]) == 0
    x = np.random.default_rng(depth).standard_normal((3, 4)).astype(np.float32)
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x))
    keys = sorted(tnet.state_dict())
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            mnet = getattr(mmod, name)()
            names = []
            for p in mnet.get_parameters():
                head, _, last = p.name.rpartition(".")
                names.append(f"{head}.{RENAMES.get(last, last)}")
            assert sorted(names) == keys, (mode, sorted(names), keys)
            missing, unexpected = ms.load_param_into_net(mnet, ms.load_checkpoint(str(ckpt)), strict_load=True)
            assert not missing and not unexpected, (mode, missing, unexpected)
            got = mnet(ms.Tensor(x))
        assert relative_error(expected, got) <= 1e-5, mode


def test_never_changed_containers_stay_idiomatic_and_load_torch_names(project, tmp_path):
    """Only a container that gets cells later is torch2ms.runtime's; the others are MindSpore's own."""
    import mindspore as ms
    import torch

    from torch2ms.cli import main

    tmod, mmod, out = project
    code = (out / "nets.py").read_text()
    fixed = code[code.index("class Net_fixed") :]
    assert "self.mlp = nn.SequentialCell(nn.Dense(4, 4), nn.SequentialCell(nn.Dense(4, 4), nn.LayerNorm(" in fixed
    assert "self.stages = nn.CellList([nn.SequentialCell(" in fixed, fixed
    for container, built in (("ModuleList", "nn.CellList(["), ("Sequential", "nn.SequentialCell(")):
        own = code[code.index(f"class Net_{container}_constructor_1") :]
        assert f"self.blocks = {built}" in own[: own.index("def construct")]
        grown = code[code.index(f"class Net_{container}_append_1") :]
        assert f"self.blocks = {container}(" in grown[: grown.index("def construct")]
    tnet = tmod.Net_fixed().eval()
    pth, ckpt = tmp_path / "t.pth", tmp_path / "m.ckpt"
    torch.save(tnet.state_dict(), pth)
    assert main(["weights", str(pth), "-o", str(ckpt), "--project", str(out)]) == 0
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x))
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            mnet = mmod.Net_fixed()
            names = sorted(
                f"{p.name.rpartition('.')[0]}.{RENAMES.get(p.name.rpartition('.')[2], p.name.rpartition('.')[2])}"
                for p in mnet.get_parameters()
            )
            assert names == sorted(tnet.state_dict()), (mode, names)
            missing, unexpected = ms.load_param_into_net(mnet, ms.load_checkpoint(str(ckpt)), strict_load=True)
            assert not missing and not unexpected, (mode, missing, unexpected)
            got = mnet(ms.Tensor(x))
        assert relative_error(expected, got) <= 1e-5, mode


def test_the_matrix_is_whole():
    assert len(CASES) == len(CONTAINERS) * len(ARRIVALS) * 3 == 42
    assert all("{C" not in _net(*case) for case in CASES)
