"""The knowledge base: one declarative entry per torch API, loaded from ``kb/data/*.toml``.

Everything that knows an API mapping (lookup, scan, convert, weight renaming, the differential
tests) reads it from here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from .cache import load_entries
from .reexports import public_name
from .schema import (
    STATUSES,
    ArgRule,
    Case,
    Entry,
    KBError,
    entry_from_toml,
    name_index,
    with_chinese_arg_notes,
    with_chinese_notes,
    with_drop_reasons,
)

__all__ = [
    "ArgRule",
    "Case",
    "Entry",
    "KB",
    "KBError",
    "STATUSES",
    "load_kb",
    "canonical_name",
]

DATA_DIR = Path(__file__).parent / "data"

# Short forms users type (and that the priority list uses) → canonical torch prefixes.
_EXPANSIONS = (
    ("F.", "torch.nn.functional."),
    ("nn.functional.", "torch.nn.functional."),
    ("nn.init.", "torch.nn.init."),
    ("nn.", "torch.nn."),
    ("Tensor.", "torch.Tensor."),
    ("Module.", "torch.nn.Module."),
    ("Optimizer.", "torch.optim.Optimizer."),
    ("optim.", "torch.optim."),
    ("init.", "torch.nn.init."),
    ("distributions.", "torch.distributions."),
    ("linalg.", "torch.linalg."),
    ("fft.", "torch.fft."),
    ("special.", "torch.special."),
    ("signal.", "torch.signal."),
    ("sparse.", "torch.sparse."),
    ("testing.", "torch.testing."),
    ("cuda.", "torch.cuda."),
    ("autograd.", "torch.autograd."),
    ("backends.", "torch.backends."),
    ("distributed.", "torch.distributed."),
    ("dist.", "torch.distributed."),
    ("profiler.", "torch.profiler."),
    ("hub.", "torch.hub."),
    ("multiprocessing.", "torch.multiprocessing."),
    ("transforms.", "torchvision.transforms."),
    ("datasets.", "torchvision.datasets."),
    # torchvision's other modules, as users import them (`from torchvision import models, ops, io`)
    ("models.", "torchvision.models."),
    ("ops.", "torchvision.ops."),
    ("io.", "torchvision.io."),
    ("v2.", "torchvision.transforms.v2."),
    ("TF.", "torchvision.transforms.functional."),
    ("vutils.", "torchvision.utils."),
)


def canonical_name(name: str) -> str:
    """Expand a short form (``F.relu``, ``nn.Conv2d``, ``Tensor.view``) to its full torch name."""
    name = name.strip()
    if name.startswith(("torch.", "torchvision.", "torchaudio.", "torchtext.")) or name == "torch":
        return name
    for short, full in _EXPANSIONS:
        if name.startswith(short):
            return full + name[len(short) :]
    return name


class KB:
    """The entries, found by full torch name, alias or short form."""

    def __init__(self, entries: Sequence[Entry], names: Mapping[str, int] | None = None) -> None:
        self.entries = entries  # a list, or entries unpickled on first use (kb/cache.py)
        self._index = dict(names) if names is not None else name_index(entries)
        self._roles: dict[str, frozenset[str]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def _named(self, name: str) -> Entry | None:
        i = self._index.get(name)
        return None if i is None else self.entries[i]

    def get(self, name: str) -> Entry | None:
        """Exact lookup by full torch name, alias, or a short form; a public name spelled from its
        defining submodule (``torch.utils.data.dataloader.DataLoader``) finds the public name's entry."""
        found = self._named(name) or self._named(canonical_name(name))
        if found is None and (public := public_name(canonical_name(name))) is not None:
            return self._named(public)
        return found

    def with_role(self, role: str) -> frozenset[str]:
        """Every torch name (aliases included) whose entry has this ``role``."""
        if role not in self._roles:
            self._roles[role] = frozenset(n for e in self.entries if e.role == role for n in (e.torch, *e.aliases))
        return self._roles[role]

    def method(self, attr: str, owner: str = "torch.Tensor") -> Entry | None:
        """The method entry for ``x.attr(...)`` where ``x`` is a ``owner`` (Tensor by default)."""
        return self._named(f"{owner}.{attr}")

    def suggest(self, name: str, n: int = 5) -> list[str]:
        """Close matches for a typo, best first."""
        import difflib  # only for typos: not on the load path

        full = canonical_name(name)
        names = list(self._index)
        close = difflib.get_close_matches(full, names, n=3 * n, cutoff=0.6)
        tail = full.rsplit(".", 1)[-1].lower()
        close += [c for c in names if c.rsplit(".", 1)[-1].lower() == tail]
        hits: list[str] = []
        for cand in close:
            canon = self.entries[self._index[cand]].torch  # an alias suggests its entry
            if canon not in hits:
                hits.append(canon)
        return hits[:n]

    def stats(self) -> dict[str, Counter]:
        """Counts by namespace, each a Counter of statuses."""
        out: dict[str, Counter] = {}
        for e in self.entries:
            out.setdefault(e.namespace, Counter())[e.status] += 1
        return dict(sorted(out.items()))


