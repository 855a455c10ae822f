"""Issue 23, class "a sparse product silently made dense": torch.spmm / torch.sparse.mm /
torch.sparse.addmm convert to a dense matmul (same numbers, proven by their KB cases against real
torch; none of the memory savings). Every spelling (full name, ``from torch import sparse``, an alias
import) in every place (module level, a function, a Cell's forward) gets a ``# torch2ms: review``
mark in the converted code that says it is computed densely."""

from __future__ import annotations

import pytest

from torch2ms.convert import convert_source

CALLS = {
    "torch.spmm": ("import torch", "torch.spmm(adj, x)"),
    "torch.sparse.mm": ("import torch", "torch.sparse.mm(adj, x)"),
    "from_sparse_mm": ("from torch import sparse", "sparse.mm(adj, x)"),
    "alias_spmm": ("import torch as T", "T.spmm(adj, x)"),
    "torch.sparse.addmm": ("import torch", "torch.sparse.addmm(m, adj, x)"),
}
PLACES = {
    "module": "{call}\n",
    "function": "def f(adj, x, m):\n    return {call}\n",
    "forward": (
        "import torch.nn as nn\n\n\nclass G(nn.Module):\n    def forward(self, adj, x, m):\n        return {call}\n"
    ),
}


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("spelling", list(CALLS))
def test_sparse_product_made_dense_is_marked(spelling, place):
    header, call = CALLS[spelling]
    res = convert_source(header + "\n" + PLACES[place].format(call=call), "g.py")
    assert res.error is None, res.error
    marks = [ln for ln in res.code.splitlines() if "torch2ms: review" in ln]
    assert len(marks) == 1 and "dense" in marks[0], res.code
    assert "to_dense" in res.code and "matmul" in res.code or "addmm" in res.code
    assert [c.action for c in res.changes if "sparse" in c.api or "spmm" in c.api] == ["review"]
