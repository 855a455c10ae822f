"""The torch side of ``torch2ms compare``: build the model, record every layer, train, export.

This file is deliberately standalone (stdlib + numpy at import time, torch inside functions, no
torch2ms imports): with ``--torch-python PY`` it runs as a plain script under another interpreter,
one that has torch but not necessarily torch2ms or MindSpore::

    PY torch_worker.py REQUEST.json   # reads REQUEST["inputs_npz"], writes REQUEST["out_npz"]

In one process the orchestrator calls :func:`run_torch_side` directly. Both ways return the same
(meta, arrays) pair; arrays are plain numpy so they cross process boundaries as one .npz file.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

JSON_SCALARS = (type(None), bool, int, float, str)


# ---------------------------------------------------------------------------------------------
# Factories: "path/to/file.py:Factory" or "package.module:Factory"
# ---------------------------------------------------------------------------------------------
try:
    from ..factory import SpecError, load_factory
except ImportError:  # run as a plain script under --torch-python: the module sits one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from factory import SpecError, load_factory  # type: ignore[no-redef]


# ---------------------------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------------------------
def flatten_tensors(obj: Any, is_tensor: Callable[[Any], bool]) -> list[Any]:
    """Tensors in an output (tensor, tuple/list, dict, namedtuple), depth first, in order."""
    if is_tensor(obj):
        return [obj]
    if isinstance(obj, dict):
        return [t for k in obj for t in flatten_tensors(obj[k], is_tensor)]
    if isinstance(obj, (tuple, list)):
        return [t for v in obj for t in flatten_tensors(v, is_tensor)]
    return []


def torch_base_class(module: Any) -> str | None:
    """The first torch.nn class in the module's MRO (a project subclass keeps its base's parameters)."""
    for c in type(module).__mro__:
        if c.__module__.startswith("torch.nn.modules"):
            return f"torch.nn.{c.__name__}"
    return None


def _simple_attrs(module: Any) -> dict[str, Any]:
    """Constructor-like attributes (eps, momentum, padding, stride...) for the diagnosis hints."""
    out = {}
    for k, v in vars(module).items():
        if k.startswith("_") or k == "training":
            continue
        if isinstance(v, JSON_SCALARS) or (
            isinstance(v, (tuple, list)) and all(isinstance(x, JSON_SCALARS) for x in v)
        ):
            out[k] = list(v) if isinstance(v, tuple) else v
    return out


class Recorder:
    """Forward (pre-)hooks on every module: outputs of all calls, inputs of leaf calls (for replay)."""

    def __init__(self, model: Any) -> None:
        import torch

        self.torch = torch
        self.events: list[dict[str, Any]] = []
        self.arrays: dict[str, np.ndarray] = {}
        self.calls: dict[str, int] = {}
        self.pending: dict[int, list[dict[str, Any]]] = {}
        self.seq = 0
        self.handles = []
        for name, m in model.named_modules():
            leaf = next(iter(m.children()), None) is None
            self.handles.append(m.register_forward_pre_hook(self._pre(name, leaf)))
            self.handles.append(m.register_forward_hook(self._post(name, m, leaf)))

    def _np(self, t: Any) -> np.ndarray:
        # Copy: in-place layers (ReLU(inplace=True)) overwrite tensors after the hook has seen them.
        return t.detach().cpu().numpy().copy()

    def _pre(self, name: str, leaf: bool):
        def hook(module, args):
            rec = {"start": self.seq, "inputs": None}
            self.seq += 1
            if leaf:
                rec["inputs"] = self._capture_inputs(args)
            self.pending.setdefault(id(module), []).append(rec)

        return hook

    def _capture_inputs(self, args: tuple) -> list[Any] | None:
        items = []
        for a in args:
            if isinstance(a, self.torch.Tensor):
                items.append(("array", self._np(a)))
            elif isinstance(a, JSON_SCALARS):
                items.append(("value", a))
            else:
                return None  # not replayable (nested structures, objects)
        return items

    def _post(self, name: str, module: Any, leaf: bool):
        def hook(mod, args, output):
            stack = self.pending.get(id(mod))
            rec = stack.pop() if stack else {"start": self.seq, "inputs": None}
            call = self.calls.get(name, 0)
            self.calls[name] = call + 1
            i = len(self.events)
            outs = flatten_tensors(output, lambda t: isinstance(t, self.torch.Tensor))
            ev = {
                "name": name,
                "call": call,
                "start": rec["start"],
                "leaf": leaf,
                "type": type(mod).__name__,
                "torch_class": torch_base_class(mod),
                "out_shapes": [list(o.shape) for o in outs],
                "out_dtypes": [str(o.dtype) for o in outs],
                "inputs": None,
            }
            for j, o in enumerate(outs):
                self.arrays[f"e{i}_o{j}"] = self._np(o)
            if rec.get("inputs") is not None:
                spec = []
                for j, (kind, v) in enumerate(rec["inputs"]):
                    if kind == "array":
                        self.arrays[f"e{i}_i{j}"] = v
                        spec.append({"array": f"e{i}_i{j}"})
                    else:
                        spec.append({"value": v})
                ev["inputs"] = spec
            self.events.append(ev)

        return hook

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def _to_torch_args(spec: list[dict[str, Any]], arrays: dict[str, np.ndarray], torch: Any, f64: bool) -> list[Any]:
    args = []
    for item in spec:
        if "array" in item:
            a = arrays[item["array"]]
            if f64 and a.dtype.kind == "f":
                a = a.astype(np.float64)
            args.append(torch.from_numpy(np.array(a)))
        else:
            args.append(item["value"])
    return args


def noise_f64(model: Any, events: list[dict[str, Any]], arrays: dict[str, np.ndarray]) -> None:
    """Float32 noise of each leaf call: |float32 output − the same layer in float64| on the same input.

    A port's local error is judged against this (plus a floor): float32 rounding is not a bug.
    """
    import torch

    m64 = copy.deepcopy(model).double()
    mods = dict(m64.named_modules())
    with torch.no_grad():
        for i, ev in enumerate(events):
            if not ev["leaf"] or ev["inputs"] is None or not ev["out_shapes"]:
                continue
            try:
                out = mods[ev["name"]](*_to_torch_args(ev["inputs"], arrays, torch, True))
            except Exception:  # noqa: BLE001 - some layers refuse float64; then only the floor applies
                continue
            outs = flatten_tensors(out, lambda t: isinstance(t, torch.Tensor))
            worst = 0.0
            for j, o in enumerate(outs[: len(ev["out_shapes"])]):
                ref = arrays[f"e{i}_o{j}"]
                if ref.dtype.kind != "f" or tuple(o.shape) != ref.shape:
                    continue
                o64 = o.numpy()
                scale = float(np.abs(o64).max()) if o64.size else 0.0
                if scale > 0:
                    worst = max(worst, float(np.abs(ref.astype(np.float64) - o64).max()) / scale)
            ev["noise_rel"] = worst


# ---------------------------------------------------------------------------------------------
# The torch side
# ---------------------------------------------------------------------------------------------
def randomize_norms(model: Any, seed: int) -> None:
    """Fresh norm layers are the identity in eval mode (mean 0, var 1, weight 1, bias 0), which hides
    port errors in them (eps, momentum, affine): give them random but sane values."""
    import torch

    g = torch.Generator().manual_seed(seed + 1)
    norm_types = (torch.nn.modules.batchnorm._NormBase, torch.nn.LayerNorm, torch.nn.GroupNorm)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, norm_types):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=g))
                    m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
                if getattr(m, "running_mean", None) is not None:
                    m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=g))
                    m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=g))


def _load_weights(model: Any, path: str) -> dict[str, list[str]]:
    import torch

    obj = torch.load(path, map_location="cpu", weights_only=True)
    for key in ("state_dict", "model_state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: no state dict found (got {type(obj).__name__})")
    if obj and all(k.startswith("module.") for k in obj):  # DataParallel/DDP wrapper
        obj = {k[len("module.") :]: v for k, v in obj.items()}
    res = model.load_state_dict(obj, strict=False)
    return {"missing": list(res.missing_keys), "unexpected": list(res.unexpected_keys)}


def _eval_mode(model: Any) -> None:
    model.eval()


def _train_mode_no_dropout(model: Any) -> None:
    import torch

    model.train()
    for m in model.modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd):
            m.eval()  # dropout off: the two frameworks' random masks can never agree


def _record_forward(
    model: Any, inputs: list[np.ndarray], prefix: str, arrays_out: dict[str, np.ndarray], with_noise: bool
) -> dict[str, Any]:
    import torch

    rec = Recorder(model)
    t0 = time.perf_counter()
    error = None
    try:
        with torch.no_grad():
            model(*[torch.from_numpy(np.array(x)) for x in inputs])
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the report says what failed
        error = f"{type(exc).__name__}: {exc}"
    finally:
        rec.remove()
    t_fwd = time.perf_counter() - t0
    t0 = time.perf_counter()
    if with_noise and error is None:
        noise_f64(model, rec.events, rec.arrays)
    t_noise = time.perf_counter() - t0
    for k, v in rec.arrays.items():
        arrays_out[prefix + k] = v
    return {"events": rec.events, "error": error, "t_forward": t_fwd, "t_noise": t_noise}


def _train(model: Any, cfg: dict[str, Any], batches_x: np.ndarray, batches_y: np.ndarray) -> list[float]:
    import torch

    _train_mode_no_dropout(model)
    name = cfg["optimizer"].lower()
    kw = {"lr": cfg["lr"], "weight_decay": cfg.get("weight_decay", 0.0)}
    if name == "sgd":
        opt = torch.optim.SGD(model.parameters(), momentum=cfg.get("momentum", 0.0), **kw)
    elif name == "adam":
        opt = torch.optim.Adam(model.parameters(), **kw)
    elif name == "adamw":
        opt = torch.optim.AdamW(model.parameters(), **kw)
    else:
        raise ValueError(f"unknown optimizer {cfg['optimizer']!r}")
    loss_fn = torch.nn.CrossEntropyLoss()
    losses = []
    for x, y in zip(batches_x, batches_y):
        opt.zero_grad()
        loss = loss_fn(model(torch.from_numpy(np.array(x))), torch.from_numpy(np.array(y)).long())
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    _eval_mode(model)
    return losses


def run_torch_side(req: dict[str, Any], inputs: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Everything the comparison needs from torch, as (JSON-able meta, numpy arrays).

    ``inputs``: ``x0..xN`` (the forward inputs) and, for training, ``train_x``/``train_y``.
    """
    import torch

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    torch.set_num_threads(int(req.get("threads") or torch.get_num_threads()))
    torch.manual_seed(req["seed"])
    np.random.seed(req["seed"])
    factory = load_factory(req["torch"], "torch")
    model = factory()
    if not isinstance(model, torch.nn.Module):
        raise SpecError(f"{req['torch']}: the factory returned {type(model).__name__}, not a torch.nn.Module")
    meta: dict[str, Any] = {"torch_version": torch.__version__}
    if req.get("weights"):
        meta["weights_load"] = _load_weights(model, req["weights"])
    elif req.get("randomize_norms", True):
        randomize_norms(model, req["seed"])
    _eval_mode(model)
    timings["build"] = time.perf_counter() - t0

    arrays: dict[str, np.ndarray] = {}
    for k, v in model.state_dict().items():
        arrays[f"param::{k}"] = v.detach().cpu().numpy().copy()
    meta["layer_types"] = {n: c for n, m in model.named_modules() if (c := torch_base_class(m))}
    meta["module_attrs"] = {n: _simple_attrs(m) for n, m in model.named_modules()}
    meta["module_classes"] = {n: type(m).__name__ for n, m in model.named_modules()}

    xs = [inputs[k] for k in sorted((k for k in inputs if k[1:].isdigit() and k[0] == "x"), key=lambda s: int(s[1:]))]
    fwd = _record_forward(model, xs, "fwd/", arrays, with_noise=req.get("noise", True))
    meta["forward"] = {"events": fwd["events"], "error": fwd["error"]}
    timings["forward_hooked"] = fwd["t_forward"]
    timings["noise_f64"] = fwd["t_noise"]

    steps = int(req.get("train", {}).get("steps", 0) or 0)
    if steps and fwd["error"] is None:
        t0 = time.perf_counter()
        if "train_y" not in inputs:  # seeded batches like the forward input; labels from the output width
            root = [i for i, e in enumerate(fwd["events"]) if e["name"] == ""][-1]
            n_classes = arrays[f"fwd/e{root}_o0"].shape[-1]
            rng = np.random.default_rng(req["seed"] + 7)
            x0 = xs[0]
            arrays["train_x"] = rng.standard_normal((steps, *x0.shape)).astype(x0.dtype)
            arrays["train_y"] = rng.integers(0, n_classes, (steps, x0.shape[0])).astype(np.int64)
            inputs = {**inputs, "train_x": arrays["train_x"], "train_y": arrays["train_y"]}
        losses = _train(model, req["train"], inputs["train_x"][:steps], inputs["train_y"][:steps])
        timings["train"] = time.perf_counter() - t0
        meta["train"] = {"losses": losses}
        for k, v in model.state_dict().items():
            arrays[f"trained::{k}"] = v.detach().cpu().numpy().copy()
        post = _record_forward(model, xs, "post/", arrays, with_noise=req.get("noise", True))
        meta["post_train"] = {"events": post["events"], "error": post["error"]}
    meta["timings"] = timings
    return meta, arrays


def main(argv: list[str]) -> int:
    req = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    os.environ.setdefault("OMP_NUM_THREADS", str(req.get("threads") or 1))
    with np.load(req["inputs_npz"], allow_pickle=False) as data:
        inputs = {k: data[k] for k in data.files}
    try:
        meta, arrays = run_torch_side(req, inputs)
    except SpecError as exc:
        meta, arrays = {"usage_error": str(exc)}, {}
    except Exception as exc:  # noqa: BLE001 - the orchestrator turns this into a report line
        import traceback

        meta, arrays = {"fatal": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-3000:]}, {}
    np.savez(req["out_npz"], __meta__=np.array(json.dumps(meta)), **arrays)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
