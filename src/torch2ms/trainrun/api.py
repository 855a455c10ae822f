"""``compare_train``: run a torch training script and its conversion, both unmodified and instrumented,
and report whether they train the same (and where they part, and why)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ..i18n import _
from ..progress import Progress
from . import causes, diagnose, noise, ranks
from .api_step import DEFAULT_BYTES, api_divergence
from .report import TrainReport
from .report_files import write_report
from .runner import SideRun, TrainUsageError, check_inputs, ms_command, run_side, torch_command, write_config

LABEL = {"torch": "torch", "ms": "MindSpore"}


def compare_train(
    torch_script: str,
    ms_script: str,
    *,
    steps: int = 20,
    args: list[str] | None = None,
    torch_python: str | None = None,
    out_dir: str | None = None,
    data: str = "replay",
    fake_data: bool = False,
    tol: float = 1e-4,
    mode: str = "pynative",
    seed: int = 0,
    cwd: str | None = None,
    timeout: float = 900.0,
    progress: Progress | None = None,
    api: bool = False,
    api_bytes: int = DEFAULT_BYTES,
    nproc: int = 1,
) -> TrainReport:
    """Raises TrainUsageError for bad arguments; a script that fails gives a report with status "error".
    ``progress`` is told each side's training steps as they run. ``api``: at the first divergent step,
    record both sides' API calls and name the first one whose output differs (api_step.py), keeping at
    most ``api_bytes`` of tensors per side. ``nproc`` > 1: each side runs data-parallel, torchrun and msrun
    starting that many CPU processes; rank 0 is compared, and every rank's parameters with rank 0's."""
    check_inputs(torch_script, ms_script, torch_python, steps, tol)
    check_nproc(nproc, api)
    work = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="torch2ms-compare-train-"))
    config = write_config(
        work.resolve(),
        steps=steps,
        seed=seed,
        data=data,
        fake_data=fake_data,
        mode=mode,
        torch_script=str(Path(torch_script).resolve()),
        ms_script=str(Path(ms_script).resolve()),
        args=list(args or []),
        nproc=nproc,
    )
    rep = TrainReport("error", torch_script, ms_script, steps, tol, mode, data, seed, work_dir=str(work))
    run_dir = Path(cwd or ".")
    labels = {"torch": _("torch: training steps"), "ms": _("MindSpore: training steps")}
    t_cmd = torch_command(torch_python, config, nproc)
    t = run_side("torch", t_cmd, work, run_dir, timeout, progress, labels["torch"], steps, seed, nproc > 1)
    rep.sides["torch"] = _side_summary(t)
    if (err := side_error(t, timeout)) is not None and not (t.record and t.record["events"]):
        rep.error = err
    else:
        m_cmd = ms_command(config, nproc)
        m = run_side("ms", m_cmd, work, run_dir, timeout, progress, labels["ms"], steps, seed, nproc > 1)
        rep.sides["ms"] = _side_summary(m)
        rep.error = err or side_error(m, timeout)
        if m.record is not None:
            assert t.record is not None
            judge(rep, t.record, m.record, work)
            # --nproc: no noise band (measured: with the gradient reducer removed from the conversion, torch re-run
            # in float64 under torchrun "absorbed" every divergent step; its DDP reference is not trusted)
            if nproc == 1 and noise_may_explain(rep):
                reference = (work, run_dir, timeout, progress, steps, seed, torch_python, config, nproc)
                if (band := _noise_band(t.record, *reference)) is not None:
                    judge(rep, t.record, m.record, work, band)
            if nproc > 1:
                judge_ranks(rep, work, nproc, t.record, m.record)
            if api and rep.first_divergence is not None:
                run = (run_dir, timeout, progress, seed, torch_python)
                rep.api = api_divergence(rep.first_divergence, config, work, run, mode, api_bytes)
    write_report(rep, work)
    return rep


def _noise_band(t_rec: dict[str, Any], work: Path, run_dir: Path, *rest: Any) -> dict[str, Any] | None:
    """torch's own drift (noise.py): against its float64 run, or (a script that cannot train in float64)
    against its run with perturbed weights and gradients; None when neither ran to the end."""
    timeout, progress, steps, seed, torch_python, config, nproc = rest
    for float64 in (True, False):
        label = _("torch again, in float64: training steps") if float64 else _("torch again, perturbed: training steps")
        command = torch_command(torch_python, noise.noise_config(config, float64), nproc)
        n = run_side(noise.NOISE_SIDE, command, work, run_dir, timeout, progress, label, steps, seed, nproc > 1)
        rec = n.record
        if (
            rec is not None
            and rec["status"] not in ("crashed", "exited")
            and len(rec["events"]) == len(t_rec["events"])
        ):
            return {
                "loss": noise.loss_band(t_rec["events"], rec["events"]),
                "params": noise.parameter_band(work, t_rec, rec),
                "float64": float64,
            }
    return None


def check_nproc(nproc: int, api: bool) -> None:
    if nproc < 1:
        raise TrainUsageError(_("--nproc {nproc}: give at least 1 process").format(nproc=nproc))
    if nproc > 1 and api:
        raise TrainUsageError(_("--api records one process's calls: run it without --nproc"))


def judge_ranks(rep: TrainReport, work: Path, nproc: int, t_rec: dict[str, Any], m_rec: dict[str, Any]) -> None:
    """--nproc: every rank against rank 0 on each side (ranks.py); a rank that parted makes the runs differ."""
    findings, line = ranks.compare_ranks(work, nproc, {"torch": t_rec, "ms": m_rec})
    rep.findings += findings
    rep.conditions.append(line)
    if any(f["severity"] == "difference" for f in findings) and rep.status == "same":
        rep.status = "different"


def noise_may_explain(rep: TrainReport) -> bool:
    """DIFFERENT only by losses or final parameters, no configuration difference: worth measuring how far
    torch drifts from itself (noise.py)."""
    if rep.status != "different" or rep.error is not None:
        return False
    if any(f["severity"] == "difference" and f["kind"] != "params-final" for f in rep.findings):
        return False
    d = rep.first_divergence
    drift = (_("numerical drift"), _("the applied gradients differ (clipping, loss scaling or accumulation)"))
    return d is None or (d["cause"] in drift and d["rel"] is not None)


def judge(
    rep: TrainReport, t_rec: dict[str, Any], m_rec: dict[str, Any], work: Path, band: dict[str, Any] | None = None
) -> None:
    """Fill rows, findings, the first divergence, parameters and the status. `band`: torch's own
    run-to-run noise (noise.py), per step ("loss") and per parameter ("params"), widening the limits."""
    rep.rows = diagnose.pair_rows(t_rec["events"], m_rec["events"])
    rep.findings = causes.load_findings(m_rec)
    if m_rec["events"]:  # before its first step MindSpore has not named the optimizers' parameters
        rep.findings += causes.group_findings(t_rec, m_rec)
    rep.findings += causes.run_findings(rep.rows, t_rec, m_rec)
    rep.findings += draw_findings(rep.rows, m_rec)
    # Loose: Adam turns the float noise on a gradient that is ~0 by construction (attention's key bias)
    # into full-size steps of either sign; a parameter trained on one side only is off by ~100%.
    rep.parameter_tol = max(100 * rep.tol, 1e-2)
    if rep.error is None:  # a side that crashed has no trained parameters to speak of
        rep.parameters = diagnose.compare_parameters(work, t_rec, m_rec)
    _apply_band(rep, band)
    k = diagnose.first_beyond(rep.rows, rep.tol)
    if bad := [p for p in rep.parameters if p["rel"] > p.get("limit", rep.parameter_tol)]:
        rep.findings.append(causes.final_parameter_finding(bad, rep.parameter_tol, k is None))
    if k is not None:
        cause, facts = causes.likeliest_cause(rep.rows, k, rep.findings)
        r = rep.rows[k]
        rel_text = _("no MindSpore step") if r["rel"] is None else _("{rel:.1e} relative").format(rel=r["rel"])
        rep.first_divergence = {
            "index": k,
            "step": r["step"],
            "opt": r["opt"],
            "torch_loss": r["torch_loss"],
            "ms_loss": r["ms_loss"],
            "rel": r["rel"],
            "rel_text": rel_text,
            "cause": cause,
            "facts": facts,
        }
    else:
        rep.first_divergence = None
    rep.conditions = conditions(rep, t_rec, m_rec)
    differs = k is not None or any(f["severity"] == "difference" for f in rep.findings)
    if differs:
        rep.findings += causes.recomputed_findings(rep.ms_script)
    if rep.error is None:
        rep.status = "different" if differs else "same"


def _apply_band(rep: TrainReport, band: dict[str, Any] | None) -> None:
    """Each row's and parameter's limit: the tolerance, or NOISE_FACTOR × torch's own drift if larger;
    rep.noise says what the band absorbed."""
    if band is None:
        return
    absorbed_rows, absorbed_params = [], []
    for r, b in zip(rep.rows, band["loss"]):
        r["limit"] = max(rep.tol, noise.NOISE_FACTOR * b)
        if r["rel"] is not None and rep.tol < r["rel"] <= r["limit"]:
            absorbed_rows.append(r["index"])
    for p in rep.parameters:
        p["limit"] = max(rep.parameter_tol, noise.NOISE_FACTOR * band["params"].get(p["name"], 0.0))
        if rep.parameter_tol < p["rel"] <= p["limit"]:
            absorbed_params.append(p["name"])
    rep.noise = {
        "factor": noise.NOISE_FACTOR,
        "reference": "float64" if band.get("float64") else "perturbed",
        "perturbation": noise.PERTURBATION,
        "loss_drift": max(band["loss"], default=0.0),
        "parameter_drift": max(band["params"].values(), default=0.0),
        "absorbed": {"steps": absorbed_rows, "parameters": absorbed_params} if absorbed_rows or absorbed_params else {},
    }


def conditions(rep: TrainReport, t_rec: dict[str, Any], m_rec: dict[str, Any]) -> list[str]:
    """What the run made equal on both sides, in words."""
    out = [_("seeds: Python, numpy, torch and MindSpore seeded with {seed}").format(seed=rep.seed)]
    models = ", ".join(f"{m['key']} ({m['type']})" for m in t_rec.get("models", []))
    out.append(
        _(
            "same initial weights: torch's {models} recorded before the first step, loaded into MindSpore by the KB "
            "renames"
        ).format(models=models)
    )
    out.append(_data_text(rep, t_rec, m_rec))
    if rep.noise:
        out.append(_noise_text(rep.noise))
    out.append(_dropout_text(t_rec, m_rec))
    draws = {**t_rec["randomness"].get("random_ops", {}), **m_rec["randomness"].get("random_ops", {})}
    if draws:
        out.append(
            _("random draws during training made identical (the same pseudo-noise on both sides): {draws}").format(
                draws=", ".join(f"{k} ×{v}" for k, v in draws.items())
            )
        )
    out += _draw_texts(m_rec)
    out.append(
        _(
            "process: both sides ran with PYTHONHASHSEED={seed} (set and dict order, hash()); MindSpore's weight "
            "initialisers drew from a numpy stream of their own, off the script's np.random"
        ).format(seed=rep.seed)
    )
    if fake := t_rec["randomness"].get("fake_data", []) + m_rec["randomness"].get("fake_data", []):
        out.append(_("fake data served for: {names}").format(names=", ".join(sorted(set(fake)))))
    return out


def _noise_text(n: dict[str, Any]) -> str:
    if n.get("reference") == "float64":
        text = _(
            "noise band: torch ran again in float64, and its float32 run drifted from that by up to {loss:.1e} "
            "(losses) and {params:.1e} (parameters); the rule: a step or a parameter differs only beyond "
            "max(tolerance, {factor:g}× torch's own drift)"
        ).format(loss=n["loss_drift"], params=n["parameter_drift"], factor=n["factor"])
    else:
        text = _(
            "noise band: torch ran again with its initial weights and applied gradients perturbed by {eps:.1e} "
            "relative (float32 rounding) and drifted from itself by up to {loss:.1e} (losses) and {params:.1e} "
            "(parameters); the rule: a step or a parameter differs only beyond max(tolerance, {factor:g}× torch's "
            "own drift)"
        ).format(eps=n["perturbation"], loss=n["loss_drift"], params=n["parameter_drift"], factor=n["factor"])
    if a := n.get("absorbed"):
        more = _("within torch's own run-to-run noise: {steps} step(s), {params} parameter(s){names}").format(
            steps=len(a["steps"]),
            params=len(a["parameters"]),
            names=(" (" + ", ".join(a["parameters"][:4]) + ")") if a["parameters"] else "",
        )
        text += "; " + more
    return text


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} ×{v}" for k, v in sorted(d.items()))


def _draw_texts(m_rec: dict[str, Any]) -> list[str]:
    """Which of the script's random draws (outside the pseudo-noise) were replayed, and which not."""
    d = m_rec.get("draws") or {}
    out = []
    if served := d.get("served"):
        out.append(
            _("random draws replayed from torch into MindSpore (identical values): {draws}").format(
                draws=_counts(served)
            )
        )
    return out


