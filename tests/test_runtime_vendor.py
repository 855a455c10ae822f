"""Issue 13: a converted project runs with MindSpore alone — neither torch nor torch2ms importable.

``convert`` (``--runtime vendor``, the default) writes ``torch2ms_runtime/`` into the output with only the
runtime helpers the converted code uses, and the code imports them from there; ``--runtime package``
keeps ``from torch2ms.runtime import ...``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from requires_support import CORPUS, require_kit

from torch2ms.cli import main as cli_main
from torch2ms.convert import convert_tree

ROOT = Path(__file__).resolve().parents[1]

# Run a file (or code) with torch, torchvision, einops and torch2ms unimportable, from its folder.
BLOCKER = textwrap.dedent("""
    import sys
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "torchvision", "torch2ms", "einops"):
                raise ImportError(f"{name} is blocked: the converted project must run with MindSpore alone")
    sys.meta_path.insert(0, _Block())
    sys.path.insert(0, ".")
""")

MODEL = """\
import torch
import torch.nn as nn
from einops import rearrange


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)
        nn.init.constant_(self.fc.weight, 0.25)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x):
        y = rearrange(x, "b (h w) -> b w h", h=2) * torch.arange(8).float().reshape(1, 4, 2)
        return self.fc(y.reshape(y.shape[0], -1)) * torch.arange(3).float()
"""

TRAIN = """\
import json

import numpy as np
import torch
from torch.distributions import Normal

