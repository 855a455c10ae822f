"""Run every case of one KB entry, so a test per entry still names each failing case."""

from __future__ import annotations

from ..kb import KB, Entry
from .cases import CaseResult, GraphRunner, run_case
from .graph import run_in_graph_mode

__all__ = ["EntryFailure", "case_id", "run_entry"]


class EntryFailure(AssertionError):
    """One or more cases of an entry failed; the message has one line per failing case id."""


def case_id(entry: Entry, index: int) -> str:
    """The id a case is reported by: ``torch.Tensor.add_#1``."""
    return f"{entry.torch}#{index}"


def run_entry(entry: Entry, kb: KB, graph: GraphRunner = run_in_graph_mode) -> list[CaseResult]:
    """Run all of the entry's cases (each one, even after a failure); raise EntryFailure naming the failures."""
    results: list[CaseResult] = []
    failures: list[str] = []
    for index, case in enumerate(entry.cases):
        try:
            results.append(run_case(entry, case, index, kb, graph))
        except Exception as exc:  # noqa: BLE001 - every case's failure is reported, then the entry fails
            failures.append(f"{case_id(entry, index)}: {type(exc).__name__}: {exc}".splitlines()[0][:500])
    if failures:
        raise EntryFailure(f"{len(failures)} of {len(entry.cases)} case(s) failed:\n" + "\n".join(failures))
    return results
