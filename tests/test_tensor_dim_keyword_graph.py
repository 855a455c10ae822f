"""Issue 24: Tensor methods called with torch's ``dim`` (segment-anything's ``grid.cumsum(dim=0)``).

MindSpore's Tensor methods take ``axis``; a ``dim=`` keyword selects another overload: for cumsum the
CumsumExt kernel, which GRAPH_MODE on CPU lacks; for narrow, cummax, nansum, nanmean, tensor_split and
logcumsumexp a TypeError in both modes; and ``x.max(1)`` gives the (values, indices) pair in PyNative
but the values alone in GRAPH_MODE. A generated matrix: every method of the class × its argument given by
position and by keyword (with keepdim where it has one), in a forward, equal to torch in PyNative and in
GRAPH_MODE.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import convert_pair, ms_mode, relative_error
from requires_support import require_module

pytestmark = pytest.mark.differential

# method → (arguments before dim, the dim argument, arguments after it, what is read from the result)
METHODS = {
    "cumsum": ("", "1", "", ""),
    "cumprod": ("", "1", "", ""),
    "sum": ("", "1", "keepdim=True", ""),
    "mean": ("", "1", "keepdim=True", ""),
    "prod": ("", "1", "", ""),
    "logsumexp": ("", "1", "keepdim=True", ""),
    "amax": ("", "1", "keepdim=True", ""),
    "amin": ("", "1", "", ""),
    "argmax": ("", "1", "keepdim=True", ""),
    "argmin": ("", "1", "", ""),
    "max": ("", "1", "keepdim=True", "[0]"),
    "min": ("", "1", "", "[1]"),
    "std": ("", "1", "keepdim=True", ""),
    "var": ("", "1", "", ""),
    "median": ("", "1", "", "[0]"),
    "softmax": ("", "1", "", ""),
    "log_softmax": ("", "1", "", ""),
    "unsqueeze": ("", "1", "", ""),
    "narrow": ("", "1", "start=1, length=2", ""),
    "index_select": ("", "1", "index=i", ""),
    "gather": ("", "1", "index=j", ""),
    "sort": ("", "1", "", "[0]"),
    "argsort": ("", "1", "", ""),
    "topk": ("2, ", "1", "", "[1]"),
    "norm": ("2, ", "1", "", ""),
    "count_nonzero": ("", "1", "", ""),
    "cummax": ("", "1", "", "[1]"),
    "cummin": ("", "1", "", "[0]"),
    "diff": ("1, ", "1", "", ""),
    "unbind": ("", "1", "", "[1]"),
    "split": ("2, ", "1", "", "[1]"),
    "chunk": ("2, ", "1", "", "[1]"),
    "repeat_interleave": ("2, ", "1", "", ""),
    "nansum": ("", "1", "keepdim=True", ""),
    "nanmean": ("", "1", "", ""),
    "select": ("", "1", "index=2", ""),
    "tensor_split": ("2, ", "1", "", "[1]"),
    "logcumsumexp": ("", "1", "", ""),
    "kthvalue": ("2, ", "1", "", "[0]"),
}


def _spellings() -> dict[str, str]:
    out = {}
    for name, (before, dim, after, read) in METHODS.items():
        rest = f", {after}" if after else ""
        positional = ", ".join(a.split("=", 1)[1] for a in after.split(", ")) if after else ""
        out[f"{name}-positional"] = f"x.{name}({before}{dim}{', ' + positional if positional else ''}){read}"
        out[f"{name}-keyword"] = f"x.{name}({before}dim={dim}{rest}){read}"
    return out


SPELLINGS = _spellings()
SOURCE = "import torch\nimport torch.nn as nn\n" + "".join(
    f"\n\nclass N{k}(nn.Module):\n    def forward(self, x, i, j):\n        return {expr}\n"
    for k, expr in enumerate(SPELLINGS.values())
)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    return convert_pair(SOURCE, tmp_path_factory.mktemp("dims"))


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_tensor_method_with_dim_equals_torch_in_both_modes(converted, spelling):
    import mindspore as ms
    import torch

    tmod, mmod, code = converted
    k = list(SPELLINGS).index(spelling)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    i = np.array([0, 2], np.int64)
    j = rng.integers(0, 4, (3, 2, 5)).astype(np.int64)
    with torch.no_grad():
        expected = getattr(tmod, f"N{k}")()(*(torch.from_numpy(a) for a in (x, i, j)))
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            got = getattr(mmod, f"N{k}")()(*(ms.Tensor(a) for a in (x, i, j)))
        exp_leaf = expected[0] if isinstance(expected, (tuple, list)) else expected
        got_leaf = got[0] if isinstance(got, (tuple, list)) else got
        assert np.asarray(got_leaf.asnumpy()).dtype.kind == exp_leaf.numpy().dtype.kind, (mode, spelling)
        assert relative_error(expected, got) <= 1e-5, (mode, SPELLINGS[spelling], code.split(f"class N{k}(")[1])
