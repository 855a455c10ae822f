"""torch's optimizers where MindSpore's own differ (needs MindSpore only).

``CoupledAdam`` is ``torch.optim.Adam`` with ``weight_decay`` (coupled L2: the decay is added to the
gradient, then Adam). MindSpore's experimental Adam applies it in a fused kernel that also adds eps
before the bias correction: 2.5% off torch's parameters in 10 steps with weight_decay=5e-4. Here the
decay goes into the gradients and the step is experimental AdamW's with weight_decay 0, which is
torch's Adam to float rounding. The groups keep their weight_decay (what torch's groups hold).
"""

from __future__ import annotations

from typing import Any

from mindspore import Tensor, ops
from mindspore.common import dtype as mstype
from mindspore.experimental.optim import AdamW

__all__ = ["CoupledAdam", "set_group_lr"]


class CoupledAdam(AdamW):  # type: ignore[misc]
    def __init__(
        self,
        params: Any,
        lr: Any = 1e-3,
        betas: Any = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, float(weight_decay), amsgrad, maximize=maximize)

    def construct(self, gradients: Any) -> Any:
        self.assignadd(self.state_step, self.increase_tensor)
        for group_id, group in enumerate(self.param_groups):
            beta1, beta2 = group["betas"]
            start_id = self.group_start_id[group_id]
            end_id = self.group_start_id[group_id + 1]
            lr = self.lrs[group_id]
            if isinstance(group.get("lr"), float):
                lr = self.op_cast(group.get("lr"), mstype.float32)
            # torch: g = -g under maximize, then g + wd·p
            grads = tuple(
                _coupled(g, p, group.get("weight_decay"), group.get("maximize"))
                for g, p in zip(gradients[start_id:end_id], self.parameters[start_id:end_id])
            )
            self.implementation(lr, 0.0, beta1, beta2, group.get("amsgrad"), group.get("eps"), grads, start_id, end_id)
        return True


def _coupled(g: Tensor, p: Any, wd: float, maximize: bool) -> Tensor:
    g = ops.neg(g) if maximize else g
    return g + wd * p if wd else g


def set_group_lr(group: Any, value: Any) -> None:
    """``group['lr'] = value`` for a param group of a MindSpore experimental optimizer: the group's lr is a
    Parameter the compiled step reads, so its value is assigned as the schedulers do (a float put in its
    place, or ``set_data``, is not seen by the step compiled before: it trains on at the old lr)."""
    from mindspore import Parameter

    lr = group.get("lr")
    if isinstance(lr, Parameter):
        ops.assign(lr, Tensor(float(value), lr.dtype))
    else:
        group["lr"] = value
