"""``compare_models``: prove a port layer by layer and name the first layer that is wrong (R23-R28).

Flow: check the options → torch side (in this process, or under another interpreter exchanging .npz
files) → MindSpore side in PyNative with every cell hooked → pair the calls → measure, classify and
explain (``layers.py``) → the final output again in GRAPH_MODE → optional training (``training.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..factory import SpecError
from ..i18n import _
from ..progress import Progress
from . import metrics
from .draw import numbered
from .inputs import check_training_batches, given_inputs
from .layers import Analysis, Context, Recording, analyze
from .options import CompareOptions, CompareUsageError, LossSpec, TrainOptions
from .report import CompareReport
from .report_files import write_report
from .rows import Divergence, LayerRow, OutputCheck, finite_or_none
from .torch_runner import run_torch

__all__ = ["CompareOptions", "CompareUsageError", "TrainOptions", "compare_models"]


def _request(torch_spec: str, opts: CompareOptions) -> dict[str, Any]:
    """The JSON the torch side receives (it draws seeded inputs itself: it knows the Embedding sizes)."""
    draw = None
    if opts.inputs is None:
        draw = {"shapes": [list(map(int, s)) for s in opts.input_shapes], "dtypes": list(opts.input_dtypes)}
    return {
        "torch": torch_spec,
        "weights": str(Path(opts.weights).resolve()) if opts.weights else None,
        "seed": opts.seed,
        "randomize_norms": opts.randomize_norms,
        "threads": opts.threads,
        "noise": True,
        "draw": draw,
        "import_timeout": opts.import_timeout,
        "train": opts.train.request(),
    }


def _output_check(ref: list[np.ndarray], got: list[np.ndarray] | None, err: str | None) -> OutputCheck:
    if err is not None or got is None:
        return OutputCheck(ok=False, error=err or _("no output"))
    d = metrics.diff_all(ref, got)
    if d is None:
        return OutputCheck(ok=False, error=_("the model returned no tensor"))
    if not d.shape_ok:
        text = _("output shape torch {torch} vs MindSpore {ms}").format(torch=d.ref_shape, ms=d.got_shape)
        return OutputCheck(ok=False, error=text)
    return OutputCheck(
        ok=not d.nonfinite and d.rel <= metrics.OUTPUT_TOL,
        max_abs=finite_or_none(d.max_abs),
        rel=finite_or_none(d.rel),
        cosine=finite_or_none(d.cosine),
        within=finite_or_none(d.within),
        nonfinite=d.nonfinite,
    )


def _crash_divergence(rows: list[LayerRow], record: dict[str, Any], classes: dict[str, str]) -> Divergence:
    """The MindSpore forward raised: name the innermost cell that had started and not finished."""
    missing = next((r for r in rows if r.verdict == "missing"), None)
    failed = record.get("failed_in")
    if failed:  # a layer (not the model's own code) raised
        row = next((r for r in rows if r.name == failed and r.verdict == "missing"), missing)
        return Divergence(
            layer=failed,
            kind="error",
            detail=_("the MindSpore cell {name} raised on the forward input: {error}").format(
                name=failed, error=record["error"]
            ),
            phase="forward",
            index=row.index if row else None,
            torch_type=classes.get(failed),
            hint=_("this layer fails on inputs torch accepts: compare its construct() and arguments"),
        )
    done = [r for r in rows if r.verdict != "missing" and (missing is None or r.index < missing.index)]
    parent = missing.name.rpartition(".")[0] if missing else ""
    where = ""
    if missing is not None:
        where = (
            _("after {done} and before {missing}").format(done=done[-1].display_name, missing=missing.display_name)
            if done
            else _("before {missing}").format(missing=missing.display_name)
        )
    return Divergence(
        layer=parent,
        kind="error",
        detail=_("the MindSpore forward raised {where}: {error}").format(where=where, error=record["error"]),
        phase="forward",
        index=missing.index if missing else None,
        torch_type=classes.get(parent),
        hint=_(
            "the code between these layers in the MindSpore construct() fails on inputs torch accepts "
            "(e.g. x.size(0): MindSpore's Tensor.size is an int; use x.shape[0])"
        ),
    )


def _final_outputs(ctx: Context, record: dict[str, Any], xs: list[np.ndarray], graph: bool, progress: Progress):
    """The model's own output in PyNative (from the hooked run) and in GRAPH_MODE (a fresh compile)."""
    from . import ms_side

    root_t = [i for i, e in enumerate(ctx.torch.events) if e["name"] == ""]
    root_m = [j for j, e in enumerate(ctx.ms.events) if e["name"] == ""]
    ref = ctx.torch.outputs(root_t[-1])
    if root_m and not record["error"]:
        output = {"pynative": _output_check(ref, ctx.ms.outputs(root_m[-1]), None)}
    else:
        output = {"pynative": OutputCheck(ok=False, error=record["error"] or "no output recorded")}
    if graph and not record["error"]:
        with progress.phase(_("MindSpore: GRAPH_MODE compile and forward")):
            got, err = ms_side.plain_forward(ctx.net, xs, graph=True)
        output["graph"] = _output_check(ref, got, err)
    nonfinite_ref = any(not np.isfinite(r).all() for r in ref if r.dtype.kind == "f")
    return output, nonfinite_ref


