"""Records kept on disk, read back one at a time: what a tree's report holds per file (issue 26).

A scan of 100,000 files must not keep 100,000 files' records in the driver's memory: each record is
pickled into an unnamed temporary file as it arrives, and the spool keeps only its offset (8 bytes a
record). It reads like a list (``len``, iteration, indexing, ``sort``); a record read back is a copy,
so changing it does not change the spool.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Generic, TypeVar, overload

T = TypeVar("T")


class Spool(Generic[T]):
    """A list of picklable records that lives in a temporary file (removed when the spool is collected)."""

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._fh: IO[bytes] | None = None
        self._offsets = array("q")
        self.extend(items)

    def _file(self) -> IO[bytes]:
        if self._fh is None:
            self._fh = tempfile.TemporaryFile("w+b", prefix="torch2ms-spool-")
        return self._fh

    def append(self, item: T) -> None:
        fh = self._file()
        self._offsets.append(fh.seek(0, os.SEEK_END))
        pickle.dump(item, fh, protocol=pickle.HIGHEST_PROTOCOL)

    def extend(self, items: Iterable[T]) -> None:
        for item in items:
            self.append(item)

    def _read(self, offset: int) -> T:
        fh = self._file()
        fh.seek(offset)
        return pickle.load(fh)

    def __len__(self) -> int:
        return len(self._offsets)

    def __bool__(self) -> bool:
        return bool(self._offsets)

    def __iter__(self) -> Iterator[T]:
        for i in range(len(self._offsets)):  # by index: records appended while iterating are read too
            yield self._read(self._offsets[i])

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._read(o) for o in self._offsets[index]]
        return self._read(self._offsets[index])

    def sort(self, key: Callable[[T], Any]) -> None:
        """Reorder by ``key`` (the keys are held while sorting, the records are not)."""
        keys = [key(item) for item in self]
        order = sorted(range(len(keys)), key=keys.__getitem__)
        self._offsets = array("q", (self._offsets[i] for i in order))

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._offsets = array("q")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Spool, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Spool({len(self)} records)"
