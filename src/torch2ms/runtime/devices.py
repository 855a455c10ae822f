"""torch's device idioms on MindSpore's one device target.

A torch script asks where a tensor lives (``x.is_cuda``, ``x.device.type``), whether an accelerator
exists (``torch.cuda.is_available()``, ``torch.accelerator.current_accelerator()``) and moves
tensors there. MindSpore runs every tensor on the single target of the process
(``mindspore.set_device('CPU'|'GPU'|'Ascend')``), so each question has one answer, the target's, in
torch's words: GPU is ``'cuda'``, Ascend ``'npu'``, CPU ``'cpu'``. All helpers read that one target,
so they agree with each other (``is_cuda`` true exactly when ``torch.cuda.is_available()`` is).

``device_type`` is a ``constexpr``: a GRAPH_MODE ``construct`` gets the answer when it compiles
(``if x.is_cuda or x.is_xpu:`` compiles to the branch the target takes). ``Device`` is a
``jit_class``, so ``x.device.type`` works inside a compiled network too.
"""

from __future__ import annotations

from typing import Any, Literal

import mindspore as ms
from mindspore.ops import constexpr

__all__ = [
    "Device",
    "accelerator_available",
    "cuda_available",
    "current_accelerator",
    "current_device_index",
    "torch_device",
    "count_devices",
    "device_guard",
    "device_index",
    "device_type",
    "is_device",
    "set_device_index",
    "synchronize_device",
    "tensor_device",
    "tensor_device_index",
]

# MindSpore device target → torch device type
TORCH_TYPES = {"CPU": "cpu", "GPU": "cuda", "Ascend": "npu"}
MS_TARGETS = {torch_type: target for target, torch_type in TORCH_TYPES.items()}


@constexpr
def device_type() -> str:
    """torch's name for the device every MindSpore tensor lives on: 'cpu', 'cuda' or 'npu'."""
    return TORCH_TYPES.get(ms.get_context("device_target"), "cpu")


@constexpr
def device_index() -> int:
    """The index of the device in use (``mindspore.set_device(target, index)``)."""
    return int(ms.get_context("device_id"))


@ms.jit_class
class Device:
    """A ``torch.device`` value: ``type``, ``index``, ``str()`` ('cuda:0'), equality with other devices.

    ``with device(...):`` is accepted and changes nothing: MindSpore already creates every tensor on
    its target.
    """

    def __init__(self, type: str, index: int | None = None) -> None:
        self.type = type
        self.index = index

    def __str__(self) -> str:
        return self.type if self.index is None else self.type + ":" + str(self.index)

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other: object) -> bool:
        # torch: device('cpu') == 'cpu' is False; only devices compare equal
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def torch_device(spec: Any = None, index: int | None = None) -> Device:
    """``torch.device('cuda:1')``, ``torch.device('cuda', 1)``, ``torch.device(1)``, ``torch.device(other)``."""
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, int):  # torch.device(1): the accelerator's device 1
        return Device(device_type() if device_type() != "cpu" else "cuda", spec)
    text = str(spec if spec is not None else device_type())
    kind, _, number = text.partition(":")
    if number:
        if index is not None:
            raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {text}")
        index = int(number)
    return Device(kind, index)


def tensor_device(x: Any = None) -> Device:
    """``x.device``: every MindSpore tensor is on the target (torch's cpu device has no index)."""
    kind = device_type()
    return Device(kind, None if kind == "cpu" else device_index())


def is_device(x: Any, kind: str) -> bool:
    """``x.is_cuda`` (kind 'cuda'), ``x.is_xpu``, ``x.is_mps``, ``x.is_cpu``: is the target that device?"""
    return device_type() == kind


def tensor_device_index(x: Any = None) -> int:
    """``x.get_device()``: -1 on the CPU, else the index of the device in use."""
    return -1 if device_type() == "cpu" else device_index()


def cuda_available() -> bool:
    """``torch.cuda.is_available()``: MindSpore runs on a GPU."""
    return device_type() == "cuda"


def accelerator_available() -> bool:
    """``torch.accelerator.is_available()``: MindSpore runs on a GPU or an Ascend NPU."""
    return device_type() != "cpu"


def current_accelerator(check_available: bool = False) -> Device | None:
    """``torch.accelerator.current_accelerator()``: the target's device, None on a CPU target."""
    kind = device_type()
    return None if kind == "cpu" else Device(kind)


def count_devices(kind: str | None = None) -> int:
    """``torch.cuda.device_count()`` (kind 'cuda'), ``torch.accelerator.device_count()`` (any accelerator):
    how many devices of the target, 0 when the target is not that device."""
    target = device_type()
    if target == "cpu" or (kind is not None and kind != target):
        return 0
    return int(ms.hal.device_count(MS_TARGETS[target]))


def set_device_index(index: Any) -> None:
    """``torch.cuda.set_device(i)`` / ``torch.accelerator.set_device_index(i)``: use device i of the
    accelerator. A CPU target has one device: nothing to select."""
    if device_type() == "cpu" or index is None:
        return
    ms.set_device(ms.get_context("device_target"), index.index if isinstance(index, Device) else int(index))


def current_device_index() -> int:
    """``torch.cuda.current_device()`` / ``torch.accelerator.current_device_index()``."""
    return device_index()


def synchronize_device(device: Any = None) -> None:
    """``torch.cuda.synchronize()``: wait for the accelerator (a CPU target has nothing queued)."""
    if device_type() != "cpu":
        ms.runtime.synchronize()


class device_guard:  # lower-case: used like torch.cuda.device
    """``with torch.cuda.device(i):`` / ``torch.accelerator.device_index(i)``: select device i for the
    block, then the one before (nothing to do on a CPU target)."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.previous = device_index()

    def __enter__(self) -> device_guard:
        set_device_index(self.index)
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        set_device_index(self.previous)
        return False  # exceptions propagate