def draw_findings(rows: list[dict[str, Any]], m_rec: dict[str, Any]) -> list[dict[str, Any]]:
    """Random draws that could not be made identical: a warning each side's report names."""
    d = m_rec.get("draws") or {}
    out = []
    if bad := next((r for r in rows if r.get("same_streams") is False), None):
        text = _(
            "Python's random and numpy's global random streams differ between the sides from step {step} on: "
            "draws the script makes with random.* or np.random.* are not the same values"
        )
        out.append({"kind": "streams", "severity": "warning", "message": text.format(step=bad["step"])})
    if unmatched := d.get("unmatched_ms"):
        text = _("random draws MindSpore made that match no torch draw (drawn for real, values differ): {draws}")
        out.append({"kind": "draws", "severity": "warning", "message": text.format(draws=_counts(unmatched))})
    if unused := d.get("unused_torch"):
        text = _("random draws torch made that MindSpore never asked for (not replayed): {draws}")
        out.append({"kind": "draws", "severity": "warning", "message": text.format(draws=_counts(unused))})
    return out


def _data_text(rep: TrainReport, t_rec: dict[str, Any], m_rec: dict[str, Any]) -> str:
    same = [r["same_inputs"] for r in rep.rows if r["same_inputs"] is not None]
    if not same:
        agree = _("batches not compared (one side's steps take no batch argument)")
    elif all(same) and all(r.get("identical_inputs") for r in rep.rows if r["same_inputs"] is not None):
        agree = _("batches identical at every step (their contents' digests agree)")
    elif all(same):
        agree = _("batches equal within float rounding at every step (contents not byte-identical)")
    else:
        agree = _("batches different at {n} of {total} step(s)").format(n=same.count(False), total=len(same))
    recorded, fed = (t_rec.get("replay") or {}).get("batches", 0), (m_rec.get("replay") or {}).get("batches", 0)
    if rep.data == "own":
        text = _("own data: each side ran its own pipeline; {agree} (batch statistics per step in report.json)")
        return text.format(agree=agree)
    if recorded:
        text = _(
            "same data: {fed} of the {recorded} batch(es) torch's DataLoaders yielded replayed into MindSpore's "
            "dataset iterators; {agree}"
        )
        return text.format(fed=fed, recorded=recorded, agree=agree)
    return _("no DataLoader in the torch script: each side made its own batches; {agree}").format(agree=agree)


