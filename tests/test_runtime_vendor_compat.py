"""Issue 13: ``TorchCompat`` and ``compat_base`` in a converted project run without torch2ms.

A torch class used as a value (``norm_layer=nn.BatchNorm2d``, ``partial(nn.LayerNorm, eps=1e-6)``), a call
with ``*args/**kwargs`` and a subclassed layer built with torch's arguments apply the KB's argument rules at
run time; ``convert`` (``--runtime vendor``) writes those entries and the rule engine into
``torch2ms_runtime/_kb/``, so the converted project needs MindSpore alone.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from requires_support import require_kit
from test_runtime_vendor import CORPUS, _run, _tree

from torch2ms.cli import main as cli_main
from torch2ms.convert import convert_tree
from torch2ms.convert.runtime_kb import kb_snapshot
from torch2ms.kb import load_kb
from torch2ms.kb.rewrite import rewrite_call

MODEL = """\
from functools import partial

import torch
import torch.nn as nn


class MyLinear(nn.Linear):
    def __init__(self, i, o, bias=True):
        super().__init__(i, o, bias)


class Block(nn.Module):
    def __init__(self, c, norm_layer=nn.BatchNorm2d):
        super().__init__()
        args = (c, c, 3)
        kw = {"padding": 1, "bias": False}
        self.conv = nn.Conv2d(*args, **kw)
        self.bn = norm_layer(c)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class Net(nn.Module):
    def __init__(self, c=4, n=3):
        super().__init__()
        self.b1 = Block(c)
        self.b2 = Block(c, norm_layer=partial(nn.BatchNorm2d, momentum=0.3))
        self.ln = partial(nn.LayerNorm, eps=1e-6)(c)
        self.fc = MyLinear(c, n, True)

    def forward(self, x):
        y = self.b2(self.b1(x)).mean(dim=(2, 3))
        return self.fc(self.ln(y))
"""

# Both sides draw the same weights, in torch's names and shapes, in this order.
WEIGHTS = """
rng = np.random.default_rng(0)
SHAPES = {}
for b in ("b1", "b2"):
    SHAPES.update({f"{b}.conv.weight": (4, 4, 3, 3), f"{b}.bn.weight": (4,), f"{b}.bn.bias": (4,),
                   f"{b}.bn.running_mean": (4,), f"{b}.bn.running_var": (4,)})
SHAPES.update({"ln.weight": (4,), "ln.bias": (4,), "fc.weight": (3, 4), "fc.bias": (3,)})
W = {k: (np.abs(rng.standard_normal(s)) + 0.5 if k.endswith("running_var") else rng.standard_normal(s) * 0.5)
     .astype("float32") for k, s in SHAPES.items()}
X = rng.standard_normal((2, 4, 6, 6)).astype("float32")
"""

TORCH_SIDE = f"""
import json
import numpy as np
import torch
from model import Net
{WEIGHTS}
net = Net()
net.load_state_dict({{k: torch.tensor(v) for k, v in W.items()}}, strict=False)
net.eval()
out = {{"eval": net(torch.tensor(X)).tolist()}}
net.train()
out["train"] = net(torch.tensor(X)).tolist()
out["b1_mean"] = net.b1.bn.running_mean.tolist()
out["b2_mean"] = net.b2.bn.running_mean.tolist()
out["eps"] = net.ln.eps
print(json.dumps(out))
"""

MS_SIDE = f"""
import json
import numpy as np
import mindspore as ms
from model import Net
{WEIGHTS}
RENAMED = {{"weight": "gamma", "bias": "beta", "running_mean": "moving_mean", "running_var": "moving_variance"}}
def ms_name(k):
    layer, _, p = k.rpartition(".")
    return f"{{layer}}.{{RENAMED[p] if layer.endswith(('bn', 'ln')) else p}}"