from nets.model import Net


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.tensor(np.arange(16, dtype=np.float32).reshape(2, 8) / 10).to(device)
    net = Net().to(device)
    torch.save(net.state_dict(), "net.pth")
    net.load_state_dict(torch.load("net.pth"))
    d = Normal(torch.tensor([0.5, -1.0]), torch.tensor([1.5, 0.5]))
    out = {
        "device": str(device),
        "net": net(x).tolist(),
        "log_prob": d.log_prob(torch.tensor([0.1, 0.2])).tolist(),
        "entropy": d.entropy().tolist(),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
"""


def _project(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "nets").mkdir(parents=True)
    (src / "nets" / "__init__.py").write_text("", encoding="utf-8")
    (src / "nets" / "model.py").write_text(MODEL, encoding="utf-8")
    (src / "train.py").write_text(TRAIN, encoding="utf-8")
    return src


def _run(folder: Path, code: str, block: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if not block:  # the torch side: the original project, torch importable
        env["PYTHONPATH"] = str(ROOT / "src")
    prelude = BLOCKER if block else "import sys\nsys.path.insert(0, '.')\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code], cwd=folder, capture_output=True, text=True, env=env, timeout=300
    )


def _script(folder: Path, script: str, block: bool) -> dict:
    res = _run(folder, f"import runpy\nrunpy.run_path({script!r}, run_name='__main__')\n", block)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
@pytest.mark.differential
def test_r6_vendored_project_runs_without_torch_or_torch2ms_and_matches_torch(tmp_path):
    src = _project(tmp_path)
    out = tmp_path / "out"
    report = convert_tree(src, out)
    assert not report.failed
    runtime = out / "torch2ms_runtime"
    assert (runtime / "__init__.py").is_file()
    for path in [out / "train.py", out / "nets" / "model.py"]:
        code = path.read_text(encoding="utf-8")
        assert "torch2ms.runtime" not in code and not re.search(r"import torch(\.|\s|$)", code), code
        assert "from torch2ms_runtime import" in code, code
    expected = _script(src, "train.py", block=False)
    got = _script(out, "train.py", block=True)
    assert got["device"] == expected["device"] == "cpu"
    for key in ("net", "log_prob", "entropy"):
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert (out / "net.pth.ckpt").is_file()  # torch.save / torch.load met at ckpt_path's name


def test_r6_vendored_runtime_holds_only_the_helpers_used(tmp_path):
    src = _project(tmp_path)
    out = tmp_path / "out"
    convert_tree(src, out)
    runtime = out / "torch2ms_runtime"
    files = sorted(p.relative_to(runtime).as_posix() for p in runtime.rglob("*.py"))
    # einops and devices pruned to what is used; distributions: the modules Normal needs; nothing else.
    assert "einops.py" in files and "devices.py" in files and "distributions/continuous.py" in files
    assert not {"vision.py", "quantile.py", "training.py", "distributions/kl.py", "distributions/discrete.py"} & set(
        files
    )
    defined = set()
    for path in runtime.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# "), path  # the header: what it is, who wrote it, may be edited
        assert "torch2ms" in text.splitlines()[0] and "edit" in "".join(text.splitlines()[:2])
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(m.split(".")[0] in ("torch", "torch2ms") for m in mods), (path, ast.unparse(node))
        defined |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    init = (runtime / "__init__.py").read_text(encoding="utf-8")
    assert "from .checkpoints import ckpt_path" in init  # defined once, in checkpoints.py, re-exported
    assert "def ckpt_path" in (runtime / "checkpoints.py").read_text(encoding="utf-8")
    assert "def as_parameters" not in init and "TorchCompat" not in init  # helpers not used are absent
    assert {"rearrange", "torch_device", "cuda_available", "Normal"} <= defined
    assert not {"repeat", "reduce", "Rearrange", "current_accelerator", "add_module"} & defined


def test_r6_runtime_package_keeps_torch2ms_runtime_imports(tmp_path):
    src = _project(tmp_path)
    out = tmp_path / "out"
    assert cli_main(["convert", str(src), "-o", str(out), "--runtime", "package"]) == 0
    assert not (out / "torch2ms_runtime").exists()
    code = (out / "train.py").read_text(encoding="utf-8")
    assert "from torch2ms.runtime import " in code and "torch2ms_runtime" not in code


def test_r6_vendored_conversion_is_byte_identical_twice(tmp_path):
    src = _project(tmp_path)
    convert_tree(src, tmp_path / "a")
    convert_tree(src, tmp_path / "b")
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    a.pop("torch2ms-report.json"), b.pop("torch2ms-report.json")  # they name their own output folder
    a.pop("torch2ms-report.md"), b.pop("torch2ms-report.md")
    assert a == b
    assert any(k.startswith("torch2ms_runtime/") for k in a)


def test_r6_package_root_imports_the_runtime_relatively(tmp_path):
    """A converted root that is a package run as ``python -m pkg.module`` imports ``.torch2ms_runtime``."""
    src = tmp_path / "pkg"
    (src / "sub").mkdir(parents=True)
    (src / "__init__.py").write_text("", encoding="utf-8")
    (src / "sub" / "__init__.py").write_text("", encoding="utf-8")
    (src / "sub" / "io.py").write_text(
        "import torch\nfrom . import helpers\n\ndef save(m, p):\n    torch.save(m.state_dict(), p)\n", encoding="utf-8"
    )
    (src / "sub" / "helpers.py").write_text("X = 1\n", encoding="utf-8")
    (src / "plain.py").write_text("import torch\n\ndef load(p):\n    return torch.load(p)\n", encoding="utf-8")
    out = tmp_path / "out"
    convert_tree(src, out)
    assert "from ..torch2ms_runtime import ckpt_path" in (out / "sub" / "io.py").read_text(encoding="utf-8")
    assert "from torch2ms_runtime import load_checkpoint" in (out / "plain.py").read_text(encoding="utf-8")


REALCODE = [
    ("pytorch/examples/fast_neural_style/neural_style/transformer_net.py", "TransformerNet()", "float", [1, 3, 32, 32]),
    ("kuangliu/pytorch-cifar/models/efficientnet.py", "EfficientNetB0()", "float", [2, 3, 32, 32]),
    (
        "pytorch/examples/distributed/FSDP2/model.py",
        "Transformer(ModelArgs(n_layers=2, vocab_size=32, max_seq_len=16, dim=16, n_heads=4, dropout_p=0.0))",
        "int",
        [2, 8],
    ),
]


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("rel,factory,kind,shape", REALCODE, ids=[r[0].split("/")[-1] for r in REALCODE])
def test_r6_realcode_vendored_runs_with_torch2ms_blocked(tmp_path, rel, factory, kind, shape):
    """Real files whose conversions call runtime helpers: converted with the vendored runtime, built and
    run with torch and torch2ms unimportable."""
    path = require_kit(CORPUS / rel)
    src = tmp_path / "src"
    src.mkdir()
    shutil.copyfile(path, src / "realmod.py")
    out = tmp_path / "out"
    convert_tree(src, out)
    code = (out / "realmod.py").read_text(encoding="utf-8")
    assert "from torch2ms_runtime import" in code and "torch2ms.runtime" not in code, code[:2000]
    make = (
        "ms.Tensor(rng.integers(0, 32, size={s}), ms.int32)"
        if kind == "int"
        else "ms.Tensor(rng.standard_normal({s}).astype('float32'))"
    )
    res = _run(
        out,
        textwrap.dedent(f"""
            import numpy as np
            import mindspore as ms
            from realmod import *
            rng = np.random.default_rng(0)
            net = {factory}
            net.set_train(False)
            y = net({make.format(s=tuple(shape))})
            y = y[0] if isinstance(y, (tuple, list)) else y
            assert np.isfinite(y.asnumpy()).all()
            import sys
            assert not any(m.split(".")[0] in ("torch", "torch2ms") for m in sys.modules)
            print("RAN", tuple(y.shape))
        """),
        block=True,
    )
    assert res.returncode == 0 and "RAN" in res.stdout, res.stderr[-3000:]


def test_r6_vendored_runtime_same_with_one_or_two_workers(tmp_path):
    """Workers point the runtime imports at the vendored package (relatively inside the root package)
    and send back the helpers they asked for: the tree is the same with one worker or two."""
    src = tmp_path / "pkg"
    (src / "sub").mkdir(parents=True)
    (src / "__init__.py").write_text("", encoding="utf-8")
    (src / "sub" / "__init__.py").write_text("", encoding="utf-8")
    for i in range(5):  # enough files for the parallel path (PARALLEL_MIN_FILES)
        (src / "sub" / f"io{i}.py").write_text(
            f"import torch\n\ndef save{i}(m, p):\n    torch.save(m.state_dict(), p)\n", encoding="utf-8"
        )
        (src / f"plain{i}.py").write_text(f"import torch\n\ndef load{i}(p):\n    return torch.load(p)\n", "utf-8")
    convert_tree(src, tmp_path / "one", jobs=1)
    convert_tree(src, tmp_path / "two", jobs=2)
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    reports = [json.loads(t.pop("torch2ms-report.json")) for t in (one, two)]
    one.pop("torch2ms-report.md"), two.pop("torch2ms-report.md")
    assert one == two
    assert reports[0]["files"] == reports[1]["files"] and reports[0]["generated"] == reports[1]["generated"]
    assert any(k.startswith("torch2ms_runtime/") for k in two)
    assert b"from ..torch2ms_runtime import ckpt_path" in two["sub/io3.py"]
    assert b"from torch2ms_runtime import load_checkpoint" in two["plain4.py"]
