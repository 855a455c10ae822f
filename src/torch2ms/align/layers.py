"""Layer-by-layer analysis in three separate steps, per paired call:

* :func:`measure` — numbers: the output error, a leaf's input error, and the leaf's local error (the
  MindSpore cell replayed on torch's own input), with the thresholds they are judged by;
* :func:`classify` — is it a divergence, of which kind, and whose code is at fault (the layer, or a
  container whose forward code fed it a wrong input);
* :func:`explain` — the :class:`Divergence` with a hint naming what differs.

:func:`analyze` walks torch's calls in order and stops judging at the first divergence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..i18n import _
from . import metrics
from .diagnose import container_hint, describe, transposed_weight_hint
from .matching import match_events
from .metrics import Diff
from .rows import Divergence, LayerRow, finite_or_none


@dataclass
class Recording:
    """One side's hooked forward: call events (post-order) and the arrays they refer to by key."""

    events: list[dict[str, Any]]
    arrays: Mapping[str, np.ndarray]
    prefix: str = ""  # the torch side's arrays carry "fwd/" or "post/"

    def outputs(self, i: int) -> list[np.ndarray]:
        return [self.arrays[self.prefix + key] for key in self.events[i]["outputs"]]

    def input_arrays(self, i: int) -> list[np.ndarray | None]:
        """Positional inputs of call ``i``: an array, or None where the argument was not a tensor."""
        items = self.events[i].get("inputs") or []
        return [self.arrays[self.prefix + it["array"]] if "array" in it else None for it in items]

    def replay_args(self, i: int) -> list[Any] | None:
        """The leaf call's arguments again, or None when some were not captured."""
        event = self.events[i]
        items = event.get("inputs")
        if not event["leaf"] or items is None or any("other" in it for it in items):
            return None
        return [self.arrays[self.prefix + it["array"]] if "array" in it else it["value"] for it in items]


@dataclass
class Context:
    """What every step reads: both recordings, the MindSpore net, torch's module facts, the KB."""

    torch: Recording
    ms: Recording
    net: Any
    torch_meta: Mapping[str, Any]
    converted: Mapping[str, np.ndarray]  # torch weights in MindSpore names (for the transposed-weight test)
    kb: Any
    unloaded: list[str]
    phase: str  # "forward" or "after training"
    replay_all: bool = False
    floor: float = 0.0  # no threshold below this (after training: the weights have drifted)
    pairs: dict[int, int] = field(default_factory=dict)


@dataclass
class Measurement:
    output: Diff | None
    input: Diff | None  # a leaf's input, torch vs MindSpore
    local_threshold: float
    chain_threshold: float
    replayable: bool
    local: Diff | None = None
    local_error: str | None = None
    local_out: list[np.ndarray] | None = None

    @property
    def threshold(self) -> float:
        return self.local_threshold if self.replayable else self.chain_threshold


@dataclass
class Finding:
    kind: str  # shape | non-finite | input | error | values
    detail: str
    layer: str  # whose code is at fault
    own_call: bool = True  # False: a container's forward code, before it calls ``child``
    child: str = ""


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------
def input_diff(ctx: Context, i: int, j: int) -> Diff | None:
    """torch call i's tensor inputs vs MindSpore call j's; None when they cannot be paired."""
    refs, gots = ctx.torch.input_arrays(i), ctx.ms.input_arrays(j)
    if len(refs) != len(gots):
        return None
    pairs = [(r, g) for r, g in zip(refs, gots) if r is not None]
    if not pairs:
        return None
    ref_arrays, got_arrays = [r for r, _ in pairs], [g for _, g in pairs if g is not None]
    if len(got_arrays) != len(ref_arrays):  # a tensor on the torch side, something else on MindSpore's
        return None
    return metrics.diff_all(ref_arrays, got_arrays)


def _needs_replay(ctx: Context, out: Diff | None, local_threshold: float) -> bool:
    # Below this layer's noise threshold the local error cannot be larger, and a replay costs a
    # forward's worth: replay only above it (or when asked).
    return ctx.replay_all or out is None or not out.shape_ok or bool(out.nonfinite) or out.rel > local_threshold


def measure(ctx: Context, i: int, j: int, baseline: float) -> Measurement:
    """The numbers for torch call i and MindSpore call j; ``baseline``: the worst error before them."""
    from .ms_side import replay_leaf

    event = ctx.torch.events[i]
    out = metrics.diff_all(ctx.torch.outputs(i), ctx.ms.outputs(j))
    args = ctx.torch.replay_args(i)
    m = Measurement(
        output=out,
        input=input_diff(ctx, i, j) if event["leaf"] else None,
        local_threshold=max(metrics.local_threshold(event.get("noise_rel")), ctx.floor),
        chain_threshold=max(metrics.chain_threshold(baseline), ctx.floor),
        replayable=args is not None,
    )
    if args is not None and _needs_replay(ctx, out, m.local_threshold):
        m.local_out, m.local_error = replay_leaf(ctx.net, ctx.ms.events[j]["name"], args)
        if m.local_out is not None:
            m.local = metrics.diff_all(ctx.torch.outputs(i), m.local_out)
    return m


