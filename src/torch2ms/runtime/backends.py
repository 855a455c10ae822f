"""``torch.backends`` flags, read and assigned as in torch, applied to MindSpore.

A script writes ``torch.backends.cudnn.benchmark = True`` or ``cudnn.deterministic = True`` (after
``import torch.backends.cudnn as cudnn``) and may read the flags back. The converter turns the
``torch.backends`` prefix into ``torch_backends``: the same attributes, with torch's defaults, and
an assignment does what MindSpore can do for it:

- ``cudnn.deterministic = True`` → ``mindspore.set_deterministic(True)`` (MindSpore allows one call
  per process, so a repeated value is not passed again);
- ``cudnn.allow_tf32`` / ``cuda.matmul.allow_tf32`` → ``mindspore.device_context.gpu.op_precision``
  on a GPU target (TF32 only exists there);
- ``cudnn.benchmark`` / ``cudnn.enabled``: kept as values (MindSpore picks its GPU convolution
  algorithms itself, and has no switch to bypass cuDNN).

The ``is_available``/``is_built`` questions answer for the target, as ``torch2ms.runtime.devices``.
"""

from __future__ import annotations

from typing import Any

from .devices import device_type

__all__ = ["torch_backends"]


def _on_gpu() -> bool:
    return device_type() == "cuda"


class _Cudnn:
    """``torch.backends.cudnn``."""

    def __init__(self) -> None:
        self.enabled = True
        self.benchmark = False
        self._deterministic = False
        self._allow_tf32 = True

    @property
    def deterministic(self) -> bool:
        return self._deterministic

    @deterministic.setter
    def deterministic(self, value: bool) -> None:
        import mindspore as ms

        value = bool(value)
        if (ms.get_context("deterministic") == "ON") != value:
            ms.set_deterministic(value)
        self._deterministic = value

    @property
    def allow_tf32(self) -> bool:
        return self._allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        import mindspore as ms

        self._allow_tf32 = bool(value)
        if _on_gpu():
            ms.device_context.gpu.op_precision.conv_allow_tf32(self._allow_tf32)

    def is_available(self) -> bool:
        return _on_gpu()

    def version(self) -> int | None:
        return None  # MindSpore does not report the cuDNN it was built with


class _Matmul:
    """``torch.backends.cuda.matmul``."""

    def __init__(self) -> None:
        self._allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return self._allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        import mindspore as ms

        self._allow_tf32 = bool(value)
        if _on_gpu():
            ms.device_context.gpu.op_precision.matmul_allow_tf32(self._allow_tf32)


class _Cuda:
    """``torch.backends.cuda``."""

    def __init__(self) -> None:
        self.matmul = _Matmul()

    def is_built(self) -> bool:
        return _on_gpu()


class _Mps:
    """``torch.backends.mps``: MindSpore has no Apple GPU backend."""

    def is_available(self) -> bool:
        return False

    def is_built(self) -> bool:
        return False


class _Backends:
    """``torch.backends`` as one object: ``torch_backends.cudnn.benchmark = True`` works as in torch."""

    def __init__(self) -> None:
        self.cudnn = _Cudnn()
        self.cuda = _Cuda()
        self.mps = _Mps()

    def __repr__(self) -> str:
        return "torch2ms.runtime.torch_backends"

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"torch2ms: torch.backends.{name} has no MindSpore counterpart")


torch_backends = _Backends()
