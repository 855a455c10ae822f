"""A killed ``convert`` leaves nothing behind (issue 26).

OUT is written into a temporary folder beside it (:mod:`.project_paths`). SIGTERM (what ``kill`` and CI
timeouts send) is handled like Ctrl-C: the run stops, the temporary folder is removed and the command
says it was interrupted. SIGKILL cannot be handled: each temporary folder therefore holds a marker
naming the process that made it (pid, its start time, the host), and the next run beside the same OUT
removes every temporary folder whose process is provably gone. A folder without a marker, one from
another host or one whose process still runs is left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

MARKER = ".torch2ms-tmp.json"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux /proc), None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _identity(pid: int) -> dict:
    return {"pid": pid, "start": _start_time(pid), "host": socket.gethostname()}


def write_marker(folder: Path) -> None:
    """Mark ``folder`` as this process's temporary folder."""
    (folder / MARKER).write_text(json.dumps(_identity(os.getpid())), encoding="utf-8")


def drop_marker(folder: Path) -> None:
    """The folder becomes OUT: no marker in the user's output."""
    with contextlib.suppress(FileNotFoundError):
        (folder / MARKER).unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def is_stale(folder: Path) -> bool:
    """True only when the marker proves the process that made ``folder`` is gone."""
    try:
        mark = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        pid, start, host = int(mark["pid"]), mark.get("start"), mark.get("host")
    except (OSError, ValueError, KeyError, TypeError):
        return False  # no marker (or not ours): not provably ours
    if host != socket.gethostname() or pid == os.getpid():
        return False
    if not _alive(pid):
        return True
    now = _start_time(pid)
    return start is not None and now is not None and now != start  # the pid was reused by another process


def remove_stale(out: Path) -> list[Path]:
    """Remove the temporary folders earlier, killed runs left beside OUT; return what was removed."""
    removed: list[Path] = []
    try:
        candidates = [
            p
            for p in out.parent.iterdir()
            if p.name.startswith((f".{out.name}.tmp-", f".{out.name}.old-")) and p.is_dir() and not p.is_symlink()
        ]
    except OSError:
        return removed
    for p in candidates:
        if is_stale(p):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is, so that it unwinds (and cleans up) as for Ctrl-C."""


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (once: a second one during the clean-up
    is ignored). Only the main thread can install handlers; elsewhere the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = False

    def handler(signum, frame):
        nonlocal fired
        if not fired:
            fired = True
            raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def default_terminate() -> None:
    """A forked worker dies on SIGTERM (how the pool stops it), not through the driver's handler."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
