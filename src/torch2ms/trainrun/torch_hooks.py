"""The torch side of ``compare-train``: framework entry points patched before the user's script runs.

Optimizer steps come from torch's global optimizer hooks, losses from ``Tensor.backward``, the trained
models from the first outermost ``Module.__call__`` after an optimizer exists (their state is saved
then, before any training forward touches BatchNorm statistics), the batches from the DataLoader
iterators. Loaded by path from ``torch_boot.py``: torch, numpy and the standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _torch2ms_trainrun_common import (  # type: ignore
    HYPER_KEYS,
    NOISE_A,
    NOISE_B,
    NOISE_SCALE,
    Recorder,
    StopTraining,
    array_stats,
    live_instances,
    manual_step,
    stream_state,
)

REPLAY_BYTES_CAP = 1 << 30


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy().copy()


def _first_tensor(args: tuple, kwargs: dict) -> torch.Tensor | None:
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, torch.Tensor):
            return a
    return None


def _leaves(batch: Any) -> list[Any]:
    """A batch's tensors in a fixed order (tuples, lists and dicts flattened)."""
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, dict):
        return [leaf for k in batch for leaf in _leaves(batch[k])]
    if isinstance(batch, list | tuple):
        return [leaf for b in batch for leaf in _leaves(b)]
    return [batch]


