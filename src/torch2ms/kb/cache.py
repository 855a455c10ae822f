"""A per-user cache of the parsed and validated KB, keyed by the content of its data and schema.

Parsing the TOML is most of the cost of loading the KB (tomllib is pure Python: about 1 ms per
entry), and every ``torch2ms`` command loads it. The entries are pickled under
``$TORCH2MS_CACHE_DIR`` (default ``$XDG_CACHE_HOME/torch2ms`` or ``~/.cache/torch2ms``) in a file
named by the SHA-256 of ``schema.py`` and every data file (name and bytes): an edited entry, a new
TOML file or a schema change gives a new key, and loading parses again. ``TORCH2MS_NO_CACHE=1``
turns the cache off. A cache that cannot be read or written is ignored: the KB is parsed.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["cache_dir", "cached", "content_key"]

_SCHEMA = Path(__file__).with_name("schema.py")
_KEEP = 8  # newest cache files kept (worktrees and versions with different data share the dir)


def cache_dir() -> Path:
    explicit = os.environ.get("TORCH2MS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "torch2ms"


def content_key(files: list[Path]) -> str:
    """SHA-256 of the schema code and of each file's name and bytes, in the given order."""
    digest = hashlib.sha256(_SCHEMA.read_bytes())
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cached(files: list[Path], build: Callable[[], Any]) -> Any:
    """``build()``'s result, from the cache when ``files`` (and the schema) are unchanged."""
    if os.environ.get("TORCH2MS_NO_CACHE"):
        return build()
    try:
        path = cache_dir() / f"kb-{content_key(files)}.pickle"
    except OSError:
        return build()  # an unreadable data file: parsing reports it
    try:
        with path.open("rb") as fh:
            return _unpickle(fh.read())
    except (OSError, pickle.PickleError, EOFError, ValueError, AttributeError, ImportError, TypeError):
        pass  # not cached yet, or a file from another torch2ms version: parse
    value = build()
    _store(path, value)
    return value


def _unpickle(data: bytes) -> Any:
    # Thousands of small objects: without the cyclic collector running in between, loading takes
    # about 30% less time (they hold no cycles to collect).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(data)
    finally:
        if enabled:
            gc.enable()


def _store(path: Path, value: Any) -> None:
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
