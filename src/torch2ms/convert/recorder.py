"""The rewrite stage's change recorder: every change with the original line of the torch use it is
about, the marks to put above the current statement, the torch import names still read."""

from __future__ import annotations

from ..analysis.imports import ImportMap
from ..kb import KB
from .changes import Change, not_converted_mark, review_mark
from .index import StatementInfo
from .plan import change_keys


class ChangeRecorder:
    kb: KB
    imap: ImportMap

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self.still_needed: set[str] = set()  # local torch import names that unconverted code still uses
        self.markers: list[list[str]] = []  # per open statement: the comments to put above it
        self.earlier_marks: dict[int, set[str]] = {}  # line → APIs an earlier conversion marked there
        self.converted_before = False  # the source is torch2ms's output (MindSpore imports and its marks)
        self._keys: dict[int, dict[str, list[int]]] = {}  # per statement: lines of its torch uses
        self._seen: dict[tuple[int, str], int] = {}

    @property
    def statement(self) -> StatementInfo | None:  # (the traversal's: traversal.py)
        raise NotImplementedError

    def marked_before(self, api: str) -> bool:
        """An earlier conversion marked ``api`` "not converted" above the current statement."""
        info = self.statement
        if not self.earlier_marks or info is None:
            return False
        return api in self.earlier_marks.get(info.original_line(info.node.lineno), ())

    def keep_marked(self, api: str, root: str | None) -> None:
        """Reported as left for a person again; its mark is already above the statement."""
        self.changes.append(Change(api, "not-converted", "marked by an earlier conversion", self._line(api)))
        if root:
            self.still_needed.add(root)

    def record(self, api: str, action: str = "converted", note: str = "") -> None:
        self.changes.append(Change(api, action, note, self._line(api)))
        if action == "review" and self.markers:
            self.markers[-1].append(review_mark(api, note))

    def mark(self, api: str, note: str, root: str | None = None) -> None:
        """Left for a person: reported, marked in the code above its statement, its import kept."""
        self.changes.append(Change(api, "not-converted", note, self._line(api)))
        if self.markers:
            self.markers[-1].append(not_converted_mark(api, note))
        if root:
            self.still_needed.add(root)

    def _line(self, api: str) -> int:
        """The original line of this change: within the current statement, the matching name (or
        attribute) by order of appearance; else the statement's own line."""
        info = self.statement
        if info is None:
            return 0
        stmt = info.node
        keys = self._keys.get(id(stmt))
        if keys is None:
            keys = self._keys[id(stmt)] = change_keys(stmt, self.imap, self.kb)
        line = stmt.lineno
        for key in (api, api.rsplit(".", 1)[-1]):
            got = keys.get(key)
            if got:
                seen = self._seen.get((id(stmt), key), 0)
                line = got[min(seen, len(got) - 1)]
                self._seen[(id(stmt), key)] = seen + 1
                break
        return info.original_line(line)
