"""torch.nn losses that are MindSpore's own but for the type of one argument. Needs MindSpore only."""

from __future__ import annotations

from typing import Any

import mindspore as ms
from mindspore import nn

__all__ = ["CrossEntropyLoss"]


class CrossEntropyLoss(nn.CrossEntropyLoss):
    """``mindspore.nn.CrossEntropyLoss`` that takes torch's int64 class labels.

    MindSpore's requires int32 labels ("For 'CrossEntropyLoss', the 'labels' should be Int32") and the
    criterion's call ``criterion(logits, labels)`` is the user's: the labels are cast here. Class
    probabilities (float targets) pass as they are. Everything else is MindSpore's own and equals torch's:
    weight, ignore_index (default -100), reduction, label_smoothing, (N, C, d1, ...) inputs."""

    def construct(self, logits: Any, labels: Any) -> Any:
        if labels.dtype == ms.int64:
            labels = labels.astype(ms.int32)
        return super().construct(logits, labels)
