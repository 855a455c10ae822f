"""The MindSpore side of ``torch2ms compare``: load converted weights, record cells, replay, train.

Never imports torch. Forward hooks fire only in PyNative, so recording forces PyNative; the final
output is checked again in GRAPH_MODE with the hooks removed (hooks compiled into a graph lose
their Python side effects).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from .torch_worker import flatten_tensors, load_factory


def _ms():
    import mindspore

    return mindspore


def build_net(spec: str, seed: int) -> Any:
    ms = _ms()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(seed)
    net = load_factory(spec, "ms")()
    if not isinstance(net, ms.nn.Cell):
        from .torch_worker import SpecError

        raise SpecError(f"{spec}: the factory returned {type(net).__name__}, not a mindspore.nn.Cell")
    return net


def _cell_at(net: Any, path: str) -> Any:
    cell = net
    for part in path.split(".") if path else []:
        cell = cell._cells[part]
    return cell


def load_state(net: Any, converted: Mapping[str, np.ndarray]) -> dict[str, list]:
    """Copy converted torch arrays into the net's parameters; say what did not load and why."""
    ms = _ms()
    params = dict(net.parameters_and_names())
    buffers = dict(net.named_buffers()) if hasattr(net, "named_buffers") else {}
    out: dict[str, list] = {"unloaded": [], "unused": [], "shape_mismatch": []}
    for key in sorted(set(converted) & set(buffers) - set(params)):
        owner_path, _, leaf = key.rpartition(".")
        _cell_at(net, owner_path).register_buffer(leaf, ms.Tensor(np.ascontiguousarray(converted[key])))
    for name, p in params.items():
        if name not in converted:
            out["unloaded"].append(name)
            continue
        arr = converted[name]
        if tuple(arr.shape) != tuple(p.shape):
            out["shape_mismatch"].append([name, list(arr.shape), list(p.shape)])
            continue
        p.set_data(ms.Tensor(np.ascontiguousarray(arr), dtype=p.dtype))
    out["unused"] = sorted(set(converted) - set(params) - set(buffers))
    return out


def state_arrays(net: Any) -> dict[str, np.ndarray]:
    return {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}


class MSRecorder:
    """Forward hooks on every cell: outputs of every call, inputs of leaf calls."""

    def __init__(self, net: Any) -> None:
        ms = _ms()
        self.is_tensor = lambda t: isinstance(t, ms.Tensor)
        self.events: list[dict[str, Any]] = []
        self.arrays: dict[str, np.ndarray] = {}
        self.calls: dict[str, int] = {}
        self.handles = []
        self.seen: dict[int, tuple[Any, np.ndarray]] = {}
        self.stack: list[str] = []
        seen: set[int] = set()
        for name, cell in net.cells_and_names():
            if id(cell) in seen:
                continue
            seen.add(id(cell))
            leaf = not cell._cells
            self.handles.append(cell.register_forward_pre_hook(self._pre(name)))
            self.handles.append(cell.register_forward_hook(self._hook(name, leaf)))

    def _pre(self, name: str):
        def hook(cell, inputs):
            self.stack.append(name)  # the innermost unfinished cell is where an exception came from

        return hook

    def _hook(self, name: str, leaf: bool):
        def hook(cell, inputs, output):
            call = self.calls.get(name, 0)
            self.calls[name] = call + 1
            i = len(self.events)
            outs = flatten_tensors(output, self.is_tensor)
            # Convert first: a kernel error surfaces at the first sync (asnumpy), and an event
            # without its arrays must not be recorded.
            arrays = {f"e{i}_o{j}": self._np(o) for j, o in enumerate(outs)}
            if leaf:
                arrays |= {f"e{i}_i{j}": self._np(a) for j, a in enumerate(inputs) if self.is_tensor(a)}
            self.arrays |= arrays
            self.events.append(
                {
                    "name": name,
                    "call": call,
                    "leaf": leaf,
                    "type": type(cell).__name__,
                    "out_shapes": [list(o.shape) for o in outs],
                }
            )
            if self.stack:
                self.stack.pop()

        return hook

    def _np(self, t: Any) -> np.ndarray:
        # A leaf's input is usually the previous call's output: convert each tensor once. The
        # tensors are kept alive in `seen` so that their ids stay unique during the forward.
        hit = self.seen.get(id(t))
        if hit is None:
            hit = self.seen[id(t)] = (t, t.asnumpy())
        return hit[1]

    def remove(self) -> None:
        self.seen = {}
        for h in self.handles:
            h.remove()
        self.handles = []


