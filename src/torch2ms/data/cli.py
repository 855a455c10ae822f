"""``torch2ms check-data``: the thin command shell over :func:`torch2ms.data.check_data`.

Exit codes: 0 the pipelines agree; 1 they differ (or one raised); 2 usage errors (bad spec,
a factory that cannot be imported or built).
"""

from __future__ import annotations

import argparse
import sys

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2


def add_check_data_parser(sub) -> None:
    p = sub.add_parser(
        "check-data",
        help="run a torch and a MindSpore data pipeline on the same data and compare "
        "shapes, dtypes, per-channel mean/std, values, labels and batches per epoch",
    )
    p.add_argument(
        "--torch",
        required=True,
        metavar="PATH_OR_MODULE:FACTORY",
        help="factory (no arguments) returning the DataLoader or any iterable of batches",
    )
    p.add_argument(
        "--ms",
        required=True,
        metavar="PATH_OR_MODULE:FACTORY",
        help="factory (no arguments) returning the mindspore.dataset object or any iterable of batches",
    )
    p.add_argument("--batches", type=int, default=2, metavar="K", help="compare the first K batches (default 2)")
    p.add_argument("--atol", type=float, default=1e-3, help="tolerance on mean/std and max |Δ| (default 1e-3)")
    p.add_argument(
        "--stats-only", action="store_true", help="skip the paired max |Δ| test (pipelines with random augmentation)"
    )
    p.add_argument("--out", metavar="DIR", help="write report.json and report.md here")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    p.set_defaults(func=cmd_check_data)


def cmd_check_data(args: argparse.Namespace) -> int:
    from rich.console import Console

    from . import SpecError, check_data

    err = Console(stderr=True)
    out = Console() if sys.stdout.isatty() else Console(width=160)  # a log file still gets the whole table
    if args.batches < 1:
        err.print("[red]error:[/] --batches must be at least 1")
        return EXIT_USAGE
    try:
        report = check_data(args.torch, args.ms, batches=args.batches, atol=args.atol, exact=not args.stats_only)
    except SpecError as exc:
        err.print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - a factory that fails to build is a usage problem, not a verdict
        err.print(f"[red]error:[/] building the pipelines failed: {type(exc).__name__}: {exc}")
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(report.to_json())
    else:
        report.render(out)
    if args.out:
        paths = report.write(args.out)
        if not args.json:
            out.print("report: " + ", ".join(str(p) for p in paths))
    return EXIT_OK if report.ok else EXIT_FOUND
