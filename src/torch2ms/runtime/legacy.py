"""torch's legacy constructors when the converter cannot tell their two forms apart.

``torch.Tensor(n)`` allocates a tensor of ``n`` elements when ``n`` is an int, and holds data when
``n`` is a list or an array. With a name of unknown type (``nn.Parameter(torch.Tensor(out_dim))``)
only the value at run time says which. MindSpore is imported at the top: GRAPH_MODE compiles this
body where forward calls it, and allows no import statement there.
"""

from __future__ import annotations

from typing import Any

from mindspore import Tensor, ops

__all__ = ["legacy_tensor"]


def legacy_tensor(data: Any, dtype: Any) -> Any:
    """``torch.Tensor(data)`` of that dtype: zeros of ``data`` elements for a whole number (torch's
    memory is uninitialised and always overwritten), the data itself otherwise."""
    if isinstance(data, int) and not isinstance(data, bool):
        return ops.zeros((data,), dtype)
    return Tensor(input_data=data, dtype=dtype)
