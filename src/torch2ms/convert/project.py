"""Convert a file or a project tree into an output directory, atomically and reproducibly.

``.py`` files are converted in worker processes (:mod:`.project_pool`: one file never kills the run);
every other file is copied byte-identical; what cannot be read (broken symlinks, FIFOs, devices,
unreadable files) is reported and left out; environments and VCS folders are skipped and listed. The
input tree is never written to, and an output folder torch2ms did not write is never replaced without
``force`` (:mod:`.project_paths`). Results are written as they arrive, so memory does not grow with the
tree. A converted file keeps its input's encoding (BOM and coding cookie included); only when the
converted text holds characters that encoding lacks is it written as UTF-8, its cookie saying so.
"""

from __future__ import annotations

import ast
import io
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..analysis.astwalk import nodes, walked_depth
from ..analysis.headroom import MAX_NESTING, run_with_headroom
from ..analysis.imports import ImportMap
from ..analysis.project_names import ModuleUses, imported_names, module_name, module_uses, project_bindings
from ..analysis.sourcefiles import BadInput, TreeListing, display, read_python, skip_reason, walk_tree
from ..analysis.spool import Spool
from ..i18n import N_, _
from ..progress import Progress
from . import layer_map, vision_models
from .leftovers import terminate_as_interrupt
from .linemap import write_line_map
from .pipeline import collector_paused
from .project_paths import (
    REPORT_JSON,
    REPORT_MD,
    ConvertError,
    check_output,
    earlier_output,
    fresh_temp_dir,
    swap_into_place,
)
from .project_pool import Job, Outcome, Project, run_jobs
from .runtime_vendor import RuntimeVendor

__all__ = ["REPORT_JSON", "REPORT_MD", "ConvertError", "ConvertReport", "FileResult", "convert_tree", "to_markdown"]
PARALLEL_MIN_FILES = 8


class _Spill:
    """Each file's change list, kept in an unnamed temporary file until the report is written, so the
    driver's memory does not grow with the tree (10,000 files hold ~100 MB of change records)."""

    _open: weakref.WeakValueDictionary[int, _Spill] = weakref.WeakValueDictionary()
    _keys = itertools.count()

    def __init__(self) -> None:
        self.fh = tempfile.TemporaryFile("w+b")
        self.key = next(_Spill._keys)
        _Spill._open[self.key] = self

    def __reduce__(self):  # a FileResult kept in the report's Spool names its spill (this process), never copies it
        return (_open_spill, (self.key,))

    def put(self, changes: list[dict]) -> tuple[int, int]:
        data = json.dumps(changes, ensure_ascii=False).encode("utf-8")
        offset = self.fh.seek(0, os.SEEK_END)
        self.fh.write(data)
        return offset, len(data)

    def get(self, offset: int, size: int) -> list[dict]:
        self.fh.seek(offset)
        return json.loads(self.fh.read(size))


def _open_spill(key: int) -> _Spill:
    return _Spill._open[key]


@dataclass
class FileResult:
    path: str
    error: str | None = None
    changed: bool = False
    note: str | None = None  # e.g. re-encoded as UTF-8
    seconds: float = 0.0  # conversion time (kept out of the report, which is byte-reproducible)
    action_counts: Counter = field(default_factory=Counter)
    held: list[dict] | None = None  # the changes, until spilled
    spilled: tuple[_Spill, int, int] | None = None

    @property
    def changes(self) -> list[dict]:
        if self.spilled is not None:
            spill, offset, size = self.spilled
            return spill.get(offset, size)
        return self.held or []

    def counts(self) -> Counter:
        return self.action_counts

    def spill(self, spill: _Spill) -> None:
        self.spilled, self.held = (spill, *spill.put(self.held or [])), None

    def entry(self) -> dict:
        return {
            "path": self.path,
            "changed": self.changed,
            "error": self.error,
            "note": self.note,
            "counts": dict(self.action_counts),
            "changes": self.changes,
        }