def _weight_problems(wrep: dict[str, Any]) -> list[str]:
    if not wrep["shape_mismatch"]:
        return []
    shown = "; ".join(f"{n} torch {a} vs MindSpore {b}" for n, a, b in wrep["shape_mismatch"][:5])
    return [f"{len(wrep['shape_mismatch'])} weight(s) with a different shape were not loaded: {shown}"]


def _torch_side(torch_spec: str, opts: CompareOptions, given: dict[str, np.ndarray], progress: Progress):
    req = _request(torch_spec, opts)
    with progress.phase(_("torch side: import, build and record the model")):
        tmeta, tarr = run_torch(req, given, opts.torch_python, progress.update)
    if tmeta["forward"]["error"]:
        raise CompareUsageError(
            _("the torch model fails on this input: {error}").format(error=tmeta["forward"]["error"])
        )
    return tmeta, tarr


def _ms_side(ms_spec: str, opts: CompareOptions, tmeta: dict[str, Any], tarr: dict[str, np.ndarray]):
    """The MindSpore net with torch's weights converted and loaded, and what did not load."""
    from ..kb import load_kb
    from ..weights.rename import convert_state_dict
    from . import ms_side

    kb = load_kb()
    try:
        net = ms_side.build_net(ms_spec, opts.seed, opts.import_timeout)
    except SpecError as exc:
        raise CompareUsageError(str(exc)) from None
    state = {k[len("param::") :]: v for k, v in tarr.items() if k.startswith("param::")}
    converted = convert_state_dict(state, tmeta["layer_types"], kb)
    wrep = ms_side.load_state(net, converted)
    if tmeta.get("weights_load"):
        wrep["torch_load"] = tmeta["weights_load"]
    return net, kb, converted, wrep


def _forward_analysis(base: Context, xs: list[np.ndarray]) -> tuple[Context, Analysis, dict[str, Any]]:
    from . import ms_side

    record = ms_side.record_forward(base.net, xs)
    ctx = replace(base, ms=Recording(record["events"], record["arrays"]))
    return ctx, analyze(ctx), record


def _verdict(first: Divergence | None, output: dict[str, OutputCheck], training: Any) -> str:
    bad_output = any(not o.ok for o in output.values())
    return "divergence" if first is not None or bad_output or (training is not None and not training.ok) else "match"


