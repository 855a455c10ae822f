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

from .cli_support import add_lang, add_subcommand, exit_codes, language_from_argv, localise_argparse
from .i18n import _, set_language

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A problem the user can fix (a bad path, an output that would overwrite a file): one line, exit 2."""


def _write(text: str, out: str | None, source: str | None = None) -> None:
    if out:
        path = Path(out)
        if source is not None and path.exists() and (path.suffix == ".py" or _same_file(path, source)):
            raise UsageError(_("-o {out} would overwrite a source file; choose another report path").format(out=out))
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)  # atomic: a reader never sees half a report
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise UsageError(_("cannot write {out}: {why}").format(out=out, why=exc.strerror or exc)) from exc
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
    from .convert.estimate import scan_with_estimate
    from .report import scan_report

    try:  # the effort estimate is the conversion's own count of what it leaves (nothing written)
        report = scan_with_estimate(args.path, jobs=max(1, args.jobs or os.cpu_count() or 1))
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
    from .project_index import register

    console = Console(stderr=True)
    try:
        report = convert_tree(
            args.src,
            args.output,
            jobs=args.jobs,
            progress=console.is_terminal,
            force=args.force,
            runtime=args.runtime,
            cpu_fast_conv=args.cpu_fast_conv,
        )
    except ConvertError as exc:
        raise UsageError(str(exc)) from exc
    register(report.out)  # `torch2ms weights` finds the layer map of this tree without --project
    s = report.to_dict()["summary"]
    out = Console()
    out.print(
        f"[bold]torch2ms convert[/] {escape(report.src)} → {escape(report.out)}: "
        + _("{files} Python files ({changed} changed, {failed} failed), {copied} other files copied").format(
            files=s["python_files"],
            changed=s["files_changed"],
            failed=s["files_failed"],
            copied=s["other_files_copied"],
        )
    )
    out.print(
        _(
            "converted {converted}, needs review {review}, not converted {not_converted} — conversion rate {rate}"
        ).format(
            converted=s["converted"],
            review=s["review"],
            not_converted=s["not_converted"],
            rate=f"{100 * s['conversion_rate']:.1f}%",
        )
    )
    for f in report.failed:
        out.print("[red]" + _("failed") + f"[/] {escape(f.path)}: {escape(f.error or '')}", soft_wrap=True)
    for path, why in report.not_read:
        out.print("[yellow]" + _("not read") + f"[/] {escape(path)}: {escape(why)}", soft_wrap=True)
    if report.skipped:
        shown = ", ".join(f"{p}/ ({why})" for p, why in report.skipped[:5])
        more = _(" and {n} more").format(n=len(report.skipped) - 5) if len(report.skipped) > 5 else ""
        text = _("skipped {n} folders: {shown}").format(n=len(report.skipped), shown=shown)
        out.print(f"[dim]{escape(text)}{more}[/]", soft_wrap=True)
    out.print(_("report: {path}").format(path=escape(str(Path(report.out) / "torch2ms-report.md"))), soft_wrap=True)
    return EXIT_FOUND if report.failed or report.not_read else EXIT_OK


def cmd_kb_stats(args: argparse.Namespace) -> int:
    from .kb import STATUSES, load_kb

    kb = load_kb()
    stats = kb.stats()
    if args.json:
        _write(json.dumps({ns: dict(c) for ns, c in stats.items()} | {"total": len(kb)}, indent=2) + "\n", None)
        return EXIT_OK
    t = Table(title=_("torch2ms knowledge base: {n} entries").format(n=len(kb)))
    t.add_column(_("namespace"), no_wrap=True, min_width=max(map(len, stats), default=9))
    for s in STATUSES:
        t.add_column(s, justify="right")
    t.add_column(_("total"), justify="right")
    totals = {s: 0 for s in STATUSES}
    for ns, c in stats.items():
        t.add_row(ns, *(str(c.get(s, 0)) for s in STATUSES), str(sum(c.values())))
        for s in STATUSES:
            totals[s] += c.get(s, 0)
    t.add_row("[bold]" + _("total") + "[/]", *(f"[bold]{totals[s]}[/]" for s in STATUSES), f"[bold]{len(kb)}[/]")
    cases = sum(len(e.cases) for e in kb)
    Console().print(t)
    Console().print(_("{n} differential test cases").format(n=cases))
    return EXIT_OK


def cmd_kb_check(args: argparse.Namespace) -> int:
    from .cli_support import quiet_frameworks
    from .kb import KBError
    from .kb.check import check_kb

    quiet_frameworks(False)  # resolving targets imports MindSpore: its deprecation warnings are not findings
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
        console.print("[green]" + _("knowledge base OK") + "[/]")
    if not args.no_signatures:
        from .kb.check import signature_lines

        for line in signature_lines(Path(args.priority) if args.priority else None):
            console.print(line, soft_wrap=True, markup=False)
    return EXIT_FOUND if problems else EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import diagnose, level_word, main_text

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
        level = level_word(f.level)
        console.print(f"[{style[f.level]}]{level:5s}[/] {f.message}" + (f"\n      → {f.fix}" if f.fix else ""))
    return EXIT_OK if rep.ok else EXIT_FOUND


def _sub(sub, name: str, help: str, codes: str, description: str | None = None) -> argparse.ArgumentParser:
    return add_subcommand(sub, name, help, codes, description)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="torch2ms",
        description=_("Move a PyTorch project to MindSpore 2.x and prove the move is right."),
        epilog=exit_codes(_("success"), _("the command found something to look at (see each command's --help)")),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action=_VersionAction)
    add_lang(p)
    sub = p.add_subparsers(dest="command", required=True)
    _add_lookup_and_scan(sub)
    _add_convert(sub)
    _add_kb_and_doctor(sub)
    _add_framework_commands(sub)
    return p


def _add_lookup_and_scan(sub: argparse._SubParsersAction) -> None:
    lk = _sub(
        sub,
        "lookup",
        _("show the MindSpore mapping of one torch API"),
        exit_codes(_("the API is known"), _("unknown API")),
    )
    lk.add_argument("api", help=_("e.g. torch.nn.Conv2d, nn.Conv2d, F.relu, Tensor.view"))
    lk.add_argument("--json", action="store_true", help=_("machine-readable output"))
    lk.set_defaults(func=cmd_lookup)

    sc = _sub(
        sub,
        "scan",
        _("operator inventory, static-graph risks and effort of a file or project"),
        exit_codes(
            _("scanned (files that could not be read are listed in the report)"),
            _("a --fail-on condition was found"),
            _("usage error: no such path, a report path that cannot be written or would overwrite a source file"),
        ),
    )
    sc.add_argument("path", help=_("a Python file or a project folder"))
    sc.add_argument("--format", choices=["table", "json", "md", "csv"], default="table", help=_("report format"))
    sc.add_argument("-o", "--output", help=_("write the report to this file"))
    sc.add_argument("-j", "--jobs", type=int, default=None, help=_("worker processes (default: all cores)"))
    sc.add_argument(
        "--fail-on",
        action="append",
        choices=["unknown", "no-equivalent", "risk", "error"],
        help=_("exit 1 when the scan finds this (repeatable; for CI)"),
    )
    sc.set_defaults(func=cmd_scan)


def _add_convert(sub: argparse._SubParsersAction) -> None:
    cv = _sub(
        sub,
        "convert",
        _("convert a PyTorch file or project to MindSpore"),
        exit_codes(
            _("every Python file converted (what cannot be converted is marked in the code and the report)"),
            _("some files failed (copied unchanged) or could not be read (left out); the report says which and why"),
            _("usage error: no such SRC, or an output that would overwrite the input or files torch2ms did not write"),
        ),
    )
    cv.add_argument("src", help=_("a Python file or a project folder"))
    cv.add_argument(
        "-o",
        "--output",
        required=True,
        help=_(
            "output folder (written atomically; never the input or a folder holding it; an existing folder "
            "torch2ms did not write, or one inside SRC, only with --force)"
        ),
    )
    cv.add_argument("-j", "--jobs", type=int, default=None, help=_("worker processes (default: all cores)"))
    cv.add_argument(
        "--force",
        action="store_true",
        help=_("replace an existing output folder torch2ms did not write, or write inside SRC"),
    )
    cv.add_argument(
        "--runtime",
        choices=("vendor", "package"),
        default="vendor",
        help=_(
            "vendor (default): the torch2ms.runtime helpers the converted code uses are written into the output "
            "as torch2ms_runtime/ and imported from there, so the project runs with MindSpore alone; package: the "
            "converted code imports torch2ms.runtime (torch2ms must be installed where it runs)"
        ),
    )
    cv.add_argument(
        "--cpu-fast-conv",
        action="store_true",
        help=_(
            "convert torch.nn.Conv2d and ConvTranspose1d/2d/3d to torch2ms.runtime's layers (MindSpore's, "
            "computed on CPU as im2col/col2im + MatMul; MindSpore's own CPU kernels are 10-100x slower than "
            "torch's) instead of MindSpore's nn.Conv2d / nn.Conv*dTranspose; changes nothing on GPU or Ascend"
        ),
    )
    cv.set_defaults(func=cmd_convert)


def _add_kb_and_doctor(sub: argparse._SubParsersAction) -> None:
    kb = _sub(
        sub, "kb", _("knowledge-base maintenance"), exit_codes(_("OK"), _("problems found in the knowledge base"))
    )
    kbsub = kb.add_subparsers(dest="kb_command", required=True)
    st = _sub(kbsub, "stats", _("entry counts by namespace and status"), exit_codes(_("always"), _("never")))
    st.add_argument("--json", action="store_true", help=_("machine-readable output"))
    st.set_defaults(func=cmd_kb_stats)
    ck = _sub(
        kbsub,
        "check",
        _("validate the KB data (schema, duplicates, unknown targets)"),
        exit_codes(_("the knowledge base is valid"), _("problems found (listed)")),
    )
    ck.add_argument("--no-targets", action="store_true", help=_("do not import mindspore to resolve targets"))
    ck.add_argument("--priority", help=_("torch_api_priority.tsv: also report priority APIs without an entry"))
    ck.add_argument(
        "--no-signatures",
        action="store_true",
        help=_("skip the signature audit (each torch parameter mapped and tested, or marked; needs torch)"),
    )
    ck.set_defaults(func=cmd_kb_check)

    dr = _sub(
        sub,
        "doctor",
        _("versions, device target and known-bad combinations"),
        exit_codes(_("the environment is usable"), _("errors found (each with the command that fixes it)")),
    )
    dr.add_argument("--json", action="store_true", help=_("machine-readable output"))
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

    from .replay.cli import add_replay_parser  # torch2ms replay --torch F.py:Factory --input-shape .. (issue 25)

    add_replay_parser(sub)

    from .export import add_export_parser  # torch2ms export --net .. --ckpt .. --input-shape .. -o OUT.mindir (R29)

    add_export_parser(sub)


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked (importlib.metadata costs ~20 ms,
    which every ``lookup`` would pay otherwise)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        # argparse's own words for it (translated with the rest of argparse's, cli_support.localise_argparse)
        help = help or argparse._("show program's version number and exit")  # type: ignore[attr-defined]
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(f"{parser.prog} {_version()}\n")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch2ms")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    lang = language_from_argv(sys.argv[1:] if argv is None else argv)
    if lang:  # before the parser is built: its help texts are translated as they are added
        set_language(lang)
    localise_argparse()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        _say_error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say_error(_("interrupted"))
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
            _(
                "internal error ({kind}: {exc}); please report it with the command line "
                "(TORCH2MS_DEBUG=1 shows the traceback)"
            ).format(kind=type(exc).__name__, exc=exc)
        )
        return EXIT_USAGE


def _say_error(message: str) -> None:
    from rich.markup import escape

    Console(stderr=True).print("[red]" + _("error:") + f"[/] {escape(message)}", soft_wrap=True)


if __name__ == "__main__":
    sys.exit(main())
