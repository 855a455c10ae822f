"""The torch side of ``torch2ms compare``: build the model, draw inputs, record every layer, train.

Standard library and numpy at import time, torch inside functions, and only torch2ms modules that need
nothing else: with ``--torch-python PY`` it runs under another interpreter, one that has torch but not
necessarily torch2ms's dependencies or MindSpore::

    PYTHONPATH=<torch2ms src> PY -m torch2ms.align.torch_worker REQUEST.json

It reads ``REQUEST["inputs_npz"]``, writes ``REQUEST["out_npz"]`` and prints progress lines
(``PROGRESS_PREFIX`` + JSON) on stdout. In one process the orchestrator calls :func:`run_torch_side`
directly. Both ways give the same (meta, arrays) pair; arrays are plain numpy.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..factory import SpecError, build, run_user_code
from ..i18n import _
from .draw import DEFAULT_INT_HIGH, draw_inputs, draw_targets, draw_training_inputs, numbered
from .options import CompareUsageError, LossSpec
from .outputs import select_output
from .torch_record import Recorder, first_embedding_size, noise_f64, simple_attrs, torch_base_class

PROGRESS_PREFIX = "T2M-PROGRESS "
OnProgress = Callable[[str, int, int | None], None]  # (phase, done, total or None)


def _no_progress(phase: str, done: int, total: int | None) -> None:
    return None


def randomize_norms(model: Any, seed: int) -> None:
    """Fresh norm layers are the identity in eval mode (mean 0, var 1, weight 1, bias 0), which hides
    port errors in them (eps, momentum, affine): give them random but sane values."""
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    norm_types = (torch.nn.modules.batchnorm._NormBase, torch.nn.LayerNorm, torch.nn.GroupNorm)
    with torch.no_grad():
        for module in model.modules():
            if not isinstance(module, norm_types):
                continue
            weight, bias = getattr(module, "weight", None), getattr(module, "bias", None)
            if isinstance(weight, torch.Tensor):
                weight.copy_(0.5 + torch.rand(weight.shape, generator=gen))
            if isinstance(bias, torch.Tensor):
                bias.copy_(0.1 * torch.randn(bias.shape, generator=gen))
            mean, var = getattr(module, "running_mean", None), getattr(module, "running_var", None)
            if isinstance(mean, torch.Tensor) and isinstance(var, torch.Tensor):
                mean.copy_(0.1 * torch.randn(mean.shape, generator=gen))
                var.copy_(0.5 + torch.rand(var.shape, generator=gen))


def load_weights(model: Any, path: str) -> dict[str, list[str]]:
    """A torch checkpoint into the model (non-strict); what did not fit is reported, not raised."""
    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same usage error
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise SpecError(
            _(
                "--weights {path}: torch cannot read it as a checkpoint ({type}: {first}); give a file "
                "written by torch.save (a state dict, or a dict holding one)"
            ).format(path=path, type=type(exc).__name__, first=first)
        ) from None
    for key in ("state_dict", "model_state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
    # entries that are no tensors (``state_dict['mask_values'] = [0, 1]``, an epoch) are left out and
    # reported, as `torch2ms weights` leaves them out of the .ckpt: the two accept the same files
    skipped = sorted(str(k) for k, v in obj.items() if not isinstance(v, torch.Tensor)) if isinstance(obj, dict) else []
    if isinstance(obj, dict) and len(skipped) < len(obj):
        obj = {k: v for k, v in obj.items() if isinstance(v, torch.Tensor)}
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise SpecError(
            _("--weights {path}: no state dict of tensors found (got {type})").format(
                path=path, type=type(obj).__name__
            )
        )
    if obj and all(k.startswith("module.") for k in obj):  # DataParallel/DDP wrapper
        obj = {k[len("module.") :]: v for k, v in obj.items()}
    try:
        result = model.load_state_dict(obj, strict=False)
    except RuntimeError as exc:  # shape mismatches
        raise SpecError(
            _("--weights {path}: does not fit the model ({error})").format(
                path=path, error=str(exc).strip().splitlines()[-1]
            )
        ) from None
    found = {"missing": list(result.missing_keys), "unexpected": list(result.unexpected_keys)}
    return {**found, "not_tensors": skipped} if skipped else found


def _train_mode_no_dropout(model: Any) -> None:
    import torch

    model.train()
    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            module.eval()  # dropout off: the two frameworks' random masks can never agree


def record_forward(model: Any, inputs: list[np.ndarray], with_noise: bool) -> dict[str, Any]:
    """One hooked eval forward: events, arrays, the error (if the model raised) and timings."""
    import torch

    recorder = Recorder(model)
    start = time.perf_counter()
    error = None
    try:
        with torch.no_grad():
            model(*[torch.from_numpy(np.array(x)) for x in inputs])
    except SystemExit as exc:
        error = f"the model called sys.exit({exc.code})"
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the report says what failed
        error = f"{type(exc).__name__}: {exc}"
    finally:
        recorder.remove()
    t_forward = time.perf_counter() - start
    start = time.perf_counter()
    if with_noise and error is None:
        noise_f64(model, recorder.events, recorder.arrays)
    return {
        "events": recorder.events,
        "arrays": recorder.arrays,
        "error": error,
        "t_forward": t_forward,
        "t_noise": time.perf_counter() - start,
    }


def torch_loss(out: Any, target: Any, loss: LossSpec, output_index: int | str | None, torch: Any) -> Any:
    """The training loss, computed the same way as ``ms_side.ms_loss``."""
    from .draw import class_axis

    pred = select_output(out, output_index, lambda t: isinstance(t, torch.Tensor))
    if loss.kind == "model":
        if pred.numel() != 1:
            raise CompareUsageError(
                _(
                    "--loss model: the selected output has shape {shape}, not a scalar loss; pick the loss "
                    "with --output-index"
                ).format(shape=list(pred.shape))
            )
        return pred.reshape(())
    if loss.kind == "ce":
        axis = class_axis(loss, pred.ndim)
        logits = pred.movedim(axis, -1).reshape(-1, pred.shape[axis])
        return torch.nn.functional.cross_entropy(logits, target.reshape(-1).long())
    fn = torch.nn.functional.mse_loss if loss.kind == "mse" else torch.nn.functional.l1_loss
    return fn(pred, target.to(pred.dtype))


def _optimizer(model: Any, cfg: dict[str, Any], torch: Any) -> Any:
    kw = {"lr": cfg["lr"], "weight_decay": cfg.get("weight_decay", 0.0)}
    if cfg["optimizer"] == "sgd":
        return torch.optim.SGD(model.parameters(), momentum=cfg.get("momentum", 0.0), **kw)
    if cfg["optimizer"] == "adam":
        return torch.optim.Adam(model.parameters(), **kw)
    return torch.optim.AdamW(model.parameters(), **kw)


def train(model: Any, cfg: dict[str, Any], batches: dict[str, np.ndarray], on_progress: OnProgress) -> list[float]:
    """``cfg["steps"]`` optimizer steps on ``batches`` (train_x0.., train_y); the loss of each step."""
    import torch

    _train_mode_no_dropout(model)
    opt = _optimizer(model, cfg, torch)
    loss_spec = LossSpec.parse(cfg.get("loss", "ce"))
    xs = numbered(batches, "train_x")
    losses = []
    on_progress(_("torch: training steps"), 0, cfg["steps"])
    for step in range(cfg["steps"]):
        opt.zero_grad()
        out = model(*[torch.from_numpy(np.array(x[step])) for x in xs])
        target = torch.from_numpy(np.array(batches["train_y"][step])) if "train_y" in batches else None
        loss = torch_loss(out, target, loss_spec, cfg.get("output_index"), torch)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        on_progress(_("torch: training steps"), step + 1, cfg["steps"])
    model.eval()
    return losses


def describe_model(model: Any) -> dict[str, Any]:
    return {
        "layer_types": {n: c for n, m in model.named_modules() if (c := torch_base_class(m))},
        "module_attrs": {n: simple_attrs(m) for n, m in model.named_modules()},
        "module_classes": {n: type(m).__name__ for n, m in model.named_modules()},
    }


def build_model(req: dict[str, Any]) -> Any:
    import torch

    torch.manual_seed(req["seed"])
    np.random.seed(req["seed"])
    model = build(req["torch"], "torch", req.get("import_timeout"))
    if not isinstance(model, torch.nn.Module):
        raise SpecError(
            _("{spec}: gave a {type}, not a torch.nn.Module").format(spec=req["torch"], type=type(model).__name__)
        )
    return model


def _state_arrays(model: Any, prefix: str) -> dict[str, np.ndarray]:
    return {f"{prefix}{k}": v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def _forward_inputs(req: dict[str, Any], given: dict[str, np.ndarray], int_high: int) -> dict[str, np.ndarray]:
    if req.get("draw"):
        return draw_inputs(req["draw"]["shapes"], req["draw"]["dtypes"], req["seed"], int_high)
    return {k: v for k, v in given.items() if k[0] == "x" and k[1:].isdigit()}


def _sorted_inputs(inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    return numbered(inputs, "x")


def _loss_input_shape(model: Any, forward: dict[str, np.ndarray], cfg: dict[str, Any]) -> list[int]:
    """Shape of the tensor the loss reads (the output, or its --output-index element)."""
    import torch

    with torch.no_grad():
        out = model(*[torch.from_numpy(np.array(x)) for x in _sorted_inputs(forward)])
    return list(select_output(out, cfg["output_index"], lambda t: isinstance(t, torch.Tensor)).shape)


def _seeded_batches(model: Any, req: dict[str, Any], forward: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    cfg = req["train"]
    loss = LossSpec.parse(cfg["loss"])
    batches = draw_training_inputs(forward, cfg["steps"], req["seed"], req["int_high"])
    if loss.kind != "model":
        batches |= draw_targets(_loss_input_shape(model, forward, cfg), loss, cfg["steps"], req["seed"])
    return batches


def _training(model, req, given, forward, arrays, on_progress) -> dict[str, Any]:
    """Seeded batches where none were given, the steps, the trained state and an eval forward after."""
    batches = {k: v for k, v in given.items() if k.startswith("train_")}
    if not batches:
        batches = _seeded_batches(model, req, forward)
        arrays |= batches
    losses = run_user_code(
        lambda: train(model, req["train"], batches, on_progress),
        req["torch"],
        "training the torch model",
        passthrough=(CompareUsageError,),
    )
    arrays |= _state_arrays(model, "trained::")
    post = record_forward(model, _sorted_inputs(forward), req.get("noise", True))
    arrays |= {f"post/{k}": v for k, v in post.pop("arrays").items()}
    return {"train": {"losses": losses}, "post_train": {"events": post["events"], "error": post["error"]}}


def run_torch_side(
    req: dict[str, Any], given: dict[str, np.ndarray], on_progress: OnProgress = _no_progress
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Everything the comparison needs from torch, as (JSON-able meta, numpy arrays).

    ``given``: forward inputs ``x0..xN`` (unless ``req["draw"]`` asks for seeded ones) and optionally
    ``train_x0..``/``train_y``. Drawn inputs come back as ``input::x0..``. Raises SpecError.
    """
    import torch

    start = time.perf_counter()
    torch.set_num_threads(int(req.get("threads") or torch.get_num_threads()))
    model = build_model(req)
    meta: dict[str, Any] = {"torch_version": torch.__version__, "timings": {}}
    if req.get("weights"):
        meta["weights_load"] = load_weights(model, req["weights"])
    elif req.get("randomize_norms", True):
        randomize_norms(model, req["seed"])
    model.eval()
    meta |= describe_model(model)
    req["int_high"] = first_embedding_size(model) or DEFAULT_INT_HIGH
    forward = _forward_inputs(req, given, req["int_high"])
    arrays = _state_arrays(model, "param::") | {f"input::{k}": v for k, v in forward.items()}
    meta["timings"]["build"] = time.perf_counter() - start
    on_progress("torch: hooked forward and float64 noise", 0, None)
    fwd = record_forward(model, _sorted_inputs(forward), req.get("noise", True))
    arrays |= {f"fwd/{k}": v for k, v in fwd["arrays"].items()}
    meta["forward"] = {"events": fwd["events"], "error": fwd["error"]}
    meta["timings"] |= {"forward_hooked": fwd["t_forward"], "noise_f64": fwd["t_noise"]}
    on_progress("torch: hooked forward and float64 noise", 1, 1)
    if req["train"]["steps"] and fwd["error"] is None:
        start = time.perf_counter()
        meta |= _training(model, req, given, forward, arrays, on_progress)
        meta["timings"]["train"] = time.perf_counter() - start
    return meta, arrays


def _print_progress(phase: str, done: int, total: int | None) -> None:
    sys.stdout.write(PROGRESS_PREFIX + json.dumps([phase, done, total]) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    req = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    os.environ.setdefault("OMP_NUM_THREADS", str(req.get("threads") or 1))
    with np.load(req["inputs_npz"], allow_pickle=False) as data:
        given = {k: data[k] for k in data.files}
    try:
        meta, arrays = run_torch_side(req, given, _print_progress)
    except (SpecError, CompareUsageError) as exc:
        meta, arrays = {"usage_error": str(exc)}, {}
    except Exception as exc:  # noqa: BLE001 - the orchestrator turns this into a report line
        import traceback

        meta, arrays = {"fatal": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-3000:]}, {}
    np.savez(req["out_npz"], __meta__=np.array(json.dumps(meta)), **arrays)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