@dataclass
class ConvertReport:
    src: str
    out: str
    # Each file's result, on disk until read (issue 26: the driver's memory does not grow with the tree).
    files: Spool[FileResult] = field(default_factory=Spool)
    copied: int = 0
    not_read: list[tuple[str, str]] = field(default_factory=list)  # (path, why): left out of OUT
    skipped: list[tuple[str, str]] = field(default_factory=list)  # folders not walked: (path, why)
    # Packages torch2ms wrote beside the converted files (torchvision_ms), or why it could not.
    generated: list[str] = field(default_factory=list)
    spill: _Spill | None = field(default=None, repr=False, compare=False)  # the change lists the files name

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.error]

    def totals(self) -> Counter:
        c: Counter = Counter()
        for f in self.files:
            c.update(f.counts())
        return c

    def rate(self) -> float:
        t = self.totals()
        done = t.get("converted", 0) + t.get("review", 0)
        total = done + t.get("not-converted", 0)
        return done / total if total else 1.0

    def summary(self) -> dict:
        t = self.totals()
        return {
            "python_files": len(self.files),
            "files_changed": sum(f.changed for f in self.files),
            "files_failed": len(self.failed),
            "other_files_copied": self.copied,
            "entries_not_read": len(self.not_read),
            "folders_skipped": len(self.skipped),
            "converted": t.get("converted", 0),
            "review": t.get("review", 0),
            "not_converted": t.get("not-converted", 0),
            "conversion_rate": round(self.rate(), 4),
        }

    def tail(self) -> dict:
        return {
            "not_read": [{"path": p, "why": why} for p, why in self.not_read],
            "skipped_folders": [{"path": p, "why": why} for p, why in self.skipped],
        }

    def to_dict(self) -> dict:
        """The whole report in memory (write_json streams it instead)."""
        return {
            "src": self.src,
            "out": self.out,
            "summary": self.summary(),
            "generated": self.generated,
            "files": [f.entry() for f in self.files],
            **self.tail(),
        }

    def write_json(self, fh: IO[str]) -> None:
        """The JSON report, one file entry in memory at a time (same text as ``json.dumps(to_dict(), indent=2)``)."""
        head = json.dumps(
            {"src": self.src, "out": self.out, "summary": self.summary(), "generated": self.generated},
            indent=2,
            ensure_ascii=False,
        )
        fh.write(head[: head.rindex("}")].rstrip() + ',\n  "files": [')
        for i, f in enumerate(self.files):
            fh.write(
                ("," if i else "")
                + "\n    "
                + json.dumps(f.entry(), indent=2, ensure_ascii=False).replace("\n", "\n    ")
            )
        fh.write("\n  ]" if self.files else "]")
        tail = json.dumps(self.tail(), indent=2, ensure_ascii=False)
        fh.write("," + tail[tail.index("{") + 1 :] + "\n")


def _class_bases(
    tree: ast.Module, roots: frozenset[str], imap: ImportMap | None = None
) -> list[tuple[str, tuple[str, ...], bool]]:
    """Each class of a module: (name, the last names of its bases, does it subclass a torch.nn class).

    The rule of ``analysis.infer.project_module_classes``, resolved file by file so that only these
    tuples stay in memory, not every file's syntax tree (the driver's peak would grow with the tree).
    ``imap``: ``ImportMap.from_tree(tree, roots)`` when the caller made it."""
    imap = imap or ImportMap.from_tree(tree, roots)
    out = []
    for n in nodes(tree):  # ast.walk's order, the tree's one cached walk (its ImportMap made it)
        if isinstance(n, ast.ClassDef):
            tails, torch_base = [], False
            for base in n.bases:
                full = imap.resolve(base) or ""
                torch_base |= full.startswith("torch.nn.") and imap.is_framework(full)
                name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
                tails.append(sys.intern(full.rsplit(".", 1)[-1] if full else name))
            out.append((sys.intern(n.name), tuple(tails), torch_base))
    return out


def _top_level_imports(tree: ast.Module) -> ast.Module:
    """What ``project_bindings`` reads of a module (its imports and ``__all__``): kept instead of the whole tree."""
    keep: list[ast.stmt] = [
        n
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets))
    ]
    return ast.Module(body=keep, type_ignores=[])


