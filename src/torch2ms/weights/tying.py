"""Tied parameters: one torch Parameter under two module paths (weight tying).

``self.decoder.weight = self.encoder.weight`` (an Embedding and a Linear sharing the vocabulary
matrix) puts both keys in torch's state dict, saved once. The converted network holds one MindSpore
Parameter, named after whichever cell holds it first, and an Embedding calls it ``embedding_table``
where a Dense calls it ``weight``. So the checkpoint must carry the tensor under each member's own
MindSpore name, renamed by the member's own layer type, and a member the network does not name is
no "unexpected" key: its tensor is loaded through its partner.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..kb import KB
from .torch_format import TensorRef

EMBEDDING, LINEAR = "torch.nn.Embedding", "torch.nn.Linear"


def tied_groups(state: Mapping[str, TensorRef]) -> list[list[str]]:
    """Keys that are views of the same storage bytes (same offset, shape, stride and dtype)."""
    by_view: dict[tuple, list[str]] = {}
    for key, ref in state.items():
        if not isinstance(ref, TensorRef):
            continue
        view = (id(ref.storage), ref.offset, tuple(ref.shape), tuple(ref.stride), ref.dtype)
        by_view.setdefault(view, []).append(key)
    return [keys for keys in by_view.values() if len(keys) > 1]


def tie_layer_types(
    groups: list[list[str]], shapes: Mapping[str, tuple[int, ...]], types: Mapping[str, str], kb: KB
) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Layer types corrected by the ties, and extra (MindSpore name, torch key) aliases.

    A tied 2-D ``weight`` is the Embedding ↔ Linear idiom: a member with a ``bias`` beside it is
    the Linear, the bias-less ones the Embedding. With no bias anywhere and no member already
    guessed an Embedding (by its name), the kind cannot be told from the file: each member's key is
    also written under the Embedding's name, so whichever the network holds loads.
    """
    out = dict(types)
    extra: list[tuple[str, str]] = []
    emb = kb.get(EMBEDDING)
    table = emb.params.get("weight") if emb is not None else None
    for keys in groups:
        members = [k.rpartition(".")[0] for k in keys if k.rpartition(".")[2] == "weight" and len(shapes[k]) == 2]
        if len(members) < 2:
            continue
        with_bias = {p for p in members if (f"{p}.bias" if p else "bias") in shapes}
        if with_bias and len(with_bias) < len(members):
            for p in members:
                out[p] = LINEAR if p in with_bias else EMBEDDING
        elif not with_bias and not any(out.get(p) == EMBEDDING for p in members) and table:
            for p in members:
                extra.append((f"{p}.{table}" if p else str(table), f"{p}.weight" if p else "weight"))
    return out, extra


def tied_partner_loaded(groups: list[list[str]], loaded: set[str]) -> set[str]:
    """Keys whose tensor reaches the network through a tied partner that is loaded."""
    out: set[str] = set()
    for keys in groups:
        if any(k in loaded for k in keys):
            out.update(k for k in keys if k not in loaded)
    return out
