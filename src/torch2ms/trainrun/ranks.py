"""``compare-train --nproc N``: the ranks of a data-parallel run against rank 0, on each side.

torchrun and msrun each start N processes; every rank records into its own folder (common.side_dir:
work/torch, work/torch.rank1, ...; work/ms, work/ms.rank1, ...), MindSpore's rank r replaying torch's
rank r batches. Rank 0's losses get the usual verdict (api.judge); this module checks the rest of the
data-parallel contract: every rank stepped as often as rank 0, and every rank ends with rank 0's
parameters (DDP and DistributedGradReducer average the gradients, so the copies never part).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..i18n import _

# Replicas see the same averaged gradients: any difference beyond float rounding means they parted.
RANK_TOL = 1e-6
LABEL = {"torch": "torch", "ms": "MindSpore"}


def rank_dir(work: Path, side: str, rank: int) -> Path:
    return work / side if rank == 0 else work / f"{side}.rank{rank}"


def compare_ranks(work: Path, nproc: int, records: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Findings (a rank that wrote no record, stepped a different number of times, or ends with other
    parameters than rank 0) and one line for the report's conditions. Ranks that part on the torch side
    too are the script's own doing (a model left unwrapped by DDP on this device, say): a warning then,
    on both sides; MindSpore's ranks parting while torch's agree is a difference."""
    findings: list[dict[str, Any]] = []
    worst: dict[str, float] = {}
    for side, rec0 in records.items():
        worst[side] = 0.0
        for r in range(1, nproc):
            path = rank_dir(work, side, r) / "record.json"
            if not path.is_file():
                text = _("{side} rank {rank} wrote no record (did it start? see the launcher's log in {work})")
                findings.append(_finding(text.format(side=LABEL[side], rank=r, work=work)))
                continue
            rec = json.loads(path.read_text(encoding="utf-8"))
            if len(rec["events"]) != len(rec0["events"]):
                text = _("{side} rank {rank} made {n} optimizer step(s), rank 0 made {n0}")
                n, n0 = len(rec["events"]), len(rec0["events"])
                findings.append(_finding(text.format(side=LABEL[side], rank=r, n=n, n0=n0)))
            diffs = _parameter_diffs(work, side, r, rec0, rec)
            if diffs:
                name, rel = max(diffs.items(), key=lambda kv: kv[1])
                worst[side] = max(worst[side], rel)
                if rel > RANK_TOL:
                    text = _(
                        "{side} rank {rank} ends with other parameters than rank 0: {name} differs by {rel:.1e} "
                        "relative (the gradients were not averaged across the ranks?)"
                    )
                    findings.append(_finding(text.format(side=LABEL[side], rank=r, name=name, rel=rel), "params"))
    torch_parted = worst.get("torch", 0.0) > RANK_TOL
    for f in findings:
        if f.pop("what") == "params" and torch_parted:
            f["severity"] = "warning"
    line = _(
        "{n} processes per side (torchrun, msrun), rank 0's steps compared; every rank's parameters against "
        "rank 0's at the end: torch {t:.1e}, MindSpore {m:.1e} relative at worst (limit {tol:g})"
    ).format(n=nproc, t=worst.get("torch", 0.0), m=worst.get("ms", 0.0), tol=RANK_TOL)
    return findings, line


def _finding(message: str, what: str = "run") -> dict[str, Any]:
    return {"kind": "ranks", "severity": "difference", "message": message, "what": what}


def _parameter_diffs(work: Path, side: str, rank: int, rec0: dict[str, Any], rec: dict[str, Any]) -> dict[str, float]:
    """Per parameter of every model both ranks trained: max |rank r − rank 0| / max |rank 0|."""
    out: dict[str, float] = {}
    models = {m["key"]: m for m in rec.get("models", [])}
    for m0 in rec0.get("models", []):
        m = models.get(m0["key"])
        p0, p = work / side / m0.get("final", ""), rank_dir(work, side, rank) / (m or {}).get("final", "")
        if not m or not p0.is_file() or not p.is_file():
            continue
        with np.load(p0) as z0, np.load(p) as z:
            for name in set(z0.files) & set(z.files):
                a, b = z0[name].astype(np.float64), z[name].astype(np.float64)
                if a.shape != b.shape or not a.size:
                    continue
                out[f"{m0['key']}:{name}"] = float(np.abs(a - b).max()) / max(float(np.abs(a).max()), 1e-12)
    return out
