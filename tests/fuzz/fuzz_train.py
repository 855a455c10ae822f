"""The training-idiom campaign (issue 22 §2): generated training scripts (train_idioms.py), each converted
by ``convert_tree`` and compared with its conversion by ``compare_train``; the property is SAME.

``python tests/fuzz/fuzz_train.py --cases 500 --seed 1 -j 2 --keep build/fuzz-train`` (``make fuzz-train``)
prints the failures grouped by idiom and by cause (the first line of the error, or compare-train's
likeliest cause), each idiom in :data:`train_idioms.KNOWN` under its class name, and keeps every failing
case (the script, its conversion, compare-train's report) in the ``--keep`` folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_idioms import AXES, TrainCase, idioms, known_class, make_cases

# As tests/conftest.py: quiet frameworks, one thread each, oneDNN's JIT kernels, blocking launches.
for _k, _v in {
    "GLOG_v": "3",
    "OMP_NUM_THREADS": "1",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MS_DEV_LAUNCH_BLOCKING": "1",
    "MS_DEV_HOST_BLOCKING_RUN": "1",
}.items():
    os.environ.setdefault(_k, _v)

STEPS = 5
TIMEOUT = 240.0  # per side


@dataclass
class Result:
    name: str
    idiom: str
    model: str
    graph: bool
    status: str  # same | different | error | convert
    cause: str
    known: str | None
    seconds: float

    @property
    def ok(self) -> bool:
        return self.status == "same"


def normalize(text: str) -> str:
    """One line that groups alike failures: paths, numbers and quoted names taken out."""
    line = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
    line = re.sub(r"(/[\w.+-]+)+/([\w.-]+\.py)", r"\2", line)
    line = re.sub(r"\.py:\d+", ".py", line)
    line = re.sub(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "N", line)
    return line[:160]


def _cause(rep) -> str:
    if rep.error:
        return "error: " + normalize(rep.error)
    d = rep.first_divergence
    if d:
        return "different: " + normalize(d.get("cause") or "")
    diff = [f["message"] for f in rep.findings if f.get("severity") == "difference"]
    return "different: " + normalize(diff[0] if diff else "parameters differ after training")


def run_case(case: TrainCase, work: Path, keep: Path | None = None, steps: int = STEPS) -> Result:
    """Write, convert and compare one case in `work`/<name>; a failing case is copied into `keep`."""
    from torch2ms.convert import convert_tree
    from torch2ms.trainrun import compare_train

    d = work / case.name
    shutil.rmtree(d, ignore_errors=True)
    (d / "torch").mkdir(parents=True)
    script = d / "torch" / "train.py"
    script.write_text(case.text, encoding="utf-8")
    t0 = time.monotonic()
    try:
        convert_tree(str(d / "torch"), str(d / "ms"))
        mode = "graph" if case.graph else "pynative"
        rep = compare_train(
            str(script),
            str(d / "ms" / "train.py"),
            steps=steps,
            out_dir=str(d / "out"),
            cwd=str(d),
            mode=mode,
            timeout=TIMEOUT,
        )
        status, cause = rep.status, ("" if rep.status == "same" else _cause(rep))
    except Exception as exc:  # noqa: BLE001 — a crash of the tools themselves is a finding too
        status, cause = "convert", "crash: " + normalize(f"{type(exc).__name__}: {exc}")
        (d / "traceback.txt").write_text(traceback.format_exc(), encoding="utf-8")
    res = Result(case.name, case.idiom, case.model, case.graph, status, cause, case.known(), time.monotonic() - t0)
    if keep is not None and not res.ok:
        dest = keep / case.name
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(d, dest, ignore=shutil.ignore_patterns("*.npz", "*.pt", "*.ckpt"))
        (dest / "result.json").write_text(json.dumps(asdict(res), indent=1), encoding="utf-8")
    shutil.rmtree(d, ignore_errors=True)
    return res


def run_campaign(
    cases: list[TrainCase], jobs: int = 2, workdir: Path | None = None, keep: Path | None = None, log=None
) -> list[Result]:
    work = Path(workdir or tempfile.mkdtemp(prefix="torch2ms-fuzz-train-"))
    results: list[Result] = []
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(run_case, c, work, keep) for c in cases]
        for k, f in enumerate(futures, 1):
            r = f.result()
            results.append(r)
            if keep is not None:  # a campaign cut short still has its figures (--summarize)
                with open(keep / "results.jsonl", "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(asdict(r)) + "\n")
            if log is not None:
                mark = "ok" if r.ok else ("KNOWN " + str(r.known) if r.known else "FAIL")
                log(f"[{k}/{len(cases)}] {r.name}: {r.status} {mark} ({r.seconds:.0f}s) {r.cause}")
    return results


def summary(results: list[Result]) -> str:
    """The figures and two tables: failures by idiom, failures by cause (with their class where known)."""
    fails = [r for r in results if not r.ok]
    lines = [
        f"scripts: {len(results)}, idioms: {len({r.idiom for r in results})} of {len(idioms()) + 1} "
        f"(axes {len(AXES)}), SAME {len(results) - len(fails)}, failing {len(fails)} "
        f"(known {sum(1 for r in fails if r.known)}, new {sum(1 for r in fails if not r.known)}), "
        f"known now passing {sum(1 for r in results if r.ok and r.known)}",
        f"seconds per script: {sum(r.seconds for r in results) / max(1, len(results)):.1f}",
        "",
        "failures by idiom (failing/run, class or causes):",
    ]
    by_idiom: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_idiom[r.idiom].append(r)
    for idiom, rs in sorted(by_idiom.items(), key=lambda kv: -sum(not r.ok for r in kv[1])):
        bad = [r for r in rs if not r.ok]
        if bad:
            label = bad[0].known or "NEW"
            models = ",".join(sorted({r.model + ("/graph" if r.graph else "") for r in bad}))
            lines.append(f"  {idiom:28} {len(bad):3}/{len(rs):<3} {label:32} [{models}]")
    lines += ["", "failures by cause (count, idioms, one case):"]
    by_cause: dict[str, list[Result]] = defaultdict(list)
    for r in fails:
        by_cause[r.cause].append(r)
    for cause, rs in sorted(by_cause.items(), key=lambda kv: -len(kv[1])):
        names = Counter(r.idiom for r in rs)
        lines.append(f"  {len(rs):3}  {cause}")
        lines.append(f"       idioms: {', '.join(f'{k}×{v}' for k, v in names.most_common(6))}; e.g. {rs[0].name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--keep", help="write every failing case into this folder")
    ap.add_argument("--only", help="only cases whose idiom (axis or axis=value) matches")
    ap.add_argument("--graph-share", type=float, default=0.15, help="share of cases run in GRAPH_MODE")
    ap.add_argument("--json", help="write every result to this file")
    ap.add_argument("--summarize", metavar="RESULTS.jsonl", help="print the summary of a (partial) campaign's results")
    a = ap.parse_args(argv)
    if a.summarize:
        lines = Path(a.summarize).read_text(encoding="utf-8").splitlines()
        results = [Result(**json.loads(line)) for line in lines if line.strip()]
        for r in results:  # the KNOWN table as it is now
            r.known = known_class(r.idiom, r.model)
        print(summary(results))
        return 0
    cases = make_cases(a.seed, a.cases, a.graph_share)
    if a.only:
        cases = [c for c in cases if c.idiom == a.only or c.axis == a.only]
    keep = Path(a.keep) if a.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    results = run_campaign(cases, a.jobs, keep=keep, log=lambda s: print(s, flush=True))
    print(f"\n{summary(results)}\nwall: {time.monotonic() - t0:.0f}s")
    if a.json:
        Path(a.json).write_text(json.dumps([asdict(r) for r in results], indent=1), encoding="utf-8")
    if keep:
        (keep / "summary.txt").write_text(summary(results) + "\n", encoding="utf-8")
    return 1 if any(not r.ok and not r.known for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
