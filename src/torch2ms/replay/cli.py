"""``torch2ms replay``: the thin command shell over :func:`torch2ms.replay.record_calls` and :func:`replay`.

Exit codes: 0 every configuration within tolerance; 1 some beyond it (or raising); 2 usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..i18n import _


def add_replay_parser(sub) -> None:
    c = sub.add_parser(
        "replay",
        help=_("replay every call configuration of a torch forward through the KB mapping on MindSpore"),
        description=_(
            "Runs the torch model once, records every distinct call its own code makes (API, shapes, dtypes, "
            "argument values) and replays each through the knowledge base's mapping on MindSpore against torch, "
            "on the recorded inputs: a table of the APIs with their worst error in this model's regime."
        ),
    )
    what = c.add_mutually_exclusive_group(required=True)
    what.add_argument("--torch", metavar="FILE.py:FACTORY", help=_("the torch model (as compare takes it)"))
    what.add_argument(
        "--train", metavar="TRAIN.py", help=_("a torch training script: the calls of its first --steps training steps")
    )
    c.add_argument("--steps", type=int, default=2, help=_("training steps to record with --train (default 2)"))
    c.add_argument("--input-shape", action="append", metavar="N,C,...", help=_("an input's shape (repeatable)"))
    c.add_argument("--input-dtype", action="append", metavar="DTYPE", help=_("an input's dtype (default float32)"))
    c.add_argument("--seed", type=int, default=0)
    c.add_argument(
        "--regenerate", action="store_true", help=_("replay on seeded inputs of the recorded shapes and ranges")
    )
    c.add_argument("--tol", type=float, default=1e-4, help=_("relative tolerance per configuration (default 1e-4)"))
    c.add_argument("--export-cases", metavar="DIR", help=_("write the failing configurations as KB differential cases"))
    c.add_argument("--json", action="store_true", help=_("print the report as JSON"))
    c.add_argument("script_args", nargs=argparse.REMAINDER, help=_("-- then the arguments the training script gets"))
    c.set_defaults(func=cmd_replay)


def _inputs(args: argparse.Namespace) -> list:
    import numpy as np

    rng = np.random.default_rng(args.seed)
    dtypes = list(args.input_dtype or [])
    out = []
    for i, text in enumerate(args.input_shape):
        shape = tuple(int(n) for n in text.replace("x", ",").split(",") if n.strip())
        dtype = dtypes[i] if i < len(dtypes) else "float32"
        out.append(
            rng.integers(0, 2, shape).astype(dtype) if "int" in dtype else rng.standard_normal(shape).astype(dtype)
        )
    return out


def cmd_replay(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..align.torch_worker import build_model
    from .export import export_cases
    from .record import record_calls
    from .report import print_replay
    from .run import replay

    if args.train:
        from .train import ReplayError, record_training

        try:
            log = record_training(args.train, args.steps, [a for a in args.script_args if a != "--"], seed=args.seed)
        except ReplayError as exc:
            Console(stderr=True).print("[red]" + _("error:") + f"[/] {exc}", highlight=False)
            return 2
    elif not args.input_shape:
        Console(stderr=True).print("[red]" + _("error:") + "[/] " + _("--torch needs --input-shape"), highlight=False)
        return 2
    else:
        model = build_model({"torch": args.torch, "seed": args.seed}).eval()
        log = record_calls(model, _inputs(args))
    rep = replay(list(log.configs.values()), regenerate=args.regenerate, tol=args.tol)
    rep.skipped = log.skipped
    exported = export_cases(rep, Path(args.export_cases)) if args.export_cases else None
    if args.json:
        sys.stdout.write(
            json.dumps(rep.to_dict() | {"exported": str(exported) if exported else None}, indent=1, default=str) + "\n"
        )
    else:
        # a terminal, or a width the user set (COLUMNS): fit it; a pipe or a log keeps the whole table
        console = Console() if sys.stdout.isatty() or os.environ.get("COLUMNS") else Console(width=160)
        print_replay(rep, console, exported)
    return 1 if rep.failing() else 0