def _project_facts(
    py_files: list[Path],
    base: Path,
    roots: frozenset[str],
    layers: dict | None = None,
    imported: dict[str, set[str]] | None = None,
) -> tuple[frozenset[str], dict[str, dict[str, str]]]:
    """Class names that subclass nn.Module anywhere in the project (bases followed across files by name),
    and per module the torch names it gets from other project files (``from .parts import *``).
    ``imported`` (filled when given): per module, the names other project modules import from it."""
    classes: list[tuple[str, tuple[str, ...], bool]] = []
    imports: dict[str, tuple[ast.Module, bool]] = {}
    uses: dict[str, ModuleUses] | None = {} if imported is not None else None

    def read_all() -> None:
        for p in py_files:
            _project_file_facts(p, base, roots, classes, imports, layers, uses)

    with collector_paused():  # each tree is freed as the next is parsed (no cycles): nothing to collect
        run_with_headroom(read_all)  # the walks below have room for files up to the nesting cap
    if imported is not None and uses is not None:
        imported.update(imported_names(uses))
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, tails, torch_base in classes:
            if name not in found and (torch_base or any(t in found for t in tails)):
                found.add(name)
                changed = True
    return frozenset(found), project_bindings(imports, roots)


def _project_file_facts(
    p: Path,
    base: Path,
    roots: frozenset[str],
    classes: list[tuple[str, tuple[str, ...], bool]],
    imports: dict[str, tuple[ast.Module, bool]],
    layers: dict | None = None,
    uses: dict[str, ModuleUses] | None = None,
) -> None:
    """One file's part of ``_project_facts``: its classes and its top-level imports (and its layer map)."""
    try:
        tree = ast.parse(read_python(p).text)
    except (BadInput, SyntaxError, ValueError, RecursionError, MemoryError):
        return  # reported when the file itself is converted
    if walked_depth(tree) > MAX_NESTING:  # (the walk it makes is the one the facts below read)
        return  # refused when the file itself is converted (over the cap no walk is given room)
    try:
        _tree_facts(p, tree, base, roots, classes, imports, layers, uses)
    except RecursionError:  # one file never ends the run: its own conversion says what is wrong
        return


def _tree_facts(
    p: Path,
    tree: ast.Module,
    base: Path,
    roots: frozenset[str],
    classes: list[tuple[str, tuple[str, ...], bool]],
    imports: dict[str, tuple[ast.Module, bool]],
    layers: dict | None,
    uses: dict[str, ModuleUses] | None,
) -> None:
    imap = ImportMap.from_tree(tree, roots)  # (one per file: the class bases and the layer map only read it)
    classes += _class_bases(tree, roots, imap)
    try:
        name = module_name(p.relative_to(base))
        imports[name] = (_top_level_imports(tree), p.name == "__init__.py")
    except ValueError:
        return
    if uses is not None:
        uses[name] = module_uses(tree, p.name == "__init__.py")
    if layers is not None:
        layer_map.record(tree, name, roots, layers, imap)


def local_packages(src: Path) -> frozenset[str]:
    """The project's own importable top-level names: SRC itself if it is a package, its packages and modules."""
    if not src.is_dir():
        return frozenset({src.stem})
    names: set[str] = set()
    try:
        for p in src.iterdir():
            if p.name.endswith(".py"):
                names.add(p.name[:-3])
            elif p.is_dir() and (p / "__init__.py").exists():
                names.add(p.name)
    except OSError:
        pass
    if (src / "__init__.py").exists():
        names.add(src.name)
        names |= _converted_from(src)
    return frozenset(names)


def _converted_from(src: Path) -> set[str]:
    """A package torch2ms converted before keeps the import name it was converted from: ``torchvision``
    converted into ``tv1`` still imports itself as ``torchvision`` (its report's ``src`` says so). Without
    it a second conversion took those imports for the library's and changed the files again (issue 26)."""
    try:
        with open(src / REPORT_JSON, encoding="utf-8") as fh:
            head = fh.read(1 << 16)  # "src" is the report's first key: the rest may be large
        at = head.index('"src":') + len('"src":')
        name, _end = json.JSONDecoder().raw_decode(head[at:].lstrip())
    except (OSError, ValueError):
        return set()
    stem = Path(str(name)).name if isinstance(name, str) else ""
    return {stem} if stem.isidentifier() else set()


def _listing(src: Path, exclude: Path | None) -> tuple[TreeListing, Path]:
    if not src.is_dir():
        return walk_tree(src), src.parent

    def skip(path: Path, name: str) -> str | None:
        if exclude is not None and path.resolve() == exclude:
            return _("the output folder")
        return skip_reason(path, name) or earlier_output(path, name)

    return walk_tree(src, skip), src


