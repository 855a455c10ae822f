"""torch's public names spelled from the submodules that define them.

``from torch.utils.data.dataloader import DataLoader``, ``torch.nn.modules.conv.Conv2d``,
``torch.optim.adam.Adam``: torch defines these in private-looking submodules and re-exports them
from the public package, and code imports either spelling. The KB is keyed by the public name; a
name found in no entry is looked up again under the public spelling these rules give.
"""

from __future__ import annotations

import re

# (defining submodule pattern, public package): the name (and a method after it) follow the match.
_RULES = (
    (re.compile(r"torch\.nn\.modules\.(?:[a-z_0-9]+\.)?(?=[A-Za-z])"), "torch.nn."),
    (re.compile(r"torch\.nn\.parameter\."), "torch.nn."),
    (re.compile(r"torch\.nn\.utils\.clip_grad\."), "torch.nn.utils."),
    (re.compile(r"torch\.utils\.data\.(?:dataloader|dataset|sampler)\."), "torch.utils.data."),
    # torch.optim.adam.Adam, torch.optim.optimizer.Optimizer: a class (capitalised) of an optimizer
    # module; torch.optim.lr_scheduler is public itself.
    (re.compile(r"torch\.optim\.(?!lr_scheduler\.)[a-z_0-9]+\.(?=[A-Z])"), "torch.optim."),
    (re.compile(r"torch\.autograd\.(?:function|grad_mode)\."), "torch.autograd."),
    (re.compile(r"torch\.functional\."), "torch."),
    (re.compile(r"torch\._tensor\.(?=Tensor\b)"), "torch."),
)


def public_name(name: str) -> str | None:
    """The public spelling of a name given through its defining submodule, else None."""
    for pattern, package in _RULES:
        m = pattern.match(name)
        if m is not None and m.end() < len(name):
            return package + name[m.end() :]
    return None