def _hyper(group: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k in HYPER_KEYS:
        v = group.get(k)
        if isinstance(v, torch.Tensor):
            v = v.item()
        if isinstance(v, bool | int | float) or (isinstance(v, tuple) and all(isinstance(x, float) for x in v)):
            out[k] = v
    return out


def _size(m: torch.nn.Module) -> int:
    return sum(1 for _ in m.modules())


def _drops(m: torch.nn.Module) -> bool:
    """A Dropout layer that drops something, or an RNN that drops between its layers."""
    if isinstance(m, torch.nn.modules.dropout._DropoutNd):
        return m.p > 0
    return isinstance(m, torch.nn.RNNBase) and bool(m.dropout) and m.num_layers > 1


def _modes(modules: Sequence[torch.nn.Module]) -> dict[str, int]:
    bn = [m for m in modules if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    drop = [m for m in modules if not isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    return {
        "bn_train": sum(m.training for m in bn),
        "bn_total": len(bn),
        "drop_train": sum(m.training for m in drop),
        "drop_total": len(drop),
    }


class Model:
    """One trained module: what the optimizer(s) update, with its name map and layer types."""

    def __init__(self, key: str, module: torch.nn.Module) -> None:
        self.key, self.module = key, module
        self.names = {id(p): n for n, p in module.named_parameters()}
        self.mode_modules = [
            m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) or _drops(m)
        ]
        self.opts: list[int] = []

    def describe(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "type": type(self.module).__name__,
            "optimizers": self.opts,
            "layer_types": {
                n: f"torch.nn.{type(m).__name__}"
                for n, m in self.module.named_modules()
                if type(m).__module__.startswith("torch.nn")
            },
            "trainable": [n for n, p in self.module.named_parameters() if p.requires_grad],
            "init": f"init_{self.key}.npz",
            "final": f"final_{self.key}.npz",
        }

    def save(self, path: Path) -> None:
        np.savez(path, **{k: _to_numpy(v) for k, v in self.module.state_dict().items()})


class ManualUpdates:
    """Stands for the optimizer a script without one does not have (``p.data.add_(-lr * p.grad)``): the
    parameters that got a gradient at the first backward(); a step is one backward()."""

    def __init__(self, params: list[torch.nn.Parameter]) -> None:
        self.param_groups = [{"params": params}]


class TorchSide:
    def __init__(self, rec: Recorder, config: dict[str, Any]) -> None:
        self.rec, self.cfg = rec, config
        self.optimizers: list[torch.optim.Optimizer] = []
        self.unassigned: list[int] = []
        self.models: list[Model] = []
        self.depth = 0
        self.in_backward = False
        self.in_loader = False
        self.training = False
        self.scaled: dict[int, float] = {}
        self.clip: dict[str, Any] | None = None
        self.iterators: list[list[list[np.ndarray]]] = []
        self.replay_bytes = 0
        self.replay_note: str | None = None
        self.streams: dict[int, list[np.ndarray]] = {}
        self.stats_later: list[tuple[dict[str, Any], list[np.ndarray]]] = []
        self.manual: ManualUpdates | None = None  # no optimizer: the script updates p.data itself
        self.manual_gnorm: float | None = None  # the last backward's gradient norm, not yet recorded
        self.early: dict[int, dict[str, np.ndarray]] = {}  # before any optimizer: state at a module's first call
        self.early_inputs: dict[int, dict[str, Any] | None] = {}  # ... and its input then
        self.api: Any = None  # a recording window: one step's calls (torch_api.py) or N steps' (torch_replay.py)

    # -- optimizers and models -------------------------------------------------------------------
    def register_optimizer(self, opt: torch.optim.Optimizer) -> None:
        if all(o is not opt for o in self.optimizers):
            self.optimizers.append(opt)
            self.unassigned.append(len(self.optimizers) - 1)
            self.training = True  # random draws from here on get the shared pseudo-noise (both sides alike)

    def discover_models(self) -> None:
        """Find the module(s) each new optimizer trains: the smallest module holding all its parameters
        (or, failing that, the fewest modules covering them); save their state before training starts."""
        # a traced or scripted copy (torch.jit.trace, TensorBoard's add_graph) shares the parameters but
        # is not the model the script trains
        modules = [m for m in live_instances(torch.nn.Module) if not isinstance(m, torch.jit.ScriptModule)]
        owned = {id(m): {id(p) for p in m.parameters()} for m in modules}
        for j in self.unassigned:
            want = {id(p) for g in self.optimizers[j].param_groups for p in g["params"]}
            while want:
                best = max(
                    modules, key=lambda m: (len(owned[id(m)] & want), -len(owned[id(m)]), -_size(m)), default=None
                )
                if best is None or not owned[id(best)] & want:
                    self.rec.notes.append(f"optimizer {j}: {len(want)} parameter(s) belong to no module")
                    break
                self._model_for(best, j)
                want -= owned[id(best)]
        self.unassigned = []

    def _model_for(self, module: torch.nn.Module, opt: int) -> None:
        model = next((m for m in self.models if m.module is module), None)
        if model is None:
            model = Model(f"model{len(self.models)}", module)
            if self.manual is not None and id(module) in self.early:  # found after its first forward
                np.savez(self.rec.out / f"init_{model.key}.npz", **self.early[id(module)])
            else:
                model.save(self.rec.out / f"init_{model.key}.npz")
            if self.cfg.get("perturb"):  # the noise run (noise.py): torch against itself
                perturb(module, float(self.cfg["perturb"]))
            if self.cfg.get("float64"):  # the float64 reference run (noise.py): the same training, exactly
                module.double()
                torch.set_default_dtype(torch.float64)
            self.models.append(model)
        model.opts.append(opt)

    def describe_optimizer(self, j: int) -> dict[str, Any]:
        names = {pid: f"{m.key}:{n}" for m in self.models for pid, n in m.names.items()}
        opt = self.optimizers[j]
        return {
            "type": type(opt).__name__,
            "groups": [
                # a frozen parameter (requires_grad=False) in an optimizer is never updated by torch
                {"params": [names.get(id(p), "?") for p in g["params"] if p.requires_grad], "hyper": _hyper(g)}
                for g in opt.param_groups
            ],
        }

    # -- hooks -------------------------------------------------------------------------------------
    def on_outer_call(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        if self.unassigned:
            self.discover_models()
        if self.manual is not None and self.manual_gnorm is not None and torch.is_grad_enabled():
            # the next training forward: the previous manual update is done. Recorded here, before the
            # forward moves BatchNorm statistics, as the MindSpore side records it before its next
            # value_and_grad call (the last step's forward does not run on either side)
            self.manual_step()
        if not self.optimizers and torch.is_grad_enabled() and id(module) not in self.early:
            # a script may update its parameters by hand (no optimizer): its model's state before training
            self.early[id(module)] = {k: _to_numpy(v) for k, v in module.state_dict().items()}
            t = _first_tensor(args, kwargs)
            self.early_inputs[id(module)] = array_stats(_to_numpy(t)) if t is not None else None
        if self.rec.batch_stats is not None or self.rec.pending_inputs is not None:
            return  # the step's batch is known (a loader's) or noted already
        if self.models and torch.is_grad_enabled() and any(m.module is module for m in self.models):
            t = _first_tensor(args, kwargs)
            self.rec.note_inputs(array_stats(_to_numpy(t)) if t is not None else None)

    def widen(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The float64 reference run: a trained model's floating inputs in float64, as its parameters. The
        model is the smallest module holding the optimizer's parameters (``netG.net``, the Sequential inside
        a ``Generator``): a call to a module around it (``netG(fixed_noise)``, a tensor drawn in float32
        before training) is the model's call too."""
        if not self.cfg.get("float64") or not self.models:
            return args, kwargs
        if all(m.module is not module for m in self.models) and not _holds_any(module, self.models):
            return args, kwargs
        return tuple(_float64(a) for a in args), {k: _float64(v) for k, v in kwargs.items()}

    def widen_batch(self, batch: Any) -> Any:
        """The float64 reference run: a loader's floating tensors in float64 too (a loss that meets the batch
        itself, ``BCELoss()(model(x), x)``, takes one dtype)."""
        return _float64(batch) if self.cfg.get("float64") else batch

    def on_backward(self, tensor: torch.Tensor) -> None:
        if tensor.numel() == 1:
            value = float(tensor.detach().reshape(()).item())
            self.rec.add_loss(value / self.scaled.get(id(tensor), 1.0))

    def on_step(self, opt: torch.optim.Optimizer) -> None:
        self.register_optimizer(opt)
        if self.unassigned:
            self.discover_models()
        j = next(i for i, o in enumerate(self.optimizers) if o is opt)
        if len(self.rec.optimizers) <= j:
            self.rec.optimizers.extend({} for _ in range(j + 1 - len(self.rec.optimizers)))
        if not self.rec.optimizers[j]:
            self.rec.optimizers[j] = self.describe_optimizer(j)
        grads = [p.grad.detach() for g in opt.param_groups for p in g["params"] if p.grad is not None]
        # two dispatches for any number of tensors: the per-tensor norms, then their norm
        norms = torch._foreach_norm(grads) if grads else []
        gnorm = float(torch.linalg.vector_norm(torch.stack([x.float() for x in norms]))) if norms else None
        lrs = [float(g["lr"].item() if isinstance(g["lr"], torch.Tensor) else g["lr"]) for g in opt.param_groups]
        modes = {m.key: _modes(m.mode_modules) for m in self.models if j in m.opts}
        clip, self.clip = self.clip, None
        self.rec.step(j, lrs, gnorm, {"modes": modes, "clip": clip})

    # -- manual updates: no optimizer, the script changes the parameters itself --------------------------
    def before_backward(self) -> None:
        """One backward() is one step; it is recorded when the next one starts (the script updated the
        parameters in between) or at the end."""
        if self.api is not None:  # compare-train --api: the recorded step's forward and loss end here
            self.api.at_backward()
        if self.manual is not None and self.manual_gnorm is not None:
            self.manual_step()

    def after_backward(self) -> None:
        if any(o is not self.manual for o in self.optimizers):
            return
        if self.manual is None:
            modules = [m for m in live_instances(torch.nn.Module) if not isinstance(m, torch.jit.ScriptModule)]
            params = {id(p): p for m in modules for p in m.parameters() if p.grad is not None}
            if not params:
                return
            self.manual = ManualUpdates(list(params.values()))
            self.register_optimizer(self.manual)  # type: ignore[arg-type]
            self.discover_models()
            if self.rec.batch_stats is None and self.models:  # the first step's input, as later steps note it
                self.rec.note_inputs(self.early_inputs.get(id(self.models[0].module)))
        grads = [p.grad.detach() for p in self.manual.param_groups[0]["params"] if p.grad is not None]
        norms = torch._foreach_norm(grads) if grads else []
        self.manual_gnorm = float(torch.linalg.vector_norm(torch.stack([x.float() for x in norms]))) if norms else 0.0

    def manual_step(self) -> None:
        manual_step(self, lambda m: _modes(m.mode_modules))  # common.py: the same record as the MindSpore side's

    def perturb_grads(self, opt: torch.optim.Optimizer, eps: float) -> None:
        """The noise run: each gradient about to be applied times (1 ± eps), as another kernel's rounding."""
        with torch.no_grad():
            for g in opt.param_groups:
                for p in g["params"]:
                    if p.grad is not None and p.grad.is_floating_point():
                        p.grad.mul_(_signs(p.grad.numel(), eps).reshape(p.grad.shape).to(p.grad.dtype))

    def on_batch(self, index: int, batch: Any, record: bool) -> None:
        leaves = _leaves(batch)
        keep = record and self.replay_note is None
        if keep and not all(isinstance(x, torch.Tensor) for x in leaves):
            self.replay_note, keep = "a batch holds something other than tensors: not replayed", False
        if keep:
            arrays = [_to_numpy(x) for x in leaves]
            if arrays and self._keep(index, arrays):
                # a kept batch's statistics wait for the end (fill_batch_stats), off the training step:
                # the steps' events hold this dict until then
                self.rec.batch_stats = {}
                self.stats_later.append((self.rec.batch_stats, arrays))
            else:
                self.rec.batch_stats = array_stats(arrays[0], arrays[1:]) if arrays else None
            return
        tensors = [_to_numpy(x) for x in leaves if isinstance(x, torch.Tensor)]
        self.rec.batch_stats = array_stats(tensors[0], tensors[1:]) if tensors else None

    def _keep(self, index: int, arrays: list[np.ndarray]) -> bool:
        self.replay_bytes += sum(a.nbytes for a in arrays)
        if self.replay_bytes > REPLAY_BYTES_CAP:
            self.replay_note = "more than 1 GiB of batches: replay stopped there"
            return False
        self.iterators[index].append(arrays)
        # the global random streams after the batch: the MindSpore side, whose pipeline does not run,
        # takes them up with the batch (a transform that drew from Python's random moved them)
        self.streams.setdefault(index, []).append(stream_state())
        return True

    def fill_batch_stats(self) -> None:
        """The statistics of the batches kept for replay, into the dicts the steps' events hold."""
        for stats, arrays in self.stats_later:
            stats.update(array_stats(arrays[0], arrays[1:]))
        self.stats_later = []

    # -- the end -----------------------------------------------------------------------------------
    def finish(self, status: str) -> None:
        if self.api is not None:  # the script ended (or crashed) inside the recorded step
            self.api.stop()
        if self.manual is not None and self.manual_gnorm is not None and status == "finished":
            try:  # the last backward of a script that ended by itself: its update ran
                self.manual_step()
            except StopTraining:
                pass
        self.fill_batch_stats()  # first: the record is written after finish, even if saving fails
        for m in self.models:
            m.save(self.rec.out / m.describe()["final"])
        self.rec.models = [m.describe() for m in self.models]
        self.rec.randomness["dropout_layers"] = sum(int(_modes(m.mode_modules)["drop_total"]) for m in self.models)
        for j in range(len(self.optimizers)):
            if j >= len(self.rec.optimizers) or not self.rec.optimizers[j]:
                self.rec.optimizers[j:j] = [self.describe_optimizer(j)]
        if self.cfg["data"] == "replay":
            self.save_batches()

    def save_batches(self) -> None:
        arrays = {
            f"i{i}_b{b}_l{k}": a
            for i, it in enumerate(self.iterators)
            for b, bt in enumerate(it)
            for k, a in enumerate(bt)
        }
        for i, states in self.streams.items():
            arrays.update({f"i{i}_b{b}_streams": st for b, st in enumerate(states)})
        np.savez(self.rec.out / "batches.npz", **arrays)
        self.rec.replay = {
            "iterators": [len(it) for it in self.iterators],
            "leaves": [len(it[0]) if it else 0 for it in self.iterators],
            "batches": sum(len(it) for it in self.iterators),
            "note": self.replay_note,
        }


def _holds_any(module: torch.nn.Module, models: list[Any]) -> bool:
    """Whether ``module`` has a trained model among its submodules."""
    inner = {id(m.module) for m in models}
    return any(id(sub) in inner for sub in module.modules())


def _float64(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.double()
    if type(x) in (list, tuple):
        return type(x)(_float64(v) for v in x)
    if type(x) is dict:
        return {k: _float64(v) for k, v in x.items()}
    return x


def _signs(n: int, eps: float) -> torch.Tensor:
    """1 ± eps, the sign a fixed pattern: no random stream is touched."""
    return torch.from_numpy(1.0 + eps * np.where(np.sin(np.arange(n) * NOISE_A + NOISE_B) >= 0, 1.0, -1.0))


def perturb(module: torch.nn.Module, eps: float) -> None:
    """Every floating parameter times (1 ± eps)."""
    with torch.no_grad():
        for p in module.parameters():
            if p.is_floating_point() and p.numel():
                p.mul_(_signs(p.numel(), eps).reshape(p.shape).to(p.dtype))


def pattern(n: int, uniform: bool) -> torch.Tensor:
    """The shared pseudo-noise (see common.NOISE_*), float32, n values."""
    x = torch.sin(torch.arange(n, dtype=torch.float32) * NOISE_A + NOISE_B)
    return (x + 1) * 0.5 if uniform else x * NOISE_SCALE
