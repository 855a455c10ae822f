"""numpy scalars and MindSpore tensors in one expression, as with torch tensors.

``np.log(10000) / 31 * torch.arange(n)`` is a torch tensor: torch's Tensor carries
``__array_priority__``, so numpy's scalar defers to the tensor's operator. MindSpore's Tensor does not,
and numpy turns it into an ndarray (``ops.exp`` then fails on it). Importing this module gives
MindSpore's Tensor the same priority: converted code that mixes numpy and tensors imports
``numpy_defers_to_tensors``, so the setting holds wherever one of its classes is imported, not only
when the module's top-level statements run.

The same import lets numpy indices index a Tensor, as torch's do: ``t[np.where(mask)[0][0]]`` (a
``numpy.int64``) and ``t[np.array([0, 2])]`` raise IndexError in MindSpore 2.10's PyNative indexing;
they are passed on as an int and a Tensor (GRAPH_MODE compiles subscripts itself and is unaffected).
Needs MindSpore and numpy only.
"""

from __future__ import annotations

from typing import Any

import mindspore as ms
import numpy as np

__all__ = ["numpy_defers_to_tensors"]


def _defer_numpy_to_tensors() -> bool:
    """Give MindSpore's Tensor torch's ``__array_priority__`` (numpy scalars then defer to it)."""
    ms.Tensor.__array_priority__ = 1000
    if not getattr(ms.Tensor.__getitem__, "_torch2ms_numpy_index", False):  # once, whichever copy runs
        ms.Tensor.__getitem__ = _numpy_index_getitem(ms.Tensor.__getitem__)
        ms.Tensor.__setitem__ = _numpy_index_setitem(ms.Tensor.__setitem__)
    return True


def _plain_index(index: Any) -> Any:
    if isinstance(index, np.integer):
        return int(index)
    if isinstance(index, np.ndarray):
        return ms.Tensor(index)
    if isinstance(index, tuple):
        return tuple(_plain_index(i) for i in index)
    return index


def _numpy_index_getitem(getitem: Any) -> Any:
    def __getitem__(self: Any, index: Any) -> Any:
        return getitem(self, _plain_index(index))

    __getitem__._torch2ms_numpy_index = True  # type: ignore[attr-defined]
    return __getitem__


def _numpy_index_setitem(setitem: Any) -> Any:
    def __setitem__(self: Any, index: Any, value: Any) -> Any:
        return setitem(self, _plain_index(index), value)

    return __setitem__


# Set on import. An assignment, not a bare call: `convert --runtime vendor` keeps the statements that
# bind what converted code imports, so the setting travels with the vendored module.
numpy_defers_to_tensors = _defer_numpy_to_tensors()
