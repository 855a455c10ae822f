"""One file never kills the run: each file is converted in a worker process, bounded in time and memory.

A file whose conversion raises (a ``RecursionError`` on 500-level nested expressions, any converter
bug), runs past its time limit, needs more memory than a worker may take, or kills its worker (libcst's
native parser overflows its stack on a few thousand nested brackets) comes back as an error for that
file; the worker is replaced and every other file is still converted. Workers are forked from the
parent, so the knowledge base loaded once is shared, and so are a test's monkeypatches.

Same input, same output: a file's time limit is CPU time, not wall-clock time. On a loaded machine a
file that needs 5 s of CPU can take 30 s of wall time; a wall-clock limit then copied it unchanged on a
busy run and converted it on a quiet one. The worker's own CPU time does not grow with the load, so the
limit is ``RLIMIT_CPU`` (the kernel stops the worker with SIGXCPU at the budget, in Python or native
code alike), set afresh before each file. A worker that hangs without using CPU is ended by a watchdog
when the process has used no CPU at all for FILE_HANG_S (waiting for a CPU on a loaded machine is not
that), and a wall-clock limit stays only as a far larger last resort. The file's error says which of
the three stopped it.
"""

from __future__ import annotations

import ast
import gc
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from itertools import islice
from pathlib import PurePath
from typing import TYPE_CHECKING

from ..analysis.astwalk import walked_depth
from ..analysis.headroom import MAX_NESTING as HEADROOM_NESTING
from ..analysis.headroom import run_with_headroom
from ..i18n import _
from .leftovers import default_terminate

if TYPE_CHECKING:
    from .runtime_vendor import Collected

# A file may use FILE_CPU_BASE_S plus FILE_CPU_PER_KB_S per KiB of its worker's CPU time. Real code
# converts at ~7 ms/KiB (50 ms/KiB at worst, measured over the realcode corpus and torchvision), so the
# budget is far above any real file yet ends the pathological ones (libcst takes minutes on some deep
# nests). CPU time, not wall time: the budget does not shrink when other processes load the machine.
FILE_CPU_BASE_S = 20.0
FILE_CPU_PER_KB_S = 0.25
# A worker that hangs without using CPU (the CPU budget cannot end it) is ended by a watchdog thread
# once the process has used no CPU at all for FILE_HANG_S: a worker that merely waits its turn on a
# loaded machine still gets some CPU every few hundred milliseconds, so load never reaches it.
FILE_HANG_S = 120.0
HANG_POLL_S = 1.0
HUNG_EXIT_CODE = 86  # the watchdog's exit status: the parent reports the file as hung
# The last-resort wall-clock net (a worker hung while holding the interpreter lock: no watchdog runs),
# this many times the CPU budget (35 min for a small file). A `nice`d worker on a 2-core machine at load
# 26 got ~4% of a CPU: a wall-clock limit of 30x the budget (the previous net) could end a working file.
FILE_WALL_FACTOR = 100.0
# Address space a worker may add to what it had when forked: MemoryError (that file fails) beyond it.
WORKER_MEMORY_BYTES = 2 << 30
# The largest file convert takes, where conversion is known to fit a worker's memory and time limits:
# peak memory grows with the file (measured on generated model code, `bench/tree_bench.py --big`, on a
# loaded 2-core machine: 205 MB at 250 KB, 357 MB at 500 KB, 572 MB and 144 s at 1 MB, 1088 MB and
# 1317 s at 2 MB, past that size's time limit), and a 5 MB file took its worker past
# WORKER_MEMORY_BYTES (SIGABRT after ~15 s). Larger files are refused before any parse (scan still
# reads up to sourcefiles.MAX_FILE_BYTES).
MAX_CONVERT_BYTES = 1 << 20
TASKS_PER_WORKER = 200  # a fresh worker now and then: memory a converter leaks does not pile up
# Deeper expressions are not converted (analysis/headroom.py: every walk has room up to that depth).
MAX_NESTING = HEADROOM_NESTING
FREEZE_BEFORE_FORK = True  # see run_jobs


@dataclass(frozen=True)
class Project:
    """What every file of the tree shares: sent to each worker once (the pool's initializer), never with
    each file. A job that carried the project's module class names made the work and the memory grow
    with the square of the file count (100,000 files: the driver at 575 MB, still estimating after 30 min)."""

    local_roots: frozenset[str] = frozenset()
    project_modules: frozenset[str] = frozenset()  # Module subclasses defined in the project's files


_project = Project()  # in a worker: the run's shared facts (_init_worker)


