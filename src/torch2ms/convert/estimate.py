"""What converting a file or tree leaves for a person, without writing anything: ``scan``'s effort estimate.

One source of truth with ``torch2ms convert``: the same listing, the same project facts and the same
per-file conversion in worker processes (``project._run``), so scan's counts per category are the
conversion report's (converted / review / not converted) by construction. Only the counts and the
items left for a person are kept, one file at a time (no converted text, nothing written); static like
the converter: neither torch nor MindSpore is imported.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.scan import FileReport, ScanReport, scan_path
from ..analysis.sourcefiles import display
from ..analysis.spool import Spool
from ..kb import KB
from .project import _listing, _project_facts, _run, local_packages


@dataclass(frozen=True)
class FileEstimate:
    path: str  # relative to the tree, as both reports spell it
    counts: dict[str, int]  # the conversion report's per-file counts: converted / review / not-converted
    left: list[dict] = field(default_factory=list)  # the changes a person must finish: {line, api, action, note}
    error: str | None = None


def estimate_tree(src: str | os.PathLike, jobs: int | None = None) -> Iterator[FileEstimate]:
    """Each Python file's conversion counts as ``convert`` would report them (in finishing order)."""
    src_p = Path(src)
    listing, base = _listing(src_p, None)
    roots = local_packages(src_p)
    imported: dict[str, set[str]] = {}  # as convert: an unread torch import stays only for its importers
    modules, names = _project_facts(listing.python, base, roots, None, imported)
    known = imported if src_p.is_dir() else None
    for job, outcome in _run(listing.python, base, roots, modules, names, jobs, False, None, known):
        counts = Counter(c["action"] for c in outcome.changes)
        left = [
            {"line": c["line"], "api": c["api"], "action": c["action"], "note": c["note"]}
            for c in outcome.changes
            if c["action"] != "converted"
        ]
        yield FileEstimate(display(job.rel), dict(counts), left, outcome.error)


def scan_with_estimate(path: str | os.PathLike, kb: KB | None = None, jobs: int = 1) -> ScanReport:
    """``scan_path``'s inventory and risks, with each file's effort taken from its conversion.

    The conversions run first, their estimates kept on disk (only a path-to-record index in memory),
    and each file's report takes its own as the scan keeps it: memory does not grow with the tree."""
    estimates: Spool[FileEstimate] = Spool()
    where: dict[str, int] = {}
    if Path(path).exists():  # else scan_path says so
        for est in estimate_tree(path, jobs):
            where[est.path] = len(estimates)
            estimates.append(est)

    def fill(f: FileReport) -> None:
        i = where.pop(f.path, None)
        if i is not None:
            est = estimates[i]
            f.conversion, f.left = est.counts, est.left

    try:
        return scan_path(path, kb, jobs, fill)
    finally:
        estimates.close()
