"""``torch2ms weights``: a torch checkpoint → a MindSpore .ckpt (and back), without torch.

Pipeline: read the file lazily (:mod:`.torch_format`), pick the state dict out of whatever the file
holds, find each layer's torch type, rename/re-lay-out by the KB (:mod:`.rename`), check against the
MindSpore network when one is given, and stream the arrays into the .ckpt (:mod:`.ckpt_io`).

Layer types come from, most precise first:
  1. a torch module (``--torch-net``, needs torch): exact, via ``named_modules()``;
  2. the MindSpore network (``--net``): every KB rename of each key is tried and the one naming a
     parameter of the net with the right shape wins;
  3. a heuristic on the key names and shapes (:func:`guess_layer_types`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.sourcefiles import display, regular_file_error, without_skipped
from ..i18n import _
from ..kb import KB, load_kb
from ..progress import Progress
from .ckpt_io import ckpt_size, read_ckpt, save_with_mindspore, write_ckpt
from .dataflow import embeddings_by_dataflow
from .inventory import settle
from .layers import layer_types
from .project_map import resolve as resolve_map
from .rename import INVERSE_LAYOUTS, LAYOUTS, RESHAPE_ONLY_LAYOUTS, rename_key
from .torch_format import TensorRef, load_any, save_torch_zip
from .tying import tie_layer_types, tied_groups, tied_partner_loaded

__all__ = [
    "WeightsError",
    "Assignment",
    "LoadReport",
    "ConversionResult",
    "extract_state_dict",
    "strip_wrapper_prefix",
    "read_state_dict",
    "guess_layer_types",
    "plan_conversion",
    "match_to_shapes",
    "convert_checkpoint",
    "load_net",
    "net_param_shapes",
    "torch_layer_types",
    "ckpt_to_torch",
    "guess_ms_layer_types",
]


class WeightsError(Exception):
    """A usage problem: bad file, bad factory, unknown key path."""


# ---------------------------------------------------------------------------------------------
# Finding the state dict

NESTED_KEYS = (
    "state_dict",
    "model_state_dict",
    "model",
    "module",
    "net",
    "network",
    "model_ema",
    "ema",
    "params",
    "weights",
    "state",
)
WRAPPER_PREFIXES = ("module.", "_orig_mod.", "model.")


def _is_state_dict(obj: Any) -> bool:
    return (
        isinstance(obj, Mapping)
        and bool(obj)
        and all(isinstance(k, str) and isinstance(v, TensorRef) for k, v in obj.items())
    )


MAX_TREE_NODES = 1_000_000  # containers and tensors visited in a checkpoint's object tree
# Containers nested in a checkpoint (a real one: a few levels, e.g. {"model": {"layer.weight": t}}), and
# the characters of a parameter name (real ones: under 200). A hostile file nests 100,000 dicts: without
# these bounds it took minutes of CPU and came out as a 200 KB parameter name.
MAX_TREE_DEPTH = 100
MAX_NAME_CHARS = 4096


def _too_deep() -> WeightsError:
    return WeightsError(
        _("the checkpoint's containers are nested over {depth} levels deep (corrupt or hostile)").format(
            depth=MAX_TREE_DEPTH
        )
    )


def check_names(state: Mapping[str, Any]) -> None:
    """Refuse a parameter name no model has (over MAX_NAME_CHARS characters)."""
    for name in state:
        if len(str(name)) > MAX_NAME_CHARS:
            raise WeightsError(
                _(
                    "a parameter name is {n} characters long, over the {limit} allowed (corrupt or hostile): {head}…"
                ).format(n=len(str(name)), limit=MAX_NAME_CHARS, head=str(name)[:60])
            )


def _flatten(obj: Any, prefix: str, out: dict[str, TensorRef]) -> None:
    """Every tensor under ``obj`` by dotted path. A pickle can make a container hold itself, or share
    one dict under many keys at every level (2^64 paths in a few hundred bytes): each container is
    entered once per path only if it is not already on that path, and the walk stops at a budget."""
    stack: list[tuple[Any, str, frozenset[int]]] = [(obj, prefix, frozenset())]
    visited = 0
    while stack:
        node, path, above = stack.pop()
        if len(above) > MAX_TREE_DEPTH:
            raise _too_deep()
        if len(path) > MAX_NAME_CHARS:
            check_names({path: node})
        visited += 1
        if visited > MAX_TREE_NODES:
            raise WeightsError(
                _("the checkpoint's object tree has over {MAX_TREE_NODES} entries (corrupt or hostile)").format(
                    MAX_TREE_NODES=MAX_TREE_NODES
                )
            )
        if isinstance(node, TensorRef):
            out[path] = node
        elif isinstance(node, Mapping) and id(node) not in above:
            inner = above | {id(node)}
            for k, v in reversed(list(node.items())):
                stack.append((v, f"{path}.{k}" if path else str(k), inner))


def extract_state_dict(obj: Any, key: str | None = None, _depth: int = 0) -> tuple[dict[str, TensorRef], str]:
    """The state dict inside a loaded checkpoint, and the path it was found at ("" = top level).

    ``key`` (dotted, e.g. ``"checkpoint.model"``) picks it explicitly. Otherwise: the top level if
    it is a flat name → tensor mapping, else the first of :data:`NESTED_KEYS` that holds one
    (recursively), else every tensor in the tree under its dotted path.
    """
    if key:
        cur = obj
        for part in key.split("."):
            if not isinstance(cur, Mapping) or part not in cur:
                have = list(cur)[:10] if isinstance(cur, Mapping) else type(cur).__name__
                raise WeightsError(
                    _("--key {key}: no '{part}' in the checkpoint (has {have})").format(key=key, part=part, have=have)
                )
            cur = cur[part]
        found: dict[str, TensorRef] = {}
        _flatten(cur, "", found)
        if not found:
            raise WeightsError(_("--key {key}: holds no tensors").format(key=key))
        return found, key
    if _depth == 0 and isinstance(obj, Mapping) and not obj:
        # refused, not written: MindSpore 2.10's load_checkpoint raises on a .ckpt with no entries
        raise WeightsError(
            _(
                "the checkpoint is an empty state dict (a model without parameters or buffers): nothing to "
                "convert, and MindSpore cannot load an empty .ckpt; the converted network needs no checkpoint"
            )
        )
    if _is_state_dict(obj):
        return dict(obj), ""
    if isinstance(obj, Mapping) and _depth < 8:  # a container holding itself under "model" ends here
        for k in NESTED_KEYS:
            if k in obj and isinstance(obj[k], Mapping) and obj[k] is not obj:
                inner, path = extract_state_dict(obj[k], _depth=_depth + 1)
                if inner:
                    return inner, f"{k}.{path}" if path else k
    found = {}
    _flatten(obj, "", found)
    if not found:
        raise WeightsError(_("the checkpoint holds no tensors"))
    return found, ""


def strip_wrapper_prefix(state: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """Drop a ``module.`` (DataParallel) / ``_orig_mod.`` (torch.compile) prefix every key shares."""
    stripped = ""
    state = dict(state)
    changed = True
    while changed and state:
        changed = False
        for p in ("module.", "_orig_mod."):
            if all(k.startswith(p) for k in state):
                state = {k[len(p) :]: v for k, v in state.items()}
                stripped += p
                changed = True
    return state, stripped


def read_state_dict(path: str | Path, key: str | None = None) -> tuple[dict[str, TensorRef], dict[str, str]]:
    """Read a checkpoint file (no torch) → (state dict of lazy tensors, info)."""
    path = Path(path)
    why = regular_file_error(path)  # a FIFO or a device is never opened
    if why:
        raise WeightsError(_("{path}: {why}").format(path=display(path), why=without_skipped(why)))
    obj = load_any(path)
    state, where = extract_state_dict(obj, key)
    check_names(state)
    state, stripped = strip_wrapper_prefix(state)
    return state, {"found_at": where, "stripped_prefix": stripped}


def check_output_path(src: str | Path, out: str | Path, force: bool = False) -> None:
    """Never destroy user data: OUT is not the input, not a folder or a special file, and an existing
    file is replaced only if it is a checkpoint already (or with ``force``)."""
    src_p, out_p = Path(src), Path(out)
    if out_p.exists() or out_p.is_symlink():
        try:
            same = src_p.exists() and out_p.samefile(src_p)
        except OSError:
            same = False
        if same:
            raise WeightsError(
                _("output {output} is the input checkpoint; choose another -o").format(output=display(out_p))
            )
        why = regular_file_error(out_p)
        if why:
            raise WeightsError(
                _("output {output}: {why}; choose another -o").format(output=display(out_p), why=without_skipped(why))
            )
        if not force and not _looks_like_checkpoint(out_p):
            raise WeightsError(
                _(
                    "output {output} exists and is not a checkpoint; pass --force to replace it, or choose another -o"
                ).format(output=display(out_p))
            )


def _looks_like_checkpoint(path: Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(16)
    # a MindSpore .ckpt opens with field 1 (a length-delimited Value): byte 0x0a; torch: a zip or a pickle;
    # safetensors: an 8-byte header length then "{"
    return not head or head[:1] in (b"\x0a", b"\x80") or head[:4] == b"PK\x03\x04" or head[8:9] == b"{"


# ---------------------------------------------------------------------------------------------
# Layer types

_EMB_HINT = re.compile(r"(emb|embed|embedding|wte|wpe|tok|token|word|position|pos_enc|lookup)", re.I)
_PRELU_HINT = re.compile(r"prelu", re.I)


def _leaves(shapes: Mapping[str, tuple[int, ...]]) -> dict[str, dict[str, tuple[int, ...]]]:
    groups: dict[str, dict[str, tuple[int, ...]]] = {}
    for key, shape in shapes.items():
        prefix, _, leaf = key.rpartition(".")
        groups.setdefault(prefix, {})[leaf] = tuple(shape)
    return groups


def guess_layer_types(shapes: Mapping[str, tuple[int, ...]], kb: KB) -> dict[str, str]:
    """Module prefix → torch class, guessed from key names and shapes alone.

    * ``running_mean``/``running_var``/``num_batches_tracked`` → BatchNorm2d (weight→gamma, bias→beta)
    * a 3-D ``weight`` → Conv1d (re-laid out to (out, in, 1, k)); 4-D → Conv2d; 5-D → Conv3d
    * a 2-D ``weight`` → Linear, or Embedding when the module name says so (emb, wte, token…)
      and it has no bias
    * a 1-D ``weight`` + ``bias`` → LayerNorm (gamma/beta; GroupNorm/InstanceNorm rename alike);
      a 1-D ``weight`` alone → PReLU when the name says so, else kept as it is (an RMSNorm's)
    * a module with ``self_attn`` + ``linear1`` children → TransformerEncoderLayer
      (+ ``multihead_attn`` → TransformerDecoderLayer)

    Ambiguities it cannot resolve (BatchNorm3d vs 2d, a bias-less Linear named like an embedding,
    ConvTranspose1d) are what ``--net`` / ``--torch-net`` are for.
    """
    out: dict[str, str] = {}
    groups = _leaves(shapes)
    for prefix, leaves in groups.items():
        name = prefix.rsplit(".", 1)[-1]
        guess = None
        if {"running_mean", "running_var"} & set(leaves) or "num_batches_tracked" in leaves:
            guess = "torch.nn.BatchNorm2d"
        elif "weight" in leaves:
            nd = len(leaves["weight"])
            if nd == 3:
                guess = "torch.nn.Conv1d"
            elif nd == 4:
                guess = "torch.nn.Conv2d"
            elif nd == 5:
                guess = "torch.nn.Conv3d"
            elif nd == 2:
                guess = "torch.nn.Embedding" if "bias" not in leaves and _EMB_HINT.search(name) else "torch.nn.Linear"
            elif nd == 1 and "bias" in leaves:
                guess = "torch.nn.LayerNorm"
            elif nd == 1:
                # a weight alone: PReLU by its name, else an RMSNorm (torch's, or an LLM's own class),
                # which keeps `weight` in MindSpore; a LayerNorm has a bias unless built bias=False
                guess = "torch.nn.PReLU" if _PRELU_HINT.search(name) else None
        if guess and kb.get(guess) is not None:
            out[prefix] = kb.get(guess).torch
    for prefix in list(groups):
        # prefix of the attention's parent: "<p>.self_attn" holds in_proj_weight
        if prefix.endswith("self_attn") and "in_proj_weight" in groups[prefix]:
            parent = prefix[: -len("self_attn")].rstrip(".")
            if f"{parent}.linear1".lstrip(".") in groups:
                dec = f"{parent}.multihead_attn".lstrip(".") in groups
                cls = "torch.nn.TransformerDecoderLayer" if dec else "torch.nn.TransformerEncoderLayer"
                if kb.get(cls) is not None:
                    out[parent] = kb.get(cls).torch
    return out


def _types_without_net(
    shapes: Mapping[str, tuple[int, ...]], kb: KB, layer_types: Mapping[str, str] | None, project: Any
) -> tuple[dict[str, str], set[str]]:
    """Layer types for a conversion without a network, and the keys whose type was guessed.

    ``layer_types`` (``--torch-net``) is exact. Else the layer map (``project``, a
    :class:`~.project_map.Resolved`) says what it knows, and the guesser fills in the rest."""
    if layer_types is not None:
        return dict(layer_types), set()
    guessed = embeddings_by_dataflow(shapes, guess_layer_types(shapes, kb))
    if project is None:
        return guessed, set(shapes)
    # a guess never overrides the map on the way to a key the map explains (DETR's own
    # TransformerEncoderLayer class is no torch TransformerEncoderLayer: linear1 stays linear1)
    types = {p: t for p, t in guessed.items() if p not in project.along}
    types.update(project.types)
    return types, {k for k in shapes if k not in project.certain}


def guessed_renames(
    plan: list[Assignment],
    dropped: list[str],
    shapes: Mapping[str, tuple[int, ...]],
    types: Mapping[str, str],
    unsure: set[str],
    kb: KB,
) -> list[tuple[str, str, str]]:
    """The written names that rest on a guess: a key renamed (or re-laid out) by a guessed layer type,
    or kept where the layer could be one that renames it (a 1-D ``weight`` alone: RMSNorm or PReLU;
    a 2-D ``weight`` without a bias: Linear or Embedding)."""
    groups = _leaves(shapes)
    out = []
    for a in plan:
        key = a.torch_key
        if key not in unsure:
            continue
        prefix, _, leaf = key.rpartition(".")
        leaves = groups.get(prefix, {})
        ambiguous = leaf == "weight" and "bias" not in leaves and len(shapes[key]) in (1, 2)
        if a.ms_name != key or a.layout or ambiguous:
            out.append((key, a.ms_name, types.get(prefix, "")))
    return out


def torch_layer_types(spec: str, kb: KB) -> dict[str, str]:
    """Exact layer types from a torch model factory (``module:Factory``); imports torch."""
    module = _call_factory(spec)
    return layer_types(module, kb)


# ---------------------------------------------------------------------------------------------
# Planning


@dataclass
class Assignment:
    ms_name: str
    torch_key: str
    layout: str | None
    shape: tuple[int, ...]  # after the layout change


@dataclass
class LoadReport:
    """What would not load into the network: R22's table."""

    missing: list[tuple[str, tuple[int, ...], str]] = field(default_factory=list)  # ms name, shape, likely torch key
    unexpected: list[tuple[str, tuple[int, ...], str]] = field(default_factory=list)  # torch key, shape, likely ms name
    mismatched: list[tuple[str, str, tuple[int, ...], tuple[int, ...]]] = field(
        default_factory=list
    )  # ms, torch, ms shape, torch shape
    # checkpoint entries the network builds itself (a buffer such as a causal mask): not loaded, not a
    # problem. (torch key, shape, note: same values as the network's, or how they differ)
    net_buffers: list[tuple[str, tuple[int, ...], str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.mismatched)

    def to_dict(self) -> dict:
        return {
            "net_buffers": [{"name": n, "shape": list(s), "note": note} for n, s, note in self.net_buffers],
            "missing": [{"name": n, "shape": list(s), "likely": m} for n, s, m in self.missing],
            "unexpected": [{"name": n, "shape": list(s), "likely": m} for n, s, m in self.unexpected],
            "shape_mismatch": [
                {"name": n, "torch_key": t, "ms_shape": list(a), "torch_shape": list(b)}
                for n, t, a, b in self.mismatched
            ],
        }


def _shape_after(shape: tuple[int, ...], layout: str | None) -> tuple[int, ...]:
    if not layout:
        return tuple(shape)
    dummy = np.broadcast_to(np.zeros((), np.uint8), shape)
    try:
        return tuple(LAYOUTS[layout](dummy).shape)
    except (IndexError, ValueError):
        return ()  # the layout does not apply to this rank: never a match


def plan_conversion(
    shapes: Mapping[str, tuple[int, ...]], layer_types: Mapping[str, str], kb: KB
) -> tuple[list[Assignment], list[str]]:
    """Rename every key by the layer types; returns (assignments, keys the KB drops)."""
    plan, dropped = [], []
    for key, shape in shapes.items():
        new, layout = rename_key(key, layer_types, kb)
        if new is None:
            dropped.append(key)
            continue
        plan.append(Assignment(new, key, layout, _shape_after(tuple(shape), layout)))
    return plan, dropped


def _kb_alternatives(kb: KB) -> dict[str, list[tuple[str | None, str | None]]]:
    """torch leaf path (``weight``, ``linear1.weight``) → every (MS leaf path, layout) the KB knows."""
    alts: dict[str, list[tuple[str | None, str | None]]] = {}
    for e in kb:
        if e.kind != "class" or not e.params:
            continue
        for leaf, new in e.params.items():
            cand = (new, e.layout.get(leaf))
            if cand not in alts.setdefault(leaf, []):
                alts[leaf].append(cand)
    return alts


def _likely(name: str, shape: tuple[int, ...], pool: Mapping[str, tuple[int, ...]]) -> str:
    if not pool:
        return ""
    same = [n for n, s in pool.items() if tuple(s) == tuple(shape)]
    for cands in (same, list(pool)):
        hit = difflib.get_close_matches(name, cands, n=1, cutoff=0.3)
        if hit:
            return hit[0]
    return same[0] if len(same) == 1 else ""


def _candidate_names(
    key: str, new: str | None, layout: str | None, alts: Mapping[str, list[tuple[str | None, str | None]]]
) -> list[tuple[str | None, str | None]]:
    """Names a torch key may take in MindSpore, best first: its rename, every KB rename of a suffix, itself."""
    candidates: list[tuple[str | None, str | None]] = [(new, layout)]
    parts = key.split(".")
    for i in range(len(parts) - 1, -1, -1):
        head, rest = ".".join(parts[:i]), ".".join(parts[i:])
        for new_rest, lay in alts.get(rest, []):
            candidates.append((None, None) if new_rest is None else (f"{head}.{new_rest}" if head else new_rest, lay))
    candidates.append((key, None))
    return candidates


def match_to_shapes(
    shapes: Mapping[str, tuple[int, ...]],
    ms_shapes: Mapping[str, tuple[int, ...]],
    kb: KB,
    layer_types: Mapping[str, str] | None = None,
    tied: list[list[str]] | None = None,
) -> tuple[list[Assignment], list[str], LoadReport]:
    """Map torch keys onto a MindSpore network's parameters (name → shape).

    For each key the rename by ``layer_types`` (guessed when not given) is tried first; if it does
    not name a net parameter of the right shape, every other KB rename of the key's leaf is tried.
    ``tied``: groups of keys holding one tensor (weight tying); a member the network does not name
    is loaded through its partner, so it is not unexpected.
    """
    types = dict(layer_types) if layer_types is not None else guess_layer_types(shapes, kb)
    alts = _kb_alternatives(kb)
    plan: list[Assignment] = []
    dropped: list[str] = []
    taken: set[str] = set()
    unmatched: dict[str, tuple[int, ...]] = {}
    first_choice: dict[str, Assignment] = {}
    for key, shape in shapes.items():
        shape = tuple(shape)
        new, layout = rename_key(key, types, kb)
        parts = key.split(".")
        chosen = None
        for name, lay in _candidate_names(key, new, layout, alts):
            if name is None:
                continue
            if (
                name in ms_shapes
                and name not in taken
                and _shape_after(shape, lay) == tuple(ms_shapes[name])
                and (lay is None or _shape_after(shape, lay) != ())
            ):
                chosen = Assignment(name, key, lay, tuple(ms_shapes[name]))
                break
        if chosen is not None:
            plan.append(chosen)
            taken.add(chosen.ms_name)
            continue
        leaf_alts = alts.get(parts[-1], [])
        if new is None or (leaf_alts and all(n is None for n, _ in leaf_alts)):
            dropped.append(key)  # the KB drops it (num_batches_tracked)
            continue
        unmatched[key] = shape
        if new is not None:
            first_choice[key] = Assignment(new, key, layout, _shape_after(shape, layout))
    for key in tied_partner_loaded(tied or [], {a.torch_key for a in plan}):
        unmatched.pop(key, None)
    report = LoadReport()
    missing = {n: tuple(s) for n, s in ms_shapes.items() if n not in taken}
    for key in unmatched:
        fc = first_choice.get(key)
        if fc is not None and fc.ms_name in missing:
            report.mismatched.append((fc.ms_name, key, missing[fc.ms_name], fc.shape))
    mism_ms = {m[0] for m in report.mismatched}
    mism_t = {m[1] for m in report.mismatched}
    converted_unused = {
        first_choice[k].ms_name if k in first_choice else k: shapes[k] for k in unmatched if k not in mism_t
    }
    for n, s in missing.items():
        if n not in mism_ms:
            likely = _likely(n, s, converted_unused)
            report.missing.append((n, s, likely))
    free_ms = {n: s for n, s in missing.items() if n not in mism_ms}
    for key in unmatched:
        if key in mism_t:
            continue
        conv = first_choice[key].ms_name if key in first_choice else key
        report.unexpected.append((key, tuple(shapes[key]), _likely(conv, tuple(shapes[key]), free_ms)))
    return plan, dropped, report


# ---------------------------------------------------------------------------------------------
# Networks


def _import_spec(spec: str) -> Any:
    from ..factory import SpecError, load_object

    try:
        return load_object(spec, "net")
    except SpecError as exc:
        raise WeightsError(str(exc)) from exc


def _call_factory(spec: str) -> Any:
    factory = _import_spec(spec)
    if not callable(factory):
        return factory
    try:
        return factory()
    except Exception as exc:
        raise WeightsError(
            _("{spec}: calling the factory raised {type}: {error}").format(
                spec=spec, type=type(exc).__name__, error=str(exc)[:200]
            )
        ) from exc


def load_net(spec: str) -> Any:
    """Build the MindSpore network from ``module:Factory`` / ``path.py:Factory``."""
    import mindspore as ms

    net = _call_factory(spec)
    if not isinstance(net, ms.nn.Cell):
        raise WeightsError(
            _("{spec} gave a {type}, not a mindspore.nn.Cell").format(spec=spec, type=type(net).__name__)
        )
    return net


def net_param_shapes(net: Any) -> dict[str, tuple[int, ...]]:
    return {name: tuple(p.shape) for name, p in net.parameters_and_names()}


def _net_buffer_values(net: Any) -> dict[str, np.ndarray]:
    """The network's buffers (``register_buffer``; not Parameters, not in a .ckpt) by dotted name."""
    named = getattr(net, "named_buffers", None)
    if named is None:
        return {}
    return {name: np.asarray(t.asnumpy()) for name, t in named()}


def classify_net_buffers(report: LoadReport, net: Any, state: Mapping[str, TensorRef]) -> None:
    """Move checkpoint entries the network builds itself out of ``unexpected`` (issue 13: a causal
    mask from ``register_buffer(torch.tril(...))`` is rebuilt by the net, not loaded from the file)."""
    buffers = _net_buffer_values(net)
    keep = []
    for key, shape, likely in report.unexpected:
        mine = buffers.get(key)
        if mine is None or tuple(mine.shape) != tuple(shape):
            keep.append((key, shape, likely))
            continue
        theirs = state[key].numpy()
        numeric = state[key].dtype != "bfloat16" and theirs.dtype.kind in "biuf" and mine.dtype.kind in "biuf"
        same = numeric and np.array_equal(theirs.astype(np.float64), mine.astype(np.float64))
        note = (
            "the network builds it itself: same values"
            if same
            else ("the network builds it itself, with other values than the checkpoint's (the network's are used)")
        )
        report.net_buffers.append((key, tuple(shape), note))
    report.unexpected = keep


# ---------------------------------------------------------------------------------------------
# The conversion


@dataclass
class ConversionResult:
    written: bool
    output: str
    params: int = 0
    bytes: int = 0
    dropped: list[str] = field(default_factory=list)
    report: LoadReport | None = None
    info: dict[str, str] = field(default_factory=dict)
    layer_types: dict[str, str] = field(default_factory=dict)
    verified: bool | None = None  # loaded back into the net: every entry loaded, nothing unreported left out
    not_loaded: list[str] = field(default_factory=list)  # net parameters that kept their initial values
    tensors: int = 0  # in the checkpoint's state dict: params + dropped + left out (report)
    forced: bool = False  # written although some parameters would not load (--force)
    tied: list[list[str]] = field(default_factory=list)  # keys sharing one tensor (weight tying)
    # complex tensors (a RoPE table): MindSpore's load_checkpoint cannot read them, so not written
    complex_left_out: list[str] = field(default_factory=list)
    # renames (or names kept) by a layer type guessed from key names and shapes: (torch key, ms name, type)
    guessed: list[tuple[str, str, str]] = field(default_factory=list)
    project_root: str | None = None  # the model's class in the layer map, when one was used
    # the converted project found by ``find_project`` (it explains every key), or the ones that
    # explain every key but disagree (then none was used)
    found: Any = None
    # MindSpore parameters the torch layer lacks (affine=False norms), written with the neutral values
    filled: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Written and usable: with ``force`` the reported gaps were accepted; without, there were none."""
        return self.written and (self.report is None or self.report.ok or self.forced) and self.verified is not False


def _materialize(plan: list[Assignment], state: Mapping[str, TensorRef], copy_ranges: bool = True) -> Iterator[tuple]:
    """(ms name, array view — or just its shape —, dtype, file range or None) per parameter.

    Nothing is read here. When the tensor's bytes in the source file are exactly the output's
    bytes (C-contiguous, little-endian, and no layout change or one that only adds/drops unit axes,
    as conv1d's ``w[:, :, None, :]``), only the shape and the file range are passed on and the
    writer copies the bytes file → file.
    """
    for a in plan:
        ref = state[a.torch_key]
        rng = ref.file_range() if copy_ranges else None
        if rng is not None and (not a.layout or a.layout in RESHAPE_ONLY_LAYOUTS):
            yield a.ms_name, a.shape, ref.dtype, rng
            continue
        arr = ref.numpy()
        if a.layout:
            arr = LAYOUTS[a.layout](arr)
        yield a.ms_name, arr, ref.dtype, None


def convert_checkpoint(
    src: str | Path,
    out: str | Path,
    *,
    kb: KB | None = None,
    net: Any = None,
    layer_types: Mapping[str, str] | None = None,
    key: str | None = None,
    writer: str = "stream",
    force: bool = False,
    verify: bool = True,
    progress: Progress | None = None,
    project: tuple[Any, ...] | None = None,
    find_project: Callable[[Mapping[str, tuple[int, ...]]], Any] | None = None,
) -> ConversionResult:
    """Convert a torch checkpoint file into a MindSpore .ckpt.

    ``net``: a MindSpore Cell (or a ``module:Factory`` spec) to map onto and check against; if any
    of its parameters would stay unloaded (or a torch key unused) nothing is written unless
    ``force``. ``writer``: ``"stream"`` (default; one tensor in memory at a time) or
    ``"mindspore"`` (``mindspore.save_checkpoint`` from a dict of numpy arrays). ``progress``: told
    each phase and the tensors/bytes written. ``project``: the converted project's layer map (its
    ``classes``) and the model's class in it (``""``: found), which say each layer's type, and
    optionally its inventory (:func:`~.inventory.settle`); without a net, what neither it nor ``layer_types``
    says is guessed and listed in ``result.guessed``. ``find_project``: without a net, a layer map or
    ``layer_types``, called with the checkpoint's shapes; a :class:`~.project_map.Found` it returns with
    ``classes`` is used as ``project`` (and kept in ``result.found``).
    """
    kb = kb or load_kb()
    progress = progress or Progress()
    check_output_path(src, out, force=True)  # the CLI checks the rest, with the user's --force
    with progress.phase(_("reading the checkpoint")):
        state, info = read_state_dict(src, key)
    shapes = {k: v.shape for k, v in state.items()}
    report = None
    tied = tied_groups(state)
    guessed: set[str] = set()
    resolved: Any = None
    found: Any = None
    if isinstance(net, str):
        with progress.phase(_("building the MindSpore network")):
            net = load_net(net)
    if net is not None:
        plan, dropped, report = match_to_shapes(shapes, net_param_shapes(net), kb, layer_types, tied)
        _shared_names(net, plan)
        filled = _fill_absent(report, state, shapes, kb)
        plan += filled
        classify_net_buffers(report, net, state)
        types = dict(layer_types) if layer_types is not None else guess_layer_types(shapes, kb)
    else:
        found = find_project(shapes) if find_project and project is None and layer_types is None else None
        if found is not None and found.classes:
            project = (found.classes, found.root, found.inventory)
        plan, dropped, types, guessed, resolved = _plan_without_net(shapes, kb, layer_types, project, tied)
    # MindSpore 2.10's load_checkpoint fails on the whole file ("'Complex64'") for one complex tensor;
    # such a tensor is a buffer the network computes (torch.polar), never a trained parameter.
    complex_keys = [a.torch_key for a in plan if state[a.torch_key].dtype.startswith("complex")]
    plan = [a for a in plan if not state[a.torch_key].dtype.startswith("complex")]
    result = ConversionResult(False, str(out), dropped=dropped, report=report, info=info, layer_types=types, tied=tied)
    if net is None:
        result.found = found
        result.guessed = guessed_renames(plan, dropped, shapes, types, guessed, kb)
        result.project_root = resolved.root if resolved is not None else None
    result.tensors, result.complex_left_out = len(shapes), complex_keys
    result.filled = [a.ms_name for a in plan if a.torch_key.startswith(_FILL)]
    if report is not None and not report.ok and not force:
        return result
    result.bytes = _write(plan, state, out, writer, progress)
    result.written, result.params = True, len(plan)
    result.forced = force
    if net is not None and verify:
        with progress.phase(_("loading the file back into the network")):
            result.verified, result.not_loaded = _load_back(net, out, report)
    return result


def _plan_without_net(
    shapes: Mapping[str, tuple[int, ...]],
    kb: KB,
    layer_types: Mapping[str, str] | None,
    project: tuple[Any, ...] | None,
    tied: list[list[str]],
) -> tuple[list[Assignment], list[str], dict[str, str], set[str], Any]:
    """(plan, dropped keys, layer types, keys whose type was guessed, what the layer map said)."""
    resolved = (
        resolve_map(list(shapes), project[0], project[1], shapes)
        if project is not None and layer_types is None
        else None
    )
    types, guessed = _types_without_net(shapes, kb, layer_types, resolved)
    if resolved is not None and project is not None and len(project) > 2:
        # the layer types the project builds anywhere: where they all agree, no guess is left
        settle(shapes, kb, types, guessed, project[2], project[0])
    types, aliases = tie_layer_types(tied, shapes, types, kb)
    plan, dropped = plan_conversion(shapes, types, kb)
    named = {a.ms_name for a in plan}
    plan += [Assignment(n, k, None, tuple(shapes[k])) for n, k in aliases if n not in named]
    if resolved is not None:
        # buffers: the converted Cell holds them as tensors, not Parameters; a borrowed tied key: the
        # network holds its Parameter once, under the owner's name
        # (a tie the source makes only under a flag, ``if tie_weights:``, holds where the checkpoint's
        # tensors share their storage)
        shared = {k for group in tied for k in group}
        gone = resolved.buffers | (resolved.borrowed & shared)
        dropped += [a.torch_key for a in plan if a.torch_key in gone]
        plan = [a for a in plan if a.torch_key not in gone]
    seen: dict[str, str] = {}
    for a in plan:
        if a.ms_name in seen:
            raise WeightsError(
                _("{key} and {other} both map to {name}").format(key=a.torch_key, other=seen[a.ms_name], name=a.ms_name)
            )
        seen[a.ms_name] = a.torch_key
    return plan, dropped, types, guessed, resolved


def _shared_names(net: Any, plan: list[Assignment]) -> None:
    """Tied weights: one Parameter held by two cells is listed under the first path that reaches it
    (``lut.embedding_table``) but named after the cell that made it (``lm_head.weight``), and
    MindSpore's loader asks for that name (a strict load takes no other): the entry is renamed so."""
    named = {a.ms_name: a for a in plan}
    for path, param in net.parameters_and_names():
        a = named.get(path)
        if a is None or param.name == path or param.name in named or _attr_path(net, param.name) is not param:
            continue
        a.ms_name = param.name


_FILL = "<neutral>"


def _neutral_leaves(kb: KB) -> dict[str, float]:
    """MindSpore leaf → the value that makes the layer act as torch's without it: a norm's scale
    (what torch's ``weight`` becomes: ``gamma``) is 1, its shift (``bias`` → ``beta``) is 0."""
    out: dict[str, float] = {}
    for e in kb:
        scale, shift = e.params.get("weight"), e.params.get("bias")
        if e.kind == "class" and scale and shift and scale != "weight":
            out[scale], out[shift] = 1.0, 0.0
    return out


def _fill_absent(report: LoadReport, state: dict[str, TensorRef], shapes: Mapping, kb: KB) -> list[Assignment]:
    """Missing ``gamma``/``beta`` of a layer the checkpoint has no ``weight``/``bias`` for at all (torch's
    InstanceNorm2d(n) → GroupNorm(n, n, affine=False), a norm built affine=False): written as 1 and 0,
    so a strict load succeeds and the layer computes what torch's does."""
    from .torch_format import Storage

    neutral = _neutral_leaves(kb)
    keep, out = [], []
    for name, shape, likely in report.missing:
        prefix, _, leaf = name.rpartition(".")
        has = any((f"{prefix}.{t}" if prefix else t) in shapes for t in ("weight", "bias"))
        if leaf not in neutral or has:
            keep.append((name, shape, likely))
            continue
        arr = np.full(shape, neutral[leaf], np.float32)
        storage = Storage("float32", _FILL + name, int(arr.size), buffer=_bytes_of(arr))
        stride = tuple(int(s // 4) for s in arr.strides)
        state[_FILL + name] = TensorRef(storage, 0, tuple(shape), stride)
        out.append(Assignment(name, _FILL + name, None, tuple(shape)))
    report.missing = keep
    return out


def _bytes_of(arr: np.ndarray) -> Callable[[], memoryview]:
    data = memoryview(arr.tobytes())
    return lambda: data


def _attr_path(net: Any, dotted: str) -> Any:
    obj = net
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _counted(items: Iterator[tuple], plan: list[Assignment], state: Mapping[str, TensorRef], progress: Progress):
    """``items`` as they are written, with the tensors and bytes done told to ``progress``."""
    total = sum(state[a.torch_key].nbytes for a in plan)
    phase, done = _("writing {n} tensors").format(n=len(plan)), 0
    progress.update_bytes(phase, 0, total, _("{done}/{n} tensors").format(done=0, n=len(plan)))
    for i, (a, item) in enumerate(zip(plan, items), 1):
        yield item  # the writer asks for the next one once this one is written
        done += state[a.torch_key].nbytes
        progress.update_bytes(phase, done, total, _("{done}/{n} tensors").format(done=i, n=len(plan)))
    progress.finish(phase)


def _write(plan: list[Assignment], state: Mapping[str, TensorRef], out: str | Path, writer: str, progress: Progress):
    """Write the planned tensors with the chosen writer; the file's size in bytes."""
    if writer == "stream":
        size = ckpt_size((a.ms_name, a.shape, state[a.torch_key].dtype) for a in plan)
        return write_ckpt(_counted(_materialize(plan, state), plan, state, progress), out, size_hint=size)
    if writer == "mindspore":
        items = _counted(_materialize(plan, state, copy_ranges=False), plan, state, progress)
        save_with_mindspore({n: (a, d) for n, a, d, _ in items}, out)
        return Path(out).stat().st_size
    raise WeightsError(_("unknown writer {writer!r} (stream | mindspore)").format(writer=writer))


def _load_back(net: Any, out: str | Path, report: LoadReport | None) -> tuple[bool, list[str]]:
    """Load the written file into the net: every entry must load, and only parameters reported missing
    (or mismatched, hence not written) may stay unloaded."""
    import mindspore as ms

    try:
        not_loaded, ckpt_not_loaded = ms.load_param_into_net(net, ms.load_checkpoint(str(out)))
    except (RuntimeError, ValueError, TypeError) as exc:
        return False, [f"{type(exc).__name__}: {str(exc)[:200]}"]
    expected = {n for n, _, _ in report.missing} | {m[0] for m in report.mismatched} if report else set()
    # MindSpore loads by structural name but lists as "not loaded" every entry whose Parameter.name differs
    # (``self.backbone.fc = nn.Dense(...)`` names the new parameters "fc.weight"): only real strays count.
    structural = set(net_param_shapes(net))
    unexpected_left = [n for n in not_loaded if n not in expected] + [n for n in ckpt_not_loaded if n not in structural]
    # what went wrong, when something did: net parameters left out or file entries the net took no place for
    return not unexpected_left, unexpected_left or list(not_loaded)


# ---------------------------------------------------------------------------------------------
# The way back: .ckpt → torch state dict file


def guess_ms_layer_types(shapes: Mapping[str, tuple[int, ...]], kb: KB) -> dict[str, str]:
    """Prefix → torch class from MindSpore parameter names (gamma/beta, moving_mean, embedding_table…).

    A Conv1d cannot be told from a Conv2d with a (1, k) kernel by its MindSpore weight: pass
    ``layer_types`` (e.g. from ``--torch-net``) to get its 3-D torch layout back.
    """
    out: dict[str, str] = {}
    for prefix, leaves in _leaves(shapes).items():
        guess = None
        if "moving_mean" in leaves or "moving_variance" in leaves:
            guess = "torch.nn.BatchNorm2d"
        elif "gamma" in leaves or "beta" in leaves:
            guess = "torch.nn.LayerNorm"
        elif "embedding_table" in leaves:
            guess = "torch.nn.Embedding"
        elif set(leaves) == {"w"}:
            guess = "torch.nn.PReLU"
        if guess and kb.get(guess) is not None:
            out[prefix] = kb.get(guess).torch
    return out


def _inverse_key(name: str, layer_types: Mapping[str, str], kb: KB) -> tuple[str, str | None]:
    parts = name.split(".")
    for i in range(len(parts) - 1):
        outer, rest = ".".join(parts[:i]), ".".join(parts[i:])
        entry = kb.get(layer_types[outer]) if outer in layer_types else None
        if entry is not None:
            for old, new in entry.params.items():
                if new == rest and "." in old:
                    return (f"{outer}.{old}" if outer else old), entry.layout.get(old)
    prefix, _, leaf = name.rpartition(".")
    entry = kb.get(layer_types.get(prefix, ""))
    if entry is not None:
        for old, new in entry.params.items():
            if new == leaf:
                return (f"{prefix}.{old}" if prefix else old), entry.layout.get(old)
    return name, None


def ckpt_to_torch(
    src: str | Path, out: str | Path, *, kb: KB | None = None, layer_types: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A MindSpore .ckpt → a torch state-dict file (``.pth`` zip format, or ``.safetensors``), no torch.

    Returns ``{torch key: ms name}``.
    """
    kb = kb or load_kb()
    check_output_path(src, out, force=True)
    arrays = read_ckpt(src)
    types = (
        dict(layer_types)
        if layer_types is not None
        else guess_ms_layer_types({k: v[0].shape for k, v in arrays.items()}, kb)
    )
    state: dict[str, Any] = {}
    mapping: dict[str, str] = {}
    for name, (arr, dtype) in arrays.items():
        key, layout = _inverse_key(name, types, kb)
        if layout:
            arr = INVERSE_LAYOUTS[layout](arr)
        state[key] = (dtype, arr) if dtype == "bfloat16" else arr
        mapping[key] = name
    out = Path(out)
    if out.suffix == ".safetensors":
        from safetensors.numpy import save_file

        from .torch_format import bf16_to_float32

        plain = {}
        for k, v in state.items():
            if isinstance(v, tuple):  # safetensors.numpy cannot write bf16: widen to float32
                v = bf16_to_float32(v[1])
            plain[k] = np.ascontiguousarray(v)
        save_file(plain, str(out))
    else:
        save_torch_zip(state, out)
    return mapping