@dataclass(frozen=True)
class Job:
    """One file's own facts only (the project's shared ones: Project)."""

    path: str  # absolute, as the file system spells it (non-UTF-8 bytes as surrogates)
    rel: str  # relative to the tree, same spelling
    size: int = 0
    project_names: tuple[tuple[str, str], ...] = ()  # torch names this file gets from other project files
    # Vendored runtime (runtime_vendor.py): the import level of the converted module's runtime imports;
    # None: they stay ``torch2ms.runtime``.
    runtime_level: int | None = None
    # names other project files import from this one (facts.py ``_reexports``); None: not known
    imported_names: tuple[str, ...] | None = None
    cpu_fast_conv: bool = False  # convert --cpu-fast-conv (convert/fast_conv.py)

    @property
    def cpu_budget(self) -> int:
        """CPU seconds the file may use (whole seconds: ``RLIMIT_CPU``'s unit)."""
        return math.ceil(FILE_CPU_BASE_S + FILE_CPU_PER_KB_S * self.size / 1024)

    @property
    def wall_limit(self) -> float:
        """Wall-clock seconds before the worker counts as hung; the CPU budget alone where the platform
        cannot limit a process's CPU time (no ``RLIMIT_CPU``: the old, load-dependent limit)."""
        return self.cpu_budget * (FILE_WALL_FACTOR if cpu_limit_supported() else 1.0)


@dataclass
class Outcome:
    code: str | None = None  # the converted text when it differs from the input
    encoding: str = "utf-8"  # the input's encoding
    changes: list[dict] = field(default_factory=list)
    error: str | None = None
    # CPU seconds the worker spent on the file (not wall time: steady on a loaded machine; kept out of the
    # report, which is reproducible)
    seconds: float = 0.0
    uses_vision_package: bool = False  # builds torchvision architectures (vision_models.uses_package)
    runtime: Collected | None = None  # the runtime helpers its vendored imports ask for


def convert_job(job: Job, project: Project | None = None) -> Outcome:
    """Read and convert one file; every failure becomes the outcome's error (runs in a worker, where
    PROJECT defaults to the facts the pool's initializer gave it)."""
    from .pipeline import collector_paused

    global _busy_since
    start = time.process_time()
    _limit_cpu(job.cpu_budget)
    _busy_since = time.monotonic()
    try:
        # every walk has room up to MAX_NESTING levels; the collector paused for the depth check's and
        # the syntax check's parses too, not only the conversion
        with collector_paused():
            outcome = run_with_headroom(_convert, job, project or _project)
    finally:
        _busy_since = None
        _limit_cpu(None)  # an idle worker is never stopped
    outcome.seconds = time.process_time() - start
    return outcome


def cpu_limit_supported() -> bool:
    """Whether a worker's CPU time can be limited here (POSIX ``RLIMIT_CPU`` and ``SIGXCPU``)."""
    try:
        import resource
    except ImportError:
        return False
    return hasattr(resource, "RLIMIT_CPU") and hasattr(signal, "SIGXCPU")


_outer_cpu_soft: int | None = None


def _limit_cpu(budget: int | None) -> None:
    """Let this process use ``budget`` more CPU seconds (all its threads together) before the kernel stops
    it with SIGXCPU; None: no limit of ours (the process's own soft limit back). Only in run_jobs'
    workers: never in a caller that converts in its own process (a bench, a test), which SIGXCPU would end."""
    if not _in_worker or not cpu_limit_supported():
        return
    import resource

    global _outer_cpu_soft
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if _outer_cpu_soft is None:
        _outer_cpu_soft = soft  # the process's own limit (``ulimit -t``): kept, and put back after each file
    if budget is None:
        soft = _outer_cpu_soft
    else:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        soft = math.ceil(usage.ru_utime + usage.ru_stime) + budget
        if _outer_cpu_soft != resource.RLIM_INFINITY:
            soft = min(soft, _outer_cpu_soft)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (OSError, ValueError):
        pass  # the wall-clock limit still bounds a runaway file


