"""``torch.Generator`` for converted code: a seeded generator of its own, as torch's is.

MindSpore 2.10's CPU random ops take no ``generator=``, so a script that draws from its own seeded
generator (``rng = torch.Generator(); rng.manual_seed(1337); torch.randperm(n, generator=rng)``)
gets one backed by numpy: reproducible and independent of the global seed, as in torch, though its
numbers are not torch's (another algorithm). Every torch draw that takes ``generator=`` (``randn``,
``rand``, ``randint``, ``normal``, ``multinomial``, ``bernoulli``, ``randperm``, ``random_split``) has
its form here, drawing from that generator; ``compare-train`` serves torch's recorded draws through them.
"""

from __future__ import annotations

from typing import Any

import mindspore
import numpy as np

__all__ = ["Generator", "bernoulli", "multinomial", "normal", "rand", "randint", "randn", "randperm"]


class Generator:
    """torch's ``Generator`` API (``manual_seed``, ``seed``, ``initial_seed``, ``get_state``,
    ``set_state``) over ``numpy.random.RandomState``."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = device
        self._seed = 67280421310721  # torch's default seed of a new CPU generator
        self._rng = np.random.RandomState(self._seed % 2**32)

    def manual_seed(self, seed: int) -> Generator:
        self._seed = int(seed)
        self._rng = np.random.RandomState(self._seed % 2**32)
        return self

    def seed(self) -> int:
        """A fresh non-deterministic seed, set and returned (as torch's ``Generator.seed``)."""
        fresh = int(np.random.SeedSequence().generate_state(2, np.uint64)[0]) % 2**63
        self.manual_seed(fresh)
        return fresh

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Any:
        return (self._seed, self._rng.get_state())

    def set_state(self, state: Any) -> Generator:
        self._seed, inner = state
        self._rng.set_state(inner)
        return self

    def permutation(self, n: int) -> np.ndarray:
        return self._rng.permutation(int(n))


def randperm(n: int, generator: Generator | None = None, dtype: Any = None) -> Any:
    """``torch.randperm(n, generator=g)``: a permutation drawn from ``g`` (the global numpy
    generator without one), as a MindSpore tensor (int64 unless ``dtype`` says otherwise)."""
    perm = generator.permutation(n) if generator is not None else np.random.permutation(int(n))
    return mindspore.Tensor(perm, dtype if dtype is not None else mindspore.int64)


def _rng(generator: Generator | None) -> Any:
    return generator._rng if generator is not None else np.random


def _shape(size: tuple) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], list | tuple):
        size = tuple(size[0])
    return tuple(int(d) for d in size)


def _array(x: Any) -> Any:
    return x.asnumpy() if isinstance(x, mindspore.Tensor) else np.asarray(x)


def permutation(n: int, generator: Generator | None = None) -> list[int]:
    """The permutation ``random_split`` deals its parts from (torch: ``randperm(n, generator=g)``)."""
    return [int(i) for i in _rng(generator).permutation(int(n))]


def randn(*size: Any, generator: Generator | None = None, dtype: Any = None) -> Any:
    """``torch.randn(*size, generator=g)``: standard normal values drawn from ``g``."""
    values = _rng(generator).standard_normal(_shape(size))
    return mindspore.Tensor(values, dtype if dtype is not None else mindspore.float32)


def rand(*size: Any, generator: Generator | None = None, dtype: Any = None) -> Any:
    """``torch.rand(*size, generator=g)``: values in [0, 1) drawn from ``g``."""
    values = _rng(generator).random_sample(_shape(size))
    return mindspore.Tensor(values, dtype if dtype is not None else mindspore.float32)


def randint(
    low: Any = 0, high: Any = None, size: Any = None, generator: Generator | None = None, dtype: Any = None
) -> Any:
    """``torch.randint([low,] high, size, generator=g)``: integers in [low, high) drawn from ``g`` (int64)."""
    if size is None:  # torch's randint(high, size)
        low, high, size = 0, low, high
    values = _rng(generator).randint(int(low), int(high), size=_shape((size,)), dtype=np.int64)
    return mindspore.Tensor(values, dtype if dtype is not None else mindspore.int64)


def normal(mean: Any, std: Any = 1.0, size: Any = None, generator: Generator | None = None, dtype: Any = None) -> Any:
    """``torch.normal(mean, std[, size], generator=g)``: a tensor mean or std gives the shape (and dtype)."""
    shape = _shape((size,)) if size is not None else np.broadcast_shapes(np.shape(_array(mean)), np.shape(_array(std)))
    values = _rng(generator).normal(_array(mean), _array(std), size=shape)
    tensors = [t for t in (mean, std) if isinstance(t, mindspore.Tensor)]
    return mindspore.Tensor(values, dtype or (tensors[0].dtype if tensors else mindspore.float32))


def multinomial(input: Any, num_samples: int, replacement: bool = False, generator: Generator | None = None) -> Any:
    """``torch.multinomial(probs, n, replacement, generator=g)``: category indices per row (int64)."""
    probs = _array(input).astype(np.float64)
    rows = probs.reshape(-1, probs.shape[-1])
    rng = _rng(generator)
    out = np.stack([rng.choice(rows.shape[1], int(num_samples), bool(replacement), r / r.sum()) for r in rows])
    return mindspore.Tensor(out.reshape((*probs.shape[:-1], int(num_samples))).astype(np.int64))


def bernoulli(input: Any, p: Any = None, generator: Generator | None = None) -> Any:
    """``torch.bernoulli(probs[, p], generator=g)``: 1 with probability ``probs`` (or ``p``), in ``input``'s dtype."""
    probs = _array(input) if p is None else np.full(np.shape(_array(input)), float(p))
    values = (_rng(generator).random_sample(np.shape(probs)) < probs).astype(np.float32)
    return mindspore.Tensor(values, input.dtype if isinstance(input, mindspore.Tensor) else mindspore.float32)
