"""The MindSpore side of ``compare-train``: what is recorded, and the trained models' initial weights.

Converted scripts train in two shapes: a ``TrainStep`` Cell whose ``@ms.jit`` construct calls the
``value_and_grad`` function and the optimizer, or the two called from Python. Python sees only the
outermost Cell calls, so the optimizers count their own updates (``ms_patches`` wraps their
construct: a step counter and the applied gradient norm, kept in Parameters that graph mode updates
too), the ``value_and_grad`` function becomes a probe Cell whose Python-level calls show the loss,
and a step is an outermost call after which a counter moved. Never imports torch.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.experimental.optim import Optimizer as ExperimentalOptimizer

from .common import HYPER_KEYS, Recorder, StopTraining, array_stats, live_instances, manual_step, side_dir

OPTIMIZER_TYPES = (ExperimentalOptimizer, nn.Optimizer)


class GradProbe(nn.Cell):
    """Stands in for the function ``value_and_grad`` returned: graph mode compiles straight through it,
    Python-level calls pass the patched ``Cell.__call__``, which reads the loss off the result."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def construct(self, *args: Any) -> Any:
        return self.fn(*args)


def _tensor_leaves(x: Any) -> list[Any]:
    if isinstance(x, ms.Tensor):
        return [x]
    if isinstance(x, list | tuple):
        return [leaf for item in x for leaf in _tensor_leaves(item)]
    return []


def _first_scalar(x: Any) -> float | None:
    for t in _tensor_leaves(x):
        if t.size == 1:
            return float(t.asnumpy().astype(np.float64).sum())
    return None


def _unscaled_loss(out: Any) -> float | None:
    """The loss of a value_and_grad call. A converted GradScaler step differentiates the scaled loss and
    returns ``(scaled_loss, loss, ...)`` (convert/constructs/training/general.py): the loss is then the
    second value, told by the first being it times the scale of a live MindSpore loss scaler (torch's side
    divides ``scaler.scale(loss)`` by its scale the same way)."""
    first = _first_scalar(out)
    values = out[0] if isinstance(out, tuple) and len(out) == 2 else None
    if first is None or not isinstance(values, tuple) or len(values) < 2:
        return first
    second = _first_scalar(values[1])
    if second is None or second == 0 or abs(first / second) < 1.5:
        return first
    return second if any(abs(first - second * k) <= 1e-6 * abs(first) for k in _loss_scales()) else first


def _loss_scales() -> set[float]:
    import gc

    scales = set()
    for o in gc.get_objects():
        try:
            if isinstance(o, ms.amp.LossScaler) and hasattr(o, "scale_value"):
                scales.add(float(o.scale_value.asnumpy()))
        except Exception:  # noqa: BLE001 - a proxy or half-built object: not a scaler
            continue
    return scales


def _value(v: Any) -> Any:
    if isinstance(v, ms.Tensor):
        a = v.asnumpy()
        return float(a) if a.size == 1 else None
    if isinstance(v, list | tuple) and all(isinstance(x, float | int) for x in v):
        return tuple(float(x) for x in v)
    return v if isinstance(v, bool | int | float) else None


def is_optimizer(cell: Any) -> bool:
    return isinstance(cell, OPTIMIZER_TYPES)


