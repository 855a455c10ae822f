"""``torch2ms compare``: the thin command shell over :func:`torch2ms.align.api.compare_models`.

Exit codes: 0 the port matches; 1 a divergence was found (the report names the first layer);
2 usage or input errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..cli_support import (
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
    "PATH_OR_MODULE:FACTORY — a class or function called with no arguments (model.py:Net), or an expression "
    "evaluated in the module (model.py:'UNet(n_channels=3, n_classes=2)')"
)


def _shape(text: str) -> list[int]:
    try:
        return [int(s) for s in text.replace("x", ",").split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            _("{text}: expected comma-separated integers, e.g. 2,3,32,32").format(text=repr(text))
        ) from None


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("{text}: expected a whole number").format(text=repr(text))) from None
    if value < 0:
        raise argparse.ArgumentTypeError(
            _("{value}: give 0 (no training) or a positive number of steps").format(value=value)
        )
    return value


def _add_training_arguments(c: argparse.ArgumentParser) -> None:
    t = c.add_argument_group("training")
    t.add_argument("--train-steps", type=_non_negative, default=0, help=_("also train both sides N steps and compare"))
    t.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default="sgd")
    t.add_argument("--lr", type=float, default=0.01)
    t.add_argument("--momentum", type=float, default=0.9, help=_("SGD momentum"))
    t.add_argument("--weight-decay", type=float, default=0.0)
    t.add_argument(
        "--loss",
        default="ce",
        help=_(
            "ce (classes on axis 1: classification, segmentation), ce:AXIS (e.g. ce:-1 for (batch, time, vocab) "
            "outputs), mse, l1, or model (the model returns the loss; give its targets as another input)"
        ),
    )
    t.add_argument(
        "--output-index",
        help=_(
            "which element of a tuple output (an index) or dict output (a key) the loss reads, "
            "e.g. 1 for a model returning (logits, loss) with --loss model"
        ),
    )


def add_compare_parser(sub) -> None:
    help_text = _("compare a torch model and its MindSpore port layer by layer; name the first layer that diverges")
    epilog = exit_codes_epilog(
        _("the port matches: every layer, the final output (PyNative and GRAPH_MODE) and training within tolerance"),
        _("a divergence: the report names the first layer that is wrong and what differs"),
    )
    c = add_subcommand(sub, "compare", help_text, epilog)
    c.add_argument("--torch", required=True, metavar="SPEC", help=_("the torch model:") + " " + _(SPEC_HELP))
    c.add_argument("--ms", required=True, metavar="SPEC", help=_("the MindSpore port:") + " " + _(SPEC_HELP))
    c.add_argument(
        "--weights", help=_("torch checkpoint loaded into the torch model (default: its seeded random init)")
    )
    c.add_argument("--inputs", help=_(".npz with x (or x0, x1...) and optionally train_x (train_x0...) and train_y"))
    c.add_argument(
        "--input-shape",
        type=_shape,
        action="append",
        dest="input_shapes",
        help=_("seeded random input, e.g. 2,3,32,32; repeat for each forward argument"),
    )
    c.add_argument(
        "--input-dtype",
        action="append",
        dest="input_dtypes",
        help=_(
            "float32 (default), int64, ...; one for all inputs or one per --input-shape. Integer inputs are "
            "drawn below the size of the model's first Embedding"
        ),
    )
    c.add_argument("--seed", type=int, default=0)
    _add_training_arguments(c)
    c.add_argument("--out", help=_("directory for report.json, report.html and the plots"))
    c.add_argument("--torch-python", help=_("python of another environment with torch: the torch side runs there"))
    c.add_argument("--no-graph", action="store_true", help=_("skip the GRAPH_MODE check of the final output"))
    c.add_argument(
        "--replay-all",
        action="store_true",
        help=_("run every MindSpore layer on torch's input (default: only layers above the noise threshold)"),
    )
    c.add_argument(
        "--import-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=_(
            "a model file that runs code at import is first imported in a child process with this limit "
            "(default 60; 0 turns the check off)"
        ),
    )
    c.add_argument(
        "--api",
        action="store_true",
        help=_(
            "also record every torch / MindSpore op call of the forward and name the first original line whose "
            "output differs (through the line map convert wrote)"
        ),
    )
    c.add_argument(
        "--api-max-mb",
        type=float,
        default=256.0,
        metavar="MB",
        help=_("--api keeps at most this many MB of tensors; beyond it, summaries only (default 256)"),
    )
    c.add_argument("--json", action="store_true", help=_("print report.json to stdout instead of the table"))
    add_verbose(c)
    c.set_defaults(func=cmd_compare)


def options_from(args: argparse.Namespace):
    from .options import CompareOptions, TrainOptions
    from .outputs import parse_output_index

    train = TrainOptions(
        steps=args.train_steps,
        optimizer=args.optimizer,
        lr=args.lr,
        momentum=args.momentum,
        weight_decay=args.weight_decay,
        loss=args.loss,
        output_index=parse_output_index(args.output_index),
    )
    return CompareOptions(
        weights=args.weights,
        inputs=args.inputs,
        input_shapes=args.input_shapes or (),
        input_dtypes=args.input_dtypes or ("float32",),
        seed=args.seed,
        train=train,
        out_dir=args.out,
        torch_python=args.torch_python,
        graph=not args.no_graph,
        replay_all=args.replay_all,
        import_timeout=args.import_timeout,
        api=args.api,
        api_max_mb=args.api_max_mb,
    )


def cmd_compare(args: argparse.Namespace) -> int:
    quiet_frameworks(args.verbose)
    return run_guarded(lambda: _compare(args), "compare", args.verbose)


def _compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..progress import for_console
    from .api import CompareUsageError, compare_models
    from .report_text import print_report

    try:
        with for_console(Console(stderr=True), quiet=args.json) as progress, stdout_to_stderr(args.json):
            rep = compare_models(args.torch, args.ms, options_from(args), progress)
    except CompareUsageError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(json.dumps(rep.to_dict(), indent=1, default=str, ensure_ascii=False) + "\n")
    else:
        # A terminal, or a width the user set (COLUMNS): fit it; a pipe or a log keeps the whole table.
        console = Console() if sys.stdout.isatty() or os.environ.get("COLUMNS") else Console(width=180)
        print_report(rep, console)
        if args.out:
            console.print(_("report:") + f" {args.out}/report.html")
    return rep.exit_code
