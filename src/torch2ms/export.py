"""Export a converted, verified MindSpore model to MindIR for deployment (R29).

``export_mindir`` builds the network from ``PATH_OR_MODULE:FACTORY``, loads the checkpoint (every
parameter must load), switches to inference mode, runs one forward on a seeded random input of
the given shape (a wrong shape fails here, with the network's own message), writes the MindIR
with ``mindspore.export`` and reads it back with ``mindspore.load`` + ``nn.GraphCell``: the file
must give the network's output on that input. A MindIR has static shapes: the exported graph
accepts exactly ``input_shape``.

``add_export_parser`` / ``cmd_export`` at the end are the thin ``torch2ms export`` shell.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .i18n import _
from .progress import Progress

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2
DTYPES = ("float32", "float16", "float64", "int32", "int64")


class ExportError(ValueError):
    """Something the user can fix: the spec, the checkpoint, the input shape, the output path."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class ExportResult:
    path: str
    bytes: int
    input_shapes: list[tuple[int, ...]]
    dtypes: list[str]
    params: int
    output_shapes: list[tuple[int, ...]] = field(default_factory=list)
    max_abs_diff: float | None = None  # MindIR vs the network on the same random input
    unused_ckpt_keys: list[str] = field(default_factory=list)
    verified: bool | None = None


def parse_shape(text: str) -> tuple[int, ...]:
    """``"1,3,32,32"`` (or ``1x3x32x32``) → (1, 3, 32, 32)."""
    parts = [p for p in text.replace("x", ",").replace(" ", "").split(",") if p]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise ExportError(
            _("--input-shape {text}: expected comma-separated integers such as 1,3,32,32").format(text=repr(text))
        ) from None
    if not shape or any(d <= 0 for d in shape):
        raise ExportError(_("--input-shape {text}: every dimension must be a positive integer").format(text=repr(text)))
    return shape


def _inputs(shapes: Sequence[tuple[int, ...]], dtypes: Sequence[str], seed: int) -> list[Any]:
    import numpy as np  # lazy: the CLI parser imports this module

    rng = np.random.default_rng(seed)
    out = []
    for shape, dt in zip(shapes, dtypes):
        if dt.startswith("int"):
            out.append(rng.integers(0, 2, size=shape).astype(dt))  # ids / labels: valid for any vocabulary
        else:
            out.append(rng.standard_normal(shape).astype(dt))
    return out


def _flat(value: Any) -> list[Any]:
    import numpy as np

    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat(v)]
    return [value.asnumpy()] if hasattr(value, "asnumpy") else [np.asarray(value)]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        if line.strip() and not set(line.strip()) <= {"-"}:
            return f"{type(exc).__name__}: {line.strip()}"
    return type(exc).__name__


def load_net_with_checkpoint(net_spec: str, ckpt: str | Path) -> tuple[Any, int, list[str]]:
    """The network with every parameter loaded from ``ckpt``; (net, parameter count, unused keys)."""
    import mindspore as ms

    from .weights.convert import WeightsError, load_net

    path = Path(ckpt)
    if not path.is_file():
        raise ExportError(_("{ckpt}: no such checkpoint file").format(ckpt=ckpt))
    try:
        net = load_net(net_spec)
    except WeightsError as exc:
        raise ExportError(str(exc)) from exc
    except Exception as exc:
        raise ExportError(
            _("{net}: building the network failed ({error})").format(net=net_spec, error=_first_line(exc))
        ) from exc
    try:
        fmt = "safetensors" if path.suffix == ".safetensors" else "ckpt"
        params = ms.load_checkpoint(str(path), format=fmt)
    except Exception as exc:
        raise ExportError(
            _(
                "{ckpt}: not a readable MindSpore checkpoint ({error}); "
                "convert torch weights first with `torch2ms weights IN -o OUT.ckpt --net ...`"
            ).format(ckpt=ckpt, error=_first_line(exc))
        ) from exc
    try:
        not_loaded, unused = ms.load_param_into_net(net, params)
    except RuntimeError as exc:  # shape mismatch
        raise ExportError(
            _("{ckpt} does not fit {net}: {error}").format(ckpt=ckpt, net=net_spec, error=_first_line(exc)), EXIT_FOUND
        ) from exc
    if not_loaded:
        shown = ", ".join(not_loaded[:8]) + (f" … (+{len(not_loaded) - 8})" if len(not_loaded) > 8 else "")
        raise ExportError(
            _(
                "{n} parameter(s) of {net} are not in {ckpt}: {shown}; an exported model would run with untrained values"
            ).format(n=len(not_loaded), net=net_spec, ckpt=ckpt, shown=shown),
            EXIT_FOUND,
        )
    return net, len(list(net.get_parameters())), sorted(unused)


