"""Issue 11: the real-code kit (../shared/realcode) in CI: its conversion pass, and one model per repository.

The kit converts each repository of its corpus as a project with ``torch2ms convert`` and counts the
torch references left (``eval_realcode.py --skip-numeric``); then, for the models asked, builds each in
torch and, converted, in MindSpore, converts its weights with ``torch2ms weights`` and compares one
forward in PyNative and GRAPH_MODE (≤ 1e-4 relative). ``make realcode`` runs all 54 models; here one
light model per repository keeps ``make test`` lean. Skipped, with the reason, where the kit is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from requires_support import KIT, require_kit

ROOT = Path(__file__).resolve().parents[1]
# Issue 11's target is 98 %; this floor is the share measured on the integration branch (97.8 %), raised
# as conversions land, so that CI catches a converter change that leaves more torch behind.
API_CONVERTED_FLOOR = 0.97
# One light model of each repository of the kit (seconds each on 2 cores), guarded: each must PASS.
ONE_PER_REPO = [
    "cifar_lenet",  # kuangliu/pytorch-cifar
    "ex_mnist_net",  # pytorch/examples
    "mingpt_nano",  # karpathy/minGPT
    "whisper_text_decoder",  # openai/whisper
    "clip_encode_text",  # openai/CLIP
    "makemore_bigram",  # karpathy/makemore
    "dino_head",  # facebookresearch/dino
]
# Models of the list that still fail on the integration branch, with the cause. They run (so CI sees every
# repository) and must not PASS silently: when one passes, move it back under guard by deleting its line.
KNOWN_FAILING: dict[str, str] = {}
# The kit builds a fresh net per mode from one run of the model's setup; minGPT's GPT writes its model_type's
# sizes into the config it is given, so a second build from that config fails its own assert (in torch too).
# These models are also run in GRAPH_MODE alone, where their first build is the GRAPH_MODE one.
ONE_BUILD_PER_RUN = {"mingpt_nano"}

pytestmark = pytest.mark.slow


def _kit(tmp_path: Path, *args: str) -> dict:
    """Run the kit from this checkout (its .venv, this tree's torch2ms first) → results.json."""
    require_kit(KIT / "eval_realcode.py")
    require_kit(ROOT / ".venv" / "bin" / "torch2ms")  # the kit runs the checkout's .venv (make venv)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = tmp_path / "kit"
    cmd = [sys.executable, str(KIT / "eval_realcode.py"), "--project", str(ROOT), "--out", str(out), *args]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    assert run.returncode == 0, run.stderr[-3000:]
    print(run.stdout.strip().splitlines()[-1])  # the headline
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_r20_kit_every_file_converts_or_is_marked(tmp_path):
    results = _kit(tmp_path, "--skip-numeric", "--jobs", "2")
    head = results["headline"]
    assert head["files"] >= 56
    bad = [
        f"{f['repo']}/{f['path']}: parses {f['parses']}, {f['unmarked_torch_refs']} unmarked torch references"
        for f in results["files"]
        if not f["ok"]
    ]
    assert head["files_ok"] == head["files"], "\n".join(bad)
    share = head["api_converted"]
    assert share >= API_CONVERTED_FLOOR, f"api_converted {share:.1%} < {API_CONVERTED_FLOOR:.0%}"


@pytest.mark.differential
def test_r23_r27_one_kit_model_per_repository_matches_torch(tmp_path):
    results = _kit(tmp_path / "both", "--jobs", "2", "--only", *ONE_PER_REPO)
    status = {m["id"]: m["status"] for m in results["models"]}
    assert sorted(status) == sorted(ONE_PER_REPO)
    assert len({m["repo"] for m in results["models"]}) == 7  # every repository of the kit
    graph = _kit(tmp_path / "graph", "--modes", "graph", "--only", *sorted(ONE_BUILD_PER_RUN))
    for model in graph["models"]:  # PyNative from the first run, GRAPH_MODE from this one
        if status[model["id"]] == "PYNATIVE_ONLY" and model["status"] == "PASS":
            status[model["id"]] = "PASS"
    failing = {k: s for k, s in status.items() if s != "PASS" and k not in KNOWN_FAILING}
    assert not failing, {k: _reason(results, k) for k in failing}
    fixed = sorted(k for k in KNOWN_FAILING if status[k] == "PASS")
    assert not fixed, f"{fixed} now PASS: delete their lines in KNOWN_FAILING so CI guards them"


def _reason(results: dict, model_id: str) -> str:
    model = next(m for m in results["models"] if m["id"] == model_id)
    return f"{model['status']}: {model.get('reason') or model.get('error')}"
