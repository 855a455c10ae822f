"""What a comparison finds, as data: one :class:`LayerRow` per torch call, the :class:`Divergence`,
the :class:`OutputCheck` of the final output and the :class:`TrainingResult`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

VERDICTS = ("ok", "missing", "downstream", "DIVERGES")


def finite_or_none(value: float | None) -> float | None:
    """JSON has no NaN: a metric that could not be computed is None."""
    return None if value is None or not math.isfinite(value) else float(value)


@dataclass
class LayerRow:
    """One torch module call and what its MindSpore counterpart did with it."""

    index: int  # position in torch's call order (post-order: a container after its children)
    name: str  # qualified module name; "" is the model itself
    call: int  # 0 for the first call of this module, 1 for the second...
    torch_type: str
    leaf: bool
    shape: list[int] | None
    verdict: str = "ok"  # one of VERDICTS
    note: str = ""
    ms_name: str | None = None
    ms_type: str | None = None
    max_abs: float | None = None
    rel: float | None = None  # max |Δ| / max |torch|: the scale-free error verdicts use
    max_rel: float | None = None
    cosine: float | None = None
    within: float | None = None  # share of elements within tolerance
    nonfinite: str = ""
    shape_ok: bool | None = None
    in_rel: float | None = None  # error of this leaf's input (accumulated upstream)
    local_rel: float | None = None  # error of the MindSpore layer run on torch's own input
    noise_rel: float | None = None  # torch's own float32-vs-float64 error on this layer
    threshold: float | None = None  # above this, the error is not noise

    @property
    def display_name(self) -> str:
        name = self.name or "(model)"
        return f"{name} #{self.call + 1}" if self.call else name


@dataclass
class Divergence:
    """The first layer whose error is beyond float32 noise, and why."""

    layer: str  # "" is the model's own forward code
    kind: str  # shape | non-finite | input | error | values | training
    detail: str
    phase: str  # "forward" or "after training"
    index: int | None = None  # the LayerRow it was found at
    call: int = 0
    torch_type: str | None = None
    torch_class: str | None = None
    ms_type: str | None = None
    hint: str = ""


@dataclass
class OutputCheck:
    """The final output, torch vs MindSpore, in one execution mode."""

    ok: bool
    error: str | None = None
    max_abs: float | None = None
    rel: float | None = None
    cosine: float | None = None
    within: float | None = None
    nonfinite: str = ""


@dataclass
class ParamDiff:
    name: str
    rel: float


@dataclass
class TrainingResult:
    """Both sides trained the same steps; every check carries the tolerance it is judged by."""

    steps: int
    optimizer: str
    lr: float
    momentum: float | None
    loss: str
    torch_losses: list[float]
    ms_losses: list[float]
    loss_rel: list[float]
    loss_tol: float
    param_tol: float
    params: list[ParamDiff] = field(default_factory=list)
    error: str | None = None  # the MindSpore side could not train
    post_floor: float = 0.0  # after training a layer must be off by more than this (and its noise)
    post_checked: bool = False  # an eval forward after training was compared layer by layer
    post_divergence: str | None = None  # its first layer beyond the floor

    @property
    def max_loss_rel(self) -> float | None:
        return max(self.loss_rel) if self.loss_rel else None

    @property
    def worst_param(self) -> str | None:
        return self.params[0].name if self.params else None

    @property
    def worst_param_rel(self) -> float | None:
        return self.params[0].rel if self.params else None

    @property
    def losses_ok(self) -> bool:
        complete = bool(self.ms_losses) and len(self.ms_losses) == len(self.torch_losses)
        return complete and (self.max_loss_rel or 0.0) <= self.loss_tol

    @property
    def params_ok(self) -> bool:
        return self.worst_param_rel is None or self.worst_param_rel <= self.param_tol

    @property
    def post_layers_ok(self) -> bool:
        return self.post_divergence is None

    @property
    def params_matter(self) -> bool:
        """Parameters beyond tolerance count against the port unless the eval forward after training
        agrees: then they differ only in directions the output does not depend on (an attention key bias,
        a bias before BatchNorm: their gradients are rounding noise, which Adam scales to full steps)."""
        return not self.params_ok and not (self.post_checked and self.post_layers_ok)

    @property
    def ok(self) -> bool:
        return self.error is None and self.losses_ok and self.post_layers_ok and not self.params_matter

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        data = asdict(self)
        for key in (
            "max_loss_rel",
            "worst_param",
            "worst_param_rel",
            "losses_ok",
            "params_ok",
            "params_matter",
            "post_layers_ok",
            "ok",
        ):
            data[key] = getattr(self, key)
        return data
