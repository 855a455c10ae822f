"""The MindSpore side's random draws (see draws.py): ``ops.randn``/``rand``/``normal``/``randint``/
``randperm``/``multinomial``/``bernoulli``/``random_poisson`` and their ``_like`` forms serve torch's
recorded draw of the same kind and size; inside training the float draws give the torch side's
pseudo-noise (a compiled step computes it too). Never imports torch."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import ops

from .common import INT_PATTERN
from .draws import DrawQueue

MS_ROOT = str(Path(ms.__file__).parent)
DATASET_ROOT = str(Path(ms.__file__).parent / "dataset")


def _in_pipeline() -> bool:
    """Called (at any depth) from MindSpore's dataset pipeline: a Dataset's __getitem__ or a transform.
    Such draws are not the script's (torch's side does not record its loaders' draws either: the
    batches themselves are replayed)."""
    f: Any = sys._getframe(2)
    while f is not None:
        if f.f_code.co_filename.startswith(DATASET_ROOT):
            return True
        f = f.f_back
    return False


def _shape(size: tuple) -> tuple:
    # (list, tuple), not list | tuple: ops.rand(*size) runs inside compiled steps, and GRAPH_MODE has no unions
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) else tuple(size)


def _numel(shape: Any) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _int(x: Any) -> int:
    return int(x.asnumpy()) if isinstance(x, ms.Tensor) else int(x)


def _ms_dtype(values: np.ndarray, dtype: Any) -> Any:
    return dtype if dtype is not None else ms.float32 if values.dtype.kind == "f" else ms.int64


class Served:
    """The queue of torch's draws, with the real ops to fall back on."""

    def __init__(self, side: Any, noise: Any) -> None:
        self.side, self.noise = side, noise
        self.queue = DrawQueue(side.torch_dir, side.torch)
        self.counts = side.rec.randomness["random_ops"]
        self.real = {n: getattr(ops, n) for n in NAMES if hasattr(ops, n)}
        side.rec.draws = self.queue.served  # filled in as the script draws; summarised at the end

    def in_training(self, name: str) -> bool:
        if not self.side.training:
            return False
        self.counts[f"ops.{name}"] = self.counts.get(f"ops.{name}", 0) + 1
        return True

    def pseudo_ints(self, name: str) -> bool:
        """An integer draw inside a Cell call in training: the shared pseudo-integers (torch's side makes them
        inside a module's forward), since a compiled step cannot replay a recorded draw."""
        if not (self.side.training and self.side.depth > 0):
            return False
        self.counts[f"ops.{name}"] = self.counts.get(f"ops.{name}", 0) + 1
        return True

    def serve(self, kind: str, name: str, shape: Any, dtype: Any, check: Any = None, label: str | None = None) -> Any:
        if _in_pipeline():
            return None  # drawn for real, not counted
        values = self.queue.take(kind, label or f"ops.{name}", _numel(shape), check)
        if values is None:
            return None
        return ms.Tensor(values.reshape(tuple(int(d) for d in shape)), _ms_dtype(values, dtype))


NAMES = (
    "randn",
    "rand",
    "randn_like",
    "rand_like",
    "standard_normal",
    "normal",
    "randint",
    "randint_like",
    "randperm",
    "multinomial",
    "bernoulli",
    "random_poisson",
)


def patch_ops(side: Any, noise: Any) -> Served:
    s = Served(side, noise)
    real = s.real

    def float_draw(name: str, kind: str, shape: tuple, dtype: Any, fallback: Any) -> Any:
        if s.in_training(name):
            return noise(shape, dtype or ms.float32, kind == "uniform")
        out = s.serve(kind, name, shape, dtype)
        return out if out is not None else fallback()

    def randn(*size: Any, dtype: Any = None, seed: Any = None) -> Any:
        shape = _shape(size)
        return float_draw("randn", "normal", shape, dtype, lambda: real["randn"](*size, dtype=dtype, seed=seed))

    def rand(*size: Any, dtype: Any = None, seed: Any = None) -> Any:
        shape = _shape(size)
        return float_draw("rand", "uniform", shape, dtype, lambda: real["rand"](*size, dtype=dtype, seed=seed))

    def randn_like(input: Any, seed: Any = None, *, dtype: Any = None) -> Any:
        return float_draw(
            "randn_like",
            "normal",
            input.shape,
            dtype or input.dtype,
            lambda: real["randn_like"](input, seed, dtype=dtype),
        )

    def rand_like(input: Any, seed: Any = None, *, dtype: Any = None) -> Any:
        return float_draw(
            "rand_like",
            "uniform",
            input.shape,
            dtype or input.dtype,
            lambda: real["rand_like"](input, seed, dtype=dtype),
        )

    def standard_normal(shape: Any, seed: Any = None) -> Any:
        return float_draw("standard_normal", "normal", tuple(shape), None, lambda: real["standard_normal"](shape, seed))

    def normal(shape: Any, mean: Any, stddev: Any, seed: Any = None) -> Any:
        z = float_draw("normal", "normal", tuple(shape), None, lambda: None)
        return real["normal"](shape, mean, stddev, seed) if z is None else z * stddev + mean

    for f in (randn, rand, randn_like, rand_like, standard_normal, normal):
        setattr(ops, f.__name__, f)
    _patch_discrete(s)
    return s


