"""Run a converted MindSpore training script unmodified, instrumented: ``python -m torch2ms.trainrun.ms_boot CONFIG``.

Patches, before the script starts: seeds and the execution mode, ``Cell.__call__`` (outermost calls),
the optimizers (a step counter and the applied gradient norm inside their construct, so compiled steps
report too), ``value_and_grad`` (a probe Cell), Dropout (off) and random draws in training (the torch
side's pseudo-noise), the dataset iterators (torch's batches replayed) and, with ``--fake-data``,
MindSpore's file datasets and any torchvision dataset the converted script still imports.
Never imports torch.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import json
import os
import random
import sys
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn, ops

from . import ms_data, ms_draws, ms_hooks
from .common import NOISE_A, NOISE_B, NOISE_SCALE, Recorder, read_config, run_instrumented, side_dir


def _flat32(g: Any) -> Any:
    """A gradient as a float32 vector (no Cast launched for what is float32 already)."""
    return g.reshape(-1) if g.dtype == ms.float32 else g.reshape(-1).astype(ms.float32)


def _counted_construct(self: Any, gradients: Any) -> Any:
    """An optimizer's construct, plus: the global norm of the gradients it applies and a step count."""
    # one norm over the concatenated gradients: per-tensor square/sum/add was 4 kernel launches per
    # parameter, most of the instrumentation's cost per step in PyNative (bench/compare_train_bench.py)
    flat = ops.cat([_flat32(g) for g in gradients])
    ops.assign(self.t2ms_gnorm, ops.norm(flat))
    ops.assign_add(self.t2ms_steps, ops.ones((), ms.int32))
    return self.t2ms_orig_construct(gradients)


def patch_optimizers(side: ms_hooks.MsSide) -> None:
    from mindspore.experimental.optim import Optimizer

    for base in (Optimizer, nn.Optimizer):
        init = base.__init__

        def __init__(self: Any, *args: Any, _init: Any = init, **kwargs: Any) -> None:
            _init(self, *args, **kwargs)
            if hasattr(self, "t2ms_steps"):  # a subclass's __init__ ran the base one already
                return
            cls: Any = next(c for c in type(self).__mro__ if "construct" in c.__dict__)
            if not cls.__dict__.get("t2ms_patched"):
                cls.t2ms_orig_construct = cls.__dict__["construct"]
                cls.construct = _counted_construct
                cls.t2ms_patched = True
            self.t2ms_gnorm = Parameter(Tensor(0.0, ms.float32), name="t2ms_gnorm", requires_grad=False)
            self.t2ms_steps = Parameter(Tensor(0, ms.int32), name="t2ms_steps", requires_grad=False)
            side.register_optimizer(self)

        base.__init__ = __init__


def keep_init_off_numpy(seed: int) -> None:
    """MindSpore's weight initialisers seed themselves from numpy's global stream (torch's do not touch
    it): they draw from a stream of their own, so the script's np.random draws match torch's."""
    from mindspore.common import initializer

    own = np.random.RandomState(seed)
    initializer._numpy_seed = lambda: own.randint(low=1, high=(1 << 63), dtype=np.int64)
    call = initializer.Initializer.__call__

    def __call__(self: Any, arr: Any) -> Any:
        state = np.random.get_state()
        try:
            return call(self, arr)
        finally:
            np.random.set_state(state)

    initializer.Initializer.__call__ = __call__
    keep_rnn_init_off_numpy(seed)


def keep_rnn_init_off_numpy(seed: int) -> None:
    """MindSpore's recurrent layers (nn.RNN/GRU/LSTM, the cells) draw their first weights with
    ``np.random.uniform``/``randn`` from numpy's global stream itself, past the initialisers: they draw from
    a stream of their own too (one for all of them, so two layers still start apart), so a script that
    builds an RNN and then draws its data with np.random draws torch's values."""
    from mindspore.nn.layer import rnn_cells, rnns

    own = np.random.RandomState(seed + 1)
    inside = [False]

    def off_numpy(init: Any) -> Any:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if inside[0]:
                return init(self, *args, **kwargs)
            state = np.random.get_state()
            np.random.set_state(own.get_state())
            inside[0] = True
            try:
                init(self, *args, **kwargs)
            finally:
                inside[0] = False
                own.set_state(np.random.get_state())
                np.random.set_state(state)

        return __init__

    for cls in (rnns._RNNBase, rnn_cells.RNNCellBase):
        cls.__init__ = off_numpy(cls.__init__)


def patch_cells(side: ms_hooks.MsSide) -> None:
    call = nn.Cell.__call__

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        window = side.api if isinstance(self, ms_hooks.GradProbe) else None
        if window is not None:  # compare-train --api: the differentiated forward and loss, maybe recorded
            window.start()
        try:
            if side.depth:
                if side.probing and id(self) in side.model_ids:
                    side.note_model_inputs(args)
                return call(self, *args, **kwargs)
            return side.outer_call(self, call, args, kwargs)
        finally:
            if window is not None:
                window.stop()

    nn.Cell.__call__ = __call__  # type: ignore[method-assign]
    value_and_grad = ms.value_and_grad

    def probed(*args: Any, **kwargs: Any) -> Any:
        probe = ms_hooks.GradProbe(value_and_grad(*args, **kwargs))
        side.probe_weights[id(probe)] = args[2] if len(args) > 2 else kwargs.get("weights")
        return probe

    ms.value_and_grad = probed
    ops.value_and_grad = probed


