"""`torch2ms replay` on the real-code kit's models (issue 25): a table per model and a summary.

Each model of ``../shared/realcode/models.toml`` is built the way the kit builds it — the kit's own
loader (``realcode_worker.load_corpus_module``: the library slice of the file, prelude, keep, setup),
its factory, ``torch_setup``, constants perturbed, eval mode, and its seeded inputs — all read from
the kit at run time, never copied. One torch forward is recorded (every call the repository's own
lines make, ``torch2ms.replay.record``) and every distinct call configuration is replayed through the
KB mapping on MindSpore against torch on the recorded inputs (``torch2ms.replay.run``).

One process; each model gets ``--timeout`` seconds (SIGALRM). Order: the first model of every
repository, then the rest. Written to ``--out`` after every model (a stopped run keeps what it did):
``results.json`` (every model: status, reason, table, configurations) and ``summary.md`` (the
summary, then one table per model).

    nice python bench/replay_kit.py --out /tmp/replay-kit [--only ID ...] [--timeout 300] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

KIT = Path(os.environ.get("TORCH2MS_REALCODE") or Path(__file__).resolve().parents[1].parent / "shared" / "realcode")
MAX_BYTES = 1 << 26  # recorded inputs kept per model; beyond it a configuration replays on regenerated inputs


class ModelTimeout(Exception):
    pass


def _worker(kit: Path) -> Any:
    """The kit's own worker module (its loader, input maker, constant perturbation), imported from the kit."""
    if str(kit) not in sys.path:
        sys.path.insert(0, str(kit))
    import realcode_worker

    return realcode_worker


