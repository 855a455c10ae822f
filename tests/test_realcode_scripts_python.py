"""Issue 11, class 14: Python-side use of tensors in scripts, and numpy code left as numpy.

- A 0-dim tensor formatted with a spec (``f"{loss:.4f}"``, ``"{:.4f}".format(loss)``) prints its number
  in torch; MindSpore's Tensor refuses any spec: the converted code formats ``.item()``.
- ``img.transpose((2, 0, 1))`` / ``img.transpose(1, 2, 0)`` on an ndarray (``x.numpy()``, ``np.*``, an
  image library's array) is numpy's: no "not converted" mark, no rewrite into a Tensor's swapaxes.
- ``import torch, cv2`` keeps cv2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

ROOT = Path(__file__).resolve().parents[1]

FORMATTING = """
import numpy as np
import torch


def report(x):
    loss = torch.mean(x * x)
    best = torch.max(x)
    lines = [f"loss {loss:.4f} best {best:8.3f} n {x.shape[0]:d}", "{:.5f} / {:.2e}".format(loss, best)]
    lines.append("epoch {:3d} loss {:.3f}".format(3, loss))
    return lines


def images():
    t = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    img = t.clone().clamp(0, 20).numpy()
    img = img.transpose(1, 2, 0).astype("uint8")
    arr = np.zeros((4, 5, 3)).transpose((2, 0, 1))
    return img.shape, img.sum(), arr.shape


if __name__ == "__main__":
    x = torch.from_numpy(np.linspace(-1, 2, 12, dtype=np.float32))
    for line in report(x):
        print(line)
    print(images())
"""


def _run(path: Path, block_torch: bool) -> str:
    prelude = "import sys; sys.modules['torch'] = None; " if block_torch else ""
    code = f"{prelude}import runpy; runpy.run_path({str(path)!r}, run_name='__main__')"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_r8_tensor_format_spec_and_numpy_calls_convert_statically():
    code = convert_source(FORMATTING).code
    assert 'f"loss {loss.item():.4f} best {best.item():8.3f} n {x.shape[0]:d}"' in code
    assert '"{:.5f} / {:.2e}".format(loss.item(), best.item())' in code
    assert '"epoch {:3d} loss {:.3f}".format(3, loss.item())' in code
    assert "img.transpose(1, 2, 0)" in code and "np.zeros((4, 5, 3)).transpose((2, 0, 1))" in code
    assert "not converted" not in code and "review" not in code


def test_r8_mixed_import_keeps_other_modules():
    code = convert_source("import torch, cv2\nimg = cv2.imread('a.png')\nt = torch.zeros(2)\n").code
    assert "import cv2" in code and "torch" not in code


@pytest.mark.differential
def test_r8_tensor_formatting_and_numpy_match_torch(tmp_path):
    require_module("torch")
    require_module("mindspore")
    conv = convert_source(FORMATTING)
    (tmp_path / "t.py").write_text(FORMATTING, encoding="utf-8")
    (tmp_path / "m.py").write_text(conv.code, encoding="utf-8")
    assert _run(tmp_path / "m.py", block_torch=True) == _run(tmp_path / "t.py", block_torch=False)
