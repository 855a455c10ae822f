"""check_data: run a torch and a MindSpore pipeline on the same data and compare the first K batches (R25).

Compared per column: shape, dtype, per-channel mean/std, max |Δ| on paired samples (when both
pipelines are deterministic and in the same order), labels by value; and batches per epoch.
Every disagreement gets a :class:`~torch2ms.data.diagnose.Finding` naming the likely pitfall.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .collect import Side, collect, load_factory
from .diagnose import (ERROR, INFO, WARN, Finding, channel_stats, diagnose_affine, diagnose_batch_count,
                       diagnose_dtype, diagnose_error, diagnose_labels, diagnose_pixels, diagnose_shapes,
                       layout_permutation)
from .hints import config_hints, merge_hints
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


def _compare_labels(name: str, t: list[np.ndarray], m: list[np.ndarray], t_cfg: dict, m_cfg: dict,
                    col: ColumnReport) -> list[Finding]:
    tl, ml = _stack(t).reshape(-1), _stack(m).reshape(-1)
    n = min(tl.size, ml.size)
    col.label_agreement = float(np.mean(tl[:n].astype(np.int64) == ml[:n].astype(np.int64))) if n else None
    f = diagnose_labels(tl, ml, name, t_cfg.get("shuffle"), m_cfg.get("shuffle"))
    return [f] if f else []


def _compare_values(name: str, t: list[np.ndarray], m: list[np.ndarray], paired: bool, atol: float,
                    exact: bool, col: ColumnReport) -> list[Finding]:
    perm = layout_permutation(t[0].shape, m[0].shape)
    if perm is not None:  # compare values in the torch layout; the layout finding is already made
        m = [b.transpose(perm) for b in m]
    tv, mv = _stack(t), _stack(m)
    t_axis, m_axis = _channel_axis(tv), _channel_axis(mv)
    if t_axis is None or m_axis is None or tv.shape[1] != mv.shape[1]:
        t_axis = m_axis = None
    t_mean, t_std = channel_stats(tv, t_axis)
    m_mean, m_std = channel_stats(mv, m_axis)
    col.torch_mean, col.torch_std = t_mean.tolist(), t_std.tolist()
    col.ms_mean, col.ms_std = m_mean.tolist(), m_std.tolist()
    col.d_mean = float(np.abs(m_mean - t_mean).max())
    col.d_std = float(np.abs(m_std - t_std).max())
    affine = diagnose_affine(t_mean, t_std, m_mean, m_std, atol, name)
    if not paired:
        if affine is not None:
            affine.level = WARN  # different samples on each side: the stats are only indicative
        return [affine] if affine else []
    pairs = [(a, b) for a, b in zip(t, m) if a.shape == b.shape]
    pix = None
    if pairs:
        tp, mp = _stack([a for a, _ in pairs]), _stack([b for _, b in pairs])
        col.max_abs = float(np.abs(tp.astype(np.float64) - mp).max())
        col.paired_batches = len(pairs)
        if exact:
            pix = diagnose_pixels(tp, mp, atol, name)
    if pix is not None and (pix.pitfall == "center_crop" or affine is None
                            or affine.pitfall in ("decode_pil", "interpolation")):
        if affine is not None:
            pix.evidence += affine.evidence
        return [pix]  # the shift test is exact; a pure resampling difference is better named on pixels
    if affine is not None and col.max_abs is not None:
        affine.evidence.append(f"max |Δ| on paired samples {col.max_abs:.3g}")
    return [affine] if affine else []


def compare_sides(t: Side, m: Side, *, atol: float = 1e-3, exact: bool = True) -> DataReport:
    """Compare two collected pipelines (see :func:`collect`); pure numpy."""
    findings: list[Finding] = []
    columns: list[ColumnReport] = []
    for side in (t, m):
        if side.error:
            findings.append(diagnose_error(side.name, side.error))
    bc = diagnose_batch_count(
        t.batches_per_epoch, m.batches_per_epoch,
        bs_torch=t.config.get("batch_size") or (len(t.batches[0][0]) if t.batches and t.batches[0][0].ndim else None),
        bs_ms=m.config.get("batch_size") or (len(m.batches[0][0]) if m.batches and m.batches[0][0].ndim else None),
        drop_last=t.config.get("drop_last"), drop_remainder=m.config.get("drop_remainder"))
    if bc:
        findings.append(bc)
    n = min(len(t.batches), len(m.batches))
    if n and len(t.batches[0]) != len(m.batches[0]):
        findings.append(Finding(ERROR, "columns", f"torch yields {len(t.batches[0])} columns, "
                                f"MindSpore {len(m.batches[0])}: {t.columns} vs {m.columns}"))
    elif n:
        ncol = len(t.batches[0])
        names = [m.columns[i] if i < len(m.columns) else f"column{i}" for i in range(ncol)]
        kinds = [_kind(t.batches[0][i]) for i in range(ncol)]
        cols = [ColumnReport(names[i], kinds[i], list(t.batches[0][i].shape), list(m.batches[0][i].shape),
                             str(t.batches[0][i].dtype), str(m.batches[0][i].dtype), compared_batches=n)
                for i in range(ncol)]
        label_findings: list[Finding] = []
        for i in range(ncol):  # labels first: their order tells whether samples can be paired
            if kinds[i] == "label":
                label_findings += _compare_labels(names[i], [b[i] for b in t.batches[:n]],
                                                  [b[i] for b in m.batches[:n]], t.config, m.config, cols[i])
        shuffled = bool(t.config.get("shuffle")) or bool(m.config.get("shuffle"))
        paired = not label_findings and not (shuffled and "label" not in kinds)
        for i in range(ncol):
            tb, mb = [b[i] for b in t.batches[:n]], [b[i] for b in m.batches[:n]]
            for f in (diagnose_shapes(tb[0].shape, mb[0].shape, names[i]),
                      diagnose_dtype(kinds[i], tb[0].dtype, mb[0].dtype, names[i])):
                if f and not (f.pitfall == "batch_size" and bc is not None):
                    findings.append(f)
            if kinds[i] != "label":
                findings += _compare_values(names[i], tb, mb, paired, atol, exact, cols[i])
        findings += label_findings
        columns = cols
    elif not (t.error or m.error):
        findings.append(Finding(ERROR, "error", f"no batches: torch gave {len(t.batches)}, "
                                f"MindSpore {len(m.batches)}"))
    findings = merge_hints(findings, config_hints(t.config, m.config))
    order = {ERROR: 0, WARN: 1, INFO: 2}
    findings.sort(key=lambda f: order[f.level])
    return DataReport(torch=t, ms=m, columns=columns, findings=findings,
                      settings={"batches": n, "atol": atol, "exact": exact})


def check_data(torch_pipeline: Any, ms_pipeline: Any, *, batches: int = 2, atol: float = 1e-3,
               exact: bool = True) -> DataReport:
    """Compare the first ``batches`` batches of a torch and a MindSpore pipeline.

    Each pipeline is an object (DataLoader, mindspore.dataset, any iterable of batches) or a
    ``module:factory`` / ``path.py:factory`` string (factory takes no arguments). ``exact=False``
    skips the paired max |Δ| test (pipelines with random augmentation).
    Raises :class:`~torch2ms.data.collect.SpecError` for a spec that cannot be loaded.
    """
    if batches < 1:
        raise ValueError("batches must be >= 1")
    t_obj = load_factory(torch_pipeline) if isinstance(torch_pipeline, str) else torch_pipeline
    m_obj = load_factory(ms_pipeline) if isinstance(ms_pipeline, str) else ms_pipeline
    report = compare_sides(collect(t_obj, "torch", batches), collect(m_obj, "MindSpore", batches),
                           atol=atol, exact=exact)
    report.settings["batches_requested"] = batches
    return report
