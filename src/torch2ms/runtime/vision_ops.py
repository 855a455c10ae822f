"""torchvision.ops box functions for converted code: the same formulas on MindSpore tensors.

The dense ones (areas, IoU matrices, conversions, clipping) are MindSpore ops and compile in
GRAPH_MODE; the ones whose output size depends on the values (nms, remove_small_boxes,
masks_to_boxes) run on the host with numpy, as post-processing does, and return MindSpore tensors.
``roi_align`` is MindSpore's ROIAlign where it computes torchvision's numbers.
MindSpore is imported at the top: GRAPH_MODE compiles these functions and cannot compile an
import statement. Nothing from torch2ms is imported: a converted project can carry this file on its own.
"""

from __future__ import annotations

import math
from typing import Any

import mindspore
import numpy as np
from mindspore import ops

__all__ = [
    "FrozenBatchNorm2d",
    "RoIAlign",
    "batched_nms",
    "box_area",
    "box_convert",
    "box_iou",
    "clip_boxes_to_image",
    "complete_box_iou",
    "distance_box_iou",
    "generalized_box_iou",
    "masks_to_boxes",
    "nms",
    "remove_small_boxes",
    "roi_align",
]


def box_area(boxes: Any) -> Any:
    """Areas of (x1, y1, x2, y2) boxes."""
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _inter_union(boxes1: Any, boxes2: Any) -> tuple[Any, Any]:

    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = ops.maximum(boxes1[:, None, :2], boxes2[None, :, :2])
    rb = ops.minimum(boxes1[:, None, 2:], boxes2[None, :, 2:])
    wh = ops.clamp(rb - lt, min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter, area1[:, None] + area2[None, :] - inter


def box_iou(boxes1: Any, boxes2: Any) -> Any:
    """Pairwise IoU, shape (N, M)."""
    inter, union = _inter_union(boxes1, boxes2)
    return inter / union


def _enclosing(boxes1: Any, boxes2: Any) -> tuple[Any, Any]:
    """Width and height of the smallest box enclosing each pair."""

    lt = ops.minimum(boxes1[:, None, :2], boxes2[None, :, :2])
    rb = ops.maximum(boxes1[:, None, 2:], boxes2[None, :, 2:])
    wh = ops.clamp(rb - lt, min=0)
    return wh[:, :, 0], wh[:, :, 1]


def generalized_box_iou(boxes1: Any, boxes2: Any) -> Any:
    """Pairwise generalized IoU: IoU minus the enclosing box's share not covered by the union."""
    inter, union = _inter_union(boxes1, boxes2)
    w, h = _enclosing(boxes1, boxes2)
    area = w * h
    return inter / union - (area - union) / area


def _centre_distance(boxes1: Any, boxes2: Any, eps: float) -> tuple[Any, Any]:
    """IoU and the squared centre distance over the enclosing box's squared diagonal."""
    inter, union = _inter_union(boxes1, boxes2)
    w, h = _enclosing(boxes1, boxes2)
    diagonal = w**2 + h**2 + eps
    cx1, cy1 = (boxes1[:, 0] + boxes1[:, 2]) / 2, (boxes1[:, 1] + boxes1[:, 3]) / 2
    cx2, cy2 = (boxes2[:, 0] + boxes2[:, 2]) / 2, (boxes2[:, 1] + boxes2[:, 3]) / 2
    distance = (cx1[:, None] - cx2[None, :]) ** 2 + (cy1[:, None] - cy2[None, :]) ** 2
    return inter / union, distance / diagonal


def distance_box_iou(boxes1: Any, boxes2: Any, eps: float = 1e-7) -> Any:
    """Pairwise distance IoU (DIoU)."""
    iou, penalty = _centre_distance(boxes1, boxes2, eps)
    return iou - penalty


def complete_box_iou(boxes1: Any, boxes2: Any, eps: float = 1e-7) -> Any:
    """Pairwise complete IoU (CIoU): DIoU minus the aspect-ratio term."""

    iou, penalty = _centre_distance(boxes1, boxes2, eps)
    w1, h1 = boxes1[:, 2] - boxes1[:, 0], boxes1[:, 3] - boxes1[:, 1]
    w2, h2 = boxes2[:, 2] - boxes2[:, 0], boxes2[:, 3] - boxes2[:, 1]
    v = (4 / (math.pi**2)) * (ops.atan(w1 / h1)[:, None] - ops.atan(w2 / h2)[None, :]) ** 2
    alpha = ops.stop_gradient(v / (1 - iou + v + eps))
    return iou - penalty - alpha * v


def box_convert(boxes: Any, in_fmt: str, out_fmt: str) -> Any:
    """Between 'xyxy', 'xywh' and 'cxcywh'."""

    formats = ("xyxy", "xywh", "cxcywh")
    if in_fmt not in formats or out_fmt not in formats:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}")
    if in_fmt == out_fmt:
        return boxes.copy()
    a, b, c, d = boxes[..., 0], boxes[..., 1], boxes[..., 2], boxes[..., 3]
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    if out_fmt == "xywh":
        a, b, c, d = a, b, c - a, d - b
    elif out_fmt == "cxcywh":
        a, b, c, d = (a + c) / 2, (b + d) / 2, c - a, d - b
    return ops.stack((a, b, c, d), axis=-1)


def clip_boxes_to_image(boxes: Any, size: tuple[int, int]) -> Any:
    """Clamp x into [0, width] and y into [0, height] (``size`` is (height, width))."""

    height, width = size
    x = ops.clamp(boxes[..., 0::2], min=0, max=width)
    y = ops.clamp(boxes[..., 1::2], min=0, max=height)
    return ops.stack((x, y), axis=boxes.ndim).reshape(boxes.shape)


