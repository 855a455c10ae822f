"""The ``torch2ms`` command: each subcommand is a thin shell over a library function."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2


def _write(text: str, out: str | None) -> None:
    if out:
        path = Path(out)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # atomic: a reader never sees half a report
    else:
        sys.stdout.write(text)


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
        Console(stderr=True).print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    if args.format == "table":
        if args.output:
            with open(args.output, "w", encoding="utf-8") as fh:
                scan_report.render_terminal(report, Console(file=fh, width=160, color_system=None))
        else:
            scan_report.render_terminal(report, Console())
    else:
        render = {"json": scan_report.to_json, "md": scan_report.to_markdown, "csv": scan_report.to_csv}[args.format]
        _write(render(report), args.output)
    status = report.by_status()
    fail = {
        "unknown": status.get("unknown", 0) > 0,
        "no-equivalent": status.get("no-equivalent", 0) > 0,
        "risk": bool(report.risks),
        "error": bool(report.errors),
    }
    return EXIT_FOUND if any(fail[f] for f in args.fail_on or []) else EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    from .convert import ConvertError, convert_tree

    console = Console(stderr=True)
    try:
        report = convert_tree(args.src, args.output, jobs=args.jobs, progress=console.is_terminal)
    except ConvertError as exc:
        console.print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    s = report.to_dict()["summary"]
    out = Console()
    out.print(
        f"[bold]torch2ms convert[/] {args.src} → {args.output}: {s['python_files']} Python files "
        f"({s['files_changed']} changed), {s['other_files_copied']} other files copied"
    )
    out.print(
        f"converted {s['converted']}, needs review {s['review']}, not converted {s['not_converted']} "
        f"— conversion rate {100 * s['conversion_rate']:.1f}%"
    )
    for f in report.failed:
        out.print(f"[red]failed[/] {f.path}: {f.error}")
    out.print(f"report: {Path(args.output) / 'torch2ms-report.md'}")
    return EXIT_FOUND if report.failed else EXIT_OK


def cmd_kb_stats(args: argparse.Namespace) -> int:
    from .kb import STATUSES, load_kb

    kb = load_kb()
    stats = kb.stats()
    if args.json:
        _write(json.dumps({ns: dict(c) for ns, c in stats.items()} | {"total": len(kb)}, indent=2) + "\n", None)
        return EXIT_OK
    t = Table(title=f"torch2ms knowledge base: {len(kb)} entries")
    t.add_column("namespace")
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="torch2ms", description="Move a PyTorch project to MindSpore 2.x and prove the move is right."
    )
    sub = p.add_subparsers(dest="command", required=True)

    lk = sub.add_parser("lookup", help="show the MindSpore mapping of one torch API")
    lk.add_argument("api", help="e.g. torch.nn.Conv2d, nn.Conv2d, F.relu, Tensor.view")
    lk.add_argument("--json", action="store_true", help="machine-readable output")
    lk.set_defaults(func=cmd_lookup)

    sc = sub.add_parser("scan", help="operator inventory, static-graph risks and effort of a file or project")
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

    cv = sub.add_parser("convert", help="convert a PyTorch file or project to MindSpore")
    cv.add_argument("src")
    cv.add_argument("-o", "--output", required=True, help="output directory (written atomically; never inside SRC)")
    cv.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all cores)")
    cv.set_defaults(func=cmd_convert)

    kb = sub.add_parser("kb", help="knowledge-base maintenance")
    kbsub = kb.add_subparsers(dest="kb_command", required=True)
    st = kbsub.add_parser("stats", help="entry counts by namespace and status")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_kb_stats)
    ck = kbsub.add_parser("check", help="validate the KB data (schema, duplicates, unknown targets)")
    ck.add_argument("--no-targets", action="store_true", help="do not import mindspore to resolve targets")
    ck.add_argument("--priority", help="torch_api_priority.tsv: also report priority APIs without an entry")
    ck.set_defaults(func=cmd_kb_check)

    dr = sub.add_parser("doctor", help="versions, device target and known-bad combinations")
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(func=cmd_doctor)

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
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
