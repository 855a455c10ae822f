"""A 0-dim tensor formatted with a spec, as torch formats it.

A 0-dim torch tensor formats as its number with a spec (``'{val:6.2f}'.format(**meter.__dict__)``,
``fmt.format(acc)``); MindSpore's Tensor refuses any spec ("unsupported format string passed to
Tensor.__format__"). The converter gives ``.item()`` where it sees a tensor; where it cannot (a format string
built at run time, as the imagenet example's ``AverageMeter.__str__``), the converted module imports
``tensors_format_like_torch``, and importing this module gives MindSpore's Tensor torch's behaviour: a 0-dim
value with a spec formats its ``item()``; any other tensor with a spec still raises TypeError, as torch's.
Needs MindSpore only.
"""

from __future__ import annotations

from typing import Any

import mindspore as ms

__all__ = ["tensors_format_like_torch"]


def _format_like_torch() -> bool:
    if getattr(ms.Tensor.__format__, "_torch2ms", False):  # once, whichever copy runs
        return True
    original = ms.Tensor.__format__

    def __format__(self: Any, spec: str) -> str:
        if spec and self.ndim == 0:
            return format(self.item(), spec)
        return original(self, spec)

    __format__._torch2ms = True  # type: ignore[attr-defined]
    ms.Tensor.__format__ = __format__
    return True


# Set on import. An assignment, not a bare call: `convert --runtime vendor` keeps the statements that
# bind what converted code imports, so the setting travels with the vendored module.
tensors_format_like_torch = _format_like_torch()
