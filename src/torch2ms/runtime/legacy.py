"""torch's legacy constructors when the converter cannot tell their two forms apart.

``torch.Tensor(n)`` allocates a tensor of ``n`` elements when ``n`` is an int, and holds data when
``n`` is a list or an array. With a name of unknown type (``nn.Parameter(torch.Tensor(out_dim))``)
only the value at run time says which. MindSpore is imported at the top: GRAPH_MODE compiles this
body where forward calls it, and allows no import statement there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mindspore import Tensor, ops

__all__ = ["legacy_tensor"]


def legacy_tensor(data: Any, dtype: Any) -> Any:
    """``torch.Tensor(data)`` of that dtype: zeros of ``data`` elements for a whole number (torch's
    memory is uninitialised and always overwritten), the data itself otherwise. A tensor is kept as it
    is (torch returns it; a typed constructor accepts only its own dtype); any other iterable that
    ``mindspore.Tensor`` refuses (a ``range``, a generator, ``map``/``zip``) is read into a list first,
    as torch reads a sequence."""
    if isinstance(data, int) and not isinstance(data, bool):
        return ops.zeros((data,), dtype)
    if isinstance(data, Tensor):
        return data
    if not isinstance(data, (list, tuple, float, bool, np.ndarray, np.generic)):
        data = list(data)
    return Tensor(input_data=data, dtype=dtype)
