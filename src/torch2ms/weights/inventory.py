"""Renames made certain by the converted project's inventory of layer types.

``torch2ms convert`` records in the layer map (``"inventory"``) every torch.nn layer class the
project names anywhere — called, passed as an argument or a default, held in a ``partial`` or an
alias, derived from — and, under ``open``, each place that could build a layer the inventory cannot
see (``getattr(nn, name)``, ``eval``, a class from a package outside the project). A key whose
layer the attribute map does not reach (a ``Sequential`` built from a list in a loop, a
``norm_layer(dim)`` argument, a factory function's result) is then certain when every layer type
the project could have put there — the inventory's torch layers, and the project's own classes
that hold parameters of their own, that can hold that key group's names at those ranks — gives the
same MindSpore names and layouts. With ``open`` set, nothing is settled here: the rename stays a guess.
JSON and the KB only: no torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..kb import KB
from .project_map import _Map
from .rename import rename_key

__all__ = ["settle"]

# the direct parameters and buffers of each torch.nn layer that has any (leaf → ranks, None: any
# rank), from instances of torch 2.x; a layer absent here holds none of its own
Ranks = dict[str, list[int] | None]
_V = [1]
_BN: Ranks = {"weight": _V, "bias": _V, "running_mean": _V, "running_var": _V, "num_batches_tracked": [0]}
_CONV: dict[int, Ranks] = {
    1: {"weight": [3], "bias": _V},
    2: {"weight": [4], "bias": _V},
    3: {"weight": [5], "bias": _V},
}
_CELL: Ranks = {"weight_ih": [2], "weight_hh": [2], "bias_ih": _V, "bias_hh": _V}
LEAVES: dict[str, Ranks] = {
    "BatchNorm1d": _BN,
    "BatchNorm2d": _BN,
    "BatchNorm3d": _BN,
    "SyncBatchNorm": _BN,
    "InstanceNorm1d": _BN,
    "InstanceNorm2d": _BN,
    "InstanceNorm3d": _BN,
    "Bilinear": {"weight": [3], "bias": _V},
    "Conv1d": _CONV[1],
    "Conv2d": _CONV[2],
    "Conv3d": _CONV[3],
    "ConvTranspose1d": _CONV[1],
    "ConvTranspose2d": _CONV[2],
    "ConvTranspose3d": _CONV[3],
    "Embedding": {"weight": [2]},
    "EmbeddingBag": {"weight": [2]},
    "GroupNorm": {"weight": _V, "bias": _V},
    "LayerNorm": {"weight": None, "bias": None},
    "RMSNorm": {"weight": None},
    "Linear": {"weight": [2], "bias": _V},
    "NonDynamicallyQuantizableLinear": {"weight": [2], "bias": _V},
    "MultiheadAttention": {
        "in_proj_weight": [2],
        "in_proj_bias": _V,
        "q_proj_weight": [2],
        "k_proj_weight": [2],
        "v_proj_weight": [2],
        "bias_k": [3],
        "bias_v": [3],
    },
    "PReLU": {"weight": _V},
    "RNNCell": _CELL,
    "LSTMCell": _CELL,
    "GRUCell": _CELL,
}
_RNN = re.compile(r"(weight|bias)_(ih|hh|hr)_l\d+(_reverse)?")
_RNNS = frozenset({"RNN", "LSTM", "GRU"})
# the layers a torch layer builds inside itself
INNER = {
    "MultiheadAttention": ["NonDynamicallyQuantizableLinear"],
    "TransformerEncoderLayer": ["LayerNorm", "Linear", "MultiheadAttention"],
    "TransformerDecoderLayer": ["LayerNorm", "Linear", "MultiheadAttention"],
    "TransformerEncoder": ["TransformerEncoderLayer", "LayerNorm"],
    "TransformerDecoder": ["TransformerDecoderLayer", "LayerNorm"],
    "Transformer": ["TransformerEncoder", "TransformerDecoder"],
    "AdaptiveLogSoftmaxWithLoss": ["Linear"],
}
_ELEMENTWISE = frozenset({"LayerNorm", "RMSNorm", "GroupNorm", "PReLU"})
_SUBMODULE = ("layer", "class", "list", "each", "dict")
_UNKNOWN = "?"


def _short(full: str) -> str:
    name = full.rsplit(".", 1)[-1]
    return name[4:] if name.startswith("Lazy") else name


def _pool(layers: list[str]) -> set[str]:
    """The inventory's torch.nn layers and those they build inside themselves."""
    todo = [_short(x) for x in layers if x.startswith("torch.nn.")]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += INNER.get(name, [])
    return seen


def _fits(layer: str, leaves: Mapping[str, tuple[int, ...]]) -> bool:
    """The layer holds every one of these names, each at a rank it can have."""
    if layer in _RNNS:
        return all(_RNN.fullmatch(leaf) and len(s) in (1, 2) for leaf, s in leaves.items())
    own = LEAVES.get(layer)
    if own is None:
        return False
    if own.get("weight") in (None, _V) and "running_mean" in own or layer in _ELEMENTWISE:
        # a norm's tensors all have one shape: a Conv1d's (8, 8, 1) weight with an (8,) bias is none
        if len({s for leaf, s in leaves.items() if leaf != "num_batches_tracked"}) > 1:
            return False
    for leaf, shape in leaves.items():
        if leaf not in own:
            return False
        ranks = own[leaf]
        if ranks is not None and len(shape) not in ranks:
            return False
    return True


