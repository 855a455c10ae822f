"""Convert a file or a project tree into an output directory, atomically and reproducibly.

``.py`` files are converted (in parallel on all cores for trees); every other file is copied
byte-identical. The input tree is never written to.
"""

from __future__ import annotations

import ast
import json
import multiprocessing
import os
import shutil
import tempfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.infer import project_module_classes
from ..analysis.scan import SKIP_DIRS, BadInput, read_source
from .constructs import vision_models
from .pipeline import ConvertedModule, convert_source

REPORT_JSON = "torch2ms-report.json"
REPORT_MD = "torch2ms-report.md"
PARALLEL_MIN_FILES = 8


class ConvertError(Exception):
    """A usage problem: bad paths, an output that would overwrite the input."""


@dataclass
class FileResult:
    path: str
    changes: list[dict] = field(default_factory=list)
    error: str | None = None
    changed: bool = False

    def counts(self) -> Counter:
        return Counter(c["action"] for c in self.changes)


@dataclass
class ConvertReport:
    src: str
    out: str
    files: list[FileResult] = field(default_factory=list)
    copied: int = 0
    # Packages torch2ms wrote beside the converted files (torchvision_ms), or why it could not.
    generated: list[str] = field(default_factory=list)

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

    def to_dict(self) -> dict:
        t = self.totals()
        return {
            "src": self.src,
            "out": self.out,
            "summary": {
                "python_files": len(self.files),
                "files_changed": sum(f.changed for f in self.files),
                "files_failed": len(self.failed),
                "other_files_copied": self.copied,
                "converted": t.get("converted", 0),
                "review": t.get("review", 0),
                "not_converted": t.get("not-converted", 0),
                "conversion_rate": round(self.rate(), 4),
            },
            "generated": self.generated,
            "files": [
                {
                    "path": f.path,
                    "changed": f.changed,
                    "error": f.error,
                    "counts": dict(f.counts()),
                    "changes": f.changes,
                }
                for f in self.files
            ],
        }


def _convert_one(
    args: tuple[str, str, frozenset[str], frozenset[str]],
) -> tuple[str, ConvertedModule | None, str | None]:
    abs_path, rel, local_roots, project_modules = args
    try:
        source = read_source(Path(abs_path))
    except BadInput as exc:
        return rel, None, str(exc)
    return rel, convert_source(source, rel, local_roots=local_roots, project_modules=project_modules), None


def _project_modules(py_files: list[Path], roots: frozenset[str]) -> frozenset[str]:
    trees = []
    for p in py_files:
        try:
            trees.append(ast.parse(read_source(p)))
        except (BadInput, SyntaxError, ValueError):
            continue  # reported when the file itself is converted
    return project_module_classes(trees, roots)


