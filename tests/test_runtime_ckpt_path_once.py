"""``ckpt_path`` is defined once (runtime/checkpoints.py) and re-exported by the runtime's ``__init__``.

It was written twice (``runtime.ckpt_path`` and ``runtime.checkpoints._ckpt_path``): the vendored runtime
renders ``__init__.py`` with only the helpers a project uses, so the one definition lives in
checkpoints.py and ``__init__`` re-exports it through the ``__all__`` index the renderer follows. For each
checkpoint spelling (a state dict saved and loaded, an open file, a checkpoint dict with non-tensor
entries, a resume that loads without ckpt_path in the converted code), the converted project runs with
MindSpore alone (torch and torch2ms blocked) and gives torch's numbers; the vendored runtime defines
``ckpt_path`` once, in checkpoints.py, and ``__init__`` imports it from there exactly when the project uses it.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_runtime_vendor import BLOCKER  # torch, torchvision, einops, torch2ms unimportable

from torch2ms.convert import convert_tree

ROOT = Path(__file__).resolve().parents[1]

HEAD = """\
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Linear(4, 2)
with torch.no_grad():
    net.weight.copy_(torch.arange(8.0).reshape(2, 4) / 10)
    net.bias.fill_(0.5)
"""
TAIL = """
x = torch.ones(1, 4)
print(json.dumps({"out": net(x).tolist(), **extra}))
"""

SPELLINGS = {
    "state_dict": """
torch.save(net.state_dict(), "net.pth")
net.load_state_dict(torch.load("net.pth"))
extra = {}
""",
    "open_file": """
with open("net.pt", "wb") as f:
    torch.save(net.state_dict(), f)
net.load_state_dict(torch.load("net.pt"))
extra = {}
""",
    "dict_with_extras": """
torch.save({"model": net.state_dict(), "epoch": 3, "mask_values": [0, 1]}, "ck.pth")
ck = torch.load("ck.pth")
net.load_state_dict(ck["model"])
extra = {"epoch": ck["epoch"], "mask": ck["mask_values"]}
""",
    "resume_only": """
state = torch.load("resume.pth")
net.load_state_dict(state["model"])
extra = {"epoch": state["epoch"]}
""",
}
# resume_only loads a checkpoint a previous run wrote: written by the same project's save script first.
SAVE_FIRST = """\
import torch
import torch.nn as nn

net = nn.Linear(4, 2)
with torch.no_grad():
    net.weight.copy_(torch.arange(8.0).reshape(2, 4) / 10)
    net.bias.fill_(0.5)
torch.save({"model": net.state_dict(), "epoch": 7}, "resume.pth")
"""


def _run(folder: Path, script: str, block: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if not block:
        env["PYTHONPATH"] = str(ROOT / "src")
    prelude = BLOCKER if block else "import sys\nsys.path.insert(0, '.')\n"
    code = prelude + f"import runpy\nrunpy.run_path({script!r}, run_name='__main__')\n"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, env=env, timeout=300
    )


def _project(root: Path, spelling: str) -> Path:
    root.mkdir(parents=True)
    (root / "train.py").write_text(HEAD + SPELLINGS[spelling] + TAIL, encoding="utf-8")
    if spelling == "resume_only":
        (root / "save_first.py").write_text(SAVE_FIRST, encoding="utf-8")
    return root


def _result(folder: Path, block: bool, spelling: str) -> dict:
    if spelling == "resume_only":
        first = _run(folder, "save_first.py", block)
        assert first.returncode == 0, first.stderr[-3000:]
    res = _run(folder, "train.py", block)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _defs(path: Path) -> set[str]:
    return {n.name for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_vendored_runtime_defines_ckpt_path_once(tmp_path, spelling):
    src = _project(tmp_path / "src", spelling)
    out = tmp_path / "out"
    assert not convert_tree(src, out, jobs=1).failed
    runtime = out / "torch2ms_runtime"
    where = sorted(p.name for p in runtime.rglob("*.py") if "ckpt_path" in _defs(p))
    assert where == ["checkpoints.py"]  # every checkpoint path goes through the runtime's one rule
    code = (out / "train.py").read_text(encoding="utf-8")
    init = (runtime / "__init__.py").read_text(encoding="utf-8")
    uses = "ckpt_path" in code
    assert ("from .checkpoints import" in init and "ckpt_path" in init) == uses, init
    if spelling == "dict_with_extras":
        assert not uses  # a project loading checkpoints without ckpt_path: the helper comes along all the same


@pytest.mark.differential
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_converted_checkpoints_run_with_mindspore_alone_as_torch(tmp_path, spelling):
    src = _project(tmp_path / "src", spelling)
    out = tmp_path / "out"
    assert not convert_tree(src, out, jobs=1).failed
    expected = _result(src, block=False, spelling=spelling)
    got = _result(out, block=True, spelling=spelling)
    np.testing.assert_allclose(got.pop("out"), expected.pop("out"), rtol=1e-6, atol=1e-6)
    assert got == expected


def test_runtime_ckpt_path_is_the_checkpoints_function():
    from torch2ms import runtime
    from torch2ms.runtime import checkpoints

    assert runtime.ckpt_path is checkpoints.ckpt_path
    assert "def ckpt_path" not in (ROOT / "src/torch2ms/runtime/__init__.py").read_text(encoding="utf-8")
