"""A per-user cache of the parsed and validated KB, keyed by the content of its data and schema.

Parsing the TOML is most of the cost of loading the KB (tomllib is pure Python: about 1 ms per
entry), and every ``torch2ms`` command loads it. The cache holds the name index (every torch name
and alias → its entry's position) and each entry pickled on its own, so a command that looks up a
few names unpickles only those: loading costs about the same for 2,000 entries as for 200.

Files live under ``$TORCH2MS_CACHE_DIR`` (default ``$XDG_CACHE_HOME/torch2ms`` or
``~/.cache/torch2ms``), named by the SHA-256 of the cache format, ``schema.py`` and every data
file (name and bytes): an edited entry, a new TOML file or a schema change gives a new key, and
loading parses again. ``TORCH2MS_NO_CACHE=1`` turns the cache off. A cache that cannot be read
or written is ignored: the KB is parsed.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import overload

from .schema import Entry, name_index

__all__ = ["PickledEntries", "cache_dir", "content_key", "load_entries"]

_FORMAT = b"torch2ms kb cache 2: name index + one pickle per entry\n"
_SCHEMA = Path(__file__).with_name("schema.py")
_KEEP = 8  # newest cache files kept (worktrees and versions with different data share the dir)


class PickledEntries(Sequence[Entry]):
    """Entries unpickled on first access, each on its own."""

    def __init__(self, blobs: list[bytes]) -> None:
        self._blobs = blobs
        self._entries: list[Entry | None] = [None] * len(blobs)

    def __len__(self) -> int:
        return len(self._blobs)

    @overload
    def __getitem__(self, i: int) -> Entry: ...
    @overload
    def __getitem__(self, i: slice) -> list[Entry]: ...
    def __getitem__(self, i: int | slice) -> Entry | list[Entry]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        entry = self._entries[i]
        if entry is None:
            entry = self._entries[i] = pickle.loads(self._blobs[i])
        return entry

    def __iter__(self) -> Iterator[Entry]:
        return (self[i] for i in range(len(self)))


def cache_dir() -> Path:
    explicit = os.environ.get("TORCH2MS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "torch2ms"


def content_key(files: list[Path]) -> str:
    """SHA-256 of the cache format, the schema code and each file's name and bytes, in order."""
    digest = hashlib.sha256(_FORMAT + _SCHEMA.read_bytes())
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def load_entries(files: list[Path], parse: Callable[[], list[Entry]]) -> tuple[Sequence[Entry], dict[str, int]]:
    """The entries of ``files`` and their name index: from the cache when the files (and the schema)
    are unchanged, else ``parse()``'s result, then cached."""
    if os.environ.get("TORCH2MS_NO_CACHE"):
        entries = parse()
        return entries, name_index(entries)
    try:
        path = cache_dir() / f"kb-{content_key(files)}.pickle"
    except OSError:
        entries = parse()  # an unreadable data file: parsing reports it
        return entries, name_index(entries)
    try:
        with path.open("rb") as fh:
            names, blobs = pickle.load(fh)
        return PickledEntries(blobs), names
    except (OSError, pickle.PickleError, EOFError, ValueError, AttributeError, ImportError, TypeError):
        pass  # not cached yet, or a file from another torch2ms version: parse
    entries = parse()
    names = name_index(entries)
    _store(path, (names, [pickle.dumps(e, protocol=pickle.HIGHEST_PROTOCOL) for e in entries]))
    return entries, names


def _store(path: Path, value: object) -> None:
    import tempfile

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=".kb-", delete=False) as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(fh.name, path)  # atomic: a concurrent reader sees the old file or the whole new one
        old = sorted(path.parent.glob("kb-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in old[_KEEP:]:
            stale.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only home: no cache, nothing else changes