def _load_file(path: Path) -> tuple[list[Entry], dict[str, dict[str, str]], list[dict]]:
    """The entries of one file, its ``[note_zh]`` / ``[arg_note_zh]`` tables (Chinese notes of entries,
    and of argument rules, of any file) and its ``[[drop_reason]]`` tables (the notes of drop rules, by class)."""
    import tomllib  # only when the on-disk cache misses

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise KBError(f"{path.name}: not valid TOML: {exc}") from exc
    tables = {}
    for table in _ZH_TABLES:
        notes = data.get(table, {})
        if not isinstance(notes, dict) or not all(isinstance(v, str) for v in notes.values()):
            raise KBError(f"{path.name}: [{table}] must map names to strings")
        tables[table] = notes
    reasons = data.get("drop_reason", [])
    if not isinstance(reasons, list) or not all(isinstance(r, dict) for r in reasons):
        raise KBError(f"{path.name}: drop_reason must be an array of tables ([[drop_reason]])")
    return [entry_from_toml(raw, path.name) for raw in data.get("api", [])], tables, reasons


_ZH_TABLES = ("note_zh", "arg_note_zh")  # Chinese notes of entries ("torch name") and of argument rules ("name:arg")


def _parse_files(files: list[Path]) -> list[Entry]:
    entries: list[Entry] = []
    notes: dict[str, dict[str, tuple[str, str]]] = {table: {} for table in _ZH_TABLES}
    reasons: list[tuple[dict, str]] = []
    for path in files:
        got, tables, file_reasons = _load_file(path)
        entries += got
        reasons += [(r, path.name) for r in file_reasons]
        for table, zh in tables.items():
            # A name translated in two files: the later file would win silently and the other text go
            # stale when its English changes (seen once); refuse it so one place holds each note.
            if twice := sorted(set(zh) & set(notes[table])):
                first = notes[table][twice[0]][1]
                raise KBError(f"{path.name}: [{table}] {twice[0]} is already translated in {first}; keep one")
            notes[table].update({name: (note, path.name) for name, note in zh.items()})
    entries = with_chinese_arg_notes(with_chinese_notes(entries, notes["note_zh"]), notes["arg_note_zh"])
    return with_drop_reasons(entries, reasons)


def load_kb(data_dir: Path | None = None) -> KB:
    """Every entry of ``data_dir/*.toml`` (default: the bundled ``DATA_DIR``, files in name order),
    validated; cached per process and on disk (``kb/cache.py``)."""
    return _load(Path(data_dir or DATA_DIR))


@lru_cache(maxsize=4)
def _load(data_dir: Path) -> KB:
    files = sorted(data_dir.glob("*.toml"))
    return KB(*load_entries(files, lambda: _parse_files(files)))
