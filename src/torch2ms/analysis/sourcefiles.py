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

from ..i18n import N_, _, every_language

MAX_FILE_BYTES = 5 * 1024 * 1024
# Folders never walked: version control, caches, environments (a folder holding pyvenv.cfg is one too).
SKIP_DIRS = {
    ".git": N_("version-control folder"),
    ".hg": N_("version-control folder"),
    ".svn": N_("version-control folder"),
    "__pycache__": N_("bytecode cache"),
    ".venv": N_("virtual environment"),
    "venv": N_("virtual environment"),
    "node_modules": N_("JavaScript packages"),
    ".tox": N_("tox environments"),
    ".mypy_cache": N_("tool cache"),
    ".pytest_cache": N_("tool cache"),
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
        (stat.S_ISFIFO, N_("a FIFO")),
        (stat.S_ISCHR, N_("a character device")),
        (stat.S_ISBLK, N_("a block device")),
        (stat.S_ISSOCK, N_("a socket")),
        (stat.S_ISDIR, N_("a directory")),
    ):
        if test(mode):
            return _(name)
    return _("not a regular file")


def _not_regular(mode: int) -> str:
    return _("{kind}, not a regular file; skipped").format(kind=_file_kind(mode))


SKIPPED = N_("; skipped")


def without_skipped(reason: str) -> str:
    """A skip reason without its closing "; skipped" (in whichever language it was written)."""
    for suffix in every_language(SKIPPED):
        if reason.endswith(suffix):
            return reason.removesuffix(suffix)
    return reason


def os_reason(exc: OSError, path: str | os.PathLike) -> str:
    """Why an OS call on ``path`` failed, said for a person."""
    if exc.errno == errno.ELOOP:
        return _("symlink loop; skipped")
    if exc.errno == errno.ENOENT and os.path.islink(path):
        target = display(os.readlink(os.fspath(path)))
        return _("broken symlink (its target {target} does not exist); skipped").format(target=target)
    if exc.errno in (errno.EACCES, errno.EPERM):
        return _("permission denied; skipped (check the file's permissions)")
    return _("cannot read ({why}); skipped").format(why=exc.strerror or exc)


def regular_file_error(path: str | os.PathLike) -> str | None:
    """None when ``path`` (symlinks followed) is a regular file; else why it cannot be read."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return os_reason(exc, path)
    if not stat.S_ISREG(st.st_mode):
        return _not_regular(st.st_mode)
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
            raise BadInput(_not_regular(st.st_mode))
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
    text = _("file is {size:.1f} MB, over the {limit} MB limit for source files; skipped")
    return text.format(size=size / 1e6, limit=limit // 1024 // 1024)


def decode_source(data: bytes) -> SourceText:
    """Decode Python source bytes as Python would (BOM, PEP 263 cookie), or raise BadInput with why."""
    if b"\x00" in data[:8192]:
        raise BadInput(_("binary file (contains NUL bytes); skipped"))
    try:
        encoding, _lines = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise BadInput(_("bad encoding declaration: {error}").format(error=exc)) from exc
    try:
        return SourceText(data.decode(encoding), encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        pos = getattr(exc, "start", "?")
        text = _("cannot decode as {encoding} (byte {pos}); add a '# -*- coding: ... -*-' line or re-save as UTF-8")
        raise BadInput(text.format(encoding=encoding, pos=pos)) from exc


def read_python(path: str | os.PathLike) -> SourceText:
    """A Python file's text and encoding, or BadInput saying why it cannot be read."""
    return decode_source(read_bytes_bounded(path, MAX_FILE_BYTES))


def skip_reason(path: Path, name: str) -> str | None:
    """Why a folder is not walked (an environment, version control, a cache), or None."""
    if name in SKIP_DIRS:
        return _(SKIP_DIRS[name])
    try:
        if (path / "pyvenv.cfg").is_file():
            return _("virtual environment (holds pyvenv.cfg)")
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
            Problem(d, _("symlink to a folder already walked (a loop or a second path to it); skipped"), True)
        )
        return
    seen.add(real)
    try:
        entries = sorted(os.scandir(d), key=lambda e: e.name)
    except OSError as exc:
        out.problems.append(Problem(d, _("cannot list this folder: {why}").format(why=os_reason(exc, d)), True))
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
            out.problems.append(Problem(p, _not_regular(st.st_mode)))
    stack.extend(reversed(subdirs))
