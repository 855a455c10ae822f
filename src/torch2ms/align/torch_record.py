"""Recording the torch model: every module call's outputs and inputs, and each leaf's float32 noise.

Imports torch only inside functions (see ``torch_worker.py``). Arrays are plain numpy, keyed by name;
an event refers to its arrays by key, so one array serves as a layer's output and the next layer's input.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any

import numpy as np

from .outputs import flatten_tensors

JSON_SCALARS = (type(None), bool, int, float, str)


def torch_base_class(module: Any) -> str | None:
    """The first torch.nn class in the module's MRO (a project subclass keeps its base's parameters)."""
    for cls in type(module).__mro__:
        if cls.__module__.startswith("torch.nn.modules"):
            return f"torch.nn.{cls.__name__}"
    return None


def simple_attrs(module: Any) -> dict[str, Any]:
    """Constructor-like attributes (eps, momentum, padding, stride...) for the diagnosis hints."""
    out = {}
    for key, value in vars(module).items():
        if key.startswith("_") or key == "training":
            continue
        if isinstance(value, JSON_SCALARS) or (
            isinstance(value, (tuple, list)) and all(isinstance(x, JSON_SCALARS) for x in value)
        ):
            out[key] = list(value) if isinstance(value, tuple) else value
    return out


def first_embedding_size(model: Any) -> int | None:
    """num_embeddings of the model's first Embedding: integer inputs are drawn below it."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.Embedding):
            return int(module.num_embeddings)
    return None


class Recorder:
    """Forward (pre-)hooks on every module: outputs and inputs of every call."""

    def __init__(self, model: Any) -> None:
        import torch

        self.torch = torch
        self.events: list[dict[str, Any]] = []
        self.arrays: dict[str, np.ndarray] = {}
        self.calls: dict[str, int] = {}
        self.pending: dict[int, list[dict[str, Any]]] = {}
        self.seq = 0
        self.handles: list[Any] = []
        self._copies: dict[int, tuple[Any, int | None, str]] = {}
        for name, module in model.named_modules():
            leaf = next(iter(module.children()), None) is None
            self.handles.append(module.register_forward_pre_hook(self._pre()))
            self.handles.append(module.register_forward_hook(self._post(name, leaf)))

    def _store(self, tensor: Any, key: str) -> str:
        """Copy a tensor's values under ``key``, or reuse an earlier copy of the same unchanged tensor.

        A copy, not a view: in-place layers (ReLU(inplace=True)) change tensors after a hook saw them;
        ``_version`` counts those changes.
        """
        version = getattr(tensor, "_version", None)
        hit = self._copies.get(id(tensor))
        if hit is not None and hit[0]() is tensor and hit[1] == version and version is not None:
            return hit[2]
        self.arrays[key] = tensor.detach().cpu().numpy().copy()
        try:
            self._copies[id(tensor)] = (weakref.ref(tensor), version, key)
        except TypeError:
            pass
        return key

    def _capture_inputs(self, args: tuple, seq: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for j, arg in enumerate(args):
            if isinstance(arg, self.torch.Tensor):
                items.append({"array": self._store(arg, f"s{seq}_i{j}")})
            elif isinstance(arg, JSON_SCALARS):
                items.append({"value": arg})
            else:
                items.append({"other": type(arg).__name__})  # not replayable (nested structures, objects)
        return items

    def _pre(self):
        def hook(module, args):
            record = {"start": self.seq, "inputs": self._capture_inputs(args, self.seq)}
            self.seq += 1
            self.pending.setdefault(id(module), []).append(record)

        return hook

    def _post(self, name: str, leaf: bool):
        def hook(module, args, output):
            stack = self.pending.get(id(module))
            record = stack.pop() if stack else {"start": self.seq, "inputs": None}
            call = self.calls.get(name, 0)
            self.calls[name] = call + 1
            index = len(self.events)
            outs = flatten_tensors(output, lambda t: isinstance(t, self.torch.Tensor))
            self.events.append(
                {
                    "name": name,
                    "call": call,
                    "start": record["start"],
                    "leaf": leaf,
                    "type": type(module).__name__,
                    "torch_class": torch_base_class(module),
                    "out_shapes": [list(o.shape) for o in outs],
                    "out_dtypes": [str(o.dtype) for o in outs],
                    "outputs": [self._store(o, f"e{index}_o{j}") for j, o in enumerate(outs)],
                    "inputs": record["inputs"],
                }
            )

        return hook

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        self._copies = {}


def replayable(event: dict[str, Any]) -> bool:
    """A leaf call whose inputs were all captured (tensors and JSON scalars): it can run again."""
    items = event.get("inputs")
    return bool(event["leaf"]) and items is not None and all("other" not in it for it in items)


def _to_torch_args(items: list[dict[str, Any]], arrays: dict[str, np.ndarray], torch: Any) -> list[Any]:
    args = []
    for item in items:
        if "array" in item:
            array = arrays[item["array"]]
            if array.dtype.kind == "f":
                array = array.astype(np.float64)
            args.append(torch.from_numpy(np.array(array)))
        else:
            args.append(item["value"])
    return args


def _relative_gap(reference: np.ndarray, exact: np.ndarray) -> float:
    scale = float(np.abs(exact).max()) if exact.size else 0.0
    return float(np.abs(reference.astype(np.float64) - exact).max()) / scale if scale > 0 else 0.0


def noise_f64(model: Any, events: list[dict[str, Any]], arrays: dict[str, np.ndarray]) -> None:
    """Float32 noise of each leaf call: |float32 output − the same layer in float64| on the same input.

    A port's local error is judged against this (plus a floor): float32 rounding is not a bug.
    """
    import torch

    model64 = copy.deepcopy(model).double()
    modules = dict(model64.named_modules())
    with torch.no_grad():
        for event in events:
            if not replayable(event) or not event["out_shapes"]:
                continue
            try:
                out = modules[event["name"]](*_to_torch_args(event["inputs"], arrays, torch))
            except Exception:  # noqa: BLE001 - some layers refuse float64; then only the floor applies
                continue
            outs = flatten_tensors(out, lambda t: isinstance(t, torch.Tensor))
            worst = 0.0
            for key, exact in zip(event["outputs"], outs):
                reference = arrays[key]
                if reference.dtype.kind == "f" and tuple(exact.shape) == reference.shape:
                    worst = max(worst, _relative_gap(reference, exact.numpy()))
            event["noise_rel"] = worst
