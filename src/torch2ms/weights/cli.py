"""``torch2ms weights``: the thin command shell over :mod:`torch2ms.weights.convert`.

Exit codes: 0 converted (and, with ``--net``, every parameter loads); 1 something would be left
unloaded (the table says what; nothing written unless ``--force``) or the loaded-back check
failed; 2 usage/file errors, including a checkpoint refused by the safe unpickler; 3 written, but
some names rest on a layer type guessed from the key names (listed, with the command that makes
them certain: ``--project`` the converted folder, or ``--net``).
"""

from __future__ import annotations

import argparse
import json
import sys

from ..i18n import _

EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_GUESSED = 0, 1, 2, 3


def add_weights_parser(sub) -> None:
    import argparse as _argparse

    from ..cli_support import add_verbose, exit_codes

    about = _(
        "convert a torch checkpoint (.pth/.pt/.bin/.safetensors) to a MindSpore .ckpt, "
        "or a .ckpt back to .pth — without torch"
    )
    w = sub.add_parser(
        "weights",
        help=about,
        description=about,
        epilog=exit_codes(
            _("written (with --net: every parameter loads; with --force: written and readable by MindSpore)"),
            _(
                "not written: some parameters would not load (the table says which); "
                "or the written file did not load back"
            ),
            _(
                "usage or file error: no such file, a malformed or malicious checkpoint (refused, nothing run), "
                "an output that is the input or a file that is not a checkpoint"
            ),
        )
        + "\n  3  "
        + _(
            "written, but some parameter names rest on a layer type guessed from the key names: they are "
            "listed with the command that makes them certain (--project CONVERTED or --net)"
        ),
        formatter_class=_argparse.RawDescriptionHelpFormatter,
    )
    w.add_argument("input", help=_("torch checkpoint, or a .ckpt to go back to torch"))
    w.add_argument("-o", "--output", required=True, help=_("OUT.ckpt (or OUT.pth / OUT.safetensors from a .ckpt)"))
    w.add_argument(
        "--net",
        help=_(
            "module:Factory or path.py:Factory building the converted MindSpore network: "
            "map by its parameter names/shapes and check every parameter loads"
        ),
    )
    w.add_argument(
        "--project",
        help=_(
            "the folder `torch2ms convert` wrote (or its {file}): each layer's type from the converted "
            "source, so no rename is guessed (default: found beside --net's file or in the current folder)"
        ).format(file="torch2ms_layers.json"),
    )
    w.add_argument("--torch-net", help=_("module:Factory of the torch model (needs torch): exact layer types"))
    w.add_argument(
        "--key", help=_("dotted path of the state dict inside the checkpoint (default: found automatically)")
    )
    w.add_argument(
        "--writer",
        choices=["stream", "mindspore"],
        default="stream",
        help=_("stream: one tensor in memory at a time (default); mindspore: mindspore.save_checkpoint"),
    )
    w.add_argument(
        "--force",
        action="store_true",
        help=_(
            "write the .ckpt even if some parameters would not load (exit 0 if MindSpore loads what was "
            "written); replace an existing -o that is not a checkpoint"
        ),
    )
    w.add_argument("--json", action="store_true", help=_("machine-readable summary on stdout"))
    add_verbose(w)
    w.set_defaults(func=cmd_weights)


def _table(report, console) -> None:
    from rich.table import Table

    t = Table(title=_("parameters that would not load"))
    for col in (_("problem"), _("name"), _("shape"), _("likely match")):
        t.add_column(col, overflow="fold")  # parameter names wrap, never end in "…"
    missing = "[red]" + _("missing") + "[/] " + _("(in net, not in checkpoint)")
    unexpected = "[yellow]" + _("unexpected") + "[/] " + _("(in checkpoint, not in net)")
    for name, shape, likely in report.missing:
        t.add_row(missing, name, str(tuple(shape)), likely or "—")
    for name, shape, likely in report.unexpected:
        t.add_row(unexpected, name, str(tuple(shape)), likely or "—")
    for ms_name, torch_key, ms_shape, t_shape in report.mismatched:
        t.add_row(
            "[magenta]" + _("shape mismatch") + "[/]",
            f"{ms_name} ← {torch_key}",
            _("net {net} vs checkpoint {ckpt}").format(net=tuple(ms_shape), ckpt=tuple(t_shape)),
            torch_key,
        )
    if t.row_count:
        console.print(t)


def _buffers(report, console) -> None:
    from rich.markup import escape

    for name, shape, note in report.net_buffers:
        label = _("not loaded, not needed")
        console.print(f"[dim]{label}[/] {escape(name)} {tuple(shape)}: {escape(note)}", soft_wrap=True)


