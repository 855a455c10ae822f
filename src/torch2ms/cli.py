"""The ``torch2ms`` command: each subcommand is a thin shell over a library function."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .cli_support import exit_codes

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A problem the user can fix (a bad path, an output that would overwrite a file): one line, exit 2."""


def _write(text: str, out: str | None, source: str | None = None) -> None:
    if out:
        path = Path(out)
        if source is not None and path.exists() and (path.suffix == ".py" or _same_file(path, source)):
            raise UsageError(f"-o {out} would overwrite a source file; choose another report path")
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)  # atomic: a reader never sees half a report
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from exc
    else:
        sys.stdout.write(text)


def _same_file(a: Path, b: str) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def cmd_lookup(args: argparse.Namespace) -> int:
    from .kb.lookup import lookup, lookup_dict
    from .report.lookup_report import render_lookup

    res = lookup(args.api)
    d = lookup_dict(res)
    if args.json:
        _write(json.dumps(d, indent=2, ensure_ascii=False) + "\n", None)
    else:
        render_lookup(d, Console())
    return EXIT_OK if res.found else EXIT_FOUND


def cmd_scan(args: argparse.Namespace) -> int:
    from .analysis.scan import scan_path
    from .report import scan_report

    try:
        report = scan_path(args.path)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    if args.format == "table":
        if args.output:
            buf = io.StringIO()
            scan_report.render_terminal(report, Console(file=buf, width=160, color_system=None))
            _write(buf.getvalue(), args.output, args.path)
        else:
            scan_report.render_terminal(report, Console())
    else:
        render = {"json": scan_report.to_json, "md": scan_report.to_markdown, "csv": scan_report.to_csv}[args.format]
        _write(render(report), args.output, args.path)
    status = report.by_status()
    fail = {
        "unknown": status.get("unknown", 0) > 0,
        "no-equivalent": status.get("no-equivalent", 0) > 0,
        "risk": bool(report.risks),
        "error": bool(report.errors),
    }
    return EXIT_FOUND if any(fail[f] for f in args.fail_on or []) else EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from .convert import ConvertError, convert_tree

    console = Console(stderr=True)
    try:
        report = convert_tree(
            args.src, args.output, jobs=args.jobs, progress=console.is_terminal, force=args.force, runtime=args.runtime
        )
    except ConvertError as exc:
        raise UsageError(str(exc)) from exc
    s = report.to_dict()["summary"]
    out = Console()
    out.print(
        f"[bold]torch2ms convert[/] {escape(report.src)} → {escape(report.out)}: {s['python_files']} Python files "
        f"({s['files_changed']} changed, {s['files_failed']} failed), {s['other_files_copied']} other files copied"
    )
    out.print(
        f"converted {s['converted']}, needs review {s['review']}, not converted {s['not_converted']} "
        f"— conversion rate {100 * s['conversion_rate']:.1f}%"
    )
    for f in report.failed:
        out.print(f"[red]failed[/] {escape(f.path)}: {escape(f.error or '')}", soft_wrap=True)
    for path, why in report.not_read:
        out.print(f"[yellow]not read[/] {escape(path)}: {escape(why)}", soft_wrap=True)
    if report.skipped:
        shown = ", ".join(f"{p}/ ({why})" for p, why in report.skipped[:5])
        more = f" and {len(report.skipped) - 5} more" if len(report.skipped) > 5 else ""
        out.print(f"[dim]skipped {len(report.skipped)} folders: {escape(shown)}{more}[/]", soft_wrap=True)
    out.print(f"report: {escape(str(Path(report.out) / 'torch2ms-report.md'))}", soft_wrap=True)
    return EXIT_FOUND if report.failed or report.not_read else EXIT_OK


