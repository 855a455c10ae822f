"""R7 a ``range(...)`` inside an index (``x_[range(n), y] = x.max()``): torch reads it as the sequence of
its integers, MindSpore 2.10's PyNative indexing raises IndexError on it. The converted statement
indexes with ``list(range(...))``; real torch and the converted code under real MindSpore agree."""

from __future__ import annotations

import mindspore as ms
import numpy as np
import torch

from torch2ms.convert import convert_source

SOURCE = """
import torch

def overlay(x, y, classes=4):
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_

def pick(x, n):
    rows = x[range(n)]
    return rows[range(1, n), range(n - 1)]
"""


def _functions(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "<converted>", "exec"), namespace)
    return namespace


def test_r7_range_index_converted_code_matches_torch():
    converted = convert_source(SOURCE)
    assert converted.error is None
    assert (
        "x_[list(range(x.shape[0])), y]" in converted.code
        and "rows[list(range(1, n)), list(range(n - 1))]" in converted.code
    )
    t, m = _functions(SOURCE), _functions(converted.code)
    x = np.random.default_rng(3).standard_normal((5, 7)).astype(np.float32)
    y = np.array([6, 0, 3, 5, 1])
    t_out = t["overlay"](torch.from_numpy(x), torch.from_numpy(y)).numpy()
    m_out = m["overlay"](ms.Tensor(x), ms.Tensor(y)).asnumpy()
    np.testing.assert_array_equal(m_out, t_out)
    np.testing.assert_array_equal(m["pick"](ms.Tensor(x), 4).asnumpy(), t["pick"](torch.from_numpy(x), 4).numpy())


def test_r7_statements_without_range_index_unchanged():
    code = convert_source("import torch\nfor i in range(3):\n    c = list(range(i))\n    d = c[i]\n").code
    assert "for i in range(3):\n    c = list(range(i))\n    d = c[i]\n" in code