def _left_out(res) -> str:
    """One line saying where every checkpoint tensor that was not written went."""
    parts = []
    if res.dropped:
        parts.append(
            _("{n} dropped by the layer rules").format(n=len(res.dropped)) + f" ({', '.join(res.dropped[:3])})"
        )
    if res.complex_left_out:
        parts.append(
            _("{n} complex (a MindSpore checkpoint cannot hold them; the network computes them)").format(
                n=len(res.complex_left_out)
            )
            + f" ({', '.join(res.complex_left_out[:3])})"
        )
    rep = res.report
    if rep is not None:
        for items, what, name_at in (
            (rep.unexpected, _("{n} not in the network"), 0),
            (rep.mismatched, _("{n} shape mismatch"), 1),
            (rep.net_buffers, _("{n} built by the network itself"), 0),
        ):
            if items:
                names = [i[name_at] for i in items]
                parts.append(what.format(n=len(items)) + f" ({', '.join(names[:3])})")
    return _("; left out ") + ", ".join(parts) if parts else ""


def _summary(args: argparse.Namespace, res, out) -> None:
    from rich.markup import escape

    found_at, prefix = res.info.get("found_at"), res.info.get("stripped_prefix")
    where = _(" (state dict at '{key}')").format(key=found_at) if found_at else ""
    strip = _(", stripped prefix '{prefix}'").format(prefix=prefix) if prefix else ""
    rep = res.report
    if not res.written:
        counts = _("{missing} missing, {unexpected} unexpected, {mismatched} shape mismatches").format(
            missing=len(rep.missing), unexpected=len(rep.unexpected), mismatched=len(rep.mismatched)
        )
        out.print("[red]" + _("not written") + "[/]: " + counts + _(" (--force writes the rest anyway)"))
        return
    out.print(
        escape(
            f"torch2ms weights {args.input} → {args.output}: "
            + _("wrote {params} of the checkpoint's {tensors} tensors, {bytes} bytes").format(
                params=res.params, tensors=res.tensors, bytes=res.bytes
            )
            + f"{where}{strip}{_left_out(res)}"
        ),
        soft_wrap=True,
    )
    if res.filled:
        filled = _("written with the values that make the layer act as torch's (which has none of them): {names}")
        out.print(escape(filled.format(names=", ".join(res.filled[:5]))), soft_wrap=True)
    for keys in res.tied:
        tied = _("tied (one tensor, written under each name): {names}").format(names=", ".join(keys))
        out.print(escape(tied), soft_wrap=True)
    if res.verified is None:
        return
    if not res.verified:
        out.print(
            "[red]" + _("MindSpore did not load the written file as planned") + "[/]: "
            f"{escape(', '.join(res.not_loaded[:5]))}"
        )
    elif res.not_loaded:
        kept = _("loaded into the network; {n} network parameters keep their initial values").format(
            n=len(res.not_loaded)
        )
        names = _("(not in the checkpoint: {names})").format(names=", ".join(res.not_loaded[:5]))
        out.print(f"[yellow]{kept}[/] {escape(names)}", soft_wrap=True)
    else:
        out.print("[green]" + _("every network parameter loaded") + "[/]")


def _json(res) -> str:
    d = {
        "written": res.written,
        "ok": res.ok,
        "output": res.output,
        "tensors": res.tensors,
        "params": res.params,
        "bytes": res.bytes,
        "dropped": res.dropped,
        "complex_left_out": res.complex_left_out,
        "found_at": res.info.get("found_at"),
        "stripped_prefix": res.info.get("stripped_prefix"),
        "verified": res.verified,
        "not_loaded": res.not_loaded,
        "tied": res.tied,
        "filled": res.filled,
        "guessed": [{"name": k, "ms_name": n, "layer": t} for k, n, t in res.guessed],
        "layer_map_root": res.project_root,
        "layer_map_found": str(res.found.path) if res.found and res.found.classes else None,
        "layer_map_conflicts": [str(p) for p in res.found.conflicting] if res.found else [],
        "report": res.report.to_dict() if res.report else None,
    }
    return json.dumps(d, indent=2) + "\n"