def record_forward(net: Any, inputs: list[np.ndarray]) -> dict[str, Any]:
    """One PyNative forward with every cell hooked. Exceptions are kept, with the events so far."""
    ms = _ms()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net.set_train(False)
    rec = MSRecorder(net)
    t0 = time.perf_counter()
    error = None
    try:
        net(*[ms.Tensor(np.array(x)) for x in inputs])
    except Exception as exc:  # noqa: BLE001 - the report shows it, next to the layers that did run
        error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:500] if str(exc).strip() else ''}"
    finally:
        rec.remove()
    failed_in = rec.stack[-1] if error and rec.stack else None
    return {
        "events": rec.events,
        "arrays": rec.arrays,
        "error": error,
        "failed_in": failed_in,
        "t_forward": time.perf_counter() - t0,
    }


def replay_leaf(net: Any, name: str, args: list[Any]) -> tuple[list[np.ndarray] | None, str | None]:
    """Run one MindSpore cell on torch's input for that layer: the layer's own, local error."""
    ms = _ms()
    try:
        cell = _cell_at(net, name)
        out = cell(*[ms.Tensor(a) if isinstance(a, np.ndarray) else a for a in args])
    except Exception as exc:  # noqa: BLE001
        msg = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        return None, f"{type(exc).__name__}: {msg}"
    return [o.asnumpy() for o in flatten_tensors(out, lambda t: isinstance(t, ms.Tensor))], None


def plain_forward(net: Any, inputs: list[np.ndarray], graph: bool) -> tuple[list[np.ndarray] | None, str | None]:
    """The whole net once, no hooks, in PyNative or GRAPH_MODE (then back to PyNative)."""
    ms = _ms()
    ms.set_context(mode=ms.GRAPH_MODE if graph else ms.PYNATIVE_MODE)
    try:
        net.set_train(False)
        out = net(*[ms.Tensor(np.array(x)) for x in inputs])
        return [o.asnumpy() for o in flatten_tensors(out, lambda t: isinstance(t, ms.Tensor))], None
    except Exception as exc:  # noqa: BLE001
        msg = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else ""
        return None, f"{type(exc).__name__}: {msg}"
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def train(net: Any, cfg: Mapping[str, Any], batches_x: np.ndarray, batches_y: np.ndarray) -> list[float]:
    """N steps of the torch recipe: CrossEntropy, experimental.optim (matches torch), dropout off."""
    ms = _ms()
    from mindspore.experimental import optim

    ms.set_context(mode=ms.PYNATIVE_MODE)
    net.set_train(True)
    for _, cell in net.cells_and_names():
        if isinstance(cell, ms.nn.Dropout) or type(cell).__name__.startswith("Dropout"):
            cell.set_train(False)  # dropout off: the two frameworks' random masks can never agree
    params = net.trainable_params()
    name = cfg["optimizer"].lower()
    kw = {"lr": cfg["lr"], "weight_decay": cfg.get("weight_decay", 0.0)}
    if name == "sgd":
        opt = optim.SGD(params, momentum=cfg.get("momentum", 0.0), **kw)
    elif name == "adam" and not kw["weight_decay"]:
        # experimental.optim.Adam runs the fused Adam kernel, which adds eps to sqrt(v) before the
        # bias correction (torch: after): parameters with gradients near eps drift apart (1e-3..1e-2
        # after 50 steps). Without weight decay, Adam is AdamW(weight_decay=0), which matches torch.
        opt = optim.AdamW(params, **kw)
    elif name == "adam":
        opt = optim.Adam(params, **kw)  # coupled (L2) weight decay: only Adam has it
    elif name == "adamw":
        opt = optim.AdamW(params, **kw)
    else:
        raise ValueError(f"unknown optimizer {cfg['optimizer']!r}")
    loss_fn = ms.nn.CrossEntropyLoss()

    def forward(x, y):
        out = net(x)
        return loss_fn(out, y)

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)
    losses = []
    for x, y in zip(batches_x, batches_y):
        loss, grads = grad_fn(ms.Tensor(np.array(x)), ms.Tensor(np.array(y).astype(np.int32)))
        opt(grads)
        losses.append(float(loss.asnumpy()))
    net.set_train(False)
    return losses