def _mode_cells(cell: nn.Cell) -> list[nn.Cell]:
    from mindspore.nn.layer.normalization import _BatchNorm

    drop = tuple(getattr(nn, n) for n in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d") if hasattr(nn, n))
    from mindspore.nn.layer.rnns import _RNNBase

    cells = [c for _, c in cell.cells_and_names()]
    # a Dropout that drops nothing (an RNN's inner one with p=0, or of a single-layer RNN, which drops
    # between layers only) has no mode to get wrong
    idle = {id(c.dropout_op) for c in cells if isinstance(c, _RNNBase) and c.num_layers < 2}
    return [c for c in cells if isinstance(c, _BatchNorm) or (isinstance(c, drop) and _drops(c) and id(c) not in idle)]


def _drops(cell: nn.Cell) -> bool:
    p = getattr(cell, "p", None)  # `p` wins over the deprecated keep_prob, which keeps its default then
    return bool(p) if p is not None else getattr(cell, "keep_prob", 1.0) < 1.0


def _modes(cells: list[nn.Cell]) -> dict[str, int]:
    from mindspore.nn.layer.normalization import _BatchNorm

    bn = [c for c in cells if isinstance(c, _BatchNorm)]
    drop = [c for c in cells if not isinstance(c, _BatchNorm)]
    return {
        "bn_train": sum(bool(c.training if c.use_batch_statistics is None else c.use_batch_statistics) for c in bn),
        "bn_total": len(bn),
        "drop_train": sum(bool(c.training) for c in drop),
        "drop_total": len(drop),
    }


class ManualUpdates:
    """The torch script updates its parameters itself (no optimizer; torch_hooks.ManualUpdates): the
    weights the first value_and_grad call differentiates; a step is one such call."""

    def __init__(self, weights: list[Any]) -> None:
        self.parameters = list(weights)
        self.param_groups = [{"params": self.parameters}]


class MsModel:
    def __init__(self, key: str, cell: nn.Cell) -> None:
        self.key, self.cell = key, cell
        self.names = {id(p): n for n, p in cell.parameters_and_names()}
        self.mode_cells = _mode_cells(cell)
        self.opts: list[int] = []

    def describe(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "type": type(self.cell).__name__,
            "optimizers": self.opts,
            "trainable": [n for n, p in self.cell.parameters_and_names() if p.requires_grad],
            "final": f"final_{self.key}.npz",
        }

    def save(self, path: Path) -> None:
        np.savez(path, **{n: p.asnumpy() for n, p in self.cell.parameters_and_names()})


def load_torch_init(model: MsModel, torch_dir: Path, torch_model: dict[str, Any]) -> dict[str, Any]:
    """The torch model's recorded initial state, renamed by the KB, into the MindSpore parameters."""
    from ..kb import load_kb
    from ..weights import convert_state_dict

    with np.load(torch_dir / torch_model["init"]) as z:
        state = {k: z[k] for k in z.files}
    converted = convert_state_dict(state, torch_model["layer_types"], load_kb())
    missing, shape = [], []
    for name, p in model.cell.parameters_and_names():
        if name not in converted and not p.requires_grad:
            continue  # a constant of the conversion (GroupNorm(affine=False)'s gamma and beta for InstanceNorm)
        if name not in converted:
            missing.append(name)
        elif tuple(converted[name].shape) != tuple(p.shape):
            shape.append(f"{name} {tuple(converted[name].shape)} vs {tuple(p.shape)}")
        else:
            p.set_data(ms.Tensor(converted[name].astype(ms.dtype_to_nptype(p.dtype))))
    names = {n for n, _ in model.cell.parameters_and_names()}
    return {"missing": missing, "shape": shape, "unused": sorted(set(converted) - names)}


def expected_names(torch_dir: Path, torch_model: dict[str, Any]) -> set[str]:
    """The MindSpore names of a torch model's state (the KB renames of its recorded keys)."""
    from ..kb import load_kb
    from ..weights import rename_key

    with np.load(torch_dir / torch_model["init"]) as z:
        keys = list(z.files)
    kb = load_kb()
    return {n for n in (rename_key(k, torch_model["layer_types"], kb)[0] for k in keys) if n}


def _name_match(expected: set[str]) -> Any:
    def score(cell: nn.Cell) -> tuple[int, int, int]:
        names = {n for n, _ in cell.parameters_and_names()}
        return len(names & expected), -len(names - expected), -sum(1 for _ in cell.cells_and_names())

    return score


class MsSide:
    def __init__(self, rec: Recorder, config: dict[str, Any], torch_record: dict[str, Any]) -> None:
        self.rec, self.cfg, self.torch = rec, config, torch_record
        self.torch_dir = side_dir(config, "torch")  # with --nproc: this rank's torch twin
        self.optimizers: list[Any] = []
        self.unassigned: list[int] = []
        self.models: list[MsModel] = []
        self.depth = 0
        self.training = False
        self.loads: dict[str, Any] = {}
        self.model_ids: set[int] = set()  # the trained Cells, looked up on every inner call
        self.probing = False  # inside a Python-level call of the value_and_grad function
        self.probe_weights: dict[int, Any] = {}  # each probe's value_and_grad weights
        torch_opts = torch_record.get("optimizers") or [{}]
        self.manual_wanted = len(torch_opts) == 1 and torch_opts[0].get("type") == "ManualUpdates"
        self.manual: ManualUpdates | None = None
        self.manual_gnorm: float | None = None
        self.api: Any = None  # compare-train --api: the recording window of one step (ms_api.py)

    def register_optimizer(self, opt: Any) -> None:
        self.optimizers.append(opt)
        self.unassigned.append(len(self.optimizers) - 1)
        self.training = True  # as on the torch side: random draws from the first optimizer on are pseudo-noise

    def discover_models(self) -> None:
        """Per new optimizer, the Cell(s) it trains: for each torch model that optimizer's twin trains, the
        Cell holding some of its parameters whose names best match the torch model's renamed state
        (so a dropped parameter group still finds the whole model); otherwise the smallest Cell
        holding them, as the torch side does."""
        cells = [c for c in live_instances(nn.Cell) if not (is_optimizer(c) or isinstance(c, GradProbe))]
        owned = {id(c): {id(p) for p in c.get_parameters()} for c in cells}
        for j in self.unassigned:
            want = {id(p) for p in self.optimizers[j].parameters}
            for tm in (m for m in self.torch.get("models", []) if j in m["optimizers"]):
                candidates = [c for c in cells if owned[id(c)] & want]
                if candidates:
                    best = max(candidates, key=_name_match(expected_names(self.torch_dir, tm)))
                    self._model_for(best, j, tm["key"])
                    want -= owned[id(best)]
            while want:
                best = max(cells, key=lambda c: (len(owned[id(c)] & want), -len(owned[id(c)])), default=None)
                if best is None or not owned[id(best)] & want:
                    self.rec.notes.append(f"optimizer {j}: {len(want)} parameter(s) belong to no Cell")
                    break
                self._model_for(best, j, f"ms-only{len(self.models)}")
                want -= owned[id(best)]
        self.unassigned = []

    def _model_for(self, cell: nn.Cell, opt: int, key: str) -> None:
        model = next((m for m in self.models if m.cell is cell), None)
        if model is None:
            model = MsModel(key, cell)
            torch_models = {m["key"]: m for m in self.torch.get("models", [])}
            if key in torch_models:
                self.loads[key] = load_torch_init(model, self.torch_dir, torch_models[key])
            else:
                self.loads[key] = {"error": "the torch script trains no such model (its optimizers differ)"}
            self.models.append(model)
            self.model_ids.add(id(cell))
        model.opts.append(opt)

    def describe_optimizer(self, j: int) -> dict[str, Any]:
        names = {pid: f"{m.key}:{n}" for m in self.models for pid, n in m.names.items()}
        opt = self.optimizers[j]
        groups = getattr(opt, "param_groups", None) or [{"params": list(opt.parameters)}]
        out = []
        for g in groups:
            hyper = {k: _value(g[k]) for k in HYPER_KEYS if k in g and _value(g[k]) is not None}
            out.append({"params": [names.get(id(p), "?") for p in g["params"]], "hyper": hyper})
        return {"type": type(opt).__name__, "groups": out}

    # -- the outermost Cell calls ------------------------------------------------------------------
    def outer_call(self, cell: nn.Cell, call: Any, args: tuple, kwargs: dict) -> Any:
        if self.unassigned:
            self.discover_models()
        is_opt, is_probe = is_optimizer(cell), isinstance(cell, GradProbe)
        if is_probe and self.manual_wanted:
            self.manual_before(cell)
        watch = not (is_opt or is_probe) and self.optimizers and all(m.cell is not cell for m in self.models)
        before = self.counters() if watch else None
        self.depth += 1
        self.probing = is_probe
        try:
            out = call(cell, *args, **kwargs)
        finally:
            self.depth -= 1
            self.probing = False
        if is_opt:
            self.step(next(j for j, o in enumerate(self.optimizers) if o is cell))
            return out
        if is_probe and self.manual is not None:
            self.manual_after(out)
        stepped = [j for j, (a, b) in enumerate(zip(before, self.counters())) if b > a] if before else []
        if is_probe or stepped:  # a loss was differentiated: the step's loss and (no loader) its input
            self._note_args(args)
            loss = _unscaled_loss(out) if is_probe else _first_scalar(out)
            if loss is not None:
                self.rec.add_loss(loss)
        for j in stepped:
            self.step(j)
        return out

    def note_model_inputs(self, args: tuple) -> None:
        """The input of a trained model called inside the differentiated function (its own arguments may
        be a step index and a hidden state: the model's input is what torch's side records)."""
        if self.rec.batch_stats is None and self.rec.pending_inputs is None:
            first = next(iter(_tensor_leaves(list(args))), None)
            if first is not None:
                try:
                    self.rec.note_inputs(array_stats(first.asnumpy()))
                except (RuntimeError, TypeError, ValueError):  # a traced (graph) value has no data
                    pass

    def _note_args(self, args: tuple) -> None:
        if self.rec.batch_stats is None and self.rec.pending_inputs is None:
            first = next(iter(_tensor_leaves(list(args))), None)
            self.rec.note_inputs(array_stats(first.asnumpy()) if first is not None else None)

    def counters(self) -> list[int]:
        return [int(o.t2ms_steps.asnumpy()) if o is not self.manual else 0 for o in self.optimizers]

    # -- manual updates (the torch script has no optimizer): one value_and_grad call is one step ---------
    def manual_before(self, probe: GradProbe) -> None:
        """Before the first call: the differentiated weights stand for the optimizer, and their Cells get
        torch's initial state before any forward; before each later call: the previous step is recorded
        (the script applied its gradients in between)."""
        if self.manual is None:
            weights = self.probe_weights.get(id(probe))
            if self.optimizers or not weights:
                return
            self.manual = ManualUpdates(list(weights))
            self.optimizers.append(self.manual)
            self.unassigned.append(len(self.optimizers) - 1)
            self.discover_models()
        elif self.manual_gnorm is not None:
            self.manual_step()

    def manual_after(self, out: Any) -> None:
        self.training = True  # as the torch side after its first backward(): later draws are pseudo-noise
        grads = out[1] if isinstance(out, tuple) and len(out) == 2 else ()
        squares = [float(np.sum(np.square(g.asnumpy().astype(np.float64)))) for g in _tensor_leaves(grads)]
        self.manual_gnorm = float(np.sqrt(sum(squares)))

    def manual_step(self) -> None:
        manual_step(self, lambda m: _modes(m.mode_cells))  # common.py: the same record as the torch side's

    def step(self, j: int) -> None:
        opt = self.optimizers[j]
        if len(self.rec.optimizers) <= j:
            self.rec.optimizers.extend({} for _ in range(j + 1 - len(self.rec.optimizers)))
        if not self.rec.optimizers[j]:
            self.rec.optimizers[j] = self.describe_optimizer(j)
        groups = getattr(opt, "param_groups", None)
        lrs = [_value(g["lr"]) for g in groups] if groups else [_value(opt.get_lr())]
        modes = {m.key: _modes(m.mode_cells) for m in self.models if j in m.opts}
        self.rec.step(j, lrs, float(opt.t2ms_gnorm.asnumpy()), {"modes": modes, "clip": None})

    def finish(self, status: str) -> None:
        if self.api is not None:  # the script ended (or crashed) inside the recorded step
            self.api.stop()
        if self.manual is not None and self.manual_gnorm is not None and status == "finished":
            try:  # the last call of a script that ended by itself: its update ran
                self.manual_step()
            except StopTraining:
                pass
        for m in self.models:
            m.save(self.rec.out / m.describe()["final"])
        self.rec.models = [m.describe() | {"load": self.loads.get(m.key)} for m in self.models]
        for j in range(len(self.optimizers)):
            if j >= len(self.rec.optimizers) or not self.rec.optimizers[j]:
                self.rec.optimizers[j:j] = [self.describe_optimizer(j)]
        self.rec.randomness["dropout_layers"] = sum(_modes(m.mode_cells)["drop_total"] for m in self.models)
        if "torch" in sys.modules:
            self.rec.notes.append(
                "the converted script imported torch: it cannot run where only MindSpore is installed"
            )