def fill_row(row: LayerRow, m: Measurement, ms_event: Mapping[str, Any]) -> None:
    row.ms_name, row.ms_type = ms_event["name"], ms_event["type"]
    d = m.output
    if d is not None:
        row.max_abs, row.rel, row.max_rel = finite_or_none(d.max_abs), finite_or_none(d.rel), finite_or_none(d.max_rel)
        row.cosine, row.within = finite_or_none(d.cosine), finite_or_none(d.within)
        row.nonfinite, row.shape_ok = d.nonfinite, d.shape_ok
        if not d.shape_ok:
            row.note = _shape_note(d)
    if m.input is not None:
        row.in_rel = finite_or_none(m.input.rel) if m.input.shape_ok else None
    if m.local is not None:
        row.local_rel = finite_or_none(m.local.rel) if m.local.shape_ok and not m.local.nonfinite else None
    row.threshold = m.threshold


# ---------------------------------------------------------------------------------------------
# Classifying
# ---------------------------------------------------------------------------------------------
def _shape_note(d: Diff) -> str:
    return _("shape torch {torch} vs MindSpore {ms}").format(torch=d.ref_shape, ms=d.got_shape)


def _input_differs(d: Diff | None, threshold: float) -> bool:
    return d is not None and (not d.shape_ok or d.nonfinite.startswith("MindSpore") or d.rel > threshold)


def _enclosing_call(events: list[dict[str, Any]], i: int, name: str) -> int | None:
    """The call of module ``name`` that encloses call i (post-order: the first one after it)."""
    start = events[i].get("start", 0)
    return next(
        (k for k in range(i + 1, len(events)) if events[k]["name"] == name and events[k].get("start", 0) <= start), None
    )


def _ancestors(name: str) -> list[str]:
    parts = name.split(".") if name else []
    return [".".join(parts[:k]) for k in range(len(parts) - 1, -1, -1)]


def culprit(ctx: Context, i: int, threshold: float) -> tuple[str, str]:
    """(container, child): the innermost container around call i whose own inputs still match — its
    forward code made the wrong input — and its child on the way to call i."""
    name = ctx.torch.events[i]["name"]
    child = name
    for ancestor in _ancestors(name):
        k = _enclosing_call(ctx.torch.events, i, ancestor)
        j = ctx.pairs.get(k) if k is not None else None
        if k is None or j is None or not _input_differs(input_diff(ctx, k, j), threshold):
            return ancestor, child
        child = ancestor
    return "", child


def _input_finding(ctx: Context, i: int, d: Diff, threshold: float) -> Finding:
    name = ctx.torch.events[i]["name"]
    container, child = culprit(ctx, i, threshold)
    what = _shape_note(d) if not d.shape_ok else d.nonfinite or f"err/scale {d.rel:.2e}"
    detail = _(
        "the input of {name} already differs ({what}) while every layer before it matched: the bug is in "
        "the forward code of {container} before it calls {child}"
    ).format(name=name, what=what, container=container or _("the model"), child=child)
    return Finding("input", detail, container, own_call=False, child=child)


def _local_finding(name: str, m: Measurement) -> Finding | None:
    local = m.local
    if m.local_error is not None:
        return Finding(
            "error", _("the MindSpore cell raised on torch's input: {error}").format(error=m.local_error), name
        )
    if local is None:
        return None
    if not local.shape_ok:
        return Finding("shape", _("on torch's input: {shape}").format(shape=_shape_note(local)), name)
    if local.nonfinite.startswith("MindSpore"):
        return Finding("non-finite", local.nonfinite, name)
    if local.rel > m.threshold:
        detail = _(
            "on torch's own input the layer is off by {rel:.2e} of its output scale "
            "(float32 noise threshold {threshold:.1e}; cosine {cosine:.6f})"
        ).format(rel=local.rel, threshold=m.threshold, cosine=local.cosine)
        return Finding("values", detail, name)
    return None


def classify(ctx: Context, i: int, m: Measurement, baseline: float) -> Finding | None:
    """None when call i is within noise; else the kind of divergence and whose code is at fault."""
    name = ctx.torch.events[i]["name"]
    out = m.output
    if out is None or not out.shape_ok:
        note = _shape_note(out) if out else _("outputs differ in number")
        return Finding("shape", note, name)
    if out.nonfinite.startswith("MindSpore"):
        return Finding("non-finite", out.nonfinite, name)
    if m.input is not None and _input_differs(m.input, m.chain_threshold):
        return _input_finding(ctx, i, m.input, m.chain_threshold)
    if m.local_error is not None or m.local is not None:
        return _local_finding(name, m)
    if out.rel > m.threshold:
        detail = _(
            "error jumps to {rel:.2e} of the output scale (everything before ≤ {baseline:.1e}): "
            "this layer's own forward code differs"
        ).format(rel=out.rel, baseline=baseline)
        return Finding("values", detail, name)
    return None