def _convert(job: Job, project: Project) -> Outcome:
    from ..analysis.sourcefiles import BadInput, read_python, without_skipped
    from .pipeline import convert_source

    if job.size > MAX_CONVERT_BYTES:
        return _too_big(job.size)
    try:
        src = read_python(job.path)
        if len(src.text) > MAX_CONVERT_BYTES:  # it grew since it was listed
            return _too_big(len(src.text))
        depth, tree = nesting_depth_and_tree(src.text)
        if depth > MAX_NESTING:
            return Outcome(
                error=f"nested {depth} levels deep, over the {MAX_NESTING} torch2ms converts; copied unchanged"
            )
        mod = convert_source(
            src.text,
            job.rel,
            local_roots=project.local_roots,
            project_modules=project.project_modules,
            project_names=dict(job.project_names),
            tree=tree,
            imported_names=frozenset(job.imported_names) if job.imported_names is not None else None,
            cpu_fast_conv=job.cpu_fast_conv,
        )
        converted = None
        if mod.changed and mod.error is None and depth >= 0:
            invalid, converted = _syntax_error_or_tree(mod.code)
            if invalid:  # a converter defect: never hand the user a file that does not parse
                return Outcome(
                    error=_("the converter produced invalid Python ({error}); copied unchanged").format(error=invalid)
                )
    except BadInput as exc:
        return Outcome(error=_("{why}; copied unchanged").format(why=without_skipped(str(exc))))
    except RecursionError:
        return Outcome(error=_("nested too deeply to convert (RecursionError); copied unchanged"))
    except MemoryError:
        text = _("needs more than {gib} GiB of memory to convert (MemoryError); copied unchanged")
        return Outcome(error=text.format(gib=WORKER_MEMORY_BYTES >> 30))
    except Exception as exc:  # noqa: BLE001 - a converter bug fails this file only
        return Outcome(error=_converter_failed(exc))
    changes = [{"api": c.api, "action": c.action, "note": c.note, "line": c.line} for c in mod.changes]
    outcome = Outcome(mod.code if mod.changed else None, src.encoding, changes, mod.error)
    if outcome.code is not None:
        _finish_in_worker(job, outcome, converted)
    return outcome


def _too_big(size: int) -> Outcome:
    text = _(
        "{size:.1f} MB, over the {limit} MB convert takes within its worker's memory (about 0.6 GB per MB "
        "of source); copied unchanged"
    )
    return Outcome(error=text.format(size=size / (1 << 20), limit=MAX_CONVERT_BYTES >> 20))


def _finish_in_worker(job: Job, outcome: Outcome, tree: ast.Module | None) -> None:
    """What the driver would otherwise do per file, one process for all: is torchvision_ms used, and
    the runtime imports pointed at the vendored package (the syntax check's tree is not parsed again)."""
    from ..analysis.sourcefiles import display
    from .runtime_vendor import RuntimeVendor
    from .vision_models import uses_package

    assert outcome.code is not None
    outcome.uses_vision_package = uses_package(outcome.code)
    if job.runtime_level is not None:
        vendor = RuntimeVendor()
        depth = len(PurePath(job.rel).parts) - 1  # folders between the file and the converted root
        outcome.code = vendor.rewrite(outcome.code, display(job.rel), job.runtime_level, tree, depth)
        outcome.runtime = vendor.collected()


def nesting_depth(text: str) -> int:
    """How deep the module's syntax tree goes (-1 when it does not parse: the converter reports that)."""
    return nesting_depth_and_tree(text)[0]