@contextmanager
def _timed(timings: dict[str, float], key: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[key] = time.perf_counter() - start


def _checked_inputs(opts: CompareOptions) -> dict[str, np.ndarray]:
    """The options checked and the user's inputs read, before any model is built."""
    opts.validate()
    given = given_inputs(opts.inputs) if opts.inputs is not None else {}
    if opts.train.steps:
        check_training_batches(given, opts.train.steps, LossSpec.parse(opts.train.loss).kind)
    return given


def _base_context(tmeta: dict[str, Any], tarr: dict[str, np.ndarray], ms_parts: tuple, replay_all: bool) -> Context:
    net, kb, converted, wrep = ms_parts
    return Context(
        torch=Recording(tmeta["forward"]["events"], tarr, "fwd/"),
        ms=Recording([], {}),
        net=net,
        torch_meta=tmeta,
        converted=converted,
        kb=kb,
        unloaded=wrep["unloaded"],
        phase="forward",
        replay_all=replay_all,
    )


def compare_models(
    torch_spec: str, ms_spec: str, options: CompareOptions | None = None, progress: Progress | None = None
) -> CompareReport:
    """Compare a torch model and its MindSpore port; see the module docstring. Raises CompareUsageError.

    ``options.replay_all``: run every MindSpore leaf on torch's input (the "local err" column for every
    layer); by default only layers whose accumulated error exceeds their noise threshold are replayed.
    """
    opts = options or CompareOptions()
    progress = progress or Progress()
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    given = _checked_inputs(opts)
    with _timed(timings, "torch_side"):
        tmeta, tarr = _torch_side(torch_spec, opts, given, progress)
    timings |= {f"torch_{k}": v for k, v in tmeta["timings"].items()}
    xs = numbered({k[len("input::") :]: v for k, v in tarr.items() if k.startswith("input::")} or given, "x")
    with _timed(timings, "ms_build_and_load"), progress.phase(_("MindSpore: build the net and load torch's weights")):
        ms_parts = _ms_side(ms_spec, opts, tmeta, tarr)
    wrep = ms_parts[3]
    with _timed(timings, "ms_forward_and_replay"), progress.phase(_("MindSpore: hooked forward, replay and metrics")):
        ctx, analysis, record = _forward_analysis(_base_context(tmeta, tarr, ms_parts, opts.replay_all), xs)
    timings["ms_forward_hooked"] = record["t_forward"]
    timings["ms_replay_and_metrics"] = timings.pop("ms_forward_and_replay") - record["t_forward"]
    first, problems = analysis.first, _weight_problems(wrep)
    if record["error"]:
        problems.append(f"the MindSpore forward raised: {record['error']}")
        first = first or _crash_divergence(analysis.rows, record, tmeta.get("module_classes", {}))
    with _timed(timings, "ms_graph_check"):
        output, nonfinite_ref = _final_outputs(ctx, record, xs, opts.graph, progress)
    if nonfinite_ref:
        problems.append("the torch output itself contains NaN/Inf: only finite elements were compared")
    training, post_rows = None, None
    if opts.train.steps:
        batches = {k: v for k, v in (given | tarr).items() if k.startswith("train_")}
        cfg = opts.train.request()
        training, post_rows, post_first = _train_both(ctx, tmeta, batches, xs, cfg, problems, timings, progress)
        first = first or post_first
    if opts.api:
        with _timed(timings, "api"), progress.phase(_("both sides: record every op call (--api)")):
            api_result = _api_compare(torch_spec, opts, tarr, ctx.net, xs)
    status = _verdict(first, output, training)
    if opts.api and api_result["status"] != "match":
        status = "divergence"
    if status == "divergence" and first is None:
        problems.append("no single layer stands out: the error is spread over the model (see the table)")
    timings["total"] = time.perf_counter() - t_start
    report = CompareReport(
        status=status,
        torch_spec=torch_spec,
        ms_spec=ms_spec,
        seed=opts.seed,
        input_shapes=[list(x.shape) for x in xs],
        alignment=analysis.alignment,
        layers=analysis.rows,
        first_divergence=first,
        output=output,
        weights=wrep,
        missing_layers=analysis.missing,
        extra_ms_cells=analysis.extra,
        problems=problems,
        training=training,
        post_training_layers=post_rows,
        two_process=opts.torch_python is not None,
        timings=timings,
        api=api_result if opts.api else None,
    )
    if opts.out_dir is not None:
        write_report(report, opts.out_dir)
    return report


def _api_compare(torch_spec: str, opts: CompareOptions, tarr: dict[str, np.ndarray], net: Any, xs: list) -> dict:
    """compare --api: the torch model rebuilt with the recorded state, both forwards recorded call by call."""
    import torch

    from .api_align import align
    from .api_record import record_ms, record_torch, user_files
    from .torch_worker import build_model

    model = build_model(_request(torch_spec, opts))
    state = {k[len("param::") :]: torch.from_numpy(v) for k, v in tarr.items() if k.startswith("param::")}
    model.load_state_dict(state, strict=False)
    model.eval()
    budget = int(opts.api_max_mb * (1 << 20)) // 2
    torch_rec, torch_error = record_torch(model, xs, budget)
    ms_rec, ms_error, switched = record_ms(net, xs, budget)
    ms_files = sorted(user_files([c for _n, c in net.cells_and_names()], "\0"))
    repro = Path(opts.out_dir) / "api-repro" if opts.out_dir is not None else None
    result = align(torch_rec, ms_rec, ms_error, ms_files, repro)
    result["switched_to_pynative"] = switched
    result["torch_error"] = torch_error["error"] if torch_error else None
    return result


def _train_both(ctx, tmeta, batches, xs, cfg, problems, timings, progress):
    """Train the MindSpore side like the torch side did: (TrainingResult, rows after training, divergence)."""
    from .training import compare_training

    if "train" not in tmeta:
        problems.append("training was not run on the torch side")
        return None, None, None
    t0 = time.perf_counter()
    result, post, first = compare_training(ctx, tmeta, batches, xs, cfg, progress)
    timings["ms_train"] = time.perf_counter() - t0
    if result.error:
        problems.append(result.error)
    return result, (post.rows if post is not None else None), first