def kit_models(kit: Path) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The kit's models in run order (one per repository first, then the rest) and each repo's corpus files."""
    models = tomllib.loads((kit / "models.toml").read_text(encoding="utf-8"))["model"]
    files: dict[str, list[str]] = {}
    lines = (kit / "corpus" / "manifest.tsv").read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    for line in lines[1:]:
        row = dict(zip(head, line.split("\t")))
        if row.get("repo") and row.get("path"):
            files.setdefault(row["repo"], []).append(row["path"])
    seen: set[str] = set()
    first = [m for m in models if m["repo"] not in seen and not seen.add(m["repo"])]  # type: ignore[func-returns-value]
    return first + [m for m in models if m not in first], files


def record_model(kit: Path, entry: dict[str, Any], corpus_files: list[str]) -> Any:
    """One eval forward of the kit model ``entry`` in torch, as the kit runs it: its call log."""
    import numpy as np
    import torch

    from torch2ms.align.api_record import user_files
    from torch2ms.replay.record import CallLog, call_mode

    w = _worker(kit)
    repo_root = kit / "corpus" / entry["repo"]
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    log: dict[str, Any] = {"stubbed": [], "stmt_errors": [], "dropped": {}}
    mod, cleanup = w.load_corpus_module(str(repo_root), entry["file"], entry, log, corpus_files)
    try:
        model = eval(compile(entry["factory"], "<factory>", "eval"), mod.__dict__)
        if entry.get("model_dtype", "float32") == "float64":
            model = model.double()
        for sub in model.modules():  # = model.eval(), which some kit classes override
            sub.training = False
        if entry.get("torch_setup"):
            with torch.no_grad():
                exec(
                    compile(entry["torch_setup"], "<torch_setup>", "exec"), dict(mod.__dict__, model=model, torch=torch)
                )
        if entry.get("perturb", True):
            w.perturb_constants(model, torch)
        _vals, arrays, descs = w.make_inputs(entry.get("inputs", []), w.input_seed(entry["id"]), np)
        inputs = w.rebuild_inputs(descs, arrays, torch.from_numpy)
        fn = getattr(model, entry["method"]) if entry.get("method") else model
        files = user_files(list(model.modules()), os.path.dirname(os.path.realpath(torch.__file__)))
        files |= {str(repo_root / f) for f in corpus_files} | {os.path.realpath(repo_root / f) for f in corpus_files}
        calls = CallLog(MAX_BYTES)
        with torch.no_grad(), call_mode(calls, files):
            fn(*inputs)
        return calls
    finally:
        cleanup()


def _alarm(_signum: int, _frame: Any) -> None:
    raise ModelTimeout


def run_model(
    kit: Path, entry: dict[str, Any], corpus_files: list[str], timeout: int, tol: float, regenerate: bool = False
) -> dict[str, Any]:
    """Record and replay one model within ``timeout`` seconds: its result row."""
    from torch2ms.replay.run import replay

    res: dict[str, Any] = {"id": entry["id"], "repo": entry["repo"], "file": entry["file"]}
    t0 = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    stage = "record"
    try:
        calls = record_model(kit, entry, corpus_files)
        stage = "replay"
        rep = replay(list(calls.configs.values()), regenerate=regenerate, tol=max(tol, float(entry.get("tol", tol))))
        rep.skipped = calls.skipped
        res.update(status="beyond" if rep.failing() else "ok", kept_bytes=calls.kept, **rep.to_dict())
        if not rep.results:
            res.update(status="skipped", reason="no torch call recorded in the repository's own lines")
    except ModelTimeout:
        res.update(status="skipped", reason=f"timeout ({timeout} s) in {stage}")
    except Exception as exc:  # noqa: BLE001 - a model that does not build is reported, the run goes on
        res.update(status="skipped", reason=f"{stage}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    return res


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    run = [r for r in results if r["status"] in ("ok", "beyond")]
    configs = [c for r in run for c in r["configurations"]]
    statuses: dict[str, int] = {}
    for c in configs:
        statuses[c["status"]] = statuses.get(c["status"], 0) + 1
    failing = [
        {"model": r["id"], **{k: c[k] for k in ("api", "where", "call", "ms_call", "error", "detail", "status")}}
        for r in run
        for c in r["configurations"]
        if c["status"] in ("beyond", "raised")
    ]
    return {
        "models": len(results),
        "regenerated": any(r.get("regenerated") for r in results),
        "models_run": len(run),
        "repositories_run": len({r["repo"] for r in run}),
        "configurations": len(configs),
        "distinct_configurations": len({c["signature"] for c in configs}),
        "apis": len({c["api"] for c in configs}),
        "by_status": statuses,
        "beyond_tolerance": failing,
        "not_replayed": sorted({f"{c['api']}: {c['detail'][:120]}" for c in configs if c["status"] == "no_rule"}),
        "skipped": {r["id"]: r["reason"] for r in results if r["status"] == "skipped"},
    }


def _cell(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown(summary: dict[str, Any], results: list[dict[str, Any]]) -> str:
    s = summary
    out = [
        "# torch2ms replay on the kit's models",
        "",
        f"- models run: {s['models_run']} of {s['models']} ({s['repositories_run']} repositories)",
        f"- call configurations: {s['configurations']} ({s['distinct_configurations']} distinct, {s['apis']} APIs)",
        f"- by status: {', '.join(f'{k} {v}' for k, v in sorted(s['by_status'].items()))}",
        f"- beyond tolerance or raising: {len(s['beyond_tolerance'])}",
    ]
    out += [
        f"  - {f['model']} {f['where']}: `{f['call']}` → `{f['ms_call']}`: {f['error']} {f['detail']}"
        for f in s["beyond_tolerance"]
    ]
    out += [f"- skipped: {len(s['skipped'])}"] + [f"  - {k}: {v}" for k, v in s["skipped"].items()]
    out += [f"- not replayed: {len(s['not_replayed'])}"] + [f"  - {_cell(n)}" for n in s["not_replayed"]]
    for r in results:
        out += ["", f"## {r['id']} ({r['repo']} {r['file']}): {r['status']}, {r['seconds']} s", ""]
        if r["status"] == "skipped":
            out.append(r["reason"])
            continue
        out += ["| API | configurations | calls | worst error | beyond | status |", "|---|---|---|---|---|---|"]
        for row in r["table"]:
            worst = "—" if row["worst"] is None else f"{row['worst']:.1e}"
            cells = [row["api"], row["configs"], row["calls"], worst, row["failing"], ", ".join(row["statuses"])]
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(out) + "\n"


def run(
    kit: Path, out: Path, only: list[str], timeout: int, limit: int | None, tol: float, regenerate: bool = False
) -> dict[str, Any]:
    models, files = kit_models(kit)
    if only:
        models = [m for m in models if m["id"] in only or m["repo"] in only or m["repo"].split("/")[1] in only]
    models = models[:limit] if limit else models
    out.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    for entry in models:
        res = run_model(kit, entry, files.get(entry["repo"], []), timeout, tol, regenerate)
        results.append(res)
        print(f"[replay] {res['id']}: {res['status']} {res.get('reason', '')} ({res['seconds']} s)", flush=True)
        summary = summarize(results)
        (out / "results.json").write_text(json.dumps({"summary": summary, "models": results}, indent=1, default=str))
        (out / "summary.md").write_text(markdown(summary, results), encoding="utf-8")
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", nargs="*", default=[], help="model ids or repositories")
    p.add_argument("--timeout", type=int, default=300, help="seconds per model")
    p.add_argument("--limit", type=int)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--kit", type=Path, default=KIT)
    p.add_argument("--regenerate", action="store_true", help="replay on seeded inputs of the recorded shapes")
    a = p.parse_args()
    if not (a.kit / "models.toml").is_file():
        sys.exit(f"the kit is not at {a.kit}")
    s = run(a.kit, a.out, a.only, a.timeout, a.limit, a.tol, a.regenerate)
    print(
        f"replay-kit: models {s['models_run']}/{s['models']}, configurations {s['configurations']} "
        f"({s['distinct_configurations']} distinct), beyond tolerance {len(s['beyond_tolerance'])}, "
        f"skipped {len(s['skipped'])}"
    )


if __name__ == "__main__":
    main()