def cmd_kb_stats(args: argparse.Namespace) -> int:
    from .kb import STATUSES, load_kb

    kb = load_kb()
    stats = kb.stats()
    if args.json:
        _write(json.dumps({ns: dict(c) for ns, c in stats.items()} | {"total": len(kb)}, indent=2) + "\n", None)
        return EXIT_OK
    t = Table(title=f"torch2ms knowledge base: {len(kb)} entries")
    t.add_column("namespace", no_wrap=True, min_width=max(map(len, stats), default=9))
    for s in STATUSES:
        t.add_column(s, justify="right")
    t.add_column("total", justify="right")
    totals = {s: 0 for s in STATUSES}
    for ns, c in stats.items():
        t.add_row(ns, *(str(c.get(s, 0)) for s in STATUSES), str(sum(c.values())))
        for s in STATUSES:
            totals[s] += c.get(s, 0)
    t.add_row("[bold]total[/]", *(f"[bold]{totals[s]}[/]" for s in STATUSES), f"[bold]{len(kb)}[/]")
    cases = sum(len(e.cases) for e in kb)
    Console().print(t)
    Console().print(f"{cases} differential test cases")
    return EXIT_OK


def cmd_kb_check(args: argparse.Namespace) -> int:
    from .kb import KBError
    from .kb.check import check_kb

    try:
        problems = check_kb(
            resolve_targets=not args.no_targets, priority_file=Path(args.priority) if args.priority else None
        )
    except KBError as exc:
        problems = [str(exc)]
    console = Console()
    for p in problems:
        console.print(f"[red]✗[/] {p}")
    if not problems:
        console.print("[green]knowledge base OK[/]")
    return EXIT_FOUND if problems else EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import diagnose, main_text

    rep = diagnose()
    if args.json:
        _write(
            json.dumps(
                {
                    "versions": rep.versions,
                    "device_target": rep.device_target,
                    "findings": [f.__dict__ for f in rep.findings],
                },
                indent=2,
            )
            + "\n",
            None,
        )
        return EXIT_OK if rep.ok else EXIT_FOUND
    console = Console()
    for line in main_text(rep):
        console.print(line)
    style = {"ok": "green", "warn": "yellow", "error": "red"}
    for f in rep.findings:
        console.print(f"[{style[f.level]}]{f.level:5s}[/] {f.message}" + (f"\n      → {f.fix}" if f.fix else ""))
    return EXIT_OK if rep.ok else EXIT_FOUND


