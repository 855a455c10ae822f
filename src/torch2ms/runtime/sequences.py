"""``torch.nn.utils.rnn.pad_sequence``: MindSpore 2.10 has none. Needs MindSpore only; GRAPH_MODE compiles
the helper with its caller (MindSpore imported at the top, no import in the body)."""

from __future__ import annotations

from typing import Any

from mindspore import ops

__all__ = ["pad_sequence"]


def pad_sequence(
    sequences: Any, batch_first: Any = False, padding_value: Any = 0.0, padding_side: str = "right"
) -> Any:
    """Every tensor's first dim padded to the longest (after it, or before it with ``padding_side='left'``),
    then stacked on axis 1 (axis 0 with ``batch_first``), as torch's. ops.pad's padding tuple starts
    from the last dim, as torch's F.pad."""
    seqs = list(sequences)
    longest = max(t.shape[0] for t in seqs)
    padded = []
    for t in seqs:
        gap = longest - t.shape[0]
        first = (0, gap) if padding_side == "right" else (gap, 0)
        padded.append(ops.pad(t, (0, 0) * (t.ndim - 1) + first, value=padding_value))
    return ops.stack(padded, axis=0 if batch_first else 1)
