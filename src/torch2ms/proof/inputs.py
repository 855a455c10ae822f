"""The random inputs of a differential case: ``inputs = { x = "randn(2, 3)" }`` evaluated with a seeded rng.

Case ``inputs`` are expressions over these helpers: ``randn(2, 3)``, ``rand``, ``randpos`` (in
[0.5, 1.5)), ``randint(0, 5, (4,))``, ``randbool``, ``arange(n)``, and ``np`` itself; and the
framework-neutral functions ``poly``, ``poly2``, ``poly_sum`` for functional transforms
(``jacobian(f, x)``): MindSpore compiles the function it differentiates from its source file, which a
lambda in a case string has not.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..kb import Entry

__all__ = ["case_seed", "input_namespace", "make_inputs"]


def case_seed(entry: Entry, index: int) -> int:
    """The rng seed of case ``index`` of ``entry``: stable across runs and processes."""
    return zlib.crc32(f"{entry.torch}#{index}".encode())


def input_namespace(rng: np.random.Generator) -> dict[str, Any]:
    """The helpers case ``inputs`` expressions may call, all drawing from ``rng``."""

    def randn(*shape, dtype="float32"):
        return rng.standard_normal(shape).astype(dtype)

    def rand(*shape, dtype="float32"):
        return rng.random(shape).astype(dtype)

    def randpos(*shape, dtype="float32"):
        return (rng.random(shape) + 0.5).astype(dtype)

    def randint(low, high, shape, dtype="int64"):
        return rng.integers(low, high, size=shape).astype(dtype)

    def randbool(*shape):
        return rng.random(shape) > 0.5

    def arange(n, dtype="float32"):
        return np.arange(n).astype(dtype)

    return {
        "randn": randn,
        "rand": rand,
        "randpos": randpos,
        "randint": randint,
        "randbool": randbool,
        "arange": arange,
        "np": np,
        "poly": poly,
        "poly2": poly2,
        "poly_sum": poly_sum,
    }


def poly(t: Any) -> Any:
    """Operators only, so torch and MindSpore tensors both go through; defined in a file for MindSpore."""
    return t * t * t - 2.0 * t


def poly2(a: Any, b: Any) -> Any:
    return a * a * b + 3.0 * b


def poly_sum(t: Any) -> Any:
    return (t * t * t - 2.0 * t * t).sum()


def make_inputs(inputs: Mapping[str, str], rng: np.random.Generator) -> dict[str, Any]:
    """Evaluate each input expression, in order, with ``rng``."""
    ns = input_namespace(rng)
    return {name: eval(expr, dict(ns)) for name, expr in inputs.items()}