def _sub(sub, name: str, help: str, codes: str, description: str | None = None) -> argparse.ArgumentParser:
    return sub.add_parser(
        name,
        help=help,
        description=description or help,
        epilog=codes,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="torch2ms",
        description="Move a PyTorch project to MindSpore 2.x and prove the move is right.",
        epilog=exit_codes("success", "the command found something to look at (see each command's --help)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    _add_lookup_and_scan(sub)
    _add_convert(sub)
    _add_kb_and_doctor(sub)
    _add_framework_commands(sub)
    return p


def _add_lookup_and_scan(sub: argparse._SubParsersAction) -> None:
    lk = _sub(
        sub, "lookup", "show the MindSpore mapping of one torch API", exit_codes("the API is known", "unknown API")
    )
    lk.add_argument("api", help="e.g. torch.nn.Conv2d, nn.Conv2d, F.relu, Tensor.view")
    lk.add_argument("--json", action="store_true", help="machine-readable output")
    lk.set_defaults(func=cmd_lookup)

    sc = _sub(
        sub,
        "scan",
        "operator inventory, static-graph risks and effort of a file or project",
        exit_codes(
            "scanned (files that could not be read are listed in the report)",
            "a --fail-on condition was found",
            "usage error: no such path, a report path that cannot be written or would overwrite a source file",
        ),
    )
    sc.add_argument("path")
    sc.add_argument("--format", choices=["table", "json", "md", "csv"], default="table")
    sc.add_argument("-o", "--output", help="write the report to this file")
    sc.add_argument(
        "--fail-on",
        action="append",
        choices=["unknown", "no-equivalent", "risk", "error"],
        help="exit 1 when the scan finds this (repeatable; for CI)",
    )
    sc.set_defaults(func=cmd_scan)


def _add_convert(sub: argparse._SubParsersAction) -> None:
    cv = _sub(
        sub,
        "convert",
        "convert a PyTorch file or project to MindSpore",
        exit_codes(
            "every Python file converted (what cannot be converted is marked in the code and the report)",
            "some files failed (copied unchanged) or could not be read (left out); the report says which and why",
            "usage error: no such SRC, or an output that would overwrite the input or files torch2ms did not write",
        ),
    )
    cv.add_argument("src")
    cv.add_argument(
        "-o",
        "--output",
        required=True,
        help="output folder (written atomically; never the input or a folder holding it; an existing folder "
        "torch2ms did not write, or one inside SRC, only with --force)",
    )
    cv.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all cores)")
    cv.add_argument(
        "--force",
        action="store_true",
        help="replace an existing output folder torch2ms did not write, or write inside SRC",
    )
    cv.add_argument(
        "--runtime",
        choices=("vendor", "package"),
        default="vendor",
        help="vendor (default): the torch2ms.runtime helpers the converted code uses are written into the output "
        "as torch2ms_runtime/ and imported from there, so the project runs with MindSpore alone; package: the "
        "converted code imports torch2ms.runtime (torch2ms must be installed where it runs)",
    )
    cv.set_defaults(func=cmd_convert)


def _add_kb_and_doctor(sub: argparse._SubParsersAction) -> None:
    kb = _sub(sub, "kb", "knowledge-base maintenance", exit_codes("OK", "problems found in the knowledge base"))
    kbsub = kb.add_subparsers(dest="kb_command", required=True)
    st = _sub(kbsub, "stats", "entry counts by namespace and status", exit_codes("always", "never"))
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_kb_stats)
    ck = _sub(
        kbsub,
        "check",
        "validate the KB data (schema, duplicates, unknown targets)",
        exit_codes("the knowledge base is valid", "problems found (listed)"),
    )
    ck.add_argument("--no-targets", action="store_true", help="do not import mindspore to resolve targets")
    ck.add_argument("--priority", help="torch_api_priority.tsv: also report priority APIs without an entry")
    ck.set_defaults(func=cmd_kb_check)

    dr = _sub(
        sub,
        "doctor",
        "versions, device target and known-bad combinations",
        exit_codes("the environment is usable", "errors found (each with the command that fixes it)"),
    )
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(func=cmd_doctor)


def _add_framework_commands(sub: argparse._SubParsersAction) -> None:
    """The commands that import the frameworks (their modules load only when run)."""
    from .data.cli import add_check_data_parser  # torch2ms check-data --torch .. --ms .. (R25)

    add_check_data_parser(sub)

    from .weights.cli import add_weights_parser  # torch2ms weights IN -o OUT.ckpt (R21, R22)

    add_weights_parser(sub)

    from .align.cli import add_compare_parser  # torch2ms compare --torch ... --ms ... (R23-R28, R30)

    add_compare_parser(sub)

    from .trainrun.cli import add_compare_train_parser  # torch2ms compare-train --torch T.py --ms M.py (R26)

    add_compare_train_parser(sub)

    from .export import add_export_parser  # torch2ms export --net .. --ckpt .. --input-shape .. -o OUT.mindir (R29)

    add_export_parser(sub)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        _say_error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say_error("interrupted")
        return EXIT_USAGE
    except BrokenPipeError:  # `torch2ms scan . | head`: the reader left; nothing to say
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:  # a file the user named cannot be read or written
        _say_error(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
        return EXIT_USAGE
    except Exception as exc:
        if os.environ.get("TORCH2MS_DEBUG"):
            raise
        _say_error(
            f"internal error ({type(exc).__name__}: {exc}); please report it with the command line "
            "(TORCH2MS_DEBUG=1 shows the traceback)"
        )
        return EXIT_USAGE


def _say_error(message: str) -> None:
    from rich.markup import escape

    Console(stderr=True).print(f"[red]error:[/] {escape(message)}", soft_wrap=True)


if __name__ == "__main__":
    sys.exit(main())