# ---------------------------------------------------------------------------------------------
# Explaining
# ---------------------------------------------------------------------------------------------
def _ms_cell(ctx: Context, path: str) -> Any:
    from .ms_side import cell_at

    try:
        return cell_at(ctx.net, path)
    except KeyError:
        return None


def _transposed_hint(ctx: Context, i: int, m: Measurement) -> str | None:
    name = ctx.torch.events[i]["name"]
    weight = ctx.converted.get(f"{name}.weight" if name else "weight")
    bias = ctx.converted.get(f"{name}.bias" if name else "bias")
    inputs = ctx.torch.input_arrays(i)
    x = inputs[0] if inputs else None
    local = m.local_out[0] if m.local_out else None
    return transposed_weight_hint(ctx.torch.events[i].get("torch_class"), x, local, weight, bias)


def explain(ctx: Context, i: int, j: int, finding: Finding, m: Measurement, missing_since: list[str]) -> Divergence:
    """The first divergence, with a hint: what differs in the layer's settings, else the KB's pitfall."""
    event = ctx.torch.events[i]
    layer = finding.layer
    cell = _ms_cell(ctx, ctx.ms.events[j]["name"] if finding.own_call else layer)
    extra = []
    if finding.own_call and (hint := _transposed_hint(ctx, i, m)):
        extra.append(hint)
    if missing_since:
        extra.append(
            _("torch layer(s) {layers} ran just before and have no MindSpore counterpart: missing in the port?").format(
                layers=", ".join(missing_since)
            )
        )
    prefix = f"{layer}." if layer else ""
    unloaded = [u for u in ctx.unloaded if u.startswith(prefix)] if layer or finding.own_call else []
    if unloaded:
        extra.append(_("parameters not loaded into this layer: {names}").format(names=", ".join(unloaded[:5])))
    classes = ctx.torch_meta.get("module_classes", {})
    torch_class = event.get("torch_class") if finding.own_call else None
    if finding.own_call:
        attrs = ctx.torch_meta.get("module_attrs", {}).get(layer, {})
        hint = describe(finding.kind, finding.detail, torch_class, attrs, cell, ctx.kb, extra)
    else:
        hint = container_hint(layer, classes.get(layer, "?"), cell, finding.child, extra)
    return Divergence(
        layer=layer,
        kind=finding.kind,
        detail=finding.detail,
        phase=ctx.phase,
        index=i,
        call=event["call"] if finding.own_call else 0,
        torch_type=event["type"] if finding.own_call else classes.get(layer, "?"),
        torch_class=torch_class,
        ms_type=type(cell).__name__ if cell is not None else None,
        hint=hint,
    )


# ---------------------------------------------------------------------------------------------
# The walk
# ---------------------------------------------------------------------------------------------
@dataclass
class Analysis:
    rows: list[LayerRow]
    first: Divergence | None
    alignment: str  # how calls were paired: "name" or "name+order"
    missing: list[str]  # torch modules with no MindSpore call
    extra: list[str]  # MindSpore cells with no torch call


def new_row(i: int, event: Mapping[str, Any]) -> LayerRow:
    return LayerRow(
        index=i,
        name=event["name"],
        call=event["call"],
        torch_type=event["type"],
        leaf=event["leaf"],
        shape=(event["out_shapes"] or [None])[0],
        noise_rel=event.get("noise_rel") if event["leaf"] else None,
    )


def _grown_baseline(baseline: float, m: Measurement) -> float:
    out = m.output.rel if m.output is not None and np.isfinite(m.output.rel) else 0.0
    inp = m.input.rel if m.input is not None and m.input.shape_ok else 0.0
    return max(baseline, out, inp)


def analyze(ctx: Context) -> Analysis:
    """Rows for every torch call and the first divergence (or None)."""
    ctx.pairs, alignment = match_events(ctx.torch.events, ctx.ms.events)
    rows: list[LayerRow] = []
    first: Divergence | None = None
    baseline = 0.0
    missing_since: list[str] = []  # torch calls with no MindSpore counterpart since the last paired one
    for i, event in enumerate(ctx.torch.events):
        row = new_row(i, event)
        rows.append(row)
        j = ctx.pairs.get(i)
        if j is None:
            row.verdict, row.note = "missing", _("no MindSpore cell call paired with this torch call")
            missing_since.append(event["name"] or "(model)")
            continue
        m = measure(ctx, i, j, baseline)
        fill_row(row, m, ctx.ms.events[j])
        if first is not None:
            row.verdict = "downstream"
            continue
        finding = classify(ctx, i, m, baseline)
        if finding is None:
            missing_since = []
            baseline = _grown_baseline(baseline, m)
            continue
        row.verdict = "DIVERGES"
        first = explain(ctx, i, j, finding, m, missing_since)
    used = set(ctx.pairs.values())
    return Analysis(
        rows=rows,
        first=first,
        alignment=alignment,
        missing=sorted({e["name"] for i, e in enumerate(ctx.torch.events) if i not in ctx.pairs}),
        extra=sorted({e["name"] for j, e in enumerate(ctx.ms.events) if j not in used}),
    )
