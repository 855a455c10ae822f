"""torch's ``GradScaler`` in converted training steps, beyond what ``mindspore.amp``'s loss scalers say.

Imports MindSpore at its top: the step that calls :func:`scaler_finite` is compiled (``@mindspore.jit``).
"""

from __future__ import annotations

from typing import Any

import mindspore

__all__ = ["DisabledLossScaler", "scaler_finite"]


class DisabledLossScaler(mindspore.amp.StaticLossScaler):
    """torch's ``GradScaler(enabled=False)``: ``scale``/``unscale`` are the identity (a static scale of 1)
    and its ``step(optimizer)`` always steps — a disabled scaler checks no gradient, so an inf/nan one
    reaches the parameters as in torch (:func:`scaler_finite` says True for it)."""

    enabled = False

    def __init__(self) -> None:
        super().__init__(1.0)

    def is_enabled(self) -> bool:
        return False

    def get_scale(self) -> float:
        return 1.0


def scaler_finite(scaler: Any, grads: Any) -> Any:
    """Whether ``scaler.step(optimizer)`` applies the gradients: every gradient finite
    (``mindspore.amp.all_finite``) for an enabled scaler, always for a disabled one."""
    if getattr(scaler, "enabled", True):
        return mindspore.amp.all_finite(grads)
    return True