def _numpy(x: Any) -> Any:

    return x.asnumpy() if hasattr(x, "asnumpy") else np.asarray(x)


def _int64(values: Any) -> Any:

    return mindspore.Tensor(np.asarray(values, dtype=np.int64))


def remove_small_boxes(boxes: Any, min_size: float) -> Any:
    """Indices of the boxes whose sides are both at least ``min_size``."""

    b = _numpy(boxes)
    keep = ((b[:, 2] - b[:, 0]) >= min_size) & ((b[:, 3] - b[:, 1]) >= min_size)
    return _int64(np.nonzero(keep)[0])


def nms(boxes: Any, scores: Any, iou_threshold: float) -> Any:
    """Greedy non-maximum suppression: indices kept, by decreasing score (int64)."""

    b, s = _numpy(boxes).astype(np.float32), _numpy(scores)
    order = np.argsort(-s, kind="stable")
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    suppressed = np.zeros(len(b), dtype=bool)
    keep = []
    for i in order:
        if suppressed[i]:
            continue
        keep.append(i)
        lt, rb = np.maximum(b[i, :2], b[:, :2]), np.minimum(b[i, 2:], b[:, 2:])
        wh = np.clip(rb - lt, 0, None)
        inter = wh[:, 0] * wh[:, 1]
        suppressed |= inter / (area[i] + area - inter) > iou_threshold
    return _int64(keep)


def batched_nms(boxes: Any, scores: Any, idxs: Any, iou_threshold: float) -> Any:
    """NMS within each category of ``idxs`` (boxes of different categories never suppress each other)."""

    b = _numpy(boxes).astype(np.float32)
    if b.size == 0:
        return _int64([])
    offsets = _numpy(idxs).astype(np.float32) * (b.max() + 1)
    return nms(b + offsets[:, None], scores, iou_threshold)


def masks_to_boxes(masks: Any) -> Any:
    """The (x1, y1, x2, y2) box around the non-zero pixels of each (H, W) mask, float32."""

    m = _numpy(masks)
    out = np.zeros((m.shape[0], 4), dtype=np.float32)
    for i, mask in enumerate(m):
        y, x = np.nonzero(mask)
        out[i] = (x.min(), y.min(), x.max(), y.max())
    return mindspore.Tensor(out)


def _roi_align_op(output_size: Any, spatial_scale: float, sampling_ratio: int, aligned: bool) -> Any:
    """MindSpore's ROIAlign where it computes torchvision's numbers (roi_end_mode 0 is aligned=False)."""

    if aligned:
        raise NotImplementedError("roi_align(aligned=True): MindSpore's ROIAlign has no half-pixel offset mode")
    if sampling_ratio <= 0:
        raise NotImplementedError(
            f"roi_align(sampling_ratio={sampling_ratio}): MindSpore's adaptive sampling gives NaN on CPU; pass sampling_ratio > 0"
        )
    height, width = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    return ops.ROIAlign(height, width, float(spatial_scale), int(sampling_ratio), 0)


def _rois(boxes: Any) -> Any:
    """torchvision's box formats → one (K, 5) tensor [batch index, x1, y1, x2, y2]."""

    if isinstance(boxes, (list, tuple)):
        rows = [ops.concat((ops.full((b.shape[0], 1), i, dtype=b.dtype), b), axis=1) for i, b in enumerate(boxes)]
        return ops.concat(rows, axis=0)
    return boxes


def roi_align(
    input: Any,
    boxes: Any,
    output_size: Any,
    spatial_scale: float = 1.0,
    sampling_ratio: int = -1,
    aligned: bool = False,
) -> Any:
    """torchvision.ops.roi_align (aligned=False, sampling_ratio > 0) with mindspore.ops.ROIAlign."""
    return _roi_align_op(output_size, spatial_scale, sampling_ratio, aligned)(input, _rois(boxes))


class RoIAlign(mindspore.nn.Cell):
    """torchvision.ops.RoIAlign: roi_align as a layer (no parameters)."""

    def __init__(self, output_size: Any, spatial_scale: float, sampling_ratio: int, aligned: bool = False) -> None:
        super().__init__()
        self.op = _roi_align_op(output_size, spatial_scale, sampling_ratio, aligned)

    def construct(self, input: Any, rois: Any) -> Any:
        return self.op(input, rois)


class FrozenBatchNorm2d(mindspore.nn.Cell):
    """BatchNorm2d with fixed statistics and affine parameters (torchvision.ops.FrozenBatchNorm2d).

    They are non-trainable Parameters, not buffers: MindSpore checkpoints (load_param_into_net)
    load Parameters only, and torch2ms weights writes the torch buffers under the same names.
    """

    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = mindspore.Parameter(ops.ones(num_features), requires_grad=False)
        self.bias = mindspore.Parameter(ops.zeros(num_features), requires_grad=False)
        self.running_mean = mindspore.Parameter(ops.zeros(num_features), requires_grad=False)
        self.running_var = mindspore.Parameter(ops.ones(num_features), requires_grad=False)

    def construct(self, x: Any) -> Any:
        scale = self.weight.reshape(1, -1, 1, 1) * ops.rsqrt(self.running_var.reshape(1, -1, 1, 1) + self.eps)
        bias = self.bias.reshape(1, -1, 1, 1) - self.running_mean.reshape(1, -1, 1, 1) * scale
        return x * scale + bias
