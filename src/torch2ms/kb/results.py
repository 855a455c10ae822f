"""Which torch functions return something other than a Tensor (their results' methods are not Tensor methods)."""

from __future__ import annotations

# torch functions whose result is not a Tensor: their results' methods (dict.values, ...) stay as they are.
_NOT_TENSOR_RESULTS = frozenset(
    {
        "torch.load",
        "torch.save",
        "torch.device",
        "torch.get_default_dtype",
        "torch.manual_seed",
        "torch.numel",
        "torch.typename",
        "torch.get_rng_state",
        "torch.set_rng_state",
        "torch.no_grad",
        "torch.enable_grad",
        "torch.set_grad_enabled",
        "torch.inference_mode",
        "torch.compile",
        "torch.finfo",
        "torch.iinfo",
        "torch.Generator",
        "torch.Size",
    }
)
_NOT_TENSOR_PREFIXES = (
    "torch.cuda.",
    "torch.backends.",
    "torch.utils.",
    "torch.distributed.",
    "torch.hub.",
    "torch.jit.",
    "torch.onnx.",
    "torch.serialization.",
    "torch.multiprocessing.",
    "torch.optim.",
    "torch.amp.",
    "torch.autocast",
)


def returns_tensor(full: str) -> bool:
    """False for ``torch.load`` (a dict), ``torch.cuda.is_available`` (a bool), ...; True otherwise."""
    return not (full in _NOT_TENSOR_RESULTS or full.startswith(_NOT_TENSOR_PREFIXES) or full.startswith("torch.is_"))


# Methods whose result is not a Tensor: ``m.state_dict().values()`` is a dict's ``values``.
NOT_TENSOR_METHODS = frozenset(
    {
        "state_dict",
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "children",
        "named_children",
        "modules",
        "named_modules",
        "items",
        "keys",
        "values",
        "item",
        "tolist",
        "numpy",
        "size",
        "dim",
        "numel",
        "backward",
    }
)


def call_returns_tensor(name: str | None, method: str | None) -> bool:
    """Whether a call may return a Tensor: ``name`` is the dotted callee, ``method`` the attribute called."""
    if method is not None and method in NOT_TENSOR_METHODS:
        return False
    return returns_tensor(name or "")