def _dropout_text(t_rec: dict[str, Any], m_rec: dict[str, Any]) -> str:
    tl, ml = t_rec["randomness"].get("dropout_layers", 0), m_rec["randomness"].get("dropout_layers", 0)
    calls = sum(t_rec["randomness"].get("dropout", {}).values())
    if not (tl or ml or calls):
        return _("no Dropout in the trained models")
    text = _(
        "Dropout switched off on both sides (torch: {tl} layer(s), {calls} dropout call(s); MindSpore: {ml} layer(s))"
    )
    return text.format(tl=tl, calls=calls, ml=ml)


def side_error(run: SideRun, timeout: float) -> str | None:
    """A one-line account of a script that could not be compared, or None."""
    who = _("the {side} script").format(side=LABEL[run.side])
    rec = run.record
    if rec is None:
        if run.returncode is None:
            return _("{who} did not finish within {timeout:g} s (raise --timeout, or lower --steps)").format(
                who=who, timeout=timeout
            )
        text = _("{who}'s process died (exit code {code}) before writing its record; its last output: {last}")
        return text.format(who=who, code=run.returncode, last=_last_line(run.output_tail))
    n = len(rec["events"])
    when = _("after {n} optimizer step(s)").format(n=n) if n else _("before its first optimizer step")
    err = rec.get("error") or {}
    if rec["status"] == "crashed":
        where = _(" at {where}").format(where=err["where"]) if err.get("where") else ""
        return _("{who} crashed {when}{where}: {error}").format(
            who=who, when=when, where=where, error=f"{err['type']}: {err['message']}"
        )
    if rec["status"] == "exited":
        hint = (
            " — " + _("it needs arguments: give them after `--` (torch2ms compare-train ... -- ARGS)")
            if "usage:" in run.output_tail
            else ""
        )
        text = _("{who} exited with status {status} {when}: {last}")
        return text.format(who=who, status=err.get("message"), when=when, last=_last_line(run.output_tail)) + hint
    if rec["status"] == "no_steps":
        if rec.get("unstepped_losses"):
            return _("{who} calls backward() but never optimizer.step(): nothing to compare").format(who=who)
        text = _("{who} ran to its end without an optimizer step (no backward()/step() was seen): nothing to compare")
        return text.format(who=who)
    return None


def _last_line(text: str) -> str:
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    return lines[-1][:300] if lines else "(no output)"


def _side_summary(run: SideRun) -> dict[str, Any]:
    rec = run.record or {}
    ev = rec.get("events", [])
    per_step = (ev[-1]["t"] - ev[0]["t"]) / (len(ev) - 1) if len(ev) > 1 else None
    return {
        "status": rec.get("status", "no record"),
        "steps": len(ev),
        "seconds": run.seconds,
        "first_step_s": rec.get("first_step_s"),
        "per_step_s": per_step,
        "returncode": run.returncode,
        "error": rec.get("error"),
        "notes": rec.get("notes", []),
        "output_tail": run.output_tail,
    }


__all__ = ["TrainUsageError", "compare_train", "judge"]
