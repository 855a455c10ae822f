"""Embedding or bias-less Linear? Told apart by what the next layer consumes.

Both hold one 2-D ``weight`` and no bias; MindSpore names them differently (``embedding_table`` /
``weight``). A name such as ``wte`` or ``tok_emb`` makes the first guess (convert.guess_layer_types),
which the neighbours overrule when they read it as a Linear (``embed_out``, a head); for any other
name (``self.encoder = nn.Embedding(ntoken, ninp)``), the shapes decide: an Embedding
(V, D) outputs D-wide vectors, a Linear (out, in) outputs out-wide ones, so the width the next
layer in the state dict takes as input says which it is. When both widths are equal, or the next
layer's input width is unknown, the guess stays Linear.
"""

from __future__ import annotations

from collections.abc import Mapping

EMBEDDING, LINEAR = "torch.nn.Embedding", "torch.nn.Linear"
# leaf → which axis of it is the layer's input width (RNN input weights: (gates * hidden, input))
_INPUT_AXIS = {"weight": 1, "weight_ih_l0": 1, "in_proj_weight": 1}
_NORMS = ("torch.nn.LayerNorm", "torch.nn.BatchNorm2d")


def _input_width(prefix: str, shapes: Mapping[str, tuple[int, ...]], types: Mapping[str, str]) -> int | None:
    """The input width of the layer at ``prefix``, when its parameters say it."""
    kind = types.get(prefix, "")
    key = f"{prefix}.weight" if prefix else "weight"
    if kind in _NORMS and key in shapes and len(shapes[key]) == 1:
        return shapes[key][0]
    if kind == EMBEDDING:
        return None  # consumes ids
    for leaf, axis in _INPUT_AXIS.items():
        shape = shapes.get(f"{prefix}.{leaf}" if prefix else leaf)
        if shape is not None and len(shape) >= 2:
            return shape[axis]
    return None


def _touches(prefix: str, width: int, shapes: Mapping[str, tuple[int, ...]]) -> bool:
    """Does a layer's parameters have ``width`` among their first two dims (it reads or writes
    vectors that wide)?"""
    return any(
        width in shape[:2] for key, shape in shapes.items() if key.rpartition(".")[0] == prefix and len(shape) >= 1
    )


def embeddings_by_dataflow(shapes: Mapping[str, tuple[int, ...]], types: Mapping[str, str]) -> dict[str, str]:
    """``types`` with each bias-less Linear guess turned into an Embedding when the next layer
    (in state-dict order) takes the weight's second dim, not its first, as its input width, and
    the layer before it has nothing of that width (a Linear's input comes from somewhere: a norm,
    or a sibling projection of the same input, as attention's q/k/v)."""
    out = dict(types)
    prefixes = list(dict.fromkeys(k.rpartition(".")[0] for k in shapes))
    for i, prefix in enumerate(prefixes):
        key = f"{prefix}.weight" if prefix else "weight"
        if types.get(prefix) == EMBEDDING and key in shapes and len(shapes[key]) == 2:
            if _reads_like_linear(i, prefixes, shapes, types):
                out[prefix] = LINEAR  # named like an embedding (``embed_out``, ``token_proj``), used as a Linear
            continue
        if types.get(prefix) != LINEAR or (f"{prefix}.bias" if prefix else "bias") in shapes:
            continue
        rows, cols = shapes[key]
        if rows == cols or (i > 0 and _touches(prefixes[i - 1], cols, shapes)):
            continue
        nxt = next((p for p in prefixes[i + 1 :] if not p.startswith(f"{prefix}.")), None)
        if nxt is not None and _input_width(nxt, shapes, types) == cols:
            out[prefix] = EMBEDDING
    return out


def _reads_like_linear(
    i: int, prefixes: list[str], shapes: Mapping[str, tuple[int, ...]], types: Mapping[str, str]
) -> bool:
    """A layer guessed an Embedding by its name whose neighbours say Linear (out, in): the next layer
    takes its first dim as input width, or, the last layer, it reads what the layer before it writes
    (a head such as GPT-NeoX's ``embed_out``). Embeddings side by side (``wte``, ``wpe``) keep theirs."""
    prefix = prefixes[i]
    rows, cols = shapes[f"{prefix}.weight" if prefix else "weight"]
    if rows == cols:
        return False
    nxt = next((p for p in prefixes[i + 1 :] if not p.startswith(f"{prefix}.")), None)
    if nxt is not None:
        return _input_width(nxt, shapes, types) == rows
    prev = prefixes[i - 1] if i > 0 else None
    return prev is not None and types.get(prev) != EMBEDDING and _touches(prev, cols, shapes)
