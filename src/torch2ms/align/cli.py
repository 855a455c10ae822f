"""``torch2ms compare``: the thin command shell over :func:`torch2ms.align.api.compare_models`.

Exit codes: 0 the port matches; 1 a divergence was found (the report names the first layer);
2 usage or input errors.
"""

from __future__ import annotations

import argparse
import json
import sys

EXIT_USAGE = 2


def _shape(text: str) -> list[int]:
    try:
        return [int(s) for s in text.replace("x", ",").split(",") if s.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated integers, e.g. 2,3,32,32") from exc


def add_compare_parser(sub) -> None:
    c = sub.add_parser(
        "compare",
        help="compare a torch model and its MindSpore port layer by layer; name the "
        "first layer that diverges (and optionally train both)",
    )
    c.add_argument("--torch", required=True, metavar="PATH_OR_MODULE:FACTORY", help="the torch model (no-arg factory)")
    c.add_argument("--ms", required=True, metavar="PATH_OR_MODULE:FACTORY", help="the MindSpore port (no-arg factory)")
    c.add_argument("--weights", help="torch checkpoint loaded into the torch model (default: its seeded random init)")
    c.add_argument("--inputs", help=".npz with x (or x0, x1...) and optionally train_x/train_y")
    c.add_argument("--input-shape", type=_shape, help="seeded random input, e.g. 2,3,32,32")
    c.add_argument("--input-dtype", default="float32")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--train-steps", type=int, default=0, help="also train both sides N steps and compare (R26)")
    c.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default="sgd")
    c.add_argument("--lr", type=float, default=0.01)
    c.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    c.add_argument("--weight-decay", type=float, default=0.0)
    c.add_argument("--out", help="directory for report.json, report.html and the plots")
    c.add_argument("--torch-python", help="python of another environment with torch: the torch side runs there")
    c.add_argument("--no-graph", action="store_true", help="skip the GRAPH_MODE check of the final output")
    c.add_argument(
        "--replay-all",
        action="store_true",
        help="run every MindSpore layer on torch's input (default: only layers above the noise threshold)",
    )
    c.add_argument("--json", action="store_true", help="print report.json to stdout instead of the table")
    c.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .api import CompareUsageError, compare_models
    from .report import print_report

    try:
        rep = compare_models(
            args.torch,
            args.ms,
            weights=args.weights,
            inputs=args.inputs,
            input_shape=args.input_shape,
            input_dtype=args.input_dtype,
            seed=args.seed,
            train_steps=args.train_steps,
            optimizer=args.optimizer,
            lr=args.lr,
            momentum=args.momentum,
            weight_decay=args.weight_decay,
            out_dir=args.out,
            torch_python=args.torch_python,
            graph=not args.no_graph,
            replay_all=args.replay_all,
        )
    except CompareUsageError as exc:
        from rich.markup import escape

        Console(stderr=True).print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(json.dumps(rep.to_dict(), indent=1, default=str) + "\n")
    else:
        console = Console() if sys.stdout.isatty() else Console(width=180)
        print_report(rep, console)
        if args.out:
            console.print(f"report: {args.out}/report.html")
    return rep.exit_code
