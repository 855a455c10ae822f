"""``torch.Generator`` for converted code: a seeded generator of its own, as torch's is.

MindSpore 2.10's CPU random ops take no ``generator=``, so a script that draws from its own seeded
generator (``rng = torch.Generator(); rng.manual_seed(1337); torch.randperm(n, generator=rng)``)
gets one backed by numpy: reproducible and independent of the global seed, as in torch, though its
numbers are not torch's (another algorithm).
"""

from __future__ import annotations

from typing import Any

import mindspore
import numpy as np

__all__ = ["Generator", "randperm"]


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