def convert_tree(
    src: str | os.PathLike,
    out: str | os.PathLike,
    jobs: int | None = None,
    progress: bool | Progress = False,
    force: bool = False,
    runtime: str = "vendor",
    cpu_fast_conv: bool = False,
) -> ConvertReport:
    """Convert SRC (file or directory) into OUT. OUT appears whole or not at all.

    ``runtime="vendor"``: the torch2ms.runtime helpers the converted code uses are written into OUT as
    ``torch2ms_runtime/`` and imported from there (the project runs without torch2ms); ``"package"``:
    the converted code imports them from ``torch2ms.runtime``.
    ``cpu_fast_conv``: torch's Conv2d / ConvTranspose1d/2d/3d become torch2ms.runtime's layers (fast on
    CPU, convert/fast_conv.py) instead of MindSpore's own.
    ``progress``: True draws a bar on stderr; a :class:`Progress` receives the file counts.
    SIGTERM stops the run as Ctrl-C does (KeyboardInterrupt), the temporary folder removed."""
    with terminate_as_interrupt():
        return _convert_tree(src, out, jobs, progress, force, runtime, cpu_fast_conv)


def _convert_tree(
    src: str | os.PathLike,
    out: str | os.PathLike,
    jobs: int | None,
    progress: bool | Progress,
    force: bool,
    runtime: str,
    cpu_fast_conv: bool = False,
) -> ConvertReport:
    if runtime not in RUNTIME_CHOICES:
        raise ConvertError(f"--runtime {runtime}: choose one of {', '.join(RUNTIME_CHOICES)}")
    src_p, out_p = Path(src), Path(out)
    exclude = check_output(src_p, out_p, force)
    listing, base = _listing(src_p, exclude)
    report = ConvertReport(display(src_p), display(out_p))
    report.not_read = [(_rel(p.path, base), p.reason) for p in listing.problems]
    report.skipped = [(_rel(p.path, base), p.reason) for p in listing.skipped]
    roots = local_packages(src_p)
    layers: dict = {}
    imported: dict[str, set[str]] = {}
    modules, names = _project_facts(listing.python, base, roots, layers, imported)
    tmp = fresh_temp_dir(out_p)
    spill = report.spill = _Spill()
    uses_vision_package = False
    vendor = RuntimeVendor() if runtime == "vendor" else None
    packages = _package_dirs(listing.python, base) if src_p.is_dir() else frozenset()
    try:
        levels = (lambda rel: _import_level(rel, packages)) if vendor is not None else None
        # one file converted alone: who imports from it is not known
        known = imported if src_p.is_dir() else None
        run = _run(listing.python, base, roots, modules, names, jobs, progress, levels, known, cpu_fast_conv)
        for job, outcome in run:
            # (the worker found whether torchvision_ms is used and pointed the runtime imports at the vendor)
            uses_vision_package |= outcome.uses_vision_package
            if vendor is not None and outcome.runtime is not None:
                vendor.merge(outcome.runtime)
            result = _write_result(tmp, base, job, outcome)
            result.spill(spill)
            report.files.append(result)
        if uses_vision_package:
            report.generated.append(vision_models.write_package_or_reason(tmp))
        if vendor is not None:
            report.generated += _vendor_runtime(vendor, tmp)
        for p in listing.other:
            _copy_other(p, base, tmp, report)
        # for `torch2ms weights --project OUT`: each class's layers (a torch2ms output given again keeps its own)
        layer_map.write(layers, tmp, layer_map.prior_classes(src_p) if src_p.is_dir() else None)
        report.files.sort(key=lambda f: f.path)
        write_line_map(tmp, base, report.files)
        with open(tmp / REPORT_JSON, "w", encoding="utf-8") as fh:
            report.write_json(fh)
        with open(tmp / REPORT_MD, "w", encoding="utf-8") as fh:
            to_markdown(report, fh)
        swap_into_place(tmp, out_p)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report


RUNTIME_CHOICES = ("vendor", "package")


