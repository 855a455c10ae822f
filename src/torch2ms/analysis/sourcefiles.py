"""Reading Python files and walking project trees, whatever the file system holds.

Static only (no numpy, torch or MindSpore). Nothing here raises on odd input: a broken or looping
symlink, a FIFO or device named ``*.py``, an unreadable or huge file, a name that is not UTF-8 —
each becomes a :class:`Problem` (path and reason) or a :class:`BadInput` for that one file, and the
rest of the tree is still listed. Nothing here ever opens a file that is not a regular file: opening
a FIFO blocks, and reading ``/dev/zero`` never ends.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILE_BYTES = 5 * 1024 * 1024
# Folders never walked: version control, caches, environments (a folder holding pyvenv.cfg is one too).
SKIP_DIRS = {
    ".git": "version-control folder",
    ".hg": "version-control folder",
    ".svn": "version-control folder",
    "__pycache__": "bytecode cache",
    ".venv": "virtual environment",
    "venv": "virtual environment",
    "node_modules": "JavaScript packages",
    ".tox": "tox environments",
    ".mypy_cache": "tool cache",
    ".pytest_cache": "tool cache",
}


class BadInput(Exception):
    """One file cannot be read as Python source; the message says why."""


@dataclass(frozen=True)
class SourceText:
    text: str
    encoding: str  # what Python would decode it with: "utf-8", "utf-8-sig" (a BOM), "iso-8859-1", ...


@dataclass(frozen=True)
class Problem:
    path: Path
    reason: str
    folder: bool = False  # about a folder (not listed, walked twice), not one file


@dataclass
class TreeListing:
    """Everything under a root: Python files, other files, what could not be listed, what was skipped."""

    python: list[Path] = field(default_factory=list)
    other: list[Path] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # unreadable entries: never fatal
    skipped: list[Problem] = field(default_factory=list)  # folders left out on purpose, with why


def display(path: str | os.PathLike) -> str:
    """A path as text that can always be printed and written as UTF-8 (undecodable bytes as \\xNN)."""
    return os.fsencode(os.fspath(path)).decode("utf-8", "backslashreplace")


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def os_reason(exc: OSError, path: str | os.PathLike) -> str:
    """Why an OS call on ``path`` failed, said for a person."""
    if exc.errno == errno.ELOOP:
        return "symlink loop; skipped"
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return f"broken symlink (its target {display(os.readlink(os.fspath(path)))} does not exist); skipped"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied; skipped (check the file's permissions)"
    return f"cannot read ({exc.strerror or exc}); skipped"


def regular_file_error(path: str | os.PathLike) -> str | None:
    """None when ``path`` (symlinks followed) is a regular file; else why it cannot be read."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return os_reason(exc, path)
    if not stat.S_ISREG(st.st_mode):
        return f"{_file_kind(st.st_mode)}, not a regular file; skipped"
    return None


def read_bytes_bounded(path: str | os.PathLike, limit: int) -> bytes:
    """A regular file's bytes, at most ``limit`` of them; BadInput for anything else."""
    why = regular_file_error(path)  # stat first: a FIFO or a device is never opened
    if why:
        raise BadInput(why)
    try:  # O_NONBLOCK: should the path be swapped for a FIFO after the stat, open() still returns
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise BadInput(os_reason(exc, path)) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{_file_kind(st.st_mode)}, not a regular file; skipped")
        if st.st_size > limit:
            raise BadInput(_too_big(st.st_size, limit))
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # it grew while being read
                raise BadInput(_too_big(total, limit))
        return b"".join(chunks)
    except OSError as exc:
        raise BadInput(os_reason(exc, path)) from exc
    finally:
        os.close(fd)


def _too_big(size: int, limit: int) -> str:
    return f"file is {size / 1e6:.1f} MB, over the {limit // 1024 // 1024} MB limit for source files; skipped"


def decode_source(data: bytes) -> SourceText:
    """Decode Python source bytes as Python would (BOM, PEP 263 cookie), or raise BadInput with why."""
    if b"\x00" in data[:8192]:
        raise BadInput("binary file (contains NUL bytes); skipped")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise BadInput(f"bad encoding declaration: {exc}") from exc
    try:
        return SourceText(data.decode(encoding), encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        pos = getattr(exc, "start", "?")
        raise BadInput(
            f"cannot decode as {encoding} (byte {pos}); add a '# -*- coding: ... -*-' line or re-save as UTF-8"
        ) from exc


def read_python(path: str | os.PathLike) -> SourceText:
    """A Python file's text and encoding, or BadInput saying why it cannot be read."""
    return decode_source(read_bytes_bounded(path, MAX_FILE_BYTES))


def skip_reason(path: Path, name: str) -> str | None:
    """Why a folder is not walked (an environment, version control, a cache), or None."""
    if name in SKIP_DIRS:
        return SKIP_DIRS[name]
    try:
        if (path / "pyvenv.cfg").is_file():
            return "virtual environment (holds pyvenv.cfg)"
    except OSError:
        pass
    return None


def walk_tree(root: Path, skip: Callable[[Path, str], str | None] = skip_reason) -> TreeListing:
    """List a file or a tree, following directory symlinks once (each real folder is walked once).

    ``skip(path, name)`` gives the reason a folder is left out, or None to walk it.
    """
    out = TreeListing()
    if not root.is_dir():
        why = regular_file_error(root)
        if why:
            out.problems.append(Problem(root, why))
        else:
            (out.python if root.name.endswith(".py") else out.other).append(root)
        return out
    seen: set[str] = set()
    stack = [root]
    while stack:
        _walk_dir(stack.pop(), out, seen, stack, skip)
    for part in (out.python, out.other):
        part.sort()
    out.problems.sort(key=lambda p: p.path)
    out.skipped.sort(key=lambda p: p.path)
    return out


def _walk_dir(d: Path, out: TreeListing, seen: set[str], stack: list[Path], skip) -> None:
    real = os.path.realpath(d)
    if real in seen:
        out.problems.append(
            Problem(d, "symlink to a folder already walked (a loop or a second path to it); skipped", True)
        )
        return
    seen.add(real)
    try:
        entries = sorted(os.scandir(d), key=lambda e: e.name)
    except OSError as exc:
        out.problems.append(Problem(d, f"cannot list this folder: {os_reason(exc, d)}", True))
        return
    subdirs = []
    for e in entries:
        p = Path(e.path)
        try:
            st = os.stat(p)  # follows symlinks
        except OSError as exc:
            out.problems.append(Problem(p, os_reason(exc, p)))
            continue
        if stat.S_ISDIR(st.st_mode):
            why = skip(p, e.name)
            if why:
                out.skipped.append(Problem(p, why, True))
            else:
                subdirs.append(p)
        elif stat.S_ISREG(st.st_mode):
            (out.python if e.name.endswith(".py") else out.other).append(p)
        else:
            out.problems.append(Problem(p, f"{_file_kind(st.st_mode)}, not a regular file; skipped"))
    stack.extend(reversed(subdirs))