def _checked_arguments(
    input_shapes: Sequence[Sequence[int]], dtypes: Sequence[str], output: str | Path
) -> tuple[list[tuple[int, ...]], list[str], Path]:
    """(shapes, one dtype per shape, the .mindir path) or ExportError for what can be seen before building."""
    shapes = [tuple(int(d) for d in s) for s in input_shapes]
    if not shapes:
        raise ExportError(_("give at least one --input-shape"))
    dts = list(dtypes) * len(shapes) if len(dtypes) == 1 else list(dtypes)
    if len(dts) != len(shapes):
        raise ExportError(
            _("{n} dtypes for {m} input shapes: give one --dtype, or one per input").format(n=len(dts), m=len(shapes))
        )
    bad = [d for d in dts if d not in DTYPES]
    if bad:
        raise ExportError(_("--dtype {dtype}: one of {choices}").format(dtype=repr(bad[0]), choices=", ".join(DTYPES)))
    out = Path(output)
    if out.suffix != ".mindir":
        out = out.with_name(out.name + ".mindir")  # what mindspore.export would write anyway
    if not out.parent.is_dir():
        raise ExportError(_("{path}: output directory does not exist").format(path=out.parent))
    return shapes, dts, out


def _run_once(net: Any, tensors: list[Any], shapes: list[tuple[int, ...]], dts: list[str]) -> list[Any]:
    try:
        return _flat(net(*tensors))
    except Exception as exc:
        given = " and ".join(f"{list(s)} {d}" for s, d in zip(shapes, dts))
        raise ExportError(
            _(
                "the network does not run on an input of shape {given}: {error}; "
                "check --input-shape (one per construct argument) and --dtype"
            ).format(given=given, error=_first_line(exc))
        ) from exc


def _export_file(net: Any, tensors: list[Any], out: Path) -> None:
    import mindspore as ms

    try:
        ms.export(net, *tensors, file_name=str(out), file_format="MINDIR")
    except Exception as exc:
        raise ExportError(
            _(
                "mindspore.export failed: {error} (the network must compile in GRAPH_MODE; "
                "`torch2ms compare` names the construct that does not)"
            ).format(error=_first_line(exc)),
            EXIT_FOUND,
        ) from exc
    if not out.is_file():
        raise ExportError(_("mindspore.export wrote no {path}").format(path=out), EXIT_FOUND)


def _verify(result: ExportResult, tensors: list[Any], expected: list[Any], atol: float, rtol: float) -> None:
    """Load the MindIR back and run it on the same input: it must give the network's output."""
    import mindspore as ms
    import numpy as np

    got = _flat(ms.nn.GraphCell(ms.load(result.path))(*tensors))
    if len(got) != len(expected) or any(g.shape != e.shape for g, e in zip(got, expected)):
        result.verified = False
        return
    result.max_abs_diff = max(
        float(np.max(np.abs(g.astype(np.float64) - e.astype(np.float64)), initial=0.0)) for g, e in zip(got, expected)
    )
    result.verified = all(np.allclose(g, e, atol=atol, rtol=rtol) for g, e in zip(got, expected))


def export_mindir(
    net_spec: str,
    ckpt: str | Path,
    input_shapes: Sequence[Sequence[int]],
    output: str | Path,
    *,
    dtypes: Sequence[str] = ("float32",),
    seed: int = 0,
    verify: bool = True,
    atol: float = 1e-5,
    rtol: float = 1e-5,
    progress: Progress | None = None,
) -> ExportResult:
    """Write ``output`` (.mindir) for the converted network with the checkpoint's weights.

    ``input_shapes``: one shape per network input; ``dtypes``: one per input, or one for all.
    ``progress``: told each phase (build, forward, export, check). Raises ExportError (exit_code 2:
    usage/file; 1: parameters not loaded or the check failed).
    """
    import mindspore as ms

    progress = progress or Progress()
    shapes, dts, out = _checked_arguments(input_shapes, dtypes, output)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(seed)
    with progress.phase(_("building the network and loading the checkpoint")):
        net, n_params, unused = load_net_with_checkpoint(net_spec, ckpt)
    net.set_train(False)
    tensors = [ms.Tensor(a) for a in _inputs(shapes, dts, seed)]
    with progress.phase(_("running the network once")):
        expected = _run_once(net, tensors, shapes, dts)
    with progress.phase(_("mindspore.export (GRAPH_MODE compile)")):
        _export_file(net, tensors, out)
    result = ExportResult(
        str(out), out.stat().st_size, shapes, dts, n_params, [tuple(e.shape) for e in expected], unused_ckpt_keys=unused
    )
    if verify:
        with progress.phase(_("loading the MindIR back and running it")):
            _verify(result, tensors, expected, atol, rtol)
    return result


