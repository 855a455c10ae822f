"""Handlers for torch.nn.Module methods, torch.utils.data and torch runtime APIs."""

from __future__ import annotations

from ...i18n import _
from ..schema import Entry
from ..source import NOT_LITERAL, draws_random, literal
from ..transforms import Unsupported, handler

_MS_DTYPE_PREFIXES = ("mindspore.", "ms.")


def _is_dtype_src(src: str) -> bool:
    """Whether an (already rewritten) argument source names a dtype rather than a device."""
    s = src.strip()
    if s.endswith(".dtype"):
        return True
    return s.startswith(_MS_DTYPE_PREFIXES) or s.startswith("torch.") and not s.startswith("torch.device")


@handler
def module_to(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
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
        raise Unsupported(_("Module.to(tensor) has no MindSpore form: pass the tensor's dtype"))
    if dtype is None:
        return self
    return f"{self}.to({dtype})"


@handler
def requires_grad_(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``m.requires_grad_(flag)`` → set ``requires_grad`` on every Parameter, return the cell."""
    self = receiver or "self"
    flag = bound.get("requires_grad", "True")
    return f"(lambda c: ([setattr(p, 'requires_grad', {flag}) for p in c.get_parameters()], c)[1])({self})"


@handler
def grad_scaler(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """GradScaler → DynamicLossScaler(scale_value, scale_factor, scale_window)."""
    backoff = literal(bound.get("backoff_factor", "0.5"))
    growth = bound.get("growth_factor", "2.0")
    if backoff is NOT_LITERAL or literal(growth) is NOT_LITERAL or abs(backoff * literal(growth) - 1.0) > 1e-12:
        raise Unsupported(
            _("DynamicLossScaler divides by scale_factor on overflow: backoff_factor must be 1/growth_factor")
        )
    g = literal(growth)
    growth = str(int(g)) if isinstance(g, (int, float)) and float(g).is_integer() else growth
    scale = bound.get("init_scale", "65536.0")
    window = bound.get("growth_interval", "2000")
    dynamic = f"mindspore.amp.DynamicLossScaler(scale_value={scale}, scale_factor={growth}, scale_window={window})"
    # a disabled GradScaler scales by nothing (a static scale of 1) and checks no gradient: its step()
    # always steps (runtime scaler_finite says True for it)
    enabled = bound.get("enabled", "True")
    if literal(enabled) is True:
        return dynamic
    if literal(enabled) is False:
        return "torch2ms.runtime.DisabledLossScaler()"
    return f"({dynamic} if {enabled} else torch2ms.runtime.DisabledLossScaler())"


@handler
def checkpoint(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=...) → mindspore.recompute(fn, *args)."""
    if bound.get("context_fn") not in (None, "None"):
        raise Unsupported(_("checkpoint(context_fn=...) has no mindspore.recompute form"))
    fn = bound.get("function")
    if fn is None:
        raise Unsupported(_("checkpoint() needs the function to run"))
    rest = bound.get("args")
    # use_reentrant=False: MindSpore's reentrant form takes Cells only ("Recompute function now only support
    # block which inherited from Cell"); a method or function (self._forward) needs the other form.
    args = f"{fn}, {rest}" if rest else fn
    return f"mindspore.recompute({args}, use_reentrant=False)"


@handler
def identity_decorator(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """TorchScript-only decorators (jit.unused / ignore / export): the function itself.

    ``@torch.jit.ignore(drop=True)`` (called without the function) becomes an identity decorator.
    """
    fn = bound.get("fn", bound.get("drop"))  # torch.jit.ignore(fn) binds the function to drop
    if fn is None or literal(fn) is None or isinstance(literal(fn), bool):
        return "(lambda f: f)"
    return fn


@handler
def jit(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.jit.script / trace / torch.compile → mindspore.jit(fn); tracing inputs and backends dropped."""
    key = next(n for n in entry.sig_names() if n in ("obj", "func", "model"))
    fn = bound.get(key)
    if fn is None or literal(fn) is None:
        raise Unsupported(_("{api}() without a function: use @mindspore.jit as the decorator").format(api=entry.short))
    if literal(bound.get("disable", "False")) is True:
        return fn
    extra = ""
    fullgraph = bound.get("fullgraph")
    if fullgraph is not None:
        extra = f", fullgraph={fullgraph}"
    return f"mindspore.jit({fn}{extra})"


@handler
def register_buffer(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``self.register_buffer(name, tensor)``: a persistent buffer drawn at random (``torch.randn``)
    holds values only the checkpoint knows, and MindSpore loads Parameters only (a Cell's buffers are
    not in a .ckpt): such a buffer becomes a Parameter that is not trained, under the same name, so
    ``load_param_into_net`` gives it torch's values. Any other buffer stays a buffer."""
    self, name, tensor = receiver or "self", bound["name"], bound["tensor"]
    persistent = bound.get("persistent")
    if literal(persistent if persistent is not None else "True") is not False and draws_random(tensor):
        return f"{self}.insert_param_to_cell({name}, mindspore.Parameter({tensor}, name={name}, requires_grad=False))"
    extra = "" if persistent is None else f", persistent={persistent}"
    return f"{self}.register_buffer({name}, {tensor}{extra})"
