"""``torch2ms compare-train``: the thin command shell over :func:`torch2ms.trainrun.compare_train`.

Exit codes: 0 the two scripts train the same; 1 they differ (the report names the first step beyond
tolerance and its likeliest cause); 2 usage or input errors (a missing file, a script that crashes,
needs arguments or never steps an optimizer).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..i18n import _

EXIT_USAGE = 2


def add_compare_train_parser(sub) -> None:
    c = sub.add_parser(
        "compare-train",
        help=_(
            "run a torch training script and its conversion side by side, unmodified, and compare them step by step"
        ),
        description=_(
            "Runs both scripts (each in its own process, instrumented from outside) from the same "
            "initial weights and seeds for N optimizer steps and compares loss, learning rate and gradient norm "
            "per step and the trained parameters at the end. Arguments after `--` go to both scripts."
        ),
    )
    c.add_argument("--torch", required=True, metavar="TRAIN.py", help=_("the PyTorch training script"))
    c.add_argument("--ms", required=True, metavar="TRAIN.py", help=_("its MindSpore conversion"))
    c.add_argument("--steps", type=int, default=20, help=_("optimizer steps to run on each side (default 20)"))
    c.add_argument("--torch-python", help=_("python of another environment with torch: the torch side runs there"))
    c.add_argument("--out", help=_("directory for report.json, report.html and the recorded tensors"))
    data = c.add_mutually_exclusive_group()
    data.add_argument(
        "--replay-data",
        dest="data",
        action="store_const",
        const="replay",
        help=_("feed MindSpore the batches torch's DataLoaders produced (default)"),
    )
    data.add_argument(
        "--own-data", dest="data", action="store_const", const="own", help=_("each side runs its own data pipeline")
    )
    c.add_argument(
        "--fake-data", action="store_true", help=_("serve generated data for MNIST/CIFAR/ImageFolder-style datasets")
    )
    c.add_argument("--tol", type=float, default=1e-4, help=_("relative loss tolerance per step (default 1e-4)"))
    c.add_argument("--mode", choices=["pynative", "graph"], default="pynative", help=_("MindSpore execution mode"))
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--timeout", type=float, default=900.0, help=_("seconds allowed to each script (default 900)"))
    c.add_argument(
        "--api",
        action="store_true",
        help=_(
            "at the first divergent step, record both sides' op calls in the forward and the loss and name the "
            "first original line whose output differs (through the line map convert wrote)"
        ),
    )
    c.add_argument(
        "--api-max-mb",
        type=float,
        default=64.0,
        metavar="MB",
        help=_("--api keeps at most this many MB of tensors per side; beyond it, summaries only (default 64)"),
    )
    c.add_argument(
        "--nproc",
        type=int,
        default=1,
        metavar="N",
        help=_(
            "data-parallel scripts: run torch under torchrun and MindSpore under msrun with N CPU processes each, "
            "compare rank 0's steps and check that every rank ends with rank 0's parameters (default 1)"
        ),
    )
    c.add_argument("--json", action="store_true", help=_("print report.json to stdout instead of the table"))
    c.add_argument("script_args", nargs=argparse.REMAINDER, help=_("-- then the arguments both scripts get"))
    c.set_defaults(func=cmd_compare_train, data="replay")


def cmd_compare_train(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from ..progress import for_console
    from .api import compare_train
    from .report import print_report
    from .runner import TrainUsageError

    script_args = list(args.script_args)
    if script_args[:1] == ["--"]:
        script_args = script_args[1:]
    try:
        with for_console(Console(stderr=True), quiet=args.json) as progress:
            rep = compare_train(
                args.torch,
                args.ms,
                steps=args.steps,
                args=script_args,
                torch_python=args.torch_python,
                out_dir=args.out,
                data=args.data,
                fake_data=args.fake_data,
                tol=args.tol,
                mode=args.mode,
                seed=args.seed,
                timeout=args.timeout,
                progress=progress,
                api=args.api,
                api_bytes=int(args.api_max_mb * (1 << 20)),
                nproc=args.nproc,
            )
    except TrainUsageError as exc:
        Console(stderr=True).print("[red]" + _("error:") + f"[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(json.dumps(rep.to_dict(), indent=1, default=str) + "\n")
    else:
        # A terminal, or a width the user set (COLUMNS): fit it; a pipe or a log keeps the whole table.
        console = Console() if sys.stdout.isatty() or os.environ.get("COLUMNS") else Console(width=160)
        print_report(rep, console)
        console.print(_("report:") + f" {rep.work_dir}/report.html", highlight=False)
    return rep.exit_code