def _package_dirs(files: list[Path], base: Path) -> frozenset[str]:
    """The project's folders that are packages (hold an ``__init__.py``), relative to the root ("" = the root)."""
    return frozenset(
        "" if p.parent == base else p.parent.relative_to(base).as_posix() for p in files if p.name == "__init__.py"
    )


def _import_level(rel: str, packages: frozenset[str]) -> int:
    """0: the file imports the vendored runtime by its absolute name (the converted root is on sys.path,
    as when a script there runs). A module of a package that is the converted root itself (imported as
    ``root.module``, or run as ``python -m root.module``) imports it relatively first."""
    parts = Path(rel).parts[:-1]
    chain = ["/".join(parts[:i]) for i in range(len(parts) + 1)]
    if not all(d in packages for d in chain):
        return 0
    return len(parts) + 1


def _vendor_runtime(vendor: RuntimeVendor, tmp: Path) -> list[str]:
    """The generated torchvision_ms package imports the vendored runtime too; then write it (report lines)."""
    generated = tmp / vision_models.PACKAGE
    for path in sorted(generated.rglob("*.py")) if generated.is_dir() else []:
        text = path.read_text(encoding="utf-8")
        rewritten = vendor.rewrite(text, display(path.relative_to(tmp)))
        if rewritten != text:
            path.write_text(rewritten, encoding="utf-8")
    return vendor.write(tmp)


def _rel(path: Path, base: Path) -> str:
    try:
        return display(path.relative_to(base))
    except ValueError:
        return display(path)


def _run(
    files: list[Path],
    base: Path,
    roots,
    modules,
    names: dict[str, dict[str, str]],
    jobs: int | None,
    progress: bool | Progress,
    runtime_level: Callable[[str], int] | None = None,
    imported: dict[str, set[str]] | None = None,
    cpu_fast_conv: bool = False,
) -> Iterator[tuple[Job, Outcome]]:
    from ..kb import load_kb

    load_kb()  # once here: forked workers inherit it instead of each loading it again
    workers = 1 if len(files) < PARALLEL_MIN_FILES else max(1, jobs or os.cpu_count() or 1)
    if workers > 1:  # largest first: no worker is left with one big file while the others wait
        files = sorted(files, key=_size, reverse=True)
    work = (
        Job(
            str(p),
            str(p.relative_to(base)),
            _size(p),
            tuple(sorted(names.get(module_name(p.relative_to(base)), {}).items())),
            runtime_level(str(p.relative_to(base))) if runtime_level is not None else None,
            _imported(imported, module_name(p.relative_to(base))),
            cpu_fast_conv,
        )
        for p in files
    )
    return _with_progress(run_jobs(work, workers, Project(roots, modules)), len(files), progress)


def _imported(imported: dict[str, set[str]] | None, module: str) -> tuple[str, ...] | None:
    """The names other project modules import from MODULE (None: not known)."""
    return None if imported is None else tuple(sorted(imported.get(module, ())))


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


_COOKIE = re.compile(r"^([ \t\f]*#.*?coding[:=][ \t]*)([-\w.]+)", re.MULTILINE)


def encode_like_input(code: str, encoding: str) -> tuple[bytes, str | None]:
    """The converted text in the input's encoding; UTF-8 (cookie rewritten to say so) when it cannot hold the text."""
    try:
        return code.encode(encoding), None
    except UnicodeEncodeError:
        head, sep, rest = code.partition("\n")
        head2, sep2, rest2 = rest.partition("\n")
        first_two = _COOKIE.sub(lambda m: m.group(1) + "utf-8", head + sep + head2 + sep2, count=1)
        note = _(
            "written as UTF-8: the converted text has characters {encoding} cannot hold (its coding line now says utf-8)"
        ).format(encoding=encoding)
        return (first_two + rest2).encode("utf-8"), note


def _write_result(tmp: Path, base: Path, job: Job, outcome: Outcome) -> FileResult:
    target = tmp / job.rel
    target.parent.mkdir(parents=True, exist_ok=True)
    result = FileResult(display(job.rel), outcome.error, outcome.code is not None, seconds=outcome.seconds)
    result.held = outcome.changes
    result.action_counts = Counter(c["action"] for c in outcome.changes)
    if outcome.code is None:
        try:
            shutil.copyfile(job.path, target)  # byte-identical, whatever its encoding
        except OSError as exc:
            result.error = _("{error}; not copied either ({why})").format(
                error=outcome.error or _("not converted"), why=exc.strerror or exc
            )
    else:
        data, result.note = encode_like_input(outcome.code, outcome.encoding)
        target.write_bytes(data)
    return result


