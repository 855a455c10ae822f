"""``compare_models``: prove a port layer by layer and name the first layer that is wrong (R23-R28).

Flow: torch side (in this process, or a subprocess of another interpreter that exchanges .npz files)
→ MindSpore side in PyNative with every cell hooked → pair the calls → per-layer metrics → replay
each MindSpore leaf on torch's own input for it (its local error, judged against torch's own
float32-vs-float64 noise) → final output again in GRAPH_MODE → optional training comparison.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import metrics as M
from .diagnose import describe, transposed_weight_hint
from .matching import match_events
from .report import CompareReport
from .torch_worker import SpecError

LOSS_TOL = 1e-4  # relative loss difference per step (R26)
# Parameters after training, relative to each parameter's scale (a correct port: ~1e-6 after 50 steps).
PARAM_TOL = 1e-3
# After training, both nets carry their own (slightly drifted) weights: a layer must be off by more
# than this, relative to its output scale, to be named.
POST_TRAIN_FLOOR = 1e-3


class CompareUsageError(ValueError):
    """Bad specs, inputs or files: the CLI exits 2."""


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------
def make_inputs(
    inputs: str | Path | Mapping[str, np.ndarray] | None, input_shape: Sequence[int] | None, input_dtype: str, seed: int
) -> dict[str, np.ndarray]:
    """``x0..xN`` forward inputs (+ optional ``train_x``/``train_y``) from an .npz, a mapping, or a seeded shape."""
    if inputs is not None:
        if isinstance(inputs, Mapping):
            data = dict(inputs)
        else:
            p = Path(inputs)
            if not p.is_file():
                raise CompareUsageError(f"{p}: no such inputs file")
            try:
                with np.load(p, allow_pickle=False) as z:
                    data = {k: z[k] for k in z.files}
            except Exception as exc:
                raise CompareUsageError(f"{p}: not a readable .npz ({exc})") from exc
        out = {k: np.asarray(v) for k, v in data.items() if k in ("train_x", "train_y")}
        if "x" in data:
            out["x0"] = np.asarray(data["x"])
        else:
            xs = sorted((k for k in data if k.startswith("x") and k[1:].isdigit()), key=lambda s: int(s[1:]))
            if not xs:
                raise CompareUsageError("inputs: expected an array named 'x' (or x0, x1, ... for several inputs)")
            out.update({k: np.asarray(data[k]) for k in xs})
        return out
    if not input_shape:
        raise CompareUsageError("give --inputs X.npz or --input-shape (e.g. 2,3,32,32)")
    try:
        dtype = np.dtype(input_dtype)
    except TypeError as exc:
        raise CompareUsageError(f"--input-dtype {input_dtype!r}: {exc}") from exc
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in input_shape)
    if dtype.kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
    elif dtype.kind in "iu":
        x = rng.integers(0, 16, shape).astype(dtype)  # token ids / indices
    elif dtype.kind == "b":
        x = rng.integers(0, 2, shape).astype(bool)
    else:
        raise CompareUsageError(f"--input-dtype {input_dtype}: only float, int or bool inputs")
    return {"x0": x}


def _check_train_batches(inputs: dict[str, np.ndarray], steps: int) -> None:
    if ("train_x" in inputs) != ("train_y" in inputs):
        raise CompareUsageError("inputs: give both train_x and train_y (or neither: seeded batches)")
    if "train_x" in inputs and (len(inputs["train_x"]) < steps or len(inputs["train_y"]) < steps):
        raise CompareUsageError(f"inputs: train_x/train_y hold fewer than {steps} batches")


# ---------------------------------------------------------------------------------------------
# The torch side, here or in another interpreter
# ---------------------------------------------------------------------------------------------
def _run_torch(
    req: dict[str, Any], inputs: dict[str, np.ndarray], torch_python: str | None, workdir: Path
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    if torch_python is None:
        if importlib.util.find_spec("torch") is None:
            raise CompareUsageError(
                "torch is not importable here: pass --torch-python PATH/TO/python of an "
                "environment that has torch (the two sides then exchange .npz files)"
            )
        from .torch_worker import run_torch_side

        try:
            return run_torch_side(req, inputs)
        except SpecError as exc:
            raise CompareUsageError(str(exc)) from exc
    inp, outp, reqp = workdir / "torch_inputs.npz", workdir / "torch_side.npz", workdir / "request.json"
    np.savez(inp, **inputs)
    reqp.write_text(json.dumps(req | {"inputs_npz": str(inp), "out_npz": str(outp)}), encoding="utf-8")
    worker = Path(__file__).with_name("torch_worker.py")
    env = dict(os.environ)
    # The torch interpreter may lack torch2ms: the worker is standalone, but the user's model
    # module may live next to the caller's cwd.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH", "")]))
    try:
        proc = subprocess.run(
            [torch_python, str(worker), str(reqp)], capture_output=True, text=True, env=env, timeout=3600
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompareUsageError(f"--torch-python {torch_python}: {exc}") from exc
    if proc.returncode != 0 or not outp.exists():
        raise CompareUsageError(f"the torch side ({torch_python}) failed:\n{proc.stderr[-3000:]}")
    with np.load(outp, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("__meta__")))
    if "usage_error" in meta:
        raise CompareUsageError(meta["usage_error"])
    if "fatal" in meta:
        raise CompareUsageError(f"the torch side failed: {meta['fatal']}\n{meta.get('trace', '')}")
    return meta, arrays


# ---------------------------------------------------------------------------------------------
# Layer-by-layer analysis
# ---------------------------------------------------------------------------------------------
def _f(v: float | None) -> float | None:
    return None if v is None or not np.isfinite(v) else float(v)


def _analyze(
    t_events: list[dict[str, Any]],
    t_arr: Mapping[str, np.ndarray],
    tp: str,
    m_rec: dict[str, Any],
    net: Any,
    tmeta: dict[str, Any],
    converted: Mapping[str, np.ndarray],
    kb: Any,
    unloaded: list[str],
    phase: str,
    replay_all: bool = False,
    floor: float = 0.0,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, dict[str, Any]]:
    """Rows for every torch call, the first divergence (or None), and extra facts (missing, extra, how)."""
    from .ms_side import _cell_at, replay_leaf

    m_events, m_arr = m_rec["events"], m_rec["arrays"]
    pairs, how = match_events(t_events, m_events)
    rows: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    baseline = 0.0
    classes = tmeta.get("module_classes", {})
    missing_since: list[str] = []  # torch calls with no MindSpore counterpart since the last paired one
    for i, te in enumerate(t_events):
        row: dict[str, Any] = {
            "index": i,
            "name": te["name"],
            "call": te["call"],
            "torch_type": te["type"],
            "leaf": te["leaf"],
            "shape": (te["out_shapes"] or [None])[0],
            "verdict": "ok",
        }
        j = pairs.get(i)
        if j is None:
            row["verdict"] = "missing"
            row["note"] = "no MindSpore cell call paired with this torch call"
            rows.append(row)
            missing_since.append(te["name"] or "(model)")
            continue
        me = m_events[j]
        row["ms_name"], row["ms_type"] = me["name"], me["type"]
        refs = [t_arr[f"{tp}e{i}_o{k}"] for k in range(len(te["out_shapes"]))]
        gots = [m_arr[f"e{j}_o{k}"] for k in range(len(me["out_shapes"]))]
        d = M.diff_all(refs, gots)
        if d is not None:
            row.update(
                {
                    k: _f(v) if isinstance(v, float) else v
                    for k, v in d.to_dict().items()
                    if k in ("max_abs", "rel", "max_rel", "cosine", "within", "nonfinite", "shape_ok")
                }
            )
            if not d.shape_ok:
                row["note"] = f"shape torch {d.ref_shape} vs MindSpore {d.got_shape}"
        # Input error (leaf calls: both sides captured their inputs).
        din = None
        t_inputs = te.get("inputs")
        if te["leaf"] and t_inputs:
            ins = [
                (t_arr[f"{tp}{it['array']}"], m_arr.get(f"e{j}_i{k}")) for k, it in enumerate(t_inputs) if "array" in it
            ]
            if ins and all(g is not None for _, g in ins):
                din = M.diff_all([a for a, _ in ins], [g for _, g in ins])
                row["in_rel"] = _f(din.rel) if din.shape_ok else None
        # Local error: the MindSpore cell on torch's own input.
        local, local_err, local_out = None, None, None
        row["noise_rel"] = te.get("noise_rel") if te["leaf"] else None
        # Replay only where the accumulated error is above this layer's noise threshold (or when
        # asked): below it the local error cannot be larger, and a replay costs a forward's worth.
        local_thr = max(M.local_threshold(te.get("noise_rel")), floor)
        needs = replay_all or d is None or not d.shape_ok or bool(d.nonfinite) or d.rel > local_thr
        if te["leaf"] and t_inputs is not None and needs:
            args = [t_arr[f"{tp}{it['array']}"] if "array" in it else it["value"] for it in t_inputs]
            local_out, local_err = replay_leaf(net, me["name"], args)
            if local_out is not None:
                local = M.diff_all(refs, local_out)
                row["local_rel"] = _f(local.rel) if local.shape_ok and not local.nonfinite else None
        chain_thr = max(M.chain_threshold(baseline), floor)
        row["threshold"] = local_thr if te["leaf"] and t_inputs is not None else chain_thr
        if first is not None:
            row["verdict"] = "downstream"
            rows.append(row)
            continue
        kind, detail, at = None, "", te
        if d is None or not d.shape_ok:
            kind, detail = "shape", row.get("note", "outputs differ in number")
        elif d.nonfinite.startswith("MindSpore"):
            kind, detail = "non-finite", d.nonfinite
        elif din is not None and (not din.shape_ok or din.nonfinite.startswith("MindSpore") or din.rel > chain_thr):
            kind = "input"
            parent = te["name"].rpartition(".")[0]
            what = (
                f"shape torch {din.ref_shape} vs MindSpore {din.got_shape}"
                if not din.shape_ok
                else din.nonfinite or f"err/scale {din.rel:.2e}"
            )
            detail = (
                f"the input of {te['name']} already differs ({what}) while every layer before it matched: the "
                f"bug is in the forward code of {parent or 'the model'} before it calls {te['name']}"
            )
            at = {"name": parent, "type": classes.get(parent, "?"), "torch_class": None}
        elif local_err is not None:
            kind, detail = "error", f"the MindSpore cell raised on torch's input: {local_err}"
        elif local is not None:
            if not local.shape_ok:
                kind, detail = (
                    "shape",
                    f"on torch's input: shape torch {local.ref_shape} vs MindSpore {local.got_shape}",
                )
            elif local.nonfinite.startswith("MindSpore"):
                kind, detail = "non-finite", local.nonfinite
            elif local.rel > row["threshold"]:
                kind = "values"
                detail = (
                    f"on torch's own input the layer is off by {local.rel:.2e} of its output scale "
                    f"(float32 noise threshold {row['threshold']:.1e}; cosine {local.cosine:.6f})"
                )
        elif d.rel > row["threshold"]:
            kind = "values"
            detail = (
                f"error jumps to {d.rel:.2e} of the output scale (everything before ≤ {baseline:.1e}): "
                f"this layer's own forward code differs"
            )
        if kind is None:
            missing_since = []
            baseline = max(
                baseline, d.rel if np.isfinite(d.rel) else 0.0, (din.rel if din is not None and din.shape_ok else 0.0)
            )
            rows.append(row)
            continue
        row["verdict"] = "DIVERGES"
        rows.append(row)
        name = at["name"]
        ms_cell = None
        try:
            ms_cell = _cell_at(net, me["name"] if at is te else name)
        except KeyError:
            pass
        extra = []
        if at is te:
            w = converted.get(f"{name}.weight" if name else "weight")
            b = converted.get(f"{name}.bias" if name else "bias")
            x = t_arr.get(f"{tp}{t_inputs[0]['array']}") if t_inputs and "array" in t_inputs[0] else None
            h = transposed_weight_hint(te.get("torch_class"), x, local_out[0] if local_out else None, w, b)
            if h:
                extra.append(h)
        if missing_since:
            extra.append(
                f"torch layer(s) {', '.join(missing_since)} ran just before and have no MindSpore "
                f"counterpart: missing in the port?"
            )
        pre = f"{name}." if name else ""
        nl = [u for u in unloaded if u.startswith(pre)] if name or at is te else []
        if nl:
            extra.append(f"parameters not loaded into this layer: {', '.join(nl[:5])}")
        ms_type = type(ms_cell).__name__ if ms_cell is not None else None
        first = {
            "index": i,
            "layer": name,
            "call": te["call"] if at is te else 0,
            "torch_type": at["type"],
            "torch_class": at.get("torch_class"),
            "ms_type": ms_type,
            "kind": kind,
            "detail": detail,
            "phase": phase,
            "hint": describe(
                kind, detail, at.get("torch_class"), tmeta.get("module_attrs", {}).get(name, {}), ms_cell, kb, extra
            ),
        }
    used = set(pairs.values())
    facts = {
        "how": how,
        "missing": sorted({te["name"] for i, te in enumerate(t_events) if i not in pairs}),
        "extra": sorted({me["name"] for j, me in enumerate(m_events) if j not in used}),
    }
    return rows, first, facts


def _crash_divergence(rows: list[dict[str, Any]], m_rec: dict[str, Any], tmeta: dict[str, Any]) -> dict[str, Any]:
    """The MindSpore forward raised: name the innermost cell that had started and not finished."""
    classes = tmeta.get("module_classes", {})
    miss = next((r for r in rows if r["verdict"] == "missing"), None)
    failed = m_rec.get("failed_in")
    if failed:  # a layer (not the model's own code) raised
        row = next((r for r in rows if r["name"] == failed and r["verdict"] == "missing"), miss)
        return {
            "index": row["index"] if row else None,
            "layer": failed,
            "call": 0,
            "torch_type": classes.get(failed),
            "torch_class": None,
            "ms_type": None,
            "kind": "error",
            "phase": "forward",
            "detail": f"the MindSpore cell {failed} raised on the forward input: {m_rec['error']}",
            "hint": "this layer fails on inputs torch accepts: compare its construct() and arguments",
        }
    done = [r for r in rows if r["verdict"] != "missing" and (miss is None or r["index"] < miss["index"])]
    parent = miss["name"].rpartition(".")[0] if miss else ""
    where = (
        f"after {_name(done[-1])} and before {_name(miss)}"
        if done and miss
        else f"before {_name(miss)}"
        if miss
        else ""
    )
    return {
        "index": miss["index"] if miss else None,
        "layer": parent,
        "call": 0,
        "torch_type": classes.get(parent),
        "torch_class": None,
        "ms_type": None,
        "kind": "error",
        "phase": "forward",
        "detail": f"the MindSpore forward raised {where}: {m_rec['error']}",
        "hint": "the code between these layers in the MindSpore construct() fails on inputs torch accepts "
        "(e.g. x.size(0): MindSpore's Tensor.size is an int; use x.shape[0])",
    }


def _name(row: dict[str, Any]) -> str:
    return row["name"] or "(model)"


def _output_check(ref: list[np.ndarray], got: list[np.ndarray] | None, err: str | None) -> dict[str, Any]:
    if err is not None or got is None:
        return {"ok": False, "error": err or "no output"}
    d = M.diff_all(ref, got)
    if d is None:
        return {"ok": False, "error": "the model returned no tensor"}
    if not d.shape_ok:
        return {"ok": False, "error": f"output shape torch {d.ref_shape} vs MindSpore {d.got_shape}"}
    out = {k: _f(v) if isinstance(v, float) else v for k, v in d.to_dict().items()}
    out["ok"] = (not d.nonfinite) and d.rel <= M.OUTPUT_TOL
    return out


# ---------------------------------------------------------------------------------------------
# The public entry point
# ---------------------------------------------------------------------------------------------
def compare_models(
    torch_spec: str,
    ms_spec: str,
    *,
    weights: str | None = None,
    inputs: str | Path | Mapping[str, np.ndarray] | None = None,
    input_shape: Sequence[int] | None = None,
    input_dtype: str = "float32",
    seed: int = 0,
    train_steps: int = 0,
    optimizer: str = "sgd",
    lr: float = 0.01,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    out_dir: str | Path | None = None,
    torch_python: str | None = None,
    graph: bool = True,
    randomize_norms: bool = True,
    threads: int | None = None,
    replay_all: bool = False,
) -> CompareReport:
    """Compare a torch model and its MindSpore port; see the module docstring. Raises CompareUsageError.

    ``replay_all``: run every MindSpore leaf on torch's input (the "local err" column for every
    layer); by default only layers whose accumulated error exceeds their noise threshold are replayed.
    """
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    if weights is not None and not Path(weights).is_file():
        raise CompareUsageError(f"--weights {weights}: no such file")
    if optimizer.lower() not in ("sgd", "adam", "adamw"):
        raise CompareUsageError(f"optimizer {optimizer!r}: choose sgd, adam or adamw")
    data = make_inputs(inputs, input_shape, input_dtype, seed)
    xs = [data[k] for k in sorted((k for k in data if k[0] == "x" and k[1:].isdigit()), key=lambda s: int(s[1:]))]
    req = {
        "torch": torch_spec,
        "weights": str(Path(weights).resolve()) if weights else None,
        "seed": seed,
        "randomize_norms": randomize_norms,
        "threads": threads,
        "noise": True,
        "train": {
            "steps": train_steps,
            "optimizer": optimizer,
            "lr": lr,
            "momentum": momentum,
            "weight_decay": weight_decay,
        },
    }
    with tempfile.TemporaryDirectory(prefix="t2m-compare-") as tmp:
        if train_steps:
            _check_train_batches(data, train_steps)
        t0 = time.perf_counter()
        tmeta, tarr = _run_torch(req, data, torch_python, Path(tmp))
        timings["torch_side"] = time.perf_counter() - t0
    if train_steps and "train_y" in tarr:  # seeded batches the torch side made (labels need the output width)
        data["train_x"], data["train_y"] = tarr["train_x"], tarr["train_y"]
    timings |= {f"torch_{k}": v for k, v in tmeta.get("timings", {}).items()}
    t_events = tmeta["forward"]["events"]
    if tmeta["forward"]["error"]:
        raise CompareUsageError(f"the torch model fails on this input: {tmeta['forward']['error']}")

    # ---- MindSpore side (never imports torch) ----
    from ..kb import load_kb
    from ..weights.rename import convert_state_dict
    from . import ms_side

    t0 = time.perf_counter()
    kb = load_kb()
    try:
        net = ms_side.build_net(ms_spec, seed)
    except SpecError as exc:
        raise CompareUsageError(str(exc)) from exc
    state = {k[len("param::") :]: v for k, v in tarr.items() if k.startswith("param::")}
    converted = convert_state_dict(state, tmeta["layer_types"], kb)
    wrep = ms_side.load_state(net, converted)
    if tmeta.get("weights_load"):
        wrep["torch_load"] = tmeta["weights_load"]
    timings["ms_build_and_load"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    m_rec = ms_side.record_forward(net, xs)
    timings["ms_forward_hooked"] = m_rec["t_forward"]
    rows, first, facts = _analyze(
        t_events, tarr, "fwd/", m_rec, net, tmeta, converted, kb, wrep["unloaded"], "forward", replay_all
    )
    timings["ms_replay_and_metrics"] = time.perf_counter() - t0 - m_rec["t_forward"]
    problems: list[str] = []
    if wrep["shape_mismatch"]:
        problems.append(
            f"{len(wrep['shape_mismatch'])} weight(s) with a different shape were not loaded: "
            + "; ".join(f"{n} torch {a} vs MindSpore {b}" for n, a, b in wrep["shape_mismatch"][:5])
        )
    if m_rec["error"]:
        problems.append(f"the MindSpore forward raised: {m_rec['error']}")
        if first is None:
            first = _crash_divergence(rows, m_rec, tmeta)
    root_t = [i for i, e in enumerate(t_events) if e["name"] == ""]
    ref_out = [tarr[f"fwd/e{root_t[-1]}_o{k}"] for k in range(len(t_events[root_t[-1]]["out_shapes"]))]
    if any(not np.isfinite(r).all() for r in ref_out if r.dtype.kind == "f"):
        problems.append("the torch output itself contains NaN/Inf: only finite elements were compared")
    root_m = [j for j, e in enumerate(m_rec["events"]) if e["name"] == ""]
    if root_m and not m_rec["error"]:
        got = [m_rec["arrays"][f"e{root_m[-1]}_o{k}"] for k in range(len(m_rec["events"][root_m[-1]]["out_shapes"]))]
        output = {"pynative": _output_check(ref_out, got, None)}
    else:
        output = {"pynative": {"ok": False, "error": m_rec["error"] or "no output recorded"}}
    if graph and not m_rec["error"]:
        t0 = time.perf_counter()
        gout, gerr = ms_side.plain_forward(net, xs, graph=True)
        output["graph"] = _output_check(ref_out, gout, gerr)
        timings["ms_graph_check"] = time.perf_counter() - t0

    # ---- training (R26) ----
    training, post_rows = None, None
    if train_steps:
        training, post_rows, post_first = _compare_training(
            net, tmeta, tarr, data, req["train"], kb, converted, wrep, problems, timings
        )
        if first is None and post_first is not None:
            first = post_first

    status = "match"
    if first is not None or any(not o.get("ok") for o in output.values()) or (training and not training["ok"]):
        status = "divergence"
    if status == "divergence" and first is None:
        problems.append("no single layer stands out: the error is spread over the model (see the table)")
    timings["total"] = time.perf_counter() - t_start
    rep = CompareReport(
        status=status,
        torch_spec=torch_spec,
        ms_spec=ms_spec,
        seed=seed,
        input_shapes=[list(x.shape) for x in xs],
        alignment=facts["how"],
        layers=rows,
        first_divergence=first,
        output=output,
        weights=wrep,
        missing_layers=facts["missing"],
        extra_ms_cells=facts["extra"],
        problems=problems,
        training=training,
        post_training_layers=post_rows,
        two_process=torch_python is not None,
        timings=timings,
    )
    if out_dir is not None:
        rep.write(out_dir)
    return rep


def _compare_training(
    net: Any,
    tmeta: dict[str, Any],
    tarr: Mapping[str, np.ndarray],
    data: dict[str, np.ndarray],
    cfg: dict[str, Any],
    kb: Any,
    converted0: Mapping[str, np.ndarray],
    wrep: dict[str, Any],
    problems: list[str],
    timings: dict[str, float],
):
    from ..weights.rename import convert_state_dict
    from . import ms_side

    steps = cfg["steps"]
    if "train" not in tmeta:
        problems.append("training was not run on the torch side")
        return None, None, None
    t0 = time.perf_counter()
    try:
        ms_losses = ms_side.train(net, cfg, data["train_x"][:steps], data["train_y"][:steps])
    except Exception as exc:  # noqa: BLE001 - a port that cannot train is a finding, not a crash
        problems.append(f"MindSpore training failed: {type(exc).__name__}: {str(exc)[:300]}")
        ms_losses = []
    timings["ms_train"] = time.perf_counter() - t0
    lt = tmeta["train"]["losses"]
    loss_rel = [abs(a - b) / max(abs(a), 1e-12) for a, b in zip(lt, ms_losses)]
    trained = convert_state_dict(
        {k[len("trained::") :]: v for k, v in tarr.items() if k.startswith("trained::")}, tmeta["layer_types"], kb
    )
    ms_state = ms_side.state_arrays(net)
    param_rows = []
    for name, arr in ms_state.items():
        if name in trained and trained[name].shape == arr.shape:
            d = M.diff(trained[name], arr)
            param_rows.append((name, d.rel if np.isfinite(d.rel) else float("inf")))
    worst = max(param_rows, key=lambda r: r[1]) if param_rows else (None, None)
    training = {
        "steps": steps,
        "optimizer": cfg["optimizer"],
        "lr": cfg["lr"],
        "momentum": cfg.get("momentum"),
        "torch_losses": lt,
        "ms_losses": ms_losses,
        "loss_rel": loss_rel,
        "max_loss_rel": max(loss_rel) if loss_rel else None,
        "loss_tol": LOSS_TOL,
        "params": [{"name": n, "rel": r} for n, r in sorted(param_rows, key=lambda r: -r[1])],
        "worst_param": worst[0],
        "worst_param_rel": worst[1],
        "param_tol": PARAM_TOL,
    }
    training["ok"] = (
        bool(ms_losses)
        and len(ms_losses) == len(lt)
        and max(loss_rel) <= LOSS_TOL
        and (worst[1] is None or worst[1] <= PARAM_TOL)
    )
    post_rows, post_first = None, None
    if "post_train" in tmeta and not tmeta["post_train"]["error"] and ms_losses:
        xs = [data[k] for k in sorted((k for k in data if k[0] == "x" and k[1:].isdigit()), key=lambda s: int(s[1:]))]
        m_rec = ms_side.record_forward(net, xs)
        post_rows, post_first, _ = _analyze(
            tmeta["post_train"]["events"],
            tarr,
            "post/",
            m_rec,
            net,
            tmeta,
            trained,
            kb,
            wrep["unloaded"],
            "after training",
            floor=POST_TRAIN_FLOOR,
        )
    if post_first is None and not training["ok"]:
        bad = [n for n, r in param_rows if r > PARAM_TOL]
        if bad:
            post_first = {
                "index": None,
                "layer": bad[0].rpartition(".")[0],
                "call": 0,
                "torch_type": None,
                "torch_class": None,
                "ms_type": None,
                "kind": "training",
                "phase": "after training",
                "detail": f"parameter {bad[0]} differs after {steps} steps",
                "hint": "",
            }
    return training, post_rows, post_first
