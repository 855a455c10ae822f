"""The converted kit reads like MindSpore a person would write (issue 21, section 3): no machine-looking
pattern in the user's files. The kit (../shared/realcode/corpus) is converted here, at test time, and
each pattern counted over the converted user files (the vendored ``torch2ms_runtime/`` is not theirs):

- ``__import__(...)``: a module spelled so the converter's old text-level name shortening missed it;
- an immediately-invoked ``(lambda ...)(...)``: a runtime helper with a clear name says the same;
- ``nn.WithLossCell(...)``: a training wrapper, once used to compose log-softmax with NLLLoss;
- the four generated lines of a strict ``load_state_dict`` (``param_not_load, ckpt_not_load = ...``,
  ``if ...: raise``), repeated per model: the runtime helper ``load_param_into_net_strict``;
- ``for m in (c for _, c in x.cells_and_names()):``: the loop unpacks the pairs itself
  (``for _, m in x.cells_and_names():``, constructs/cells_loop.py);
- ``str('literal')``: a string literal wrapped in ``str`` (a dataset root joined to its folder: one path
  literal, kb/handlers/data_pipeline.py ``root_folder``);
- a device's dtype or a device move left on a tensor (``x.astype(DEVICE.dtype)``, ``x.to(DEVICE)``): a
  device argument is dropped (``Tensor.to``), whatever the case of its name;
- ``nn.Conv2d(..., pad_mode='pad', padding=0)``: no padding is ``pad_mode='valid'`` (kb ``conv_padding``).

torch.einsum's plan (kb/handlers/einsum.py) is one plain expression of ``ops.matmul``/``swapaxes``/sums
now (tests/test_einsum_plans.py): it has no exception here.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from requires_support import CORPUS, require_kit


def count_patterns(root: Path) -> tuple[Counter, dict[str, list[str]]]:
    """Pattern → count over the converted user files under ``root``, and where each one is."""
    counts: Counter = Counter()
    where: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if "torch2ms_runtime" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            kind = _kind(node)
            if kind:
                counts[kind] += 1
                where.setdefault(kind, []).append(f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}")
    return counts, where


def _is_device_name(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "device" in name.lower()


def _conv_pad_zero(node: ast.Call) -> bool:
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name not in ("Conv1d", "Conv2d", "Conv3d"):
        return False
    kw = {k.arg: k.value for k in node.keywords}
    pad_mode, padding = kw.get("pad_mode"), kw.get("padding")
    return (
        isinstance(pad_mode, ast.Constant)
        and pad_mode.value == "pad"
        and isinstance(padding, ast.Constant)
        and padding.value == 0
    )


def _kind(node: ast.AST) -> str | None:
    if isinstance(node, ast.For) and isinstance(node.iter, ast.GeneratorExp):
        inner = node.iter.generators[0].iter
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
            if inner.func.attr == "cells_and_names":
                return "loop over a cells generator"
    if isinstance(node, ast.Call) and _conv_pad_zero(node):
        return "convolution padded by 0"
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "str" and len(node.args) == 1:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                return "str() of a string literal"
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("astype", "to") and len(node.args) == 1:
            arg = node.args[0]
            if node.func.attr == "to" and _is_device_name(arg):
                return "device move on a tensor"
            if node.func.attr == "astype" and isinstance(arg, ast.Attribute) and arg.attr == "dtype":
                if _is_device_name(arg.value):
                    return "dtype of a device"
        if isinstance(node.func, ast.Name) and node.func.id == "__import__":
            return "__import__"
        if isinstance(node.func, ast.Lambda):
            return "immediately-invoked lambda"
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name == "WithLossCell":
            return "WithLossCell"
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id.startswith("param_not_load"):
        return "generated strict-load check"
    return None


@pytest.fixture(scope="module")
def converted_kit(tmp_path_factory) -> Path:
    require_kit(CORPUS)
    out = tmp_path_factory.mktemp("kit") / "out"
    run = subprocess.run(
        [sys.executable, "-m", "torch2ms", "convert", str(CORPUS), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return out


PATTERNS = [
    "__import__",
    "immediately-invoked lambda",
    "WithLossCell",
    "generated strict-load check",
    "loop over a cells generator",
    "str() of a string literal",
    "device move on a tensor",
    "dtype of a device",
    "convolution padded by 0",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_converted_kit_has_no_machine_looking_pattern(converted_kit, pattern):
    counts, where = count_patterns(converted_kit)
    assert counts[pattern] == 0, (pattern, counts[pattern], where.get(pattern, [])[:10])


def test_the_counter_sees_each_pattern(tmp_path):
    # the counter itself, on one file holding each pattern once (a zero above must mean none, not unseen)
    (tmp_path / "m.py").write_text(
        "a = __import__('numpy')\n"
        "v, i = (lambda v, i: (v, i))(*ops.topk(x, 2))\n"
        "y = (lambda _e0, _e1: _e0 @ _e1)(p, q)\n"
        "c = nn.WithLossCell(nn.LogSoftmax(axis=1), nn.NLLLoss())\n"
        "param_not_load, ckpt_not_load = ms.load_param_into_net(net, sd)\n"
        "for m in (c for _, c in net.cells_and_names()):\n    pass\n"
        "d = ds.MnistDataset(str('../data') + '/MNIST/raw')\n"
        "t = x.to(DEVICE)\n"
        "u = x.astype(args.Device.dtype)\n"
        "k = nn.Conv2d(3, 8, 3, pad_mode='pad', padding=0, has_bias=True)\n",
        encoding="utf-8",
    )
    (tmp_path / "torch2ms_runtime").mkdir()
    (tmp_path / "torch2ms_runtime" / "h.py").write_text("b = __import__('os')\n", encoding="utf-8")
    counts, _ = count_patterns(tmp_path)
    assert counts == Counter(
        {
            "__import__": 1,
            "immediately-invoked lambda": 2,
            "WithLossCell": 1,
            "generated strict-load check": 1,
            "loop over a cells generator": 1,
            "str() of a string literal": 1,
            "device move on a tensor": 1,
            "dtype of a device": 1,
            "convolution padded by 0": 1,
        }
    )
