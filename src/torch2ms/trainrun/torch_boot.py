"""Run a PyTorch training script unmodified, instrumented: ``python torch_boot.py CONFIG.json``.

Started by ``torch2ms compare-train`` with the torch interpreter (``--torch-python``: maybe another
environment without torch2ms), so it needs only torch, numpy and the standard library; its sibling
modules are loaded by path. Patches, before the script starts: seeds, ``Optimizer.__init__`` and the
global step hooks, ``Tensor.backward``/``autograd.backward``, ``GradScaler.scale``,
``Module.__call__``, the DataLoader iterators, ``clip_grad_norm_``, dropout and random draws inside
training, and (``--fake-data``) torchvision's downloadable datasets.
"""

from __future__ import annotations

import functools
import importlib.util
import random
import sys
from pathlib import Path
from typing import Any


def _load(name: str) -> Any:
    key = f"_torch2ms_trainrun_{name}"
    spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


def patch_optimizers(side: Any) -> None:
    import torch

    init = torch.optim.Optimizer.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        side.register_optimizer(self)

    torch.optim.Optimizer.__init__ = __init__  # type: ignore[method-assign]
    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(lambda opt, args, kwargs: side.on_step(opt))
    if side.cfg.get("perturb"):  # the noise run (noise.py): every applied gradient off by float rounding
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        eps = float(side.cfg["perturb"])
        register_optimizer_step_pre_hook(lambda opt, args, kwargs: side.perturb_grads(opt, eps))