def _copy_other(p: Path, base: Path, tmp: Path, report: ConvertReport) -> None:
    rel = p.relative_to(base)
    try:
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, tmp / rel)
        report.copied += 1
    except OSError as exc:
        report.not_read.append((display(rel), _("not copied: {why}").format(why=exc.strerror or exc)))


def _with_progress(it, total: int, progress: bool | Progress):
    """Count the files as they come back: a bar with elapsed time on stderr when asked (a terminal)."""
    if progress is False:
        yield from it
        return
    if progress is True:
        from rich.console import Console

        from ..progress import RichProgress

        progress = RichProgress(Console(stderr=True))
    step = progress.steps(_("converting Python files"))
    with progress:
        step(0, total)
        for done, item in enumerate(it, 1):
            step(done, total)
            yield item


# the JSON report's action keys, as the Markdown report shows them
_ACTION_WORDS = {"converted": N_("converted"), "review": N_("review"), "not-converted": N_("not-converted")}


def to_markdown(report: ConvertReport, fh: IO[str] | None = None) -> str:
    """The Markdown report, written to ``fh`` one file at a time (returned as text when ``fh`` is None)."""
    if fh is None:
        buf = io.StringIO()
        to_markdown(report, buf)
        return buf.getvalue()
    fh.write(_markdown_head(report))
    for f in report.files:
        c = f.counts()
        fh.write(
            f"| {f.path} | {c.get('converted', 0)} | {c.get('review', 0)} | {c.get('not-converted', 0)} | {f.error or ''} |\n"
        )
    columns = (_("where"), _("API"), _("action"), _("why"))
    header = "\n## " + _("Needs a person") + "\n\n| " + " | ".join(columns) + " |\n|---|---|---|---|\n"
    for f in report.files:
        if f.counts().get("review") or f.counts().get("not-converted"):
            for ch in f.changes:
                if ch["action"] != "converted":
                    action = _(_ACTION_WORDS.get(ch["action"], ch["action"]))
                    api = _(ch["api"])  # a torch name stays as is; a construct ("training loop") is translated
                    fh.write(header + f"| {f.path}:{ch['line']} | `{api}` | {action} | {ch['note']} |\n")
                    header = ""
    _markdown_lists(report, fh)
    return ""


def _markdown_head(report: ConvertReport) -> str:
    s = report.summary()
    columns = (_("file"), _("converted"), _("review"), _("not converted"), _("error"))
    return (
        "# "
        + _("torch2ms convert: {src} → {out}").format(src=report.src, out=report.out)
        + "\n\n"
        + _("{python} Python files ({changed} changed, {failed} failed), {other} other files copied unchanged.").format(
            python=s["python_files"],
            changed=s["files_changed"],
            failed=s["files_failed"],
            other=s["other_files_copied"],
        )
        + "\n\n"
        + _(
            "Converted: {converted}, needs review: {review}, not converted: {not_converted} (conversion rate {rate})."
        ).format(
            converted=s["converted"],
            review=s["review"],
            not_converted=s["not_converted"],
            rate=f"{100 * s['conversion_rate']:.1f}%",
        )
        + "\n\n"
        + "".join(_("Generated: {path}").format(path=g) + "\n" for g in report.generated)
        + ("\n" if report.generated else "")
        + "| "
        + " | ".join(columns)
        + " |\n|---|---:|---:|---:|---|\n"
    )


def _markdown_lists(report: ConvertReport, fh: IO[str]) -> None:
    if report.not_read:
        fh.write("\n## " + _("Not read (left out of the output)") + "\n\n")
        fh.writelines(f"- `{p}`: {why}\n" for p, why in report.not_read)
    if report.skipped:
        fh.write("\n## " + _("Folders skipped") + "\n\n")
        fh.writelines(f"- `{p}/`: {why}\n" for p, why in report.skipped)
    notes = [(f.path, f.note) for f in report.files if f.note]
    if notes:
        fh.write("\n## " + _("Notes") + "\n\n")
        fh.writelines(f"- `{p}`: {n}\n" for p, n in notes)
