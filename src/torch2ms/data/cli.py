"""``torch2ms check-data``: the thin command shell over :func:`torch2ms.data.check_data`.

Exit codes: 0 the pipelines agree; 1 they differ (or one raised while read); 2 usage errors (bad
spec, a factory that cannot be imported or built, an --out that is a file).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli_support import (
    EXIT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    add_subcommand,
    add_verbose,
    exit_codes_epilog,
    print_error,
    quiet_frameworks,
    run_guarded,
    stdout_to_stderr,
)
from ..i18n import N_, _

SPEC_HELP = N_(
    "PATH_OR_MODULE:FACTORY — a function or class called with no arguments, an expression evaluated in the "
    "module (data.py:'make_loader(batch_size=8)'), or a module-level loader/dataset object"
)


def add_check_data_parser(sub) -> None:
    help_text = _(
        "run a torch and a MindSpore data pipeline on the same data and compare shapes, dtypes, "
        "per-channel mean/std, values, labels and batches per epoch"
    )
    epilog = exit_codes_epilog(
        _("the pipelines agree (warnings and notes may still be printed)"),
        _("the pipelines differ, or one of them raised while being read: the findings say why"),
    )
    p = add_subcommand(sub, "check-data", help_text, epilog)
    p.add_argument(
        "--torch", required=True, metavar="SPEC", help=_("the DataLoader or iterable of batches:") + " " + _(SPEC_HELP)
    )
    p.add_argument(
        "--ms", required=True, metavar="SPEC", help=_("the mindspore.dataset or iterable:") + " " + _(SPEC_HELP)
    )
    p.add_argument("--batches", type=int, default=2, metavar="K", help=_("compare the first K batches (default 2)"))
    p.add_argument("--atol", type=float, default=1e-3, help=_("tolerance on mean/std and max |Δ| (default 1e-3)"))
    p.add_argument(
        "--stats-only", action="store_true", help=_("skip the paired max |Δ| test (pipelines with random augmentation)")
    )
    p.add_argument("--out", metavar="DIR", help=_("write report.json, report.md and report.html here"))
    p.add_argument("--json", action="store_true", help=_("print the JSON report instead of the table"))
    p.add_argument(
        "--import-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=_(
            "a file that runs code at import is first imported in a child process with this limit "
            "(default 60; 0 turns the check off)"
        ),
    )
    add_verbose(p)
    p.set_defaults(func=cmd_check_data)


def _usage_problem(args: argparse.Namespace) -> str | None:
    if args.batches < 1:
        return _("--batches must be at least 1")
    if args.atol < 0 or args.atol != args.atol:
        return _("--atol {value}: must be a number ≥ 0").format(value=args.atol)
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        return _("--out {path}: is a file; give a directory for report.json, report.md and report.html").format(
            path=args.out
        )
    return None


def cmd_check_data(args: argparse.Namespace) -> int:
    quiet_frameworks(args.verbose)
    return run_guarded(lambda: _check_data(args), "check-data", args.verbose)


def _check_data(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..progress import for_console
    from . import SpecError, check_data
    from .report_html import write_reports

    out = Console() if sys.stdout.isatty() else Console(width=160)  # a log file still gets the whole table
    problem = _usage_problem(args)
    if problem:
        print_error(problem)
        return EXIT_USAGE
    try:
        with for_console(Console(stderr=True), quiet=args.json) as progress, stdout_to_stderr(args.json):
            report = check_data(
                args.torch,
                args.ms,
                batches=args.batches,
                atol=args.atol,
                exact=not args.stats_only,
                progress=progress,
                import_timeout=args.import_timeout,
            )
    except SpecError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(report.to_json())
    else:
        report.render(out)
    if args.out:
        paths = write_reports(report, args.out)
        if not args.json:
            out.print(_("report:") + " " + ", ".join(str(p) for p in paths))
    return EXIT_OK if report.ok else EXIT_FOUND