def nesting_depth_and_tree(text: str) -> tuple[int, ast.Module | None]:
    """The depth of the module's syntax tree and the tree ((-1, None) when it does not parse). The depth
    is counted level by level over the fields that can hold nodes (astwalk's table): no per-node tuple."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return -1, None
    return walked_depth(tree), tree  # (the walk it makes is the one the converter reads)


def _syntax_error_or_tree(code: str) -> tuple[str | None, ast.Module | None]:
    try:
        return None, ast.parse(code)
    except SyntaxError as exc:
        return f"SyntaxError at line {exc.lineno}: {exc.msg}", None
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}", None


def _init_worker(project: Project) -> None:
    """Keep the run's shared facts; a worker's crash is reported as that file's error: no stack dump of
    its own (pytest's faulthandler)."""
    import faulthandler

    global _in_worker, _project
    _project = project
    faulthandler.disable()
    default_terminate()
    _in_worker = True
    _limit_memory()
    _stop_on_cpu_budget()
    threading.Thread(target=_watch_for_hangs, name="torch2ms-hang-watchdog", daemon=True).start()


_busy_since: float | None = None  # monotonic time the worker's current file started; None: idle
_in_worker = False  # this process is one of run_jobs' workers (limits apply to workers only)


def _watch_for_hangs() -> None:
    """End the worker (exit HUNG_EXIT_CODE) when, during a file, the process uses no CPU for FILE_HANG_S."""
    last_cpu, last_progress = -1.0, time.monotonic()
    while True:
        time.sleep(HANG_POLL_S)
        now, started = time.monotonic(), _busy_since
        cpu = time.process_time() - time.thread_time()  # every thread's but this one's
        if started is None or cpu > last_cpu:
            last_cpu, last_progress = cpu, now
        elif now - max(last_progress, started) > FILE_HANG_S:
            os._exit(HUNG_EXIT_CODE)


def _stop_on_cpu_budget() -> None:
    """SIGXCPU (the CPU budget spent) ends the worker, and leaves no core file behind."""
    if not cpu_limit_supported():
        return
    import resource

    signal.signal(signal.SIGXCPU, signal.SIG_DFL)
    try:
        _soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    except (OSError, ValueError):
        pass


def _limit_memory() -> None:
    """Cap the worker's address space (Linux): past the cap allocations fail with MemoryError."""
    try:
        import resource

        with open("/proc/self/statm") as fh:
            vm = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = vm + WORKER_MEMORY_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    except (ImportError, OSError, ValueError):
        pass  # no /proc or no RLIMIT_AS: the time limit still bounds a runaway file


def _failure(job: Job, exc: BaseException) -> Outcome:
    from pebble import ProcessExpired

    if isinstance(exc, FutureTimeout):
        text = _(
            "conversion did not finish within {seconds:.0f} s of wall-clock time (the safety net for a hung "
            "worker; its CPU-time limit is {cpu} s); copied unchanged: run convert again, and if it hangs "
            "again convert this file by hand"
        )
        return Outcome(error=text.format(seconds=job.wall_limit, cpu=job.cpu_budget))
    if isinstance(exc, ProcessExpired):
        code = exc.exitcode or 0
        if cpu_limit_supported() and code == -signal.SIGXCPU:
            return Outcome(error=_cpu_budget_spent(job))
        if code == HUNG_EXIT_CODE:
            text = _(
                "conversion used no CPU for {seconds:.0f} s (a hung worker, not a slow one); copied unchanged: "
                "run convert again, and if it hangs again convert this file by hand"
            )
            return Outcome(error=text.format(seconds=FILE_HANG_S))
        how = _("signal {n}").format(n=-code) if code < 0 else _("exit code {n}").format(n=exc.exitcode)
        text = _(
            "the converter's process died ({how}; e.g. a parser stack overflow on deeply nested code); copied unchanged"
        )
        return Outcome(error=text.format(how=how))
    return Outcome(error=_converter_failed(exc))


def _cpu_budget_spent(job: Job) -> str:
    text = _(
        "conversion used more than {seconds} s of CPU time (the limit for a file of {kib:.0f} KiB: {base:.0f} s "
        "plus {per_kb} s per KiB; CPU time, so the same on a busy machine as on a quiet one); copied "
        "unchanged: split the file into smaller modules, or convert it by hand"
    )
    return text.format(seconds=job.cpu_budget, kib=job.size / 1024, base=FILE_CPU_BASE_S, per_kb=FILE_CPU_PER_KB_S)


def _converter_failed(exc: BaseException) -> str:
    return _("converter failed ({error}); copied unchanged").format(error=f"{type(exc).__name__}: {exc}")


def run_jobs(jobs: Iterable[Job], workers: int, project: Project | None = None) -> Iterator[tuple[Job, Outcome]]:
    """Convert every job in worker processes, yielding results as they finish; at most a few in flight.
    PROJECT (the facts every file shares) goes to each worker once, when it starts.

    Results come in finishing order, not job order: waiting for the oldest job would leave the other
    workers idle behind one large file (the caller sorts what it reports)."""
    from pebble import ProcessPool

    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    # What the driver holds (the knowledge base above all) goes to the collector's permanent generation
    # before the workers fork: their collections then neither scan it nor write to its pages, which
    # would copy the whole shared heap into every worker.
    frozen = ctx is not None and FREEZE_BEFORE_FORK
    if frozen:
        gc.freeze()
    pool = ProcessPool(
        max_workers=workers,
        max_tasks=TASKS_PER_WORKER,
        initializer=_init_worker,
        initargs=(project or Project(),),
        context=ctx or multiprocessing,
    )
    it = iter(jobs)
    pending: dict[Future, Job] = {}

    def submit(batch: Iterable[Job]) -> None:
        for job in batch:
            pending[pool.schedule(convert_job, (job,), timeout=job.wall_limit)] = job

    try:
        submit(islice(it, workers * 4))
        while pending:
            done, _running = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: _order(pending, f)):
                job = pending.pop(fut)
                try:
                    outcome = fut.result()
                except Exception as exc:  # noqa: BLE001 - timeouts, dead workers, unpicklable results
                    outcome = _failure(job, exc)
                submit(islice(it, 1))
                yield job, outcome
    finally:
        pool.stop()
        pool.join()
        if frozen:
            gc.unfreeze()


def _order(pending: dict[Future, Job], fut: Future) -> int:
    """Jobs that finished together come back in the order they were given."""
    return list(pending).index(fut)
