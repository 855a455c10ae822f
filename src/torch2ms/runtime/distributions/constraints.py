"""torch.distributions.constraints: what values a parameter or a sample may take (``check``)."""

from __future__ import annotations

from typing import Any

import mindspore as ms
from mindspore import Tensor, ops

__all__ = [
    "Constraint",
    "boolean",
    "corr_cholesky",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "symmetric",
    "unit_interval",
]


class Constraint:
    """A region of values; ``check(value)`` is a bool Tensor over the batch (event dims reduced)."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A support that depends on other parameters: checking it is an error, as in torch."""

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def __call__(self, fn: Any = None, *, is_discrete: bool = False, event_dim: int = 0) -> Any:
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim) if fn is None else property(fn)

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    return isinstance(constraint, _Dependent)


def dependent_property(fn: Any = None, *, is_discrete: bool = False, event_dim: int = 0) -> Any:
    """A property whose value is a constraint that depends on the instance (``support``)."""
    if fn is None:
        return lambda f: property(f)
    return property(fn)


class _Predicate(Constraint):
    def __init__(self, test: Any, name: str, is_discrete: bool = False, event_dim: int = 0) -> None:
        self._test, self._name = test, name
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def check(self, value: Tensor) -> Tensor:
        return self._test(value)

    def __repr__(self) -> str:
        return self._name


class _Interval(Constraint):
    def __init__(self, lower: Any, upper: Any, closed_upper: bool = True, discrete: bool = False) -> None:
        self.lower_bound, self.upper_bound = lower, upper
        self._closed_upper, self.is_discrete = closed_upper, discrete

    def check(self, value: Tensor) -> Tensor:
        ok = ops.ones_like(value).astype(bool)
        if self.lower_bound is not None:
            ok = ok & (value >= self.lower_bound)
        if self.upper_bound is not None:
            ok = ok & ((value <= self.upper_bound) if self._closed_upper else (value < self.upper_bound))
        if self.is_discrete:
            ok = ok & (value % 1 == 0)
        return ok

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: Any, strict: bool = True) -> None:
        self.lower_bound, self._strict = lower_bound, strict

    def check(self, value: Tensor) -> Tensor:
        return (value > self.lower_bound) if self._strict else (value >= self.lower_bound)


class _LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound


class _Independent(Constraint):
    def __init__(self, base: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint, self.reinterpreted_batch_ndims = base, reinterpreted_batch_ndims
        self.is_discrete = base.is_discrete
        self.event_dim = base.event_dim + reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        ok = self.base_constraint.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            ok = ok.all(-1)
        return ok


def _square(value: Tensor) -> Tensor:
    return ops.full(tuple(value.shape[:-2]), value.shape[-1] == value.shape[-2], dtype=ms.bool_)


def _symmetric(value: Tensor) -> Tensor:
    return ops.isclose(value, value.swapaxes(-1, -2), atol=1e-6).all(-1).all(-1)


def _lower_triangular(value: Tensor) -> Tensor:
    return (ops.tril(value) == value).all(-1).all(-1)


def _eigenvalues(value: Tensor) -> Tensor:
    import numpy as np

    return Tensor(np.linalg.eigvalsh(value.asnumpy()))  # host-side check: no eigvalsh kernel on CPU


def _positive_definite(value: Tensor) -> Tensor:
    return _symmetric(value) & (_eigenvalues(value) > 0).all(-1)


def _positive_semidefinite(value: Tensor) -> Tensor:
    return _symmetric(value) & (_eigenvalues(value) >= 0).all(-1)


def _lower_cholesky(value: Tensor) -> Tensor:
    diag = value.diagonal(0, -2, -1)
    return _lower_triangular(value) & (diag > 0).all(-1)


def _corr_cholesky(value: Tensor) -> Tensor:
    row_norm = ops.norm(value, dim=-1)
    return _lower_cholesky(value) & (ops.abs(row_norm - 1) <= 1e-6).all(-1)


def _simplex(value: Tensor) -> Tensor:
    return (value >= 0).all(-1) & (ops.abs(value.sum(-1) - 1) < 1e-6)


def _one_hot(value: Tensor) -> Tensor:
    return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


dependent = _Dependent()
real = _Predicate(lambda v: v == v, "Real()")  # everything but nan, as torch
boolean = _Predicate(lambda v: (v == 0) | (v == 1), "Boolean()", is_discrete=True)
nonnegative_integer = _Interval(0, None, discrete=True)
positive_integer = _Interval(1, None, discrete=True)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThan(0.0, strict=False)
unit_interval = _Interval(0.0, 1.0)
real_vector = _Independent(real, 1)
simplex = _Predicate(_simplex, "Simplex()", event_dim=1)
one_hot = _Predicate(_one_hot, "OneHot()", is_discrete=True, event_dim=1)
square = _Predicate(_square, "Square()", event_dim=2)
symmetric = _Predicate(_symmetric, "Symmetric()", event_dim=2)
lower_triangular = _Predicate(_lower_triangular, "LowerTriangular()", event_dim=2)
lower_cholesky = _Predicate(_lower_cholesky, "LowerCholesky()", event_dim=2)
corr_cholesky = _Predicate(_corr_cholesky, "CorrCholesky()", event_dim=2)
positive_definite = _Predicate(_positive_definite, "PositiveDefinite()", event_dim=2)
positive_semidefinite = _Predicate(_positive_semidefinite, "PositiveSemidefinite()", event_dim=2)


def interval(lower_bound: Any, upper_bound: Any) -> Constraint:
    return _Interval(lower_bound, upper_bound)


def half_open_interval(lower_bound: Any, upper_bound: Any) -> Constraint:
    return _Interval(lower_bound, upper_bound, closed_upper=False)


def integer_interval(lower_bound: Any, upper_bound: Any) -> Constraint:
    return _Interval(lower_bound, upper_bound, discrete=True)


def greater_than(lower_bound: Any) -> Constraint:
    return _GreaterThan(lower_bound)


def greater_than_eq(lower_bound: Any) -> Constraint:
    return _GreaterThan(lower_bound, strict=False)


def less_than(upper_bound: Any) -> Constraint:
    return _LessThan(upper_bound)


def independent(base_constraint: Constraint, reinterpreted_batch_ndims: int) -> Constraint:
    return _Independent(base_constraint, reinterpreted_batch_ndims)
