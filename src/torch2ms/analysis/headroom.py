"""Enough stack for valid Python nested up to the documented cap (500 levels, issue 26).

Everything that reads a file walks its tree recursively somewhere: ``ast`` visitors, the converter's
own passes, libcst's parser, visitors and code generator (one syntax level costs libcst several Python
frames). At the default recursion limit (1000) a 150-deep method chain or a 300-term sum raised
``RecursionError`` and the file was left unconverted. :func:`run_with_headroom` runs one file's work in
a thread with a large C stack and a raised recursion limit, so that every walk, libcst's included, has
room up to the cap; the caller's thread and limit are left as they were.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# The documented cap (README, "Whatever the tree holds"): deeper files are neither converted nor scanned.
# libcst's parser needs seconds to minutes from ~1500 levels and overflows its stack near 3000.
MAX_NESTING = 500

# Python frames allowed per file: ~40 per syntax level at the 500-level cap (libcst's visit/leave/
# _visit_and_replace_children plus the converter's passes), with room to spare.
RECURSION_LIMIT = 40_000
# The C stack of the thread that does the work: Python 3.11 frames called from C (visitor dispatch,
# dataclass constructors, the native parser) use it; 40,000 of them fit in far less than this. Only the
# pages touched are ever resident.
STACK_BYTES = 256 << 20

_limit_lock = threading.Lock()
_users = 0
_saved_limit = 0


def _raise_limit() -> None:
    global _users, _saved_limit
    with _limit_lock:
        if _users == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _users += 1


def _restore_limit() -> None:
    global _users
    with _limit_lock:
        _users -= 1
        if _users == 0:
            sys.setrecursionlimit(_saved_limit)


def run_with_headroom(fn: Callable[..., T], *args, **kwargs) -> T:
    """``fn(*args, **kwargs)`` in a thread with a big stack and a raised recursion limit; its result or
    exception comes back as if called here. Where no such thread can be made, it is called here."""
    result: list = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            error.append(exc)

    try:
        old = threading.stack_size(STACK_BYTES)
    except (ValueError, RuntimeError):  # a platform without settable thread stacks
        return fn(*args, **kwargs)
    try:
        thread = threading.Thread(target=target, name="torch2ms-headroom", daemon=True)
        _raise_limit()
        try:
            thread.start()
        finally:
            threading.stack_size(old)
    except (RuntimeError, MemoryError):  # no thread could be started (a memory cap): do it here
        _restore_limit()
        return fn(*args, **kwargs)
    try:
        thread.join()
    finally:
        if not thread.is_alive():
            _restore_limit()
    if error:
        raise error[0]
    return result[0]