def patch_backward(side: Any) -> None:
    import torch

    tensor_backward, autograd_backward = torch.Tensor.backward, torch.autograd.backward

    def record(tensors: Any) -> None:
        if not side.in_backward:
            for t in tensors if isinstance(tensors, list | tuple) else [tensors]:
                if isinstance(t, torch.Tensor):
                    side.on_backward(t)

    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not side.in_backward:
            side.before_backward()
        record(self)
        side.in_backward, was = True, side.in_backward
        try:
            out = tensor_backward(self, *args, **kwargs)
        finally:
            side.in_backward = was
        if not was:
            side.after_backward()
        return out

    def autograd(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        if not side.in_backward:
            side.before_backward()
        record(tensors)
        side.in_backward, was = True, side.in_backward
        try:
            out = autograd_backward(tensors, *args, **kwargs)
        finally:
            side.in_backward = was
        if not was:
            side.after_backward()
        return out

    torch.Tensor.backward = backward  # type: ignore[method-assign]
    torch.autograd.backward = autograd  # type: ignore[assignment]
    scale = torch.amp.GradScaler.scale

    def scaled(self: Any, outputs: Any) -> Any:
        out = scale(self, outputs)
        if isinstance(out, torch.Tensor) and self.is_enabled():
            side.scaled[id(out)] = float(self.get_scale())
        return out

    torch.amp.GradScaler.scale = scaled  # type: ignore[method-assign]


def patch_modules(side: Any) -> None:
    import torch

    call = torch.nn.Module.__call__

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if torch.jit.is_tracing():  # torch.jit.trace (TensorBoard's add_graph): the script's own business
            return call(self, *args, **kwargs)
        if side.depth == 0 and not side.in_loader:  # a loader's transforms (Modules too) are no model call
            side.on_outer_call(self, args, kwargs)
            args, kwargs = side.widen(self, args, kwargs)
            if side.api is not None:  # compare-train --api: the recorded step's forward starts here
                side.api.maybe_start(self)
        side.depth += 1
        try:
            return call(self, *args, **kwargs)
        finally:
            side.depth -= 1

    torch.nn.Module.__call__ = __call__  # type: ignore[method-assign]
    for name in ("trace", "trace_module"):  # its checks call the model again, outside tracing: ours too
        setattr(torch.jit, name, _uninstrumented(side, getattr(torch.jit, name)))


def _uninstrumented(side: Any, fn: Any) -> Any:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        # no outermost call (no model found, no state saved, no input noted), no draw recorded
        side.depth += 1
        side.in_loader, was = True, side.in_loader
        try:
            return fn(*args, **kwargs)
        finally:
            side.depth -= 1
            side.in_loader = was

    return run


def patch_loaders(side: Any, record: bool) -> None:
    from torch.utils.data import dataloader

    base = dataloader._BaseDataLoaderIter
    init, nxt = base.__init__, base.__next__

    def __init__(self: Any, loader: Any) -> None:
        init(self, loader)
        self._t2ms_index = len(side.iterators)
        side.iterators.append([])

    def __next__(self: Any) -> Any:
        side.in_loader = True
        try:
            batch = nxt(self)
        finally:
            side.in_loader = False
        side.on_batch(self._t2ms_index, batch, record)
        return side.widen_batch(batch)

    base.__init__ = __init__  # type: ignore[method-assign]
    base.__next__ = __next__  # type: ignore[method-assign]


def patch_losses(side: Any) -> None:
    """The float64 reference run: a loss module's floating inputs in float64 when one of them is (a target
    the script builds itself, ``torch.ones(n) * 0.9``, is float32 beside the widened model's output)."""
    from torch.nn.modules import loss

    call = loss._Loss.__call__

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if any(getattr(a, "dtype", None) is not None and str(a.dtype) == "torch.float64" for a in args):
            args = side.widen_batch(args)
        return call(self, *args, **kwargs)

    loss._Loss.__call__ = __call__  # type: ignore[method-assign]


def patch_clipping(side: Any) -> None:
    import torch

    clip = torch.nn.utils.clip_grad_norm_

    def clip_grad_norm_(parameters: Any, max_norm: float, *args: Any, **kwargs: Any) -> Any:
        total = clip(parameters, max_norm, *args, **kwargs)
        side.clip = {"max_norm": float(max_norm), "total_norm": float(total)}
        return total

    torch.nn.utils.clip_grad_norm_ = clip_grad_norm_
    torch.nn.utils.clip_grad.clip_grad_norm_ = clip_grad_norm_  # type: ignore[attr-defined]


def patch_dropout(side: Any) -> None:
    """Dropout off on both sides: the two frameworks' masks cannot be the same."""
    import torch.nn.functional as F

    counts = side.rec.randomness["dropout"]
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"):
        if not hasattr(F, name):
            continue

        def off(input: Any, p: float = 0.5, training: bool = True, *args: Any, _name: str = name, **kw: Any) -> Any:
            if training and p:
                counts[f"torch.nn.functional.{_name}"] = counts.get(f"torch.nn.functional.{_name}", 0) + 1
            return input

        setattr(F, name, off)
    sdpa = F.scaled_dot_product_attention

    def attention(
        query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0, *a: Any, **k: Any
    ) -> Any:
        if dropout_p:
            counts["scaled_dot_product_attention"] = counts.get("scaled_dot_product_attention", 0) + 1
        return sdpa(query, key, value, attn_mask, 0.0, *a, **k)

    F.scaled_dot_product_attention = attention
    patch_rnn_dropout(counts)


def patch_rnn_dropout(counts: dict[str, int]) -> None:
    """RNN/LSTM/GRU(dropout=p, num_layers>1) drop between layers inside the fused kernel, not through
    F.dropout: their dropout is set to 0 for each training call (MindSpore's inner nn.Dropout is off too)."""
    import torch

    for cls in (torch.nn.RNN, torch.nn.LSTM, torch.nn.GRU):

        def forward(self: Any, *args: Any, _forward: Any = cls.forward, **kwargs: Any) -> Any:
            p = self.dropout
            if not (p and self.training and self.num_layers > 1):
                return _forward(self, *args, **kwargs)
            key = f"torch.nn.{type(self).__name__}(dropout between layers)"
            counts[key] = counts.get(key, 0) + 1
            self.dropout = 0.0
            try:
                return _forward(self, *args, **kwargs)
            finally:
                self.dropout = p

        cls.forward = forward  # type: ignore[method-assign]


def patch_random(side: Any, pattern: Any) -> Any:
    """Every random draw of the script recorded for the MindSpore side (torch_draws.py); inside training
    the float draws become the pseudo-noise both sides compute. Returns the draw log."""
    draws = _load("draws")
    module = _load("torch_draws")
    log = draws.DrawLog()
    d = module.Draws(side, log, pattern)
    module.patch_functions(d)
    module.patch_methods(d)
    module.patch_random_split(d)
    return log


def patch_fake_data(side: Any, fake: Any, seed: int) -> None:
    try:
        import torchvision.datasets as tvd
    except ImportError:
        return
    import os

    import torch
    from PIL import Image

    used = side.rec.randomness.setdefault("fake_data", [])

    def factory(name: str, real: Any) -> Any:
        def build(*args: Any, **kwargs: Any) -> Any:
            root = args[0] if args else kwargs.get("root")
            if name == "ImageFolder" and root and os.path.isdir(root):
                return real(*args, **kwargs)
            return FakeDataset(name, kwargs)

        return build

    class FakeDataset(torch.utils.data.Dataset):
        def __init__(self, name: str, kwargs: dict[str, Any]) -> None:
            spec = fake.sized(fake.SPECS[name], kwargs.get("image_size"), kwargs.get("num_classes"))
            train = kwargs.get("train", kwargs.get("split", "train") in ("train", "balanced", "digits"))
            n = int(kwargs.get("size") or (fake.TRAIN_SIZE if train else fake.TEST_SIZE))
            self.images, labels = fake.fake_arrays(spec, n, fake.split_seed(name, bool(train), seed))
            self.labels = [int(x) for x in labels]
            self.classes = [str(i) for i in range(spec.classes)]
            self.data: Any = torch.from_numpy(self.images[..., 0] if spec.channels == 1 else self.images)
            # torchvision: the MNIST family holds tensors (int64 targets), CIFAR a numpy array and a list
            self.targets: Any = torch.from_numpy(labels.astype("int64")) if spec.channels == 1 else self.labels
            if spec.channels != 1:
                self.data = self.images
            self.transform, self.target_transform = kwargs.get("transform"), kwargs.get("target_transform")
            used.append(
                f"{name}({'train' if train else 'test'}, {n} images {spec.height}x{spec.width}x{spec.channels})"
            )

        # the MNIST family's old names (torchvision keeps them as properties)
        train_data = test_data = property(lambda self: self.data)
        train_labels = test_labels = property(lambda self: self.targets)

        def __len__(self) -> int:
            return len(self.labels)

        def __getitem__(self, i: int) -> Any:
            a = self.images[i]
            img: Any = Image.fromarray(a[..., 0] if a.shape[-1] == 1 else a, mode="L" if a.shape[-1] == 1 else "RGB")
            target: Any = self.labels[i]
            if self.transform is not None:
                img = self.transform(img)
            if self.target_transform is not None:
                target = self.target_transform(target)
            return img, target

    for name in fake.SPECS:
        if hasattr(tvd, name):
            setattr(tvd, name, factory(name, getattr(tvd, name)))


def main(config_path: str) -> None:
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)  # our folder's module names must not shadow the script's imports
    common = _load("common")
    fake = _load("fake_data")
    hooks = _load("torch_hooks")
    cfg = common.read_config(config_path)
    rec = common.Recorder(cfg.get("side", "torch"), cfg)
    import numpy as np
    import torch

    random.seed(cfg["seed"])
    np.random.seed(cfg["seed"])
    torch.manual_seed(cfg["seed"])
    side = hooks.TorchSide(rec, cfg)
    if cfg.get("api_step") is not None:  # compare-train --api: one step's calls recorded
        side.api = _load("torch_api").TorchApiWindow(side, cfg)
    elif cfg.get("replay_calls"):  # torch2ms replay --train: every call configuration of N steps recorded
        side.api = _load("torch_replay").ReplayWindow(side, cfg)
    patch_optimizers(side)
    patch_backward(side)
    patch_modules(side)
    patch_clipping(side)
    if cfg.get("float64"):
        patch_losses(side)
    patch_dropout(side)
    log = patch_random(side, hooks.pattern)
    patch_loaders(side, record=cfg["data"] == "replay")
    if cfg["fake_data"]:
        patch_fake_data(side, fake, cfg["seed"])

    def finish(status: str) -> None:
        rec.draws = log.save(rec.out)
        side.finish(status)

    common.run_instrumented(rec, cfg["torch_script"], cfg["args"], finish)


if __name__ == "__main__":
    main(sys.argv[1])
