"""Handlers for torch's device idioms (kb/data/devices.toml): calls of torch2ms.runtime.devices."""

from __future__ import annotations

from ...i18n import _
from ..schema import Entry
from ..source import literal
from ..transforms import Unsupported, handler


@handler
def device(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.device('cuda', 0) → torch2ms.runtime.torch_device('cuda', 0): a Device value (type, index)."""
    kind = bound.get("type")
    if kind is None:
        raise Unsupported(_("torch.device() needs a device type"))
    index = bound.get("index")
    if index is None or literal(index) is None:
        return f"torch2ms.runtime.torch_device({kind})"
    return f"torch2ms.runtime.torch_device({kind}, {index})"


@handler
def current_accelerator(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.accelerator.current_accelerator() → the target's Device, None on the CPU target."""
    flag = bound.get("check_available")
    if flag is None:
        return "torch2ms.runtime.current_accelerator()"
    return f"torch2ms.runtime.current_accelerator({flag})"