net = Net()
params = {{ms_name(k): ms.Parameter(ms.Tensor(v), name=ms_name(k)) for k, v in W.items()}}
not_loaded, _ = ms.load_param_into_net(net, params)
assert not not_loaded and set(params) == set(net.parameters_dict()), (not_loaded, sorted(net.parameters_dict()))
net.set_train(False)
out = {{"eval": net(ms.Tensor(X)).asnumpy().tolist()}}
net.set_train(True)
out["train"] = net(ms.Tensor(X)).asnumpy().tolist()
out["b1_mean"] = net.b1.bn.moving_mean.asnumpy().tolist()
out["b2_mean"] = net.b2.bn.moving_mean.asnumpy().tolist()
out["eps"] = net.ln.epsilon
import sys
out["frameworks"] = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "torch2ms"))
print(json.dumps(out))
"""


def _project(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "model.py").write_text(MODEL, encoding="utf-8")
    return src


def _json(res) -> dict:
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.differential
def test_r6_vendored_torch_compat_and_compat_base_match_torch_without_torch2ms(tmp_path):
    src = _project(tmp_path)
    out = tmp_path / "out"
    report = convert_tree(src, out)
    assert not report.failed
    code = (out / "model.py").read_text(encoding="utf-8")
    assert "from torch2ms_runtime import TorchCompat, compat_base" in code, code
    assert 'compat_base("torch.nn.Linear")' in code and 'partial(TorchCompat("torch.nn.LayerNorm"), eps=1e-6)' in code
    expected = _json(_run(src, TORCH_SIDE, block=False))
    got = _json(_run(out, MS_SIDE, block=True))
    assert got["frameworks"] == []
    assert got["eps"] == expected["eps"] == 1e-6  # partial(nn.LayerNorm, eps=1e-6) → epsilon
    # eval: running stats; train: batch stats, and the moving means moved by torch's momentum (0.1 and 0.3).
    for key in ("eval", "train", "b1_mean", "b2_mean"):
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-5, err_msg=key)
    assert not np.allclose(expected["b1_mean"], expected["b2_mean"])


def test_r6_vendored_kb_holds_only_the_entries_and_rules_used(tmp_path):
    src = _project(tmp_path)
    out = tmp_path / "out"
    report = convert_tree(src, out)
    assert not any("still comes from torch2ms.runtime" in line for line in report.generated), report.generated
    kb = out / "torch2ms_runtime" / "_kb"
    entries = ast.parse((kb / "__init__.py").read_text(encoding="utf-8"))
    data = next(n for n in entries.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "ENTRIES")
    names = {k.value for k in data.value.keys}  # type: ignore[attr-defined]
    assert names == {"torch.nn.BatchNorm2d", "torch.nn.Conv2d", "torch.nn.LayerNorm", "torch.nn.Linear"}
    handlers = sorted(p.name for p in (kb / "kb" / "handlers").glob("*.py"))
    # BatchNorm's momentum (common.one_minus), Conv2d's padding (common.conv_padding), LayerNorm's shape (nn_layers)
    assert handlers == ["__init__.py", "common.py", "nn_layers.py"]
    common = (kb / "kb" / "handlers" / "common.py").read_text(encoding="utf-8")
    assert "def one_minus" in common and "def conv_padding" in common
    for path in (out / "torch2ms_runtime").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# ") and "torch2ms" in text.splitlines()[0], path
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                roots = {m.split(".")[0] for m in mods if not getattr(node, "level", 0)}
                assert not roots & {"torch", "torch2ms", "torchvision"}, (path, ast.unparse(node))
                if "_kb" in path.parts:
                    assert "numpy" not in roots and "mindspore" not in roots, (path, ast.unparse(node))


def test_r6_runtime_package_keeps_torch_compat_on_torch2ms(tmp_path):
    src = _project(tmp_path)
    out = tmp_path / "out"
    assert cli_main(["convert", str(src), "-o", str(out), "--runtime", "package"]) == 0
    code = (out / "model.py").read_text(encoding="utf-8")
    assert "from torch2ms.runtime import TorchCompat, compat_base" in code
    assert not (out / "torch2ms_runtime").exists()


def test_r6_vendored_kb_is_byte_identical_twice(tmp_path):
    src = _project(tmp_path)
    convert_tree(src, tmp_path / "a")
    convert_tree(src, tmp_path / "b")
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    for name in ("torch2ms-report.json", "torch2ms-report.md"):  # they name their own output folder
        a.pop(name), b.pop(name)
    assert a == b
    assert "torch2ms_runtime/_kb/__init__.py" in a and "torch2ms_runtime/_kb/kb/rewrite.py" in a


def test_r1_convert_writing_the_vendored_kb_imports_no_framework(tmp_path):
    """Writing ``_kb/`` is static like the rest of ``convert``: torch, MindSpore and numpy stay unimported."""
    src = _project(tmp_path)
    code = STATIC_BLOCK + textwrap.dedent(f"""
        from torch2ms.cli import main
        assert main(["convert", {str(src)!r}, "-o", {str(tmp_path / "out")!r}]) == 0
        assert not any(m.split(".")[0] in ("torch", "mindspore", "numpy") for m in sys.modules)
        print("STATIC-OK")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "STATIC-OK" in res.stdout, res.stderr[-2000:]
    assert (tmp_path / "out" / "torch2ms_runtime" / "_kb" / "kb" / "handlers" / "common.py").is_file()


STATIC_BLOCK = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "torchvision", "mindspore", "numpy"):
            raise ImportError(f"{name} is blocked in this test")
