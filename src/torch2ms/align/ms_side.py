"""The MindSpore side of ``torch2ms compare``: load converted weights, record cells, replay, train.

Never imports torch. Forward hooks fire only in PyNative, so recording forces PyNative; the final
output is checked again in GRAPH_MODE with the hooks removed (hooks compiled into a graph lose
their Python side effects).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..factory import SpecError, build
from ..i18n import _
from .draw import numbered
from .options import CompareUsageError, LossSpec
from .outputs import flatten_tensors, select_output


def _ms():
    import mindspore

    return mindspore


def _first_line(exc: BaseException, limit: int = 500) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:limit] if text else ''}"


def build_net(spec: str, seed: int, import_timeout: float | None = None) -> Any:
    ms = _ms()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(seed)
    net = build(spec, "ms", import_timeout)
    if not isinstance(net, ms.nn.Cell):
        raise SpecError(_("{spec}: gave a {type}, not a mindspore.nn.Cell").format(spec=spec, type=type(net).__name__))
    return net


def cell_at(net: Any, path: str) -> Any:
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
        owner_path, _dot, leaf = key.rpartition(".")
        cell_at(net, owner_path).register_buffer(leaf, ms.Tensor(np.ascontiguousarray(converted[key])))
    for name, param in params.items():
        if name not in converted:
            out["unloaded"].append(name)
            continue
        array = converted[name]
        if tuple(array.shape) != tuple(param.shape):
            out["shape_mismatch"].append([name, list(array.shape), list(param.shape)])
            continue
        param.set_data(ms.Tensor(np.ascontiguousarray(array), dtype=param.dtype))
    out["unused"] = sorted(set(converted) - set(params) - set(buffers))
    return out


def state_arrays(net: Any) -> dict[str, np.ndarray]:
    return {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}


class MSRecorder:
    """Forward hooks on every cell: outputs and inputs of every call (the same event format as torch's)."""

    def __init__(self, net: Any) -> None:
        ms = _ms()
        self.is_tensor = lambda t: isinstance(t, ms.Tensor)
        self.events: list[dict[str, Any]] = []
        self.arrays: dict[str, np.ndarray] = {}
        self.calls: dict[str, int] = {}
        self.handles: list[Any] = []
        self.copies: dict[int, tuple[Any, str]] = {}
        self.stack: list[str] = []
        seen: set[int] = set()
        for name, cell in net.cells_and_names():
            if id(cell) in seen:
                continue
            seen.add(id(cell))
            self.handles.append(cell.register_forward_pre_hook(self._pre(name)))
            self.handles.append(cell.register_forward_hook(self._hook(name, not cell._cells)))

    def _pre(self, name: str):
        def hook(cell, inputs):
            self.stack.append(name)  # the innermost unfinished cell is where an exception came from

        return hook

    def _hook(self, name: str, leaf: bool):
        def hook(cell, inputs, output):
            call = self.calls.get(name, 0)
            self.calls[name] = call + 1
            index = len(self.events)
            outs = flatten_tensors(output, self.is_tensor)
            # Converted first: a kernel error surfaces at the first sync (asnumpy), and an event
            # without its arrays must not be recorded.
            outputs = [self._store(o, f"e{index}_o{j}") for j, o in enumerate(outs)]
            self.events.append(
                {
                    "name": name,
                    "call": call,
                    "leaf": leaf,
                    "type": type(cell).__name__,
                    "out_shapes": [list(o.shape) for o in outs],
                    "outputs": outputs,
                    "inputs": [self._input_item(a, f"e{index}_i{j}") for j, a in enumerate(inputs)],
                }
            )
            if self.stack:
                self.stack.pop()

        return hook

    def _input_item(self, value: Any, key: str) -> dict[str, Any]:
        if self.is_tensor(value):
            return {"array": self._store(value, key)}
        if value is None or isinstance(value, (bool, int, float, str)):
            return {"value": value}
        return {"other": type(value).__name__}

    def _store(self, tensor: Any, key: str) -> str:
        # A layer's input is usually the previous call's output: convert each tensor once. The
        # tensors are kept alive in `copies` so that their ids stay unique during the forward
        # (PyNative tensors are not changed in place: facts §2).
        hit = self.copies.get(id(tensor))
        if hit is None:
            self.arrays[key] = tensor.asnumpy()
            hit = self.copies[id(tensor)] = (tensor, key)
        return hit[1]

    def remove(self) -> None:
        self.copies = {}
        for handle in self.handles:
            handle.remove()
        self.handles = []


def record_forward(net: Any, inputs: list[np.ndarray]) -> dict[str, Any]:
    """One PyNative forward with every cell hooked. Exceptions are kept, with the events so far."""
    ms = _ms()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net.set_train(False)
    recorder = MSRecorder(net)
    start = time.perf_counter()
    error = None
    try:
        net(*[ms.Tensor(np.array(x)) for x in inputs])
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the report shows it, next to the layers that ran
        error = _first_line(exc)
    finally:
        recorder.remove()
    return {
        "events": recorder.events,
        "arrays": recorder.arrays,
        "error": error,
        "failed_in": recorder.stack[-1] if error and recorder.stack else None,
        "t_forward": time.perf_counter() - start,
    }


def replay_leaf(net: Any, name: str, args: list[Any]) -> tuple[list[np.ndarray] | None, str | None]:
    """Run one MindSpore cell on torch's input for that layer: the layer's own, local error."""
    ms = _ms()
    try:
        out = cell_at(net, name)(*[ms.Tensor(a) if isinstance(a, np.ndarray) else a for a in args])
        return [o.asnumpy() for o in flatten_tensors(out, lambda t: isinstance(t, ms.Tensor))], None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a layer that fails on torch's input is a finding
        return None, _first_line(exc, 300)


def plain_forward(net: Any, inputs: list[np.ndarray], graph: bool) -> tuple[list[np.ndarray] | None, str | None]:
    """The whole net once, no hooks, in PyNative or GRAPH_MODE (then back to PyNative)."""
    ms = _ms()
    ms.set_context(mode=ms.GRAPH_MODE if graph else ms.PYNATIVE_MODE)
    try:
        net.set_train(False)
        out = net(*[ms.Tensor(np.array(x)) for x in inputs])
        return [o.asnumpy() for o in flatten_tensors(out, lambda t: isinstance(t, ms.Tensor))], None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a graph that does not compile is a finding
        return None, _first_line(exc)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def ms_loss(out: Any, target: Any, loss: LossSpec, output_index: int | str | None) -> Any:
    """The training loss, computed the same way as ``torch_worker.torch_loss``."""
    ms = _ms()
    from .draw import class_axis

    pred = select_output(out, output_index, lambda t: isinstance(t, ms.Tensor))
    if loss.kind == "model":
        if pred.size != 1:
            raise CompareUsageError(
                _("--loss model: the selected output has shape {shape}, not a scalar").format(shape=list(pred.shape))
            )
        return pred.reshape(())
    if loss.kind == "ce":
        axis = class_axis(loss, pred.ndim)
        order = [k for k in range(pred.ndim) if k != axis] + [axis]
        logits = ms.ops.transpose(pred, tuple(order)).reshape(-1, pred.shape[axis])
        return ms.nn.CrossEntropyLoss()(logits, target.reshape(-1).astype(ms.int32))
    fn = ms.nn.MSELoss() if loss.kind == "mse" else ms.nn.L1Loss()
    return fn(pred, target.astype(pred.dtype))


def _optimizer(params: list[Any], cfg: Mapping[str, Any]) -> Any:
    from mindspore.experimental import optim

    kw = {"lr": cfg["lr"], "weight_decay": cfg.get("weight_decay", 0.0)}
    if cfg["optimizer"] == "sgd":
        return optim.SGD(params, momentum=cfg.get("momentum", 0.0), **kw)
    if cfg["optimizer"] == "adam" and kw["weight_decay"]:
        return optim.Adam(params, **kw)  # coupled (L2) weight decay: only Adam has it
    # experimental.optim.Adam runs the fused Adam kernel, which adds eps to sqrt(v) before the bias
    # correction (torch: after): parameters with gradients near eps drift apart (1e-3..1e-2 after 50
    # steps). Without weight decay, Adam is AdamW(weight_decay=0), which matches torch.
    return optim.AdamW(params, **kw)


def _dropout_off(net: Any) -> None:
    ms = _ms()
    net.set_train(True)
    for _name, cell in net.cells_and_names():
        if isinstance(cell, ms.nn.Dropout) or type(cell).__name__.startswith("Dropout"):
            cell.set_train(False)  # dropout off: the two frameworks' random masks can never agree


def train(
    net: Any, cfg: Mapping[str, Any], batches: Mapping[str, np.ndarray], on_step: Callable[[int, int], None]
) -> list[float]:
    """The torch recipe's steps (same loss, experimental.optim, dropout off) on the same batches."""
    ms = _ms()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    _dropout_off(net)
    opt = _optimizer(net.trainable_params(), cfg)
    loss_spec = LossSpec.parse(cfg.get("loss", "ce"))
    xs = numbered(dict(batches), "train_x")
    has_target = "train_y" in batches

    def forward(*args):
        inputs, target = (args[:-1], args[-1]) if has_target else (args, None)
        return ms_loss(net(*inputs), target, loss_spec, cfg.get("output_index"))

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)
    losses = []
    on_step(0, cfg["steps"])
    for step in range(cfg["steps"]):
        args = [ms.Tensor(np.array(x[step])) for x in xs]
        if has_target:
            args.append(ms.Tensor(np.array(batches["train_y"][step])))
        loss, grads = grad_fn(*args)
        opt(grads)
        losses.append(float(loss.asnumpy()))
        on_step(step + 1, cfg["steps"])
    net.set_train(False)
    return losses
