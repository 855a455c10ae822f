"""What differs between the two runs besides the loss, and which of it most likely explains the first
step beyond tolerance. Each finding: ``{"kind", "severity": "difference"|"warning", "message"}``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..i18n import N_, _
from .diagnose import integer_ratio, lr_differs, modes_differ, rel

Finding = dict[str, Any]


def _finding(kind: str, message: str, severity: str = "difference", **extra: Any) -> Finding:
    return {"kind": kind, "severity": severity, "message": message, **extra}


def torch_to_ms_names(t_rec: dict[str, Any]) -> dict[str, str]:
    """'model0:features.1.weight' → 'model0:features.1.gamma' (the KB renames, per model)."""
    from ..kb import load_kb
    from ..weights import rename_key

    kb, out = load_kb(), {}
    for m in t_rec.get("models", []):
        for name in m.get("trainable", []):
            new, _renamed = rename_key(name, m["layer_types"], kb)
            out[f"{m['key']}:{name}"] = f"{m['key']}:{new}" if new else f"{m['key']}:{name}"
    return out


def _short(names: list[str], n: int = 4) -> str:
    more = _(" and {n} more").format(n=len(names) - n) if len(names) > n else ""
    return ", ".join(names[:n]) + more


def load_findings(m_rec: dict[str, Any]) -> list[Finding]:
    out = []
    for m in m_rec.get("models", []):
        load = m.get("load") or {}
        if load.get("error"):
            out.append(_finding("init", f"{m['key']} ({m['type']}): {load['error']}"))
        if load.get("missing"):
            out.append(
                _finding(
                    "init",
                    _("{model}: {n} MindSpore parameter(s) got no torch initial value: {names}").format(
                        model=m["key"], n=len(load["missing"]), names=_short(load["missing"])
                    ),
                )
            )
        if load.get("shape"):
            text = _("{model}: shapes differ, not loaded: {names}").format(model=m["key"], names=_short(load["shape"]))
            out.append(_finding("init", text))
    return out


def group_findings(t_rec: dict[str, Any], m_rec: dict[str, Any]) -> list[Finding]:
    """Parameter groups: the same parameters trained, each once, with the same hyper-parameters."""
    rename = torch_to_ms_names(t_rec)
    out: list[Finding] = []
    t_opts, m_opts = t_rec.get("optimizers", []), m_rec.get("optimizers", [])
    if len(t_opts) != len(m_opts):
        text = _("torch builds {torch} optimizer(s), MindSpore {ms}").format(torch=len(t_opts), ms=len(m_opts))
        out.append(_finding("groups", text))
    seen: dict[str, int] = {}
    torch_seen: dict[str, int] = {}  # a script may hold two optimizers over the same parameters itself
    for t in t_opts:
        for p in {rename.get(p, p) for g in t.get("groups", []) for p in g["params"]}:
            torch_seen[p] = torch_seen.get(p, 0) + 1
    for j, (t, m) in enumerate(zip(t_opts, m_opts)):
        tg, mg = t.get("groups", []), m.get("groups", [])
        if len(tg) != len(mg):
            out.append(
                _finding(
                    "groups",
                    _(
                        "optimizer {j}: torch has {torch} parameter group(s), MindSpore {ms} (a group dropped or merged)"
                    ).format(j=j, torch=len(tg), ms=len(mg)),
                )
            )
        t_all = {rename.get(p, p) for g in tg for p in g["params"]}
        m_all = [p for g in mg for p in g["params"]]
        for p in m_all:
            seen[p] = seen.get(p, 0) + 1
        if missing := sorted(t_all - set(m_all)):
            out.append(
                _finding(
                    "untrained",
                    _("optimizer {j}: MindSpore does not train {n} parameter(s) torch trains: {names}").format(
                        j=j, n=len(missing), names=_short(missing)
                    ),
                )
            )
        if extra := sorted(set(m_all) - t_all):
            stats = all(p.endswith(("moving_mean", "moving_variance")) for p in extra)
            out.append(
                _finding(
                    "extra-stats" if stats else "extra",
                    _("optimizer {j}: MindSpore also updates {n} parameter(s) torch does not train: {names}").format(
                        j=j, n=len(extra), names=_short(extra)
                    )
                    + _extra_hint(extra),
                )
            )
        for g, (a, b) in enumerate(zip(tg, mg)):
            out += _hyper_findings(j, g, a["hyper"], b["hyper"])
    if twice := sorted(p for p, n in seen.items() if n > max(1, torch_seen.get(p, 1))):
        out.append(
            _finding(
                "twice",
                _("MindSpore trains {n} parameter(s) twice (in two groups or optimizers): {names}").format(
                    n=len(twice), names=_short(twice)
                ),
            )
        )
    return out


def _extra_hint(extra: list[str]) -> str:
    if any(p.endswith(("moving_mean", "moving_variance")) for p in extra):
        return " — " + _(
            "BatchNorm statistics given to the optimizer (get_parameters() instead of trainable_params()): "
            "weight decay shrinks them"
        )
    return ""


def _hyper_findings(j: int, g: int, t: dict[str, Any], m: dict[str, Any]) -> list[Finding]:
    out = []
    for k in sorted(set(t) & set(m) - {"lr"}):
        a, b = t[k], m[k]
        if isinstance(a, list | tuple) and isinstance(b, list | tuple):
            differs = len(a) != len(b) or any((rel(x, y) or 0.0) > 1e-6 for x, y in zip(a, b))
        elif isinstance(a, bool) or isinstance(b, bool):
            differs = bool(a) != bool(b)
        else:
            differs = (rel(float(a), float(b)) or 0.0) > 1e-6 if a else abs(float(b)) > 1e-12
        if differs:
            text = _("optimizer {j} group {g}: {key} differs: torch {torch}, MindSpore {ms}")
            out.append(_finding("hyper", text.format(j=j, g=g, key=k, torch=a, ms=b), key=k))
    return out


def run_findings(rows: list[dict[str, Any]], t_rec: dict[str, Any], m_rec: dict[str, Any]) -> list[Finding]:
    """Step-level facts: training modes, learning rates, optimizer order, steps run, torch imports."""
    out: list[Finding] = []
    if mode := next(((r, d) for r in rows for d in [modes_differ(r)] if d), None):
        r, diffs = mode
        text = _("at step {step}: {diffs}").format(step=r["step"], diffs="; ".join(diffs)) + _mode_hint(r)
        out.append(_finding("mode", text, step=r["index"]))
    peak: dict[int, float] = {}
    for r in rows:
        peak[r["opt"]] = max([peak.get(r["opt"], 0.0), *(abs(x) for x in r["torch_lr"] if x is not None)])
    if lr := next((r for r in rows if lr_differs(r, peak[r["opt"]])), None):
        out.append(
            _finding(
                "lr",
                _("learning rate differs from step {step} (optimizer {opt}): torch {torch}, MindSpore {ms}").format(
                    step=lr["step"], opt=lr["opt"], torch=_fmt_lrs(lr["torch_lr"]), ms=_fmt_lrs(lr["ms_lr"])
                ),
                step=lr["index"],
            )
        )
    if order := next((r for r in rows if r["ms_opt"] is not None and r["ms_opt"] != r["opt"]), None):
        out.append(
            _finding(
                "order",
                _("step {step}: torch updates optimizer {torch}, MindSpore optimizer {ms}").format(
                    step=order["index"] + 1, torch=order["opt"], ms=order["ms_opt"]
                ),
            )
        )
    nt, nm = len(t_rec.get("events", [])), len(m_rec.get("events", []))
    if nt != nm:
        short = "MindSpore" if nm < nt else "torch"
        text = _("the {side} script stopped after {n} optimizer step(s), the other ran {other}")
        out.append(_finding("steps", text.format(side=short, n=min(nt, nm), other=max(nt, nm))))
    if any(n.startswith("the converted script imported torch") for n in m_rec.get("notes", [])):
        out.append(
            _finding(
                "torch-import",
                _("the converted script imports torch (it will not run where only MindSpore is installed)"),
                "warning",
            )
        )
    return out


def _mode_hint(row: dict[str, Any]) -> str:
    """MindSpore has no BatchNorm/Dropout layer in training mode where torch has some."""
    for key, t in row["torch_modes"].items():
        m = row["ms_modes"].get(key) or {}
        if any(t.get(f"{k}_train") and m.get(f"{k}_train") == 0 for k in ("bn", "drop")):
            return " — " + _(
                "the converted script trains in inference mode: call model.set_train(True) before the loop "
                "(MindSpore Cells start in inference mode)"
            )
    return ""


def _fmt_lrs(lrs: list[Any] | None) -> str:
    return "/".join(f"{x:.6g}" if isinstance(x, float) else str(x) for x in (lrs or []))


def likeliest_cause(rows: list[dict[str, Any]], k: int, findings: list[Finding]) -> tuple[str, list[str]]:
    """The cause named for the first step beyond tolerance (row k), and the supporting facts."""
    by_kind: dict[str, list[Finding]] = {}
    for f in findings:
        by_kind.setdefault(f["kind"], []).append(f)
    before = rows[: k + 1]
    if bad := next((r for r in before if r["same_inputs"] is False), None):
        return _("the batches differ"), [
            _("step {step}: torch batch {torch}, MindSpore {ms}").format(
                step=bad["step"], torch=_stats(bad["torch_inputs"]), ms=_stats(bad["ms_inputs"])
            ),
            *[f["message"] for f in by_kind.get("draws", []) + by_kind.get("streams", [])],  # where they came from
        ]
    streams = next((r for r in before if r.get("same_streams") is False), None)
    if (streams and "streams" in by_kind) or "draws" in by_kind:
        return _("random draws differ"), [f["message"] for f in by_kind.get("streams", []) + by_kind.get("draws", [])]
    for kind, cause in (("init", N_("initial weights not all loaded")), ("mode", N_("BN/Dropout mode differs"))):
        if kind in by_kind and (kind == "init" or by_kind[kind][0]["step"] <= k):
            return _(cause), [f["message"] for f in by_kind[kind]]
    if k == 0:
        return _first_step_cause(rows[0])
    for kind, cause in (  # BN statistics in the optimizer change no training-mode loss: last
        ("groups", N_("parameter groups differ")),
        ("untrained", N_("a parameter not trained")),
        ("twice", N_("a parameter trained twice")),
        ("extra", N_("a parameter trained on one side only")),
        ("lr", N_("learning-rate schedule differs")),
        ("hyper", N_("optimizer settings differ")),
        ("extra-stats", N_("BatchNorm statistics updated by the optimizer")),
    ):
        if kind in by_kind and (kind != "lr" or by_kind[kind][0]["step"] < k):
            facts = [f["message"] for f in by_kind[kind]]
            return (_lr_cause(rows, by_kind[kind][0]["step"]) if kind == "lr" else _(cause)), facts
    if clip := _clip_cause(before):
        return clip
    return _("numerical drift"), [
        _(
            "no configuration difference found: the losses agree to {rel:.1e} up to step {step} and part from "
            "there; a layer whose forward or gradient differs slightly — compare it layer by layer (torch2ms compare)"
        ).format(rel=_max_rel(rows[:k]), step=rows[k]["step"] - 1)
    ]


def _first_step_cause(r: dict[str, Any]) -> tuple[str, list[str]]:
    n = integer_ratio(r["torch_loss"] or 0.0, r["ms_loss"] or 0.0)
    if n is not None:
        batch = (r["torch_inputs"] or {}).get("shape", [None])[0]
        which = "MindSpore" if abs(r["ms_loss"]) > abs(r["torch_loss"]) else "torch"
        extra = _(" (the batch size is {batch}: 'sum' against 'mean')").format(batch=batch) if batch == n else ""
        fact = _("at the first step the {side} loss is {n}× the other's").format(side=which, n=n)
        return _("loss reduction differs"), [fact + extra]
    if r["ms_loss"] is None:
        return _("no MindSpore step"), [_("the MindSpore script made no optimizer step here")]
    return _("the forward pass or the loss differs"), [
        _(
            "the first step's losses differ by {rel:.1e} with the same weights and batch: compare the model "
            "layer by layer (torch2ms compare)"
        ).format(rel=r["rel"])
    ]


def _lr_cause(rows: list[dict[str, Any]], i: int) -> str:
    if i == 0:
        return _("learning rate differs")
    t_changes = sum(1 for a, b in zip(rows[:i], rows[1 : i + 1]) if a["torch_lr"] != b["torch_lr"])
    m_changes = sum(
        1
        for a, b in zip(rows[:i], rows[1 : i + 1])
        if (rel((a["ms_lr"] or [0])[0], (b["ms_lr"] or [0])[0]) or 0) > 1e-6
    )
    if m_changes > t_changes:
        return _(
            "learning-rate schedule differs (the MindSpore scheduler steps more often: per batch instead of per epoch?)"
        )
    if t_changes > m_changes:
        return _("learning-rate schedule differs (the MindSpore scheduler steps less often)")
    return _("learning-rate schedule differs")


def _clip_cause(rows: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    for r in rows:
        g = rel(r["torch_grad_norm"], r["ms_grad_norm"])
        if g is None or g <= 1e-3 or (r["rel"] or 0.0) > 1e-3:
            continue
        clip = r.get("clip")
        fact = _(
            "step {step}: the losses agree but the applied gradient norms differ: torch {torch:.6g}, MindSpore {ms:.6g}"
        ).format(step=r["step"], torch=r["torch_grad_norm"], ms=r["ms_grad_norm"])
        if clip:
            fact += _(" (torch clipped {total:.6g} to max_norm {max_norm:g})").format(
                total=clip["total_norm"], max_norm=clip["max_norm"]
            )
            return _("gradient clipping differs"), [fact]
        return _("the applied gradients differ (clipping, loss scaling or accumulation)"), [fact]
    return None


def _stats(s: dict[str, Any] | None) -> str:
    if not s:
        return "—"
    return f"{s['dtype']}{s['shape']} " + _("mean {mean:.6g} std {std:.6g}").format(mean=s["mean"], std=s["std"])


def _max_rel(rows: list[dict[str, Any]]) -> float:
    return max((r["rel"] for r in rows if r["rel"] is not None), default=0.0)


STATISTICS = ("moving_mean", "moving_variance")


def recomputed_findings(ms_script: str) -> list[Finding]:
    """The conversion's own word where a forward torch ran once runs again (``with statistics_kept(...)``,
    written by convert/constructs/training/general.py: a GAN's generator in the generator's step): exact for
    BatchNorm, whose statistics are kept, not for dropout or another random draw in that forward."""
    try:
        lines = Path(ms_script).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    at = [k + 1 for k, line in enumerate(lines) if line.lstrip().startswith("with statistics_kept(")]
    if not at:
        return []
    text = _(
        "the MindSpore script runs a forward again where torch reused its output (line {lines}: a GAN's "
        "generator in the generator's step, marked there): its BatchNorm statistics are kept, but dropout or "
        "any other random draw in that forward draws again, so that step sees another output than torch's"
    )
    return [_finding("recomputed-forward", text.format(lines=", ".join(map(str, at[:4]))), severity="warning")]


def final_parameter_finding(bad: list[dict[str, Any]], tol: float, losses_agree: bool) -> Finding:
    """Parameters that differ after training. Only BatchNorm moving statistics, with every loss the same,
    has one known cause: MindSpore differentiates a function, so a module whose output torch shares
    between two backward passes (a GAN's generator output, used by the discriminator's and the
    generator's step) is called once in each function, and every call in training mode moves the
    statistics again; the weights and losses are not affected."""
    names = ", ".join(f"{p['name']} ({p['rel']:.1e})" for p in bad[:4])
    head = _("{n} parameter(s) differ after training by more than {tol:g} relative: {names}").format(
        n=len(bad), tol=tol, names=names
    )
    if losses_agree and all(p["name"].rsplit(".", 1)[-1] in STATISTICS for p in bad):
        models = sorted({p["name"].split(":", 1)[0] for p in bad})
        text = _(
            "{head} — only BatchNorm moving statistics, while every loss agrees: {models} ran its "
            "forward more often per step on the MindSpore side (value_and_grad calls the forward function it "
            "differentiates, so a module output that torch computes once and back-propagates twice is "
            "computed again in each function); its running statistics moved once per call"
        )
        return _finding("bn-statistics", text.format(head=head, models=", ".join(models)))
    if losses_agree and all(p.get("rel_without_key", tol + 1) <= tol for p in bad):
        text = _(
            "{head} — only attention key biases (the query and value thirds of in_proj_bias agree), while every "
            "loss agrees: softmax cancels a key bias, so its gradient is zero up to float noise on both sides, "
            "and an Adam-type optimizer turns that noise into full-size steps of either sign"
        )
        return _finding("attention-key-bias", text.format(head=head), severity="warning")
    return _finding("params-final", head)
