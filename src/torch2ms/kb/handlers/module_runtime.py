"""Handlers for torch.nn.Module methods, torch.utils.data and torch runtime APIs."""

from __future__ import annotations

from ..schema import Entry
from ..transforms import NOT_LITERAL, Unsupported, handler, literal

_MS_DTYPE_PREFIXES = ("mindspore.", "ms.")


def _is_dtype_src(src: str) -> bool:
    """Whether an (already rewritten) argument source names a dtype rather than a device."""
    s = src.strip()
    return s.startswith(_MS_DTYPE_PREFIXES) or s.startswith("torch.") and not s.startswith("torch.device")


@handler
def mr_module_to(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``m.to(device)`` → ``m`` (MindSpore places cells by set_device); ``m.to(dtype)`` → ``m.to(dtype)``.

    ``Cell.to`` exists in 2.10 but only knows MindSpore device names ('CPU', 'Ascend'), so torch
    device arguments ('cuda', torch.device(...), a device variable) are dropped.
    """
    self = receiver or "self"
    dtype = bound.get("dtype")
    dev = bound.get("device")
    if dtype is None and dev is not None and _is_dtype_src(dev):
        dtype = dev
    if "tensor" in bound:
        raise Unsupported("Module.to(tensor) has no MindSpore form: pass the tensor's dtype")
    if dtype is None:
        return self
    return f"{self}.to({dtype})"


@handler
def mr_data_loader(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """DataLoader → mindspore.dataset.dataloader.DataLoader (the torch-compatible loader in 2.10).

    Arguments keep their names; ``pin_memory`` and the ``generator`` (a torch.Generator) are dropped.
    """
    parts = []
    names = entry.sig_names()
    for name in names:
        if name not in bound or name in ("pin_memory", "generator", "pin_memory_device"):
            continue
        parts.append(f"{name}={bound[name]}")
    for k, v in bound.items():
        if k not in names:
            parts.append(f"{k}={v}")
    first, rest = parts[0], parts[1:]
    args = [first.split("=", 1)[1]] + rest if first.startswith("dataset=") else parts
    return f"mindspore.dataset.dataloader.DataLoader({', '.join(args)})"


@handler
def mr_requires_grad_(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``m.requires_grad_(flag)`` → set ``requires_grad`` on every Parameter, return the cell."""
    self = receiver or "self"
    flag = bound.get("requires_grad", "True")
    return f"(lambda c: ([setattr(p, 'requires_grad', {flag}) for p in c.get_parameters()], c)[1])({self})"


@handler
def mr_grad_scaler(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """GradScaler → DynamicLossScaler(scale_value, scale_factor, scale_window)."""
    backoff = literal(bound.get("backoff_factor", "0.5"))
    growth = bound.get("growth_factor", "2.0")
    if backoff is NOT_LITERAL or literal(growth) is NOT_LITERAL or abs(backoff * literal(growth) - 1.0) > 1e-12:
        raise Unsupported("DynamicLossScaler divides by scale_factor on overflow: backoff_factor must be 1/growth_factor")
    enabled = literal(bound.get("enabled", "True"))
    if enabled is not True:
        raise Unsupported("GradScaler(enabled=...) has no DynamicLossScaler form: drop the scaler when disabled")
    scale = bound.get("init_scale", "65536.0")
    window = bound.get("growth_interval", "2000")
    return f"mindspore.amp.DynamicLossScaler(scale_value={scale}, scale_factor={growth}, scale_window={window})"
