"""Training alignment (R26): the MindSpore side repeats torch's steps; losses, trained parameters and an
eval forward after training are compared, each against the tolerance the report prints with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..i18n import _
from ..progress import Progress
from . import metrics
from .layers import Analysis, Context, Recording, analyze
from .rows import Divergence, ParamDiff, TrainingResult

LOSS_TOL = 1e-4  # relative loss difference per step
# Parameters after training, relative to each parameter's scale (a correct port: ~1e-6 after 50 steps).
PARAM_TOL = 1e-3
# After training, both nets carry their own (slightly drifted) weights: a layer must be off by more
# than this, relative to its output scale, to be named.
POST_TRAIN_FLOOR = 1e-3


def _param_diffs(trained: Mapping[str, np.ndarray], ms_state: Mapping[str, np.ndarray]) -> list[ParamDiff]:
    rows = []
    for name, array in ms_state.items():
        if name in trained and trained[name].shape == array.shape:
            d = metrics.diff(trained[name], array)
            rows.append(ParamDiff(name, d.rel if np.isfinite(d.rel) else float("inf")))
    return sorted(rows, key=lambda r: -r.rel)


def _run_ms_training(net: Any, cfg: dict[str, Any], batches: dict[str, np.ndarray], progress: Progress):
    from . import ms_side

    try:
        return ms_side.train(net, cfg, batches, progress.steps(_("MindSpore: training steps"))), None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a port that cannot train is a finding, not a crash
        why = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
        return [], _("MindSpore training failed: {error}").format(error=why)


def _post_training_analysis(base: Context, tmeta: Mapping[str, Any], xs: list[np.ndarray], trained) -> Analysis:
    from . import ms_side

    record = ms_side.record_forward(base.net, xs)
    ctx = Context(
        torch=Recording(tmeta["post_train"]["events"], base.torch.arrays, "post/"),
        ms=Recording(record["events"], record["arrays"]),
        net=base.net,
        torch_meta=tmeta,
        converted=trained,
        kb=base.kb,
        unloaded=base.unloaded,
        phase="after training",
        floor=POST_TRAIN_FLOOR,
    )
    return analyze(ctx)


def _parameter_divergence(params: list[ParamDiff], steps: int) -> Divergence:
    name = params[0].name
    return Divergence(
        layer=name.rpartition(".")[0],
        kind="training",
        detail=_("parameter {name} differs after {steps} steps: {rel:.2e} of its scale (tolerance {tol:g})").format(
            name=name, steps=steps, rel=params[0].rel, tol=PARAM_TOL
        ),
        phase="after training",
    )


def compare_training(
    base: Context,
    tmeta: Mapping[str, Any],
    batches: dict[str, np.ndarray],
    xs: list[np.ndarray],
    cfg: dict[str, Any],
    progress: Progress,
) -> tuple[TrainingResult, Analysis | None, Divergence | None]:
    """Train the MindSpore net like torch did; (result, the eval forward after training, its first divergence)."""
    from ..weights.rename import convert_state_dict
    from . import ms_side

    ms_losses, error = _run_ms_training(base.net, cfg, batches, progress)
    torch_losses = list(tmeta["train"]["losses"])
    trained_state = {k[len("trained::") :]: v for k, v in base.torch.arrays.items() if k.startswith("trained::")}
    trained = convert_state_dict(trained_state, tmeta["layer_types"], base.kb)
    result = TrainingResult(
        steps=cfg["steps"],
        optimizer=cfg["optimizer"],
        lr=cfg["lr"],
        momentum=cfg.get("momentum"),
        loss=cfg.get("loss", "ce"),
        torch_losses=torch_losses,
        ms_losses=ms_losses,
        loss_rel=[abs(a - b) / max(abs(a), 1e-12) for a, b in zip(torch_losses, ms_losses)],
        loss_tol=LOSS_TOL,
        param_tol=PARAM_TOL,
        params=_param_diffs(trained, ms_side.state_arrays(base.net)),
        error=error,
        post_floor=POST_TRAIN_FLOOR,
    )
    post = None
    if not tmeta["post_train"]["error"] and ms_losses:
        with progress.phase(_("MindSpore: eval forward after training")):
            post = _post_training_analysis(base, tmeta, xs, trained)
        result.post_checked = True
        if post.first is not None:
            result.post_divergence = f"{post.first.layer or '(model)'}: {post.first.detail}"
    first = post.first if post is not None else None
    if first is None and result.params_matter:
        first = _parameter_divergence(result.params, result.steps)
    return result, post, first
