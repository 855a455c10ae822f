"""The proof harness: differential checks of KB cases, real PyTorch against real MindSpore.

Above everything it checks (it imports ``kb``, ``weights`` and ``runtime``; nothing imports it but
the tests and ``kb check``'s callers). Public API:

* :func:`run_case` — one KB case on both frameworks, compared (:class:`CaseFailure` if they differ);
* :func:`run_entry` — every case of one entry, each failure reported by its case id;
* :func:`compare`, :func:`to_numpy` — the comparison rules cases use;
* :func:`copy_torch_weights` — a torch module's weights into a MindSpore cell through the KB renames;
* :func:`run_in_graph_mode`, :func:`wants_graph` — the GRAPH_MODE run of a case (R27);
  :class:`GraphBatches` — the same for many cases in one compile (pass it as ``graph=``);
* :func:`make_inputs`, :func:`case_seed` — the seeded random inputs of a case.

Both frameworks are imported when a case runs, not when this package is imported.
"""

from __future__ import annotations

from .batch import GraphBatches
from .cases import CaseResult, GraphRunner, mutated_input, run_case
from .compare import CaseFailure, compare, to_numpy
from .entries import EntryFailure, case_id, run_entry
from .graph import run_in_graph_mode, wants_graph
from .inputs import case_seed, make_inputs
from .weights import converted_state, copy_torch_weights

__all__ = [
    "CaseFailure",
    "CaseResult",
    "EntryFailure",
    "GraphBatches",
    "GraphRunner",
    "case_id",
    "case_seed",
    "compare",
    "converted_state",
    "copy_torch_weights",
    "make_inputs",
    "mutated_input",
    "run_case",
    "run_entry",
    "run_in_graph_mode",
    "to_numpy",
    "wants_graph",
]
