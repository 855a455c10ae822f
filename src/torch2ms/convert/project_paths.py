"""Never destroy user data: which output folders ``convert`` may replace, and how it replaces them.

OUT is written whole into a temporary folder beside it, then swapped in. An existing OUT is replaced
only when torch2ms wrote it (it holds ``torch2ms-report.json``) or it is empty; anything else needs
``--force``. OUT is never the input, never a folder that contains the input, never a file; OUT inside
the input needs ``--force`` (it is then left out of the walk).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..analysis.sourcefiles import display
from ..i18n import _
from .leftovers import drop_marker, remove_stale, write_marker

REPORT_JSON = "torch2ms-report.json"
REPORT_MD = "torch2ms-report.md"


class ConvertError(Exception):
    """A usage problem: bad paths, an output that would overwrite the input or a user's files."""


def _is_torch2ms_output(d: Path) -> bool:
    return (d / REPORT_JSON).is_file()


def check_output(src: Path, out: Path, force: bool) -> Path | None:
    """Refuse outputs that could destroy data; return the output folder to leave out of the walk, if inside SRC."""
    if not src.exists():
        raise ConvertError(
            _("{path}: no such file or directory").format(path=display(src))
            + (_(" (broken symlink)") if src.is_symlink() else "")
        )
    s, o = src.resolve(), out.resolve()
    if s == o:
        raise ConvertError(f"output {display(out)} is the input itself; choose another -o")
    if o in s.parents:
        raise ConvertError(
            f"output {display(out)} contains the input {display(src)}; it would be replaced; choose another -o"
        )
    if out.is_symlink():
        raise ConvertError(f"output {display(out)} is a symlink; give the folder it points to, or another -o")
    if out.exists() and not out.is_dir():
        raise ConvertError(f"output {display(out)} exists and is not a folder; -o names the output folder")
    inside = src.is_dir() and s in o.parents
    if inside and not force:
        raise ConvertError(
            f"output {display(out)} is inside the input {display(src)} (a later run would convert the copy); "
            "choose -o outside it, or pass --force"
        )
    if out.is_dir() and not force and not _is_torch2ms_output(out) and any(out.iterdir()):
        raise ConvertError(
            f"output {display(out)} exists and was not written by torch2ms (no {REPORT_JSON}); "
            "its files would be deleted: choose another -o, or pass --force to replace it"
        )
    return o if inside else None


def earlier_output(path: Path, name: str) -> str | None:
    """A folder torch2ms wrote before is not converted again (skip reason), e.g. an OUT kept inside SRC."""
    return "an earlier torch2ms output (holds torch2ms-report.json)" if _is_torch2ms_output(path) else None


def fresh_temp_dir(out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out)  # what earlier runs killed with SIGKILL left beside OUT
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    write_marker(tmp)  # a run killed from now on leaves a folder the next run can prove is its own
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp's 0700 would make OUT private, unlike a folder the user makes
    return tmp


def swap_into_place(tmp: Path, out: Path) -> None:
    """Put the finished tree at OUT; an earlier OUT is removed only after the new one is in place."""
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        old.rmdir()
        os.rename(out, old)
        write_marker(old)
        drop_marker(tmp)
        os.rename(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        drop_marker(tmp)
        os.rename(tmp, out)
