"""numpy scalars and MindSpore tensors in one expression, as with torch tensors.

``np.log(10000) / 31 * torch.arange(n)`` is a torch tensor: torch's Tensor carries
``__array_priority__``, so numpy's scalar defers to the tensor's operator. MindSpore's Tensor does not,
and numpy turns it into an ndarray (``ops.exp`` then fails on it). Importing this module gives
MindSpore's Tensor the same priority: converted code that mixes numpy and tensors imports
``numpy_defers_to_tensors``, so the setting holds wherever one of its classes is imported, not only
when the module's top-level statements run. Needs MindSpore only.
"""

from __future__ import annotations

import mindspore as ms

__all__ = ["numpy_defers_to_tensors"]


def _defer_numpy_to_tensors() -> bool:
    """Give MindSpore's Tensor torch's ``__array_priority__`` (numpy scalars then defer to it)."""
    ms.Tensor.__array_priority__ = 1000
    return True


# Set on import. An assignment, not a bare call: `convert --runtime vendor` keeps the statements that
# bind what converted code imports, so the setting travels with the vendored module.
numpy_defers_to_tensors = _defer_numpy_to_tensors()
