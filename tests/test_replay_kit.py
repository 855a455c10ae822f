"""bench/replay_kit.py (issue 25): ``torch2ms replay`` on the kit's models, a table per model and a summary.

The driver builds each kit model the kit's way (its loader, factory and inputs, read from
../shared/realcode at run time), records one torch forward and replays every call configuration on real
MindSpore against real torch. Here on two small models — cifar LeNet (functional relu, view) and makemore's
MLP (an item assignment ``x[:, 0] = 27``: an in-place call compared by its receiver) — with the installed
KB (nothing beyond tolerance) and with a broken rule (the summary names the model, line and call).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest
from requires_support import KIT, require_kit

pytestmark = pytest.mark.differential

ROOT = Path(__file__).resolve().parents[1]
MODELS = ["cifar_lenet", "makemore_mlp"]


def _driver():
    spec = importlib.util.spec_from_file_location("replay_kit", ROOT / "bench" / "replay_kit.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_driver_writes_a_table_per_model_and_a_summary(tmp_path):
    require_kit()
    summary = _driver().run(KIT, tmp_path, MODELS, 300, None, 1e-4)
    assert summary["models_run"] == 2 and summary["skipped"] == {}, summary
    assert summary["beyond_tolerance"] == [], summary["beyond_tolerance"]
    assert summary["configurations"] >= 8 and summary["by_status"].get("ok", 0) >= 8, summary
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert [m["id"] for m in data["models"]] == MODELS
    mlp = data["models"][1]
    setitem = [c for c in mlp["configurations"] if c["api"] == "torch.Tensor.__setitem__"]
    assert setitem and all(c["status"] == "ok" for c in setitem), setitem
    assert all("makemore.py:" in c["where"] for c in mlp["configurations"])
    md = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "models run: 2 of 2" in md and "beyond tolerance or raising: 0" in md
    for model in MODELS:
        assert f"## {model} " in md
    assert "| torch.nn.functional.relu |" in md


def test_a_broken_rule_is_named_in_the_summary(tmp_path, monkeypatch):
    require_kit()
    import torch2ms.replay.run as run
    from torch2ms.kb import KB, load_kb

    kb = load_kb()
    relu = kb.get("torch.nn.functional.relu")
    broken = KB([dataclasses.replace(e, ms="mindspore.ops.gelu") if e is relu else e for e in kb])
    monkeypatch.setattr(run, "load_kb", lambda: broken)
    summary = _driver().run(KIT, tmp_path, ["cifar_lenet"], 300, None, 1e-4)
    failing = summary["beyond_tolerance"]
    assert failing and {f["api"] for f in failing} == {"torch.nn.functional.relu"}, failing
    assert all(f["model"] == "cifar_lenet" and "lenet.py:" in f["where"] for f in failing)
    assert "mindspore.ops.gelu" in (tmp_path / "summary.md").read_text(encoding="utf-8")