def local_packages(src: Path) -> frozenset[str]:
    """The project's own importable top-level names: SRC itself if it is a package, its packages and modules."""
    if src.is_file():
        return frozenset({src.stem})
    names = {p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= {p.stem for p in src.glob("*.py")}
    if (src / "__init__.py").exists():
        names.add(src.name)
    return frozenset(names)


def _walk(src: Path, exclude: Path | None) -> tuple[list[Path], list[Path]]:
    py, other = [], []
    for dirpath, dirnames, filenames in os.walk(src):
        d = Path(dirpath)
        dirnames[:] = sorted(
            n
            for n in dirnames
            if n not in SKIP_DIRS
            and not (d / n / "pyvenv.cfg").exists()
            and (exclude is None or (d / n).resolve() != exclude)
        )
        for name in sorted(filenames):
            p = d / name
            (py if name.endswith(".py") else other).append(p)
    return py, other


def _check_paths(src: Path, out: Path) -> Path | None:
    """Refuse outputs that could touch the input; return a path to exclude from the walk."""
    if not src.exists():
        raise ConvertError(f"{src}: no such file or directory")
    s, o = src.resolve(), out.resolve()
    if s == o:
        raise ConvertError(f"output {out} is the input itself; choose another -o")
    if src.is_dir() and s in o.parents:
        # Inside the input: only safe for a fresh directory or an earlier torch2ms output.
        if o.exists() and not (o / REPORT_JSON).exists():
            raise ConvertError(
                f"output {out} is inside the input tree and is not an earlier torch2ms output; choose another -o"
            )
        return o
    if src.is_dir() and o in s.parents:
        raise ConvertError(f"output {out} contains the input tree; it would be replaced; choose another -o")
    return None


def convert_tree(
    src: str | os.PathLike, out: str | os.PathLike, jobs: int | None = None, progress: bool = False
) -> ConvertReport:
    """Convert SRC (file or directory) into OUT. OUT appears whole or not at all."""
    src_p, out_p = Path(src), Path(out)
    exclude = _check_paths(src_p, out_p)
    single = src_p.is_file()
    if single:
        py_files, other = ([src_p], []) if src_p.suffix == ".py" else ([], [src_p])
        base = src_p.parent
    else:
        py_files, other = _walk(src_p, exclude)
        base = src_p
    report = ConvertReport(str(src_p), str(out_p))
    roots = local_packages(src_p)
    modules = _project_modules(py_files, roots)
    work = [(str(p), str(p.relative_to(base)), roots, modules) for p in py_files]
    results = _run(work, jobs, progress)

    out_p.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_p.name}.tmp-", dir=out_p.parent))
    try:
        for rel, mod, err in results:
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if mod is None:
                shutil.copyfile(base / rel, target)
                report.files.append(FileResult(rel, error=err))
                continue
            if mod.changed:
                target.write_text(mod.code, encoding="utf-8", newline="")
            else:
                shutil.copyfile(base / rel, target)  # byte-identical, whatever its encoding
            report.files.append(
                FileResult(
                    rel,
                    [{"api": c.api, "action": c.action, "note": c.note, "line": c.line} for c in mod.changes],
                    mod.error,
                    mod.changed,
                )
            )
        if any(mod is not None and vision_models.uses_package(mod.code) for _, mod, _ in results):
            report.generated.append(vision_models.write_package_or_reason(tmp))
        for p in other:
            rel = p.relative_to(base)
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, tmp / rel)
            report.copied += 1
        (tmp / REPORT_JSON).write_text(
            json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (tmp / REPORT_MD).write_text(to_markdown(report), encoding="utf-8")
        _swap_into_place(tmp, out_p)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report


def _swap_into_place(tmp: Path, out: Path) -> None:
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        old.rmdir()
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out)


def _run(work: list[tuple[str, str]], jobs: int | None, progress: bool):
    jobs = jobs or os.cpu_count() or 1
    if len(work) < PARALLEL_MIN_FILES or jobs == 1:
        it = map(_convert_one, work)
        return list(_with_progress(it, len(work), progress))
    # Load the KB (and the transforms it registers) once here: forked workers inherit it instead
    # of each spending ~1 s loading it again.
    from ..kb import load_kb

    load_kb()
    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        chunk = max(1, len(work) // (jobs * 4))
        return list(_with_progress(pool.map(_convert_one, work, chunksize=chunk), len(work), progress))


def _with_progress(it, total: int, enabled: bool):
    if not enabled:
        yield from it
        return
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task("converting", total=total)
        for item in it:
            bar.advance(task)
            yield item


def to_markdown(report: ConvertReport) -> str:
    d = report.to_dict()
    s = d["summary"]
    out = [
        f"# torch2ms convert: {report.src} → {report.out}",
        "",
        f"{s['python_files']} Python files ({s['files_changed']} changed, {s['files_failed']} failed), "
        f"{s['other_files_copied']} other files copied unchanged.",
        "",
        f"Converted: {s['converted']}, needs review: {s['review']}, not converted: {s['not_converted']} "
        f"(conversion rate {100 * s['conversion_rate']:.1f}%).",
        "",
        *[f"Generated: {g}" for g in d["generated"]],
        *([""] if d["generated"] else []),
        "| file | converted | review | not converted | error |",
        "|---|---:|---:|---:|---|",
    ]
    for f in d["files"]:
        c = f["counts"]
        out.append(
            f"| {f['path']} | {c.get('converted', 0)} | {c.get('review', 0)} | {c.get('not-converted', 0)} | {f['error'] or ''} |"
        )
    todo = [(f["path"], ch) for f in d["files"] for ch in f["changes"] if ch["action"] != "converted"]
    if todo:
        out += ["", "## Needs a person", "", "| where | API | action | why |", "|---|---|---|---|"]
        for path, ch in todo:
            out.append(f"| {path}:{ch['line']} | `{ch['api']}` | {ch['action']} | {ch['note']} |")
    return "\n".join(out) + "\n"