def cmd_weights(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console

    from ..cli_support import quiet_frameworks
    from ..progress import for_console
    from .ckpt_io import CkptFormatError
    from .convert import WeightsError, check_output_path, ckpt_to_torch, convert_checkpoint, torch_layer_types
    from .torch_format import CheckpointFormatError, UnsafePickleError, sniff_format

    quiet_frameworks(args.verbose)  # --net builds a MindSpore network: its log warnings only with -v
    err = Console(stderr=True)
    out = Console()
    try:
        check_output_path(args.input, args.output, force=args.force)
        types = torch_layer_types(args.torch_net, _kb()) if args.torch_net else None
        if Path(args.input).suffix == ".ckpt":
            kind = sniff_format(args.input) if Path(args.input).is_file() else "unknown"
            if kind != "unknown":
                raise WeightsError(
                    _(
                        "{input} holds a torch checkpoint ({kind}), not a MindSpore .ckpt: to convert it to "
                        "MindSpore, rename it .pth"
                    ).format(input=args.input, kind=kind)
                )
            mapping = ckpt_to_torch(args.input, args.output, layer_types=types)
            if args.json:
                sys.stdout.write(json.dumps({"written": True, "output": args.output, "params": len(mapping)}) + "\n")
            else:
                out.print(
                    f"[bold]torch2ms weights[/] {_esc(args.input)} → {_esc(args.output)}: "
                    + _("{n} tensors").format(n=len(mapping))
                )
            return EXIT_OK
        with for_console(err, quiet=args.json) as progress:
            res = convert_checkpoint(
                args.input,
                args.output,
                net=args.net,
                layer_types=types,
                key=args.key,
                writer=args.writer,
                force=args.force,
                progress=progress,
                project=(project := _layer_map(args)),
                find_project=_from_index if project is None and not (args.net or args.torch_net) else None,
            )
    except UnsafePickleError as exc:
        err.print("[red]" + _("refused:") + "[/] " + _esc(str(exc)), soft_wrap=True)
        return EXIT_USAGE
    except (WeightsError, CheckpointFormatError, CkptFormatError, OSError) as exc:
        msg = str(exc) if not isinstance(exc, OSError) else f"{exc.strerror or exc}: {exc.filename or args.input}"
        err.print("[red]" + _("error:") + "[/] " + _esc(msg), soft_wrap=True)
        return EXIT_USAGE
    if args.json:
        sys.stdout.write(_json(res))
    else:
        if res.report is not None:
            _table(res.report, out)
            _buffers(res.report, out)
        _summary(args, res, out)
        _found(res, out)
        _guesses(args, res, out)
    if not res.ok:
        return EXIT_FOUND
    return EXIT_GUESSED if res.guessed else EXIT_OK


def _layer_map(args: argparse.Namespace):
    """The converted project's layer map (``--project``, or found beside ``--net``/here), or None."""
    from .convert import WeightsError
    from .project_map import find_map, load_inventory, load_map

    if args.net or args.torch_net:
        return None  # the network (or the torch model) says every layer's type
    path, root = find_map(args.project, args.net)
    if path is None:
        if args.project:
            raise WeightsError(
                _("--project {path}: no {file} there (convert the torch source with `torch2ms convert` first)").format(
                    path=args.project, file="torch2ms_layers.json"
                )
            )
        return None
    args.map_dir = str(path.parent)  # for the command that makes the guesses certain
    try:
        return load_map(path), root, load_inventory(path)
    except (ValueError, OSError) as exc:
        raise WeightsError(_("{path}: not a layer map ({error})").format(path=path, error=exc)) from exc


def _from_index(shapes):
    """The converted project (from the index ``torch2ms convert`` keeps) that explains every key."""
    from ..project_index import projects
    from .project_map import pick

    return pick(shapes, projects())


def _found(res, out) -> None:
    """Which converted project said the layer types, or which ones disagreed."""
    from rich.markup import escape

    found = res.found
    if found is None:
        return
    if found.conflicting:
        text = _(
            "{n} converted projects hold this checkpoint's layers but give them different types, so none "
            "was used: {paths}"
        ).format(n=len(found.conflicting), paths=", ".join(str(p.parent) for p in found.conflicting[:5]))
        out.print("[yellow]" + escape(text) + "[/]", soft_wrap=True)
        return
    root = found.root.rsplit(".", 1)[-1] if found.root else ""
    text = _(
        "layer types from the converted project {path}{root}, found among the trees `torch2ms convert` "
        "wrote: its classes hold every top-level name of the checkpoint"
    ).format(path=found.path.parent, root=f" ({root})" if root else "")
    if found.agreeing:
        text += " " + _("{n} other converted projects say the same").format(n=len(found.agreeing))
    out.print(escape(text), soft_wrap=True)


def _guesses(args: argparse.Namespace, res, out) -> None:
    """The names that rest on a guessed layer type, and the command that makes them certain."""
    from rich.markup import escape

    if not res.guessed:
        return
    out.print(
        "[yellow]"
        + _("{n} names rest on a layer type guessed from the key names (exit 3):").format(n=len(res.guessed))
        + "[/]"
    )
    for key, name, layer in res.guessed[:10]:
        kind = layer.rsplit(".", 1)[-1] if layer else _("no rename")
        out.print(escape(f"  {key} → {name}  ({kind}?)"), soft_wrap=True)
    if len(res.guessed) > 10:
        out.print(escape("  " + _("... and {n} more (--json lists them all)").format(n=len(res.guessed) - 10)))
    base = f"torch2ms weights {args.input} -o {args.output}"
    folder = getattr(args, "map_dir", None)
    if res.project_root:  # the map knows the model's class: its network says the rest
        module, _dot, cls = res.project_root.rpartition(".")
        where = (module.replace(".", "/") + ".py") if module else "MODEL.py"
        how = f"{base} --net {folder or 'CONVERTED'}/{where}:{cls}"
    else:
        how = f"{base} --project {folder or 'CONVERTED'}"
    note = "" if folder else "  " + _("(CONVERTED: the folder `torch2ms convert` wrote)")
    out.print(escape(_("to make them certain: {command}").format(command=how) + note), soft_wrap=True)


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _kb():
    from ..kb import load_kb

    return load_kb()