def _identity_cell(self: Any, x: Any) -> Any:
    return x


def _no_dropout(input: Any, p: float = 0.5, training: bool = True, seed: Any = None) -> Any:
    return input


def _no_inner_dropout(x: Any, p: float, training: bool) -> Any:
    return x


def patch_dropout() -> None:
    from mindspore.ops.function import nn_func

    for name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d"):
        if hasattr(nn, name):
            getattr(nn, name).construct = _identity_cell
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d"):
        setattr(ops, name, _no_dropout)
        setattr(nn_func, name, _no_dropout)
    # MultiheadAttention drops attention weights through this one (torch: scaled_dot_product_attention's dropout_p)
    nn_func._inner_dropout = _no_inner_dropout


def _noise(shape: Any, dtype: Any, uniform: bool) -> Any:
    n = 1
    for d in shape:
        n *= d
    x = ops.sin(ops.arange(0, n, dtype=ms.float32) * NOISE_A + NOISE_B)
    x = (x + 1) * 0.5 if uniform else x * NOISE_SCALE
    return x.reshape(shape).astype(dtype)


def patch_random(side: ms_hooks.MsSide) -> ms_draws.Served:
    """ops' random draws: torch's recorded draws replayed (ms_draws.py); inside training the float draws
    give the torch side's pseudo-noise. The runtime's Generator draws too, once the script imports it."""
    served = ms_draws.patch_ops(side, _noise)
    for name in ms_draws.RUNTIME_NAMES:
        then = functools.partial(lambda n: ms_draws.patch_runtime_generators(served, sys.modules[n]), name)
        if name in sys.modules:
            then()
        else:
            sys.meta_path.insert(0, _AfterImport(name, then))
    return served


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `then()` once `name` has been imported by the script (we never import it ourselves)."""

    def __init__(self, name: str, then: Any) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module, then = spec.loader.exec_module, self.then

        def run(module: Any) -> None:
            exec_module(module)
            then()

        spec.loader.exec_module = run  # type: ignore[method-assign]
        return spec


def patch_fake_data(side: ms_hooks.MsSide, seed: int) -> None:
    ms_data.patch_fake_datasets(side.rec, seed)

    def torchvision_too() -> None:  # a converted script that kept torchvision datasets
        from . import fake_data, torch_boot

        torch_boot.patch_fake_data(side, fake_data, seed)

    sys.meta_path.insert(0, _AfterImport("torchvision.datasets", torchvision_too))
    # A converted `download=True` fetches the files first (runtime fetch_dataset): with fake data there is
    # nothing to fetch, the patched readers above serve the data; vendored or package runtime alike.
    for name in ("torch2ms_runtime.dataset_files", "torch2ms.runtime.dataset_files"):
        if name in sys.modules:
            _no_fetching(name)
        else:
            sys.meta_path.insert(0, _AfterImport(name, functools.partial(_no_fetching, name)))


def _no_fetching(module_name: str) -> None:
    def fetch_dataset(name: str, root: Any, download: Any = True) -> Any:
        return root

    sys.modules[module_name].fetch_dataset = fetch_dataset  # type: ignore[attr-defined]


def main(config_path: str) -> None:
    cfg = read_config(config_path)
    rec = Recorder(cfg.get("side", "ms"), cfg)
    torch_record = json.loads((side_dir(cfg, "torch") / "record.json").read_text(encoding="utf-8"))
    random.seed(cfg["seed"])
    np.random.seed(cfg["seed"])
    ms.set_seed(cfg["seed"])
    ms.set_context(mode=ms.GRAPH_MODE if cfg["mode"] == "graph" else ms.PYNATIVE_MODE)
    side = ms_hooks.MsSide(rec, cfg, torch_record)
    if cfg.get("api_step") is not None:  # compare-train --api: one step's calls recorded (PyNative)
        from .ms_api import MsApiWindow

        side.api = MsApiWindow(side, cfg)
        os.environ["MS_JIT"] = "0"  # the converted step's @ms.jit runs op by op, its calls visible
    keep_init_off_numpy(cfg["seed"])
    patch_optimizers(side)
    patch_cells(side)
    patch_dropout()
    served = patch_random(side)
    replay = ms_data.Replay(side.torch_dir, torch_record.get("replay", {}), rec) if cfg["data"] == "replay" else None
    ms_data.patch_iterators(replay, rec)
    if cfg["fake_data"]:
        patch_fake_data(side, cfg["seed"])

    def finish(status: str) -> None:
        rec.draws = served.queue.summary()
        side.finish(status)

    run_instrumented(rec, cfg["ms_script"], cfg["args"], finish)


if __name__ == "__main__":
    main(sys.argv[1])
