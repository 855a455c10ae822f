"""check_data: run a torch and a MindSpore pipeline on the same data and compare the first K batches (R25).

Compared per column: shape, dtype, per-channel mean/std, max |Δ| on paired samples (when both
pipelines are deterministic and in the same order), labels by value; and batches per epoch.
Every disagreement gets a :class:`~torch2ms.data.diagnose.Finding` naming the likely pitfall.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..i18n import _
from ..progress import Progress
from .collect import Side, collect, load_factory
from .diagnose import (
    ERROR,
    INFO,
    WARN,
    Finding,
    channel_stats,
    diagnose_affine,
    diagnose_batch_count,
    diagnose_dtype,
    diagnose_error,
    diagnose_labels,
    diagnose_order,
    diagnose_pixels,
    diagnose_shapes,
    layout_permutation,
    sample_permutation,
)
from .hints import config_hints, merge_hints, merge_same
from .report import ColumnReport, DataReport

MAX_CHANNELS = 16  # more "channels" than this: one overall mean/std (e.g. a (N, F) feature column)


def _kind(a: np.ndarray) -> str:
    if a.ndim == 1 and a.dtype.kind in "iub":
        return "label"
    return "image" if a.ndim == 4 else "tensor"


def _stack(batches: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(batches, axis=0) if batches[0].ndim else np.stack(batches)


def _channel_axis(a: np.ndarray) -> int | None:
    return 1 if a.ndim >= 3 and a.shape[1] <= MAX_CHANNELS else None


def _compare_labels(
    name: str, t: list[np.ndarray], m: list[np.ndarray], t_cfg: dict, m_cfg: dict, col: ColumnReport
) -> list[Finding]:
    tl, ml = _stack(t).reshape(-1), _stack(m).reshape(-1)
    n = min(tl.size, ml.size)
    col.label_agreement = float(np.mean(tl[:n].astype(np.int64) == ml[:n].astype(np.int64))) if n else None
    f = diagnose_labels(tl, ml, name, t_cfg.get("shuffle"), m_cfg.get("shuffle"))
    return [f] if f else []


def _compare_values(
    name: str,
    torch_batches: list[np.ndarray],
    ms_batches: list[np.ndarray],
    paired: bool,
    atol: float,
    exact: bool,
    col: ColumnReport,
) -> list[Finding]:
    perm = layout_permutation(torch_batches[0].shape, ms_batches[0].shape)
    if perm is not None:  # compare values in the torch layout; the layout finding is already made
        ms_batches = [b.transpose(perm) for b in ms_batches]
    torch_values, ms_values = _stack(torch_batches), _stack(ms_batches)
    t_axis, m_axis = _channel_axis(torch_values), _channel_axis(ms_values)
    if t_axis is None or m_axis is None or torch_values.shape[1] != ms_values.shape[1]:
        t_axis = m_axis = None
    t_mean, t_std = channel_stats(torch_values, t_axis)
    m_mean, m_std = channel_stats(ms_values, m_axis)
    col.torch_mean, col.torch_std = t_mean.tolist(), t_std.tolist()
    col.ms_mean, col.ms_std = m_mean.tolist(), m_std.tolist()
    col.d_mean = float(np.abs(m_mean - t_mean).max())
    col.d_std = float(np.abs(m_std - t_std).max())
    stats = diagnose_affine(t_mean, t_std, m_mean, m_std, atol, name)
    pairs = [(a, b) for a, b in zip(torch_batches, ms_batches) if a.shape == b.shape] if paired else []
    if pairs:
        torch_paired, ms_paired = _stack([a for a, _ in pairs]), _stack([b for _, b in pairs])
        col.max_abs = float(np.abs(torch_paired.astype(np.float64) - ms_paired).max())
        col.paired_batches = len(pairs)
        pix = diagnose_pixels(torch_paired, ms_paired, atol, name) if exact else None
        if pix is not None:  # pairs name the cause better than statistics do
            pix.evidence += [e for e in (stats.evidence if stats else []) if e not in pix.evidence]
            return [pix]
    elif stats is not None and not paired:
        stats.level = WARN  # different samples on each side: the stats are only indicative
    if stats is not None and col.max_abs is not None:
        stats.evidence.append(_("max |Δ| on paired samples {d:.3g}").format(d=col.max_abs))
    return [stats] if stats else []


def _reorder(t: Side, m: Side, n: int, kinds: list[str], names: list[str], atol: float) -> Finding | None:
    """If MindSpore's first n batches hold torch's samples in another order, put them in torch's order
    (so labels and values compare sample by sample) and say so."""
    i = next((i for i, k in enumerate(kinds) if k != "label"), None)
    if i is None:
        return None
    torch_values = _stack([b[i] for b in t.batches[:n]])
    ms_column = [b[i] for b in m.batches[:n]]
    layout = layout_permutation(t.batches[0][i].shape, m.batches[0][i].shape)
    ms_values = _stack([b.transpose(layout) for b in ms_column] if layout else ms_column)
    perm = sample_permutation(torch_values, ms_values, atol)
    if perm is None:
        return None
    f = diagnose_order(perm, names[i], t.config.get("shuffle"), m.config.get("shuffle"))
    if f is None:
        return None
    to_torch_order = np.argsort(perm)  # position in torch order → MindSpore sample
    sizes = np.cumsum([len(b[0]) for b in m.batches[:n]])[:-1]
    cols = [np.split(_stack([b[c] for b in m.batches[:n]])[to_torch_order], sizes) for c in range(len(kinds))]
    m.batches[:n] = [tuple(col[j] for col in cols) for j in range(n)]
    return f


def compare_sides(t: Side, m: Side, *, atol: float = 1e-3, exact: bool = True) -> DataReport:
    """Compare two collected pipelines (see :func:`collect`); pure numpy."""
    findings: list[Finding] = []
    columns: list[ColumnReport] = []
    for side in (t, m):
        if side.error:
            findings.append(diagnose_error(side.name, side.error))
    bc = diagnose_batch_count(
        t.batches_per_epoch,
        m.batches_per_epoch,
        bs_torch=t.config.get("batch_size") or (len(t.batches[0][0]) if t.batches and t.batches[0][0].ndim else None),
        bs_ms=m.config.get("batch_size") or (len(m.batches[0][0]) if m.batches and m.batches[0][0].ndim else None),
        drop_last=t.config.get("drop_last"),
        drop_remainder=m.config.get("drop_remainder"),
    )
    if bc:
        findings.append(bc)
    n = min(len(t.batches), len(m.batches))
    if n and len(t.batches[0]) != len(m.batches[0]):
        findings.append(
            Finding(
                ERROR,
                "columns",
                _("torch yields {torch} columns, MindSpore {ms}: {torch_names} vs {ms_names}").format(
                    torch=len(t.batches[0]), ms=len(m.batches[0]), torch_names=t.columns, ms_names=m.columns
                ),
            )
        )
    elif n:
        ncol = len(t.batches[0])
        names = [m.columns[i] if i < len(m.columns) else f"column{i}" for i in range(ncol)]
        kinds = [_kind(t.batches[0][i]) for i in range(ncol)]
        cols = [
            ColumnReport(
                names[i],
                kinds[i],
                list(t.batches[0][i].shape),
                list(m.batches[0][i].shape),
                str(t.batches[0][i].dtype),
                str(m.batches[0][i].dtype),
                compared_batches=n,
            )
            for i in range(ncol)
        ]
        order = _reorder(t, m, n, kinds, names, atol)
        if order is not None:
            findings.append(order)
        label_findings: list[Finding] = []
        for i in range(ncol):  # labels first: their order tells whether samples can be paired
            if kinds[i] == "label":
                label_findings += _compare_labels(
                    names[i], [b[i] for b in t.batches[:n]], [b[i] for b in m.batches[:n]], t.config, m.config, cols[i]
                )
        shuffled = bool(t.config.get("shuffle")) or bool(m.config.get("shuffle"))
        paired = not label_findings and (order is not None or not (shuffled and "label" not in kinds))
        for i in range(ncol):
            tb, mb = [b[i] for b in t.batches[:n]], [b[i] for b in m.batches[:n]]
            for f in (
                diagnose_shapes(tb[0].shape, mb[0].shape, names[i]),
                diagnose_dtype(kinds[i], tb[0].dtype, mb[0].dtype, names[i]),
            ):
                if f and not (f.pitfall == "batch_size" and bc is not None):
                    findings.append(f)
            if kinds[i] != "label":
                findings += _compare_values(names[i], tb, mb, paired, atol, exact, cols[i])
        findings += label_findings
        columns = cols
    elif not (t.error or m.error):
        text = _("no batches: torch gave {torch}, MindSpore {ms}").format(torch=len(t.batches), ms=len(m.batches))
        findings.append(Finding(ERROR, "error", text))
    findings = merge_hints(merge_same(findings), config_hints(t.config, m.config))
    rank = {ERROR: 0, WARN: 1, INFO: 2}
    findings.sort(key=lambda f: rank[f.level])
    return DataReport(
        torch=t, ms=m, columns=columns, findings=findings, settings={"batches": n, "atol": atol, "exact": exact}
    )


def check_data(
    torch_pipeline: Any,
    ms_pipeline: Any,
    *,
    batches: int = 2,
    atol: float = 1e-3,
    exact: bool = True,
    progress: Progress | None = None,
    import_timeout: float | None = None,
) -> DataReport:
    """Compare the first ``batches`` batches of a torch and a MindSpore pipeline.

    Each pipeline is an object (DataLoader, mindspore.dataset, any iterable of batches) or a
    ``module:factory`` / ``path.py:factory`` / ``path.py:expression`` string. ``exact=False`` skips the
    paired max |Δ| test (pipelines with random augmentation). Raises
    :class:`~torch2ms.data.collect.SpecError` for a spec that cannot be loaded or built.
    """
    if batches < 1:
        raise ValueError("batches must be >= 1")
    progress = progress or Progress()
    sides = []
    for name, pipeline in (("torch", torch_pipeline), ("MindSpore", ms_pipeline)):
        with progress.phase(_("{side}: build the pipeline").format(side=name)):
            obj = load_factory(pipeline, import_timeout) if isinstance(pipeline, str) else pipeline
        sides.append(collect(obj, name, batches, progress.steps(_("{side}: read batches").format(side=name))))
    report = compare_sides(sides[0], sides[1], atol=atol, exact=exact)
    report.settings["batches_requested"] = batches
    return report