def _spec_kind(spec: Any) -> str:
    """``param``/``buffer`` for an attribute that holds a tensor, ``module`` for a submodule, else ``?``."""
    if isinstance(spec, dict):
        if "param" in spec or "buffer" in spec:
            return "param" if "param" in spec else "buffer"
        if any(k in spec for k in _SUBMODULE):
            return "module"
        if "any" in spec:
            kinds = {_spec_kind(s) for s in spec["any"] if not (isinstance(s, dict) and "none" in s)}
            return kinds.pop() if len(kinds) == 1 else _UNKNOWN
    return _UNKNOWN


def _user_candidates(classes: Mapping[str, Any], pool: set[str]) -> list[dict[str, str]]:
    """The project's classes that hold tensors of their own: attribute → ``param``/``buffer``/``?``.
    A subclass of a torch layer with none of its own counts as that layer (added to ``pool``); one
    with some of its own is a layer nobody can rename by a rule (every name ``?``)."""
    m = _Map(classes)
    out = []
    for cls in classes:
        attrs = m.attrs(cls)
        own = {name: _spec_kind(spec) for name, spec in attrs.items()}
        own = {name: kind for name, kind in own.items() if kind != "module"}
        tensors = {name: kind for name, kind in own.items() if kind in ("param", "buffer")}
        base = m.torch_base(cls)
        if base is not None:
            if tensors:
                out.append({leaf: _UNKNOWN for leaf in (*LEAVES.get(_short(base), {}), *own)})
            else:
                pool.update(_pool([base]))
        elif own:
            out.append(own)
    return out


Renaming = frozenset[tuple[str, str | None, str | None]]


def _renamings(prefix: str, leaves: Mapping[str, tuple[int, ...]], pool: set[str], users, kb: KB) -> set[Renaming]:
    """What each candidate layer at ``prefix`` makes of its keys: {(torch key, MS name, layout)}."""
    out: set[Renaming] = set()
    keys = {leaf: f"{prefix}.{leaf}" if prefix else leaf for leaf in leaves}
    for layer in pool:
        if _fits(layer, leaves):
            types = {prefix: f"torch.nn.{layer}"}
            out.add(frozenset((k, *rename_key(k, types, kb)) for k in keys.values()))
        entry = kb.get(f"torch.nn.{layer}")
        for nested in entry.params if entry is not None else {}:
            head = nested.rpartition(".")[0]  # TransformerEncoderLayer: linear1.weight → dense1.weight
            if head and (prefix == head or prefix.endswith("." + head)):
                outer = prefix[: -len(head)].rstrip(".")
                types = {outer: f"torch.nn.{layer}"}
                out.add(frozenset((k, *rename_key(k, types, kb)) for k in keys.values()))
    for own in users:
        if set(leaves) <= set(own):
            out.add(frozenset((k, k if own[leaf] == "param" else own[leaf], None) for leaf, k in keys.items()))
    return out


def settle(
    shapes: Mapping[str, tuple[int, ...]],
    kb: KB,
    types: dict[str, str],
    unsure: set[str],
    inventory: Mapping[str, Any] | None,
    classes: Mapping[str, Any],
) -> set[str]:
    """Make certain the unsure keys whose every candidate layer agrees (``types`` is set to one of
    them, and what the plan then writes is checked against it); the keys it settled."""
    if not inventory or inventory.get("open") or not unsure:
        return set()
    pool = _pool(list(inventory.get("layers", [])))
    users = _user_candidates(classes, pool)
    groups: dict[str, dict[str, tuple[int, ...]]] = {}
    for key, shape in shapes.items():
        prefix, _, leaf = key.rpartition(".")
        groups.setdefault(prefix, {})[leaf] = tuple(shape)
    settled: set[str] = set()
    for prefix in sorted({k.rpartition(".")[0] for k in unsure}):
        leaves = groups[prefix]
        found = _renamings(prefix, leaves, pool, users, kb)
        if len(found) != 1:
            continue  # no candidate, or candidates that disagree: a guess
        (agreed,) = found
        if any(new == _UNKNOWN for _k, new, _l in agreed):
            continue
        if _adopt(prefix, agreed, types, kb, pool):
            settled.update(k for k, _n, _l in agreed)
    unsure -= settled
    return settled


def _adopt(prefix: str, agreed: Renaming, types: dict[str, str], kb: KB, pool: set[str]) -> bool:
    """Set ``types[prefix]`` to a layer type (or none) under which the plan writes ``agreed``."""
    before = types.get(prefix)
    options = [before, None, *(f"torch.nn.{layer}" for layer in sorted(pool))]
    for option in dict.fromkeys(options):
        if option is None:
            types.pop(prefix, None)
        else:
            types[prefix] = option
        if all(rename_key(k, types, kb) == (new, lay) for k, new, lay in agreed):
            return True
    if before is None:
        types.pop(prefix, None)
    else:
        types[prefix] = before
    return False