def _int_pattern(low: Any, high: Any, shape: Any, dtype: Any) -> Any:
    """torch_draws.int_pattern with ops (compiles inside a step)."""
    a, b, c = INT_PATTERN
    i = ops.arange(0, _numel(shape), dtype=ms.int64)
    v = (i * i * a + i * b + c) % (high - low) + low
    return v.reshape(shape).astype(dtype if dtype is not None else ms.int64)


def _patch_discrete(s: Served) -> None:
    real = s.real

    def randint(low: Any, high: Any, size: Any, seed: Any = None, *, dtype: Any = None) -> Any:
        if s.pseudo_ints("randint"):
            return _int_pattern(low, high, tuple(size), dtype)
        lo, hi = _int(low), _int(high)
        out = s.serve("int", "randint", tuple(size), dtype, lambda v: v.size == 0 or (v.min() >= lo and v.max() < hi))
        return out if out is not None else real["randint"](low, high, size, seed, dtype=dtype)

    def randint_like(input: Any, low: Any, high: Any, seed: Any = None, *, dtype: Any = None) -> Any:
        if s.pseudo_ints("randint_like"):
            return _int_pattern(low, high, input.shape, dtype or input.dtype)
        lo, hi = _int(low), _int(high)
        check = lambda v: v.size == 0 or (v.min() >= lo and v.max() < hi)  # noqa: E731
        out = s.serve("int", "randint_like", input.shape, dtype or input.dtype, check)
        return out if out is not None else real["randint_like"](input, low, high, seed, dtype=dtype)

    def randperm(n: Any, seed: Any = 0, offset: Any = 0, dtype: Any = ms.int64) -> Any:
        k = _int(n)
        check = lambda v: bool(np.array_equal(np.sort(v.ravel()), np.arange(k)))  # noqa: E731
        out = s.serve("perm", "randperm", (k,), dtype, check)
        return out if out is not None else real["randperm"](n, seed, offset, dtype)

    def multinomial(input: Any, num_samples: Any, replacement: Any = True, seed: Any = None) -> Any:
        shape = (*tuple(input.shape[:-1]), int(num_samples))
        out = s.serve("multinomial", "multinomial", shape, None, lambda v: v.size == 0 or v.max() < input.shape[-1])
        return out if out is not None else real["multinomial"](input, num_samples, replacement, seed)

    def bernoulli(input: Any, p: Any = 0.5, seed: Any = None) -> Any:
        out = s.serve("bernoulli", "bernoulli", input.shape, input.dtype)
        return out if out is not None else real["bernoulli"](input, p, seed)

    def random_poisson(shape: Any, rate: Any, seed: Any = None, dtype: Any = ms.float32) -> Any:
        full = (*tuple(int(d) for d in shape.asnumpy()), *tuple(rate.shape))
        out = s.serve("poisson", "random_poisson", full, dtype)
        return out if out is not None else real["random_poisson"](shape, rate, seed, dtype)

    for f in (randint, randint_like, randperm, multinomial, bernoulli, random_poisson):
        setattr(ops, f.__name__, f)


RUNTIME_NAMES = ("torch2ms_runtime", "torch2ms.runtime")


def patch_runtime_generators(s: Served, module: Any) -> None:
    """The converted code's own ``torch.Generator`` draws (runtime ``randn``/``rand``/``randint``/``normal``/
    ``multinomial``/``bernoulli``/``randperm(..., generator=g)`` and ``random_split``'s permutation,
    numpy-backed, another algorithm than torch's): served torch's recorded draw of the same kind and size,
    as the ops are; inside training the float draws give the shared pseudo-noise, as torch's side does."""
    import importlib

    try:
        gens = importlib.import_module(module.__name__ + ".generators")
    except ImportError:  # a vendored runtime without it: the project draws from no generator of its own
        return
    if getattr(gens, "t2ms_served", False):
        return
    wrapped = _runtime_wrappers(s, {n: getattr(gens, n) for n in RUNTIME_DRAWS if hasattr(gens, n)})
    gens.t2ms_served = True  # type: ignore[attr-defined]
    for name, f in wrapped.items():
        setattr(gens, name, f)
        if name in vars(module):  # already bound in the package (imported by name before)
            setattr(module, name, f)


