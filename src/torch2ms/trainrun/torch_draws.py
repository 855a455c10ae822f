"""The torch side's random draws: recorded for the MindSpore side to replay (see draws.py), or, inside
training, the shared pseudo-noise both sides compute (a step that MindSpore compiles cannot replay).

Loaded by path from ``torch_boot.py``: torch, numpy and the standard library only.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import torch
from _torch2ms_trainrun_common import INT_PATTERN  # type: ignore


# draws made by the frameworks' own code (weight init, samplers, transforms) are not the script's: the
# MindSpore side makes no such draw through ops (its initialisers use numpy), so they are not recorded
def _package_dirs(*names: str) -> tuple[str, ...]:
    """The folders of the packages installed as `names` (found without importing them)."""
    import importlib.util

    out = []
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            out.append(os.path.dirname(spec.origin) + os.sep)
    return tuple(out)


_OWN = _package_dirs("torch", "torchvision")


def _np(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu()
    return (t.float() if t.dtype in (torch.bfloat16, torch.float16) else t).numpy().copy()


def _from_framework() -> bool:
    return sys._getframe(2).f_code.co_filename.startswith(_OWN)


def _float_arg(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return float(x)
    return None


class Draws:
    """Patches torch's random functions and Tensor methods; `side` tells training and loader state."""

    def __init__(self, side: Any, log: Any, pattern: Any) -> None:
        self.side, self.log, self.pattern = side, log, pattern
        self.counts = side.rec.randomness["random_ops"]

    def recording(self) -> bool:
        from torch.utils.data import get_worker_info

        return not (self.side.in_loader or get_worker_info() is not None or torch.jit.is_tracing())

    def noise(self) -> bool:
        return bool(self.side.training)

    def count(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

    def fill(self, out: torch.Tensor, uniform: bool) -> torch.Tensor:
        """The shared pseudo-noise with `out`'s shape and dtype."""
        return self.pattern(out.numel(), uniform).reshape(out.shape).to(out.dtype)

    def record(self, kind: str, name: str, values: torch.Tensor | np.ndarray) -> None:
        self.log.add(kind, name, values if isinstance(values, np.ndarray) else _np(values))


def patch_functions(d: Draws) -> None:
    """torch.randn/rand(_like)/normal/randint(_like)/randperm/multinomial/bernoulli/poisson."""

    def make(name: str, orig: Any, kind: str, canon: Any) -> Any:
        def draw(*args: Any, **kwargs: Any) -> Any:
            out = orig(*args, **kwargs)
            if not d.recording() or _from_framework() or not isinstance(out, torch.Tensor):
                return out
            if kind in ("normal", "uniform") and d.noise():
                d.count(f"torch.{name}")
                z = d.fill(out, kind == "uniform")
                z = canon(z, args, kwargs, inverse=True) if canon else z
                return z.requires_grad_(out.requires_grad)
            if kind == "int" and d.noise() and d.side.depth > 0 and (bounds := _int_bounds(name, args, kwargs)):
                d.count(f"torch.{name}")  # inside a model's forward: a compiled step cannot replay it
                return int_pattern(out.numel(), *bounds).reshape(out.shape).to(out.dtype)
            d.record(kind, f"torch.{name}", canon(out, args, kwargs) if canon else out)
            return out

        draw.__name__ = name
        return draw

    for name, kind, canon in (
        ("randn", "normal", None),
        ("rand", "uniform", None),
        ("randn_like", "normal", None),
        ("rand_like", "uniform", None),
        ("normal", "normal", _standard_normal),
        ("randint", "int", None),
        ("randint_like", "int", None),
        ("randperm", "perm", None),
        ("multinomial", "multinomial", None),
        ("bernoulli", "bernoulli", None),
        ("poisson", "poisson", None),
    ):
        if hasattr(torch, name):
            setattr(torch, name, make(name, getattr(torch, name), kind, canon))


def patch_random_split(d: Draws) -> None:
    """``random_split``: its permutation (drawn inside torch, from the generator it is given) recorded as a
    ``perm`` draw, which the converted runtime ``random_split`` is served, so the parts hold the same samples."""
    import torch.utils.data as tud
    import torch.utils.data.dataset as tds

    real = tds.random_split

    def random_split(dataset: Any, lengths: Any, generator: Any = torch.default_generator) -> Any:
        parts = real(dataset, lengths, generator=generator)
        if d.recording() and not _from_framework():
            perm = [int(i) for p in parts for i in p.indices]
            d.record("perm", "random_split", np.asarray(perm, dtype=np.int64))
        return parts

    tds.random_split = random_split
    tud.random_split = random_split


def int_pattern(n: int, low: int, high: int) -> torch.Tensor:
    """The shared pseudo-integers in [low, high): integer arithmetic only, so both sides compute the same
    values (common.INT_PATTERN; ms_draws.py computes it with ops, inside a compiled step too)."""
    i = torch.arange(n, dtype=torch.int64)
    a, b, c = INT_PATTERN
    return (i * i * a + i * b + c) % max(high - low, 1) + low


def _int_bounds(name: str, args: tuple, kwargs: dict) -> tuple[int, int] | None:
    """(low, high) of a randint / randint_like call, or None when they are not plain integers."""
    rest = args[1:] if name == "randint_like" else args
    vals = [int(a) for a in rest if isinstance(a, int) and not isinstance(a, bool)]
    if "low" in kwargs:
        vals.insert(0, int(kwargs["low"]))
    if "high" in kwargs:
        vals.append(int(kwargs["high"]))
    if len(vals) == 1:
        return 0, vals[0]
    return (vals[0], vals[1]) if len(vals) == 2 else None


def _mean_std(args: tuple, kwargs: dict, first: int = 0) -> tuple[Any, Any]:
    mean = args[first] if len(args) > first else kwargs.get("mean", 0.0)
    std = args[first + 1] if len(args) > first + 1 else kwargs.get("std", 1.0)
    return mean, std


def _standard_normal(out: torch.Tensor, args: tuple, kwargs: dict, inverse: bool = False) -> Any:
    """torch.normal's draw as standard normal values (inverse: standard values → the draw)."""
    mean, std = _mean_std(args, kwargs)
    if inverse:
        return (out * std + mean).to(out.dtype)
    m = mean.detach().double().numpy() if isinstance(mean, torch.Tensor) else float(mean)
    s = std.detach().double().numpy() if isinstance(std, torch.Tensor) else float(std)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ((_np(out).astype(np.float64) - m) / s).astype(_np(out).dtype)


def patch_methods(d: Draws) -> None:
    """Tensor.normal_/uniform_/bernoulli_/exponential_/random_: in place, so the tensor is refilled."""

    def normal_(t: torch.Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Any:
        return _float_method(d, t, "normal_", "normal", generator, lambda z: z * std + mean, (mean, std))

    def uniform_(t: torch.Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Any:
        return _float_method(d, t, "uniform_", "uniform", generator, lambda u: u * (b - a) + a, (a, b))

    def exponential_(t: torch.Tensor, lambd: float = 1.0, *, generator: Any = None) -> Any:
        return _float_method(d, t, "exponential_", "uniform", generator, lambda u: -torch.log1p(-u) / lambd, lambd)

    def bernoulli_(t: torch.Tensor, p: Any = 0.5, *, generator: Any = None) -> Any:
        if _float_arg(p) is None:  # a tensor of probabilities: ops.bernoulli's values
            real["bernoulli_"](t, p, generator=generator)
            if d.recording() and not _from_framework():
                d.record("bernoulli", "Tensor.bernoulli_", t)
            return t
        return _float_method(d, t, "bernoulli_", "uniform", generator, lambda u: (u < p).to(u.dtype), p)

    def random_(t: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        real["random_"](t, *args, **kwargs)
        if d.recording() and not _from_framework():
            d.record("int", "Tensor.random_", t)
        return t

    methods = (normal_, uniform_, exponential_, bernoulli_, random_)
    real = {f.__name__: getattr(torch.Tensor, f.__name__) for f in methods}
    d.real_methods = real  # type: ignore[attr-defined]
    for f in methods:
        setattr(torch.Tensor, f.__name__, f)


def _float_method(d: Draws, t: torch.Tensor, name: str, kind: str, generator: Any, forward: Any, params: Any) -> Any:
    """One in-place float draw: real (recorded in canonical form), or inside training the pseudo-noise."""
    real = d.real_methods[name]  # type: ignore[attr-defined]
    own = not d.recording() or (_from_framework_at(3) and not _layer_built_in_forward(d))
    if own or not d.noise():
        real(t, *(params if isinstance(params, tuple) else (params,)), generator=generator)
        if not own:
            d.record(kind, f"Tensor.{name}", _canonical(name, t, params))
        return t
    d.count(f"Tensor.{name}")
    with torch.no_grad():
        t.copy_(forward(d.fill(t, kind == "uniform").double()).to(t.dtype))
    return t


def _from_framework_at(depth: int) -> bool:
    return sys._getframe(depth).f_code.co_filename.startswith(_OWN)


_INIT = os.path.join(os.path.dirname(torch.__file__), "nn", "init.py")


def _layer_built_in_forward(d: Draws) -> bool:
    """A layer's own initialisation (``torch.nn.init``) inside a model's forward in training: a layer built
    on each call (``nn.Linear(a, b)(x)``), which the conversion builds with ``ops.rand``/``ops.randn``; both
    sides then draw the shared pseudo-noise."""
    return d.noise() and d.side.depth > 0 and sys._getframe(3).f_code.co_filename == _INIT


def _canonical(name: str, t: torch.Tensor, params: Any) -> np.ndarray:
    x = _np(t).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if name == "normal_":
            mean, std = params
            z = (x - mean) / std
        elif name == "uniform_":
            a, b = params
            z = (x - a) / (b - a)
        elif name == "exponential_":
            z = -np.expm1(-params * x)
        else:  # bernoulli_(p): a uniform value on the drawn side of p
            p = float(params)
            z = np.where(x > 0.5, p / 2, (1 + p) / 2)
    return z.astype(_np(t).dtype)