sys.meta_path.insert(0, _Block())
"""


def _import_snapshot(files: dict[str, str], folder: Path, package: str):
    for rel, text in files.items():
        path = folder / package / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(package)
    finally:
        sys.path.remove(str(folder))


def _calls(entry) -> list[tuple[list[str], list[tuple[str, str]]]]:
    """Arguments to try: the required ones by name, plus optional ones as names, literals and their defaults."""
    args = [f"a{i}" for i, p in enumerate(entry.sig) if "=" not in p and not p.startswith("*")]
    optional = [tuple(p.split("=", 1)) for p in entry.sig if "=" in p and not p.startswith("*")]
    return [
        (args, []),
        (args, [(k, "v") for k, _ in optional[:4]]),
        (args, [(k, "1") for k, _ in optional[:2]]),
        (args, [(k, d) for k, d in optional[:4]]),
    ]


def _outcome(rewrite, entry, args, kwargs):
    try:
        res = rewrite(entry, args, kwargs)
    except Exception as exc:  # noqa: BLE001 - the two engines must fail alike too
        return repr(exc)
    return res.source, res.ok, res.notes


def test_r6_vendored_kb_rewrites_every_call_as_torch2ms_does(tmp_path):
    """The vendored engine is torch2ms's own rules: the same MindSpore source for every entry TorchCompat can
    take (all in one snapshot), and, vendored alone, the entries of each handler module (pruned to what it uses)."""
    kb = load_kb()
    names = sorted(
        e.torch
        for e in kb.entries
        if e.kind in ("class", "function") and e.status != "no-equivalent" and (e.args or e.template or e.sig)
    )
    alone: dict[str, str] = {}  # handler module → the first entry that uses it
    for name in names:
        for registered in _registered(kb.get(name)):
            alone.setdefault(registered.split(".")[0], name)
    assert len(names) > 500 and len(alone) >= 10
    groups = [("snap_all", names)] + [(f"snap_{module}", [name]) for module, name in sorted(alone.items())]
    dropped = {
        "cases": (),
        "source": "",
        "proven_by": "",
        "params": {},
        "review": False,
        "layout": {},
        "note_zh": "",
        "arg_notes_zh": {},
    }
    for package, group in groups:
        vendored = _import_snapshot(kb_snapshot(group).files, tmp_path, package)
        for name in group:
            entry, copy = kb.get(name), vendored.kb_entry(name)
            assert repr(copy) == repr(dataclasses.replace(entry, **dropped)), name
            for args, kwargs in _calls(entry):
                expected = _outcome(rewrite_call, entry, args, kwargs)
                assert _outcome(vendored.rewrite_call, copy, args, kwargs) == expected, (package, name, kwargs)


def _registered(entry) -> list[str]:
    names = [r.transform for r in entry.args.values() if r.transform]
    return names + ([entry.template[1:]] if entry.template.startswith("@") else [])


# Real files whose conversions use TorchCompat / compat_base: (files to copy, module, factory, input).
REALCODE = [
    (
        ["pytorch/examples/word_language_model/model.py"],
        "model",
        "TransformerModel(50, 16, 2, 32, 2, dropout=0.0)",  # class TransformerModel(nn.Transformer)
        "ms.Tensor(rng.integers(0, 50, size=(5, 2)), ms.int32)",
    ),
    (
        ["karpathy/minGPT/mingpt/model.py", "karpathy/minGPT/mingpt/utils.py"],
        "mingpt.model",  # Embedding, LayerNorm and Linear passed to _init_weights' isinstance / as values
        "(lambda C: (setattr(C, 'model_type', 'gpt-nano'), setattr(C, 'vocab_size', 64), "
        "setattr(C, 'block_size', 16), GPT(C))[-1])(GPT.get_default_config())",
        "ms.Tensor(rng.integers(0, 64, size=(2, 16)), ms.int32)",
    ),
    (
        [],  # the generated torchvision_ms: resnet's norm_layer=nn.BatchNorm2d
        "tv",
        "make()",
        "ms.Tensor(rng.standard_normal((1, 3, 32, 32)).astype('float32'))",
    ),
]
TORCHVISION_USER = "import torchvision\n\n\ndef make():\n    return torchvision.models.resnet18(num_classes=10)\n"


@pytest.mark.slow
@pytest.mark.parametrize("files,module,factory,make", REALCODE, ids=["word_language_model", "minGPT", "resnet18"])
def test_r6_realcode_torch_compat_builds_with_torch2ms_blocked(tmp_path, files, module, factory, make):
    src = tmp_path / "src"
    src.mkdir()
    for rel in files:
        require_kit(CORPUS / rel)
        target = src / Path(rel).relative_to(Path(rel).parents[module.count(".")])  # mingpt/model.py: its package
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CORPUS / rel, target)
    if not files:
        (src / "tv.py").write_text(TORCHVISION_USER, encoding="utf-8")
    out = tmp_path / "out"
    convert_tree(src, out)
    converted = "".join(p.read_text(encoding="utf-8") for p in out.rglob("*.py") if "torch2ms_runtime" not in p.parts)
    assert "TorchCompat(" in converted or "compat_base(" in converted
    assert not re.search(r"^\s*(from torch2ms\.runtime|import torch2ms\b)", converted, re.MULTILINE)
    res = _run(
        out,
        textwrap.dedent(f"""
            import sys
            import numpy as np
            import mindspore as ms
            from {module} import *
            rng = np.random.default_rng(0)
            net = {factory}
            net.set_train(False)
            y = net({make})
            y = y[0] if isinstance(y, (tuple, list)) else y
            assert np.isfinite(y.asnumpy()).all()
            assert not any(m.split(".")[0] in ("torch", "torch2ms") for m in sys.modules)
            print("RAN", tuple(y.shape))
        """),
        block=True,
    )
    assert res.returncode == 0 and "RAN" in res.stdout, res.stderr[-3000:]