RUNTIME_DRAWS = ("randn", "rand", "randint", "normal", "multinomial", "bernoulli", "randperm", "permutation")


def _perm_check(k: int) -> Any:
    return lambda v: bool(np.array_equal(np.sort(v.ravel()), np.arange(k)))


def _runtime_wrappers(s: Served, real: dict[str, Any]) -> dict[str, Any]:
    def floats(name: str, kind: str, shape: tuple, dtype: Any, fallback: Any) -> Any:
        label = f"{name}(generator=)"
        if s.in_training(label):
            return s.noise(shape, dtype or ms.float32, kind == "uniform")
        out = s.serve(kind, label, shape, dtype)
        return out if out is not None else fallback()

    def randn(*size: Any, generator: Any = None, dtype: Any = None) -> Any:
        return floats(
            "randn", "normal", _shape(size), dtype, lambda: real["randn"](*size, generator=generator, dtype=dtype)
        )

    def rand(*size: Any, generator: Any = None, dtype: Any = None) -> Any:
        return floats(
            "rand", "uniform", _shape(size), dtype, lambda: real["rand"](*size, generator=generator, dtype=dtype)
        )

    def normal(mean: Any, std: Any = 1.0, size: Any = None, generator: Any = None, dtype: Any = None) -> Any:
        again = lambda: real["normal"](mean, std, size, generator=generator, dtype=dtype)  # noqa: E731
        shape = _shape((size,)) if size is not None else np.broadcast_shapes(np.shape(_np(mean)), np.shape(_np(std)))
        z = floats("normal", "normal", shape, dtype, lambda: None)
        return again() if z is None else z * std + mean

    def randint(low: Any = 0, high: Any = None, size: Any = None, generator: Any = None, dtype: Any = None) -> Any:
        again = lambda: real["randint"](low, high, size, generator=generator, dtype=dtype)  # noqa: E731
        lo, hi, sz = (0, low, high) if size is None else (low, high, size)
        shape = _shape((sz,))
        if _in_model(s.side) and s.pseudo_ints("randint(generator=)"):
            return _int_pattern(_int(lo), _int(hi), shape, dtype)
        check = lambda v: v.size == 0 or (v.min() >= _int(lo) and v.max() < _int(hi))  # noqa: E731
        out = s.serve("int", "randint(generator=)", shape, dtype or ms.int64, check)
        return out if out is not None else again()

    def randperm(n: Any, generator: Any = None, dtype: Any = None) -> Any:
        k = _int(n)
        out = s.serve("perm", "randperm(generator=)", (k,), dtype or ms.int64, _perm_check(k))
        return out if out is not None else real["randperm"](n, generator=generator, dtype=dtype)

    def permutation(n: Any, generator: Any = None) -> Any:
        k = _int(n)
        out = s.serve("perm", "", (k,), ms.int64, _perm_check(k), label="random_split")
        return [int(i) for i in out.asnumpy()] if out is not None else real["permutation"](n, generator)

    def multinomial(input: Any, num_samples: Any, replacement: Any = False, generator: Any = None) -> Any:
        shape = (*tuple(input.shape[:-1]), int(num_samples))
        check = lambda v: v.size == 0 or v.max() < input.shape[-1]  # noqa: E731
        out = s.serve("multinomial", "multinomial(generator=)", shape, ms.int64, check)
        return out if out is not None else real["multinomial"](input, num_samples, replacement, generator=generator)

    def bernoulli(input: Any, p: Any = None, generator: Any = None) -> Any:
        out = s.serve("bernoulli", "bernoulli(generator=)", tuple(input.shape), input.dtype)
        return out if out is not None else real["bernoulli"](input, p, generator=generator)

    made = (randn, rand, normal, randint, randperm, permutation, multinomial, bernoulli)
    return {f.__name__: f for f in made if f.__name__ in real}


def _in_model(side: Any) -> bool:
    """Called inside a trained model's forward (torch's side makes its integer draws there the shared
    pseudo-integers), not merely inside the converted TrainStep (a loop statement of torch's): found on
    the stack, as the runtime's generator draws run uncompiled."""
    models = [m.cell for m in getattr(side, "models", [])]
    f: Any = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "construct" and any(f.f_locals.get("self") is c for c in models):
            return True
        f = f.f_back
    return False


def _np(x: Any) -> Any:
    return x.asnumpy() if isinstance(x, ms.Tensor) else np.asarray(x)
