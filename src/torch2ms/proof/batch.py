"""GRAPH_MODE runs of many cases in one compile.

A GRAPH_MODE compile costs about the same for one small expression as for a hundred (measured on
CPU: 0.17 s for 1, 1.29 s for 100), and the graph runs were 91% of the differential tests' time.
:class:`GraphBatches` splits the function/method cases that want a graph run into chunks, and the
first case of a chunk to ask compiles the whole chunk as one Cell: one method per case (its own
argument names), ``construct`` calling them all. A chunk that fails to compile or run is split in
two and retried; a single case that fails in a batch compiles on its own, so its error is its own. Results are kept
per process; only cases whose expression and inputs match the ones run_case passes are served from
the batch (anything else is compiled on its own).
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kb import KB, Entry
from .cases import case_owners, ms_inputs, rewrite_case_source
from .compare import CaseFailure
from .graph import run_in_graph_mode, wants_graph
from .inputs import case_seed, make_inputs

__all__ = ["GraphBatches"]

CHUNK = 100


@dataclass
class _Job:
    key: tuple[str, int]
    expr: str
    inputs: dict[str, Any]


@dataclass
class _Result:
    expr: str
    output: Any


class GraphBatches:
    """A graph runner for :func:`run_case` that compiles the graph cases of ``entries`` in chunks."""

    def __init__(self, kb: KB, entries: list[Entry], chunk: int = CHUNK) -> None:
        self.kb = kb
        keys = [
            (e.torch, i)
            for e in entries
            if e.kind != "class"
            for i, c in enumerate(e.cases)
            if wants_graph(e, c, i) and c.check not in ("optimizer", "scheduler")
        ]
        self._entries = {e.torch: e for e in entries}
        self._chunk_of = {key: n // chunk for n, key in enumerate(keys)}
        self._entry_chunk = {name: n for (name, _), n in self._chunk_of.items()}
        self._chunks = [keys[n : n + chunk] for n in range(0, len(keys), chunk)]
        self._results: dict[tuple[str, int], _Result] = {}
        self.compiles = 0

    def chunk_of(self, entry: Entry) -> int | None:
        """The chunk the entry's graph cases compile in (None: none batched). Tests of one chunk
        run in one process under ``pytest -n N --dist loadgroup``, so each chunk compiles once."""
        return self._entry_chunk.get(entry.torch)

    def __call__(self, expr: str, inputs: dict[str, Any], entry: Entry, index: int) -> Any:
        key = (entry.torch, index)
        if key in self._chunk_of and key not in self._results:
            self._run_chunk(self._chunks[self._chunk_of[key]])
        result = self._results.get(key)
        if result is None or result.expr != expr:
            return run_in_graph_mode(expr, inputs, entry, index)  # not batched, failed in a batch, or built differently
        return result.output

    def _run_chunk(self, keys: list[tuple[str, int]]) -> None:
        import mindspore as ms

        jobs = []
        for key in keys:
            try:
                jobs.append(self._job(key))
            except CaseFailure:
                continue  # a refused rewrite: the case reports it when it runs
        ms.set_seed(0)
        self._run_jobs(jobs)

    def _job(self, key: tuple[str, int]) -> _Job:
        entry = self._entries[key[0]]
        case = entry.cases[key[1]]
        raw = make_inputs(case.inputs, np.random.default_rng(case_seed(entry, key[1])))
        expr = rewrite_case_source(self.kb, case.call, case_owners(raw))
        return _Job(key, expr, ms_inputs(raw))

    def _run_jobs(self, jobs: list[_Job]) -> None:
        """Compile ``jobs`` as one Cell; on failure split in halves (a single job keeps its error)."""
        if not jobs:
            return
        try:
            outputs = _compile_and_run(jobs, f"graph_batch_{self.compiles}")
        except Exception:  # noqa: BLE001 - bisected below; one case's failure is its own
            if len(jobs) == 1:
                return  # left unbatched: the case compiles on its own and raises its own error
            half = len(jobs) // 2
            self._run_jobs(jobs[:half])
            self._run_jobs(jobs[half:])
            return
        finally:
            self.compiles += 1
        for job, out in zip(jobs, outputs):
            self._results[job.key] = _Result(job.expr, out)


def _source(jobs: list[_Job]) -> tuple[str, list[Any]]:
    lines = [
        "import mindspore",
        "import numpy as np",
        "import torch2ms.runtime",
        "",
        "",
        "class GraphBatch(mindspore.nn.Cell):",
    ]
    args: list[Any] = []
    calls = []
    for n, job in enumerate(jobs):
        names = list(job.inputs)
        lines += [f"    def case_{n}(self, {', '.join(names)}):", f"        return {job.expr}", ""]
        slots = [f"a{len(args) + i}" for i in range(len(names))]
        calls.append(f"self.case_{n}({', '.join(slots)})")
        args += [job.inputs[k] for k in names]
    params = ", ".join(f"a{i}" for i in range(len(args)))
    lines += [f"    def construct(self, {params}):", f"        return ({', '.join(calls)},)", ""]
    return "\n".join(lines), args


def _compile_and_run(jobs: list[_Job], name: str) -> tuple[Any, ...]:
    import mindspore as ms

    src, args = _source(jobs)
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/{name}.py"
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(src)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module  # the graph compiler looks the module up by name
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            return tuple(module.GraphBatch()(*args))
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
            sys.modules.pop(name, None)
