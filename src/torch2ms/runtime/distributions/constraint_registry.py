"""biject_to / transform_to: the transform from unconstrained space onto a constraint's support."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import constraints
from .transforms import (
    AffineTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    SigmoidTransform,
    SoftmaxTransform,
    StickBreakingTransform,
    Transform,
)
from .transforms_compose import ComposeTransform, identity_transform

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Constraint (instance, or its class) → a factory of the Transform onto it; ``register`` adds one."""

    def __init__(self) -> None:
        self._registry: dict[Any, Callable[[Any], Transform]] = {}

    def register(self, constraint: Any, factory: Callable[[Any], Transform] | None = None) -> Any:
        if factory is None:
            return lambda f: self.register(constraint, f)
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: Any) -> Transform:
        for key in (constraint, type(constraint)):
            try:
                factory = self._registry.get(key)
            except TypeError:  # an unhashable constraint
                factory = None
            if factory is not None:
                return factory(constraint)
        raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")


def _lower_bound(c: Any) -> Transform:
    return ComposeTransform([ExpTransform(), AffineTransform(c.lower_bound, 1)])


def _upper_bound(c: Any) -> Transform:
    return ComposeTransform([ExpTransform(), AffineTransform(c.upper_bound, -1)])


def _interval(c: Any) -> Transform:
    lower = 0 if c.lower_bound is None else c.lower_bound
    return ComposeTransform([SigmoidTransform(), AffineTransform(lower, c.upper_bound - lower)])


def _fill(registry: ConstraintRegistry, simplex: Callable[[Any], Transform]) -> ConstraintRegistry:
    registry.register(constraints.real, lambda c: identity_transform)
    registry.register(constraints.positive, lambda c: ExpTransform())
    registry.register(constraints.nonnegative, lambda c: ExpTransform())
    registry.register(constraints._GreaterThan, _lower_bound)
    registry.register(constraints._LessThan, _upper_bound)
    registry.register(constraints._Interval, _interval)
    registry.register(constraints.unit_interval, lambda c: SigmoidTransform())
    registry.register(constraints.simplex, simplex)
    registry.register(constraints.lower_cholesky, lambda c: LowerCholeskyTransform())
    registry.register(constraints.positive_definite, lambda c: PositiveDefiniteTransform())
    registry.register(
        constraints._Independent,
        lambda c: IndependentTransform(registry(c.base_constraint), c.reinterpreted_batch_ndims),
    )
    return registry


biject_to = _fill(ConstraintRegistry(), lambda c: StickBreakingTransform())
transform_to = _fill(ConstraintRegistry(), lambda c: SoftmaxTransform())
