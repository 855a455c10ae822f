"""Transforms built from other transforms: Compose, Cat, Stack (torch.distributions.transforms)."""

from __future__ import annotations

from typing import Any

from mindspore import Tensor, ops

from . import constraints
from ._util import sum_rightmost
from .transforms import Transform

__all__ = ["CatTransform", "ComposeTransform", "StackTransform", "identity_transform"]


class ComposeTransform(Transform):
    """parts applied in order; the log-det-Jacobian sums each part's over the right event dims."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.parts = list(parts)
        self.bijective = all(p.bijective for p in self.parts)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        return (
            domain if event_dim <= domain.event_dim else constraints.independent(domain, event_dim - domain.event_dim)
        )

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim <= codomain.event_dim:
            return codomain
        return constraints.independent(codomain, event_dim - codomain.event_dim)

    @property
    def sign(self) -> Any:  # type: ignore[override]
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def __call__(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y: Tensor) -> Tensor:
        return self.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return ops.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total: Any = 0.0
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return tuple(shape)

    def __repr__(self) -> str:
        return f"ComposeTransform({self.parts})"


identity_transform = ComposeTransform([])


class CatTransform(Transform):
    """Each transform applied to its slice of ``x`` along ``dim`` (``lengths`` wide), concatenated."""

    def __init__(self, tseq: list[Transform], dim: int = 0, lengths: Any = None, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.transforms, self.dim = list(tseq), dim
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        self.bijective = all(t.bijective for t in self.transforms)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(t.event_dim for t in self.transforms)

    def _slices(self, x: Tensor) -> list[Tensor]:
        out, start = [], 0
        for length in self.lengths:
            out.append(ops.narrow(x, self.dim, start, length))
            start += length
        return out

    def __call__(self, x: Tensor) -> Tensor:
        return ops.cat([t(s) for t, s in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return ops.cat([t.inv(s) for t, s in zip(self.transforms, self._slices(y))], self.dim)

    @property
    def inv(self) -> Transform:
        return CatTransform([t.inv for t in self.transforms], self.dim, self.lengths)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        parts = []
        for t, xs, ys in zip(self.transforms, self._slices(x), self._slices(y)):
            parts.append(sum_rightmost(t.log_abs_det_jacobian(xs, ys), self.event_dim - t.event_dim))
        dim = (self.dim - x.ndim if self.dim >= 0 else self.dim) + self.event_dim
        if dim < 0:
            return ops.cat(parts, dim)
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        return total


def _pick(x: Tensor, dim: int, i: int) -> Tensor:
    """torch's ``x.select(dim, i)`` (MindSpore's ops.select is a where)."""
    return ops.narrow(x, dim, i, 1).squeeze(dim)


class StackTransform(Transform):
    """Transform ``i`` applied to ``x.select(dim, i)``, stacked back along ``dim``."""

    def __init__(self, tseq: list[Transform], dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.transforms, self.dim = list(tseq), dim
        self.bijective = all(t.bijective for t in self.transforms)

    def _apply(self, x: Tensor, fns: list[Any]) -> Tensor:
        return ops.stack([fn(_pick(x, self.dim, i)) for i, fn in enumerate(fns)], self.dim)

    def __call__(self, x: Tensor) -> Tensor:
        return self._apply(x, self.transforms)

    def _inverse(self, y: Tensor) -> Tensor:
        return self._apply(y, [t.inv for t in self.transforms])

    @property
    def inv(self) -> Transform:
        return StackTransform([t.inv for t in self.transforms], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        parts = [
            t.log_abs_det_jacobian(_pick(x, self.dim, i), _pick(y, self.dim, i)) for i, t in enumerate(self.transforms)
        ]
        return ops.stack(parts, self.dim)
