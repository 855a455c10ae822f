"""The per-user index of converted projects: where ``torch2ms convert`` wrote its output trees.

``torch2ms weights CKPT -o OUT.ckpt`` run with no ``--project``/``--net`` (in another folder than the
converted one) looks here for the converted project whose layer map (``torch2ms_layers.json``)
explains every key of the checkpoint. The index is one small JSON file in the user's cache folder
(``$TORCH2MS_CACHE_DIR``, else ``$XDG_CACHE_HOME/torch2ms``, else ``~/.cache/torch2ms``):

* bounded: the :data:`LIMIT` most recently converted trees, newest last; a tree converted again
  moves to the end, a tree whose layer map is gone is dropped;
* written atomically (a temporary file in the same folder, then ``os.replace``) under an advisory
  lock, so two conversions at once neither lose an entry nor leave half a file;
* never in the way: an unwritable or corrupt index is ignored (``convert`` still succeeds, ``weights``
  then guesses as without it). ``TORCH2MS_PROJECT_INDEX=0`` turns it off.

Standard library only: ``weights`` reads it without torch or MindSpore.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

INDEX_FILE = "projects.json"
LAYER_MAP_FILE = "torch2ms_layers.json"  # the name convert/layer_map.py writes
LIMIT = 50
_VERSION = 1


def enabled() -> bool:
    return os.environ.get("TORCH2MS_PROJECT_INDEX", "1").strip().lower() not in ("0", "off", "no", "false")


def cache_dir() -> Path:
    own = os.environ.get("TORCH2MS_CACHE_DIR")
    if own:
        return Path(own)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "torch2ms"


def index_path() -> Path:
    return cache_dir() / INDEX_FILE


def _read(path: Path) -> list[dict]:
    try:
        if path.stat().st_size > 1 << 20:
            return []
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    entries = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("path"), str)]


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # no advisory locks here: the atomic replace still keeps the file whole
        yield
        return
    with open(folder / (INDEX_FILE + ".lock"), "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _write(path: Path, entries: list[dict]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".projects-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"version": _VERSION, "projects": entries}, fh, indent=1)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def register(out_dir: str | Path) -> bool:
    """Record a converted tree (one that holds a layer map); False if not recorded (no map, the index
    is off or cannot be written)."""
    out = Path(out_dir).resolve()
    if not enabled() or not (out / LAYER_MAP_FILE).is_file():
        return False
    path = index_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(path.parent):
            entries = [e for e in _read(path) if e["path"] != str(out) and _alive(e["path"])]
            entries.append({"path": str(out), "converted": round(time.time(), 3)})
            _write(path, entries[-LIMIT:])
    except OSError:
        return False
    return True


def _alive(folder: str) -> bool:
    return (Path(folder) / LAYER_MAP_FILE).is_file()


def projects() -> list[Path]:
    """The recorded converted trees that still hold a layer map, newest first."""
    if not enabled():
        return []
    seen, out = set(), []
    for e in reversed(_read(index_path())):
        if e["path"] not in seen and _alive(e["path"]):
            seen.add(e["path"])
            out.append(Path(e["path"]))
    return out[:LIMIT]