# ---- the `torch2ms export` shell -------------------------------------------------------------------


def add_export_parser(sub) -> None:
    from .cli_support import add_subcommand, add_verbose, exit_codes_epilog

    epilog = exit_codes_epilog(
        _("the MindIR was written and, loaded back, reproduces the network's output"),
        _(
            "parameters missing from the checkpoint, mindspore.export failed, or the MindIR does not reproduce the output"
        ),
    )
    help_text = _(
        "write the converted model with its weights as MindIR (mindspore.export) and check the file gives "
        "the network's output"
    )
    ex = add_subcommand(sub, "export", help_text, epilog)
    add_verbose(ex)
    ex.add_argument(
        "--net",
        required=True,
        help=_(
            "PATH_OR_MODULE:FACTORY building the converted MindSpore network (a name, or an expression such "
            "as model.py:'UNet(n_classes=2)')"
        ),
    )
    ex.add_argument(
        "--ckpt", required=True, help=_("MindSpore checkpoint (.ckpt / .safetensors), e.g. from `torch2ms weights`")
    )
    ex.add_argument(
        "--input-shape",
        required=True,
        action="append",
        dest="input_shapes",
        help=_("e.g. 1,3,32,32 (the MindIR's fixed input shape); repeat for each construct argument"),
    )
    ex.add_argument(
        "--dtype",
        action="append",
        dest="dtypes",
        choices=DTYPES,
        help=_("input dtype (default float32); repeat for each input"),
    )
    ex.add_argument("-o", "--output", required=True, help=_("OUT.mindir"))
    ex.add_argument("--no-verify", action="store_true", help=_("skip loading the MindIR back"))
    ex.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from .cli_support import quiet_frameworks, run_guarded

    quiet_frameworks(args.verbose)
    return run_guarded(lambda: _export(args), "export", args.verbose)


def _export(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .progress import for_console

    err, out = Console(stderr=True), Console()
    try:
        shapes = [parse_shape(s) for s in args.input_shapes]
        with for_console(err) as progress:
            res = export_mindir(
                args.net,
                args.ckpt,
                shapes,
                args.output,
                dtypes=args.dtypes or ["float32"],
                verify=not args.no_verify,
                progress=progress,
            )
    except ExportError as exc:
        err.print("[red]" + _("error:") + f"[/] {exc}")
        return exc.exit_code
    ins = ", ".join(f"{list(s)} {d}" for s, d in zip(res.input_shapes, res.dtypes))
    sizes = _("{bytes} bytes, {params} parameters, input {inputs}").format(
        bytes=f"{res.bytes:,}", params=res.params, inputs=ins
    )
    out.print(f"[bold]torch2ms export[/] {args.net} → {res.path} ({sizes})")
    if res.unused_ckpt_keys:
        unused = _("{n} checkpoint entries the network does not use:").format(n=len(res.unused_ckpt_keys))
        out.print("[yellow]" + _("note:") + f"[/] {unused} " + ", ".join(res.unused_ckpt_keys[:5]))
    if res.verified is None:
        return EXIT_OK
    if not res.verified:
        diff = (
            _("shapes differ")
            if res.max_abs_diff is None
            else _("max abs diff {diff}").format(diff=f"{res.max_abs_diff:.3g}")
        )
        text = _("the MindIR does not reproduce the network's output ({diff})").format(diff=diff)
        err.print("[red]" + _("verification failed:") + f"[/] {text}")
        return EXIT_FOUND
    out.print(
        _(
            "verified: mindspore.load + nn.GraphCell reproduces the network's output {shapes}, max abs diff {diff}"
        ).format(shapes=[list(s) for s in res.output_shapes], diff=f"{res.max_abs_diff:.3g}")
    )
    return EXIT_OK
