"""``torch2ms weights``: the thin command shell over :mod:`torch2ms.weights.convert`.

Exit codes: 0 converted (and, with ``--net``, every parameter loads); 1 something would be left
unloaded (the table says what; nothing written unless ``--force``) or the loaded-back check
failed; 2 usage/file errors, including a checkpoint refused by the safe unpickler.
"""

from __future__ import annotations

import argparse
import json
import sys

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2


def add_weights_parser(sub) -> None:
    w = sub.add_parser(
        "weights",
        help="convert a torch checkpoint (.pth/.pt/.bin/.safetensors) to a MindSpore .ckpt, "
        "or a .ckpt back to .pth — without torch",
    )
    w.add_argument("input", help="torch checkpoint, or a .ckpt to go back to torch")
    w.add_argument("-o", "--output", required=True, help="OUT.ckpt (or OUT.pth / OUT.safetensors from a .ckpt)")
    w.add_argument(
        "--net",
        help="module:Factory or path.py:Factory building the converted MindSpore network: "
        "map by its parameter names/shapes and check every parameter loads",
    )
    w.add_argument("--torch-net", help="module:Factory of the torch model (needs torch): exact layer types")
    w.add_argument("--key", help="dotted path of the state dict inside the checkpoint (default: found automatically)")
    w.add_argument(
        "--writer",
        choices=["stream", "mindspore"],
        default="stream",
        help="stream: one tensor in memory at a time (default); mindspore: mindspore.save_checkpoint",
    )
    w.add_argument("--force", action="store_true", help="write the .ckpt even if some parameters would not load")
    w.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    w.set_defaults(func=cmd_weights)


def _table(report, console) -> None:
    from rich.table import Table

    t = Table(title="parameters that would not load")
    for col in ("problem", "name", "shape", "likely match"):
        t.add_column(col)
    for name, shape, likely in report.missing:
        t.add_row("[red]missing[/] (in net, not in checkpoint)", name, str(tuple(shape)), likely or "—")
    for name, shape, likely in report.unexpected:
        t.add_row("[yellow]unexpected[/] (in checkpoint, not in net)", name, str(tuple(shape)), likely or "—")
    for ms_name, torch_key, ms_shape, t_shape in report.mismatched:
        t.add_row(
            "[magenta]shape mismatch[/]",
            f"{ms_name} ← {torch_key}",
            f"net {tuple(ms_shape)} vs checkpoint {tuple(t_shape)}",
            torch_key,
        )
    console.print(t)


def cmd_weights(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console

    from .convert import WeightsError, ckpt_to_torch, convert_checkpoint, describe_error, torch_layer_types
    from .torch_format import CheckpointFormatError, UnsafePickleError

    err = Console(stderr=True)
    out = Console()
    try:
        types = torch_layer_types(args.torch_net, _kb()) if args.torch_net else None
        if Path(args.input).suffix == ".ckpt":
            mapping = ckpt_to_torch(args.input, args.output, layer_types=types)
            if args.json:
                sys.stdout.write(json.dumps({"written": True, "output": args.output, "params": len(mapping)}) + "\n")
            else:
                out.print(f"[bold]torch2ms weights[/] {args.input} → {args.output}: {len(mapping)} tensors")
            return EXIT_OK
        res = convert_checkpoint(
            args.input, args.output, net=args.net, layer_types=types, key=args.key, writer=args.writer, force=args.force
        )
    except UnsafePickleError as exc:
        err.print("[red]refused:[/] " + _esc(str(exc)))
        return EXIT_USAGE
    except (WeightsError, CheckpointFormatError, OSError) as exc:
        err.print("[red]error:[/] " + _esc(describe_error(exc)))
        return EXIT_USAGE
    if args.json:
        d = {
            "written": res.written,
            "output": res.output,
            "params": res.params,
            "bytes": res.bytes,
            "dropped": res.dropped,
            "found_at": res.info.get("found_at"),
            "stripped_prefix": res.info.get("stripped_prefix"),
            "verified": res.verified,
            "tied": res.tied,
            "report": res.report.to_dict() if res.report else None,
        }
        sys.stdout.write(json.dumps(d, indent=2) + "\n")
    else:
        if res.report is not None and not res.report.ok:
            _table(res.report, out)
        where = f" (state dict at '{res.info['found_at']}')" if res.info.get("found_at") else ""
        strip = f", stripped prefix '{res.info['stripped_prefix']}'" if res.info.get("stripped_prefix") else ""
        if res.written:
            out.print(
                f"[bold]torch2ms weights[/] {args.input} → {args.output}: {res.params} parameters, "
                f"{res.bytes} bytes{where}{strip}; dropped {len(res.dropped)} ({', '.join(res.dropped[:5])})"
            )
            for keys in res.tied:
                out.print(f"tied (one tensor, written under each name): {', '.join(keys)}")
            if res.verified is not None:
                out.print(
                    "[green]every network parameter loaded[/]"
                    if res.verified
                    else "[red]load_param_into_net left parameters unloaded[/]"
                )
        else:
            out.print(
                f"[red]not written[/]: {len(res.report.missing)} missing, {len(res.report.unexpected)} "
                f"unexpected, {len(res.report.mismatched)} shape mismatches (--force writes anyway)"
            )
    return EXIT_OK if res.ok else EXIT_FOUND


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _kb():
    from ..kb import load_kb

    return load_kb()
