"""compare --api keeps recorded tensors within the limit the user sets (``--api-max-mb``, issue 25).

The limit reaches the recorders from the user's side — ``CompareOptions(api_max_mb=...)`` and the
``--api-max-mb`` flag — and the tensors both sides kept (``api.kept_bytes``) never exceed it, for an
unmodified conversion and for one with an injected API-level bug, from no tensors at all to the default.
The recordings run real torch and real MindSpore.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_compare_api import BUGS, LOCATIONS, _convert

pytestmark = pytest.mark.differential

# limits in MB: none kept, a few tensors, most of them, the default
LIMITS = [0.0, 0.002, 0.02, 256.0]


def _compare(tmp_path, monkeypatch, limit: float):
    from torch2ms.align.api import CompareOptions, compare_models

    monkeypatch.chdir(tmp_path)
    opts = CompareOptions(input_shapes=[(2, 8, 8)], graph=False, api=True, api_max_mb=limit)
    return compare_models("src/model.py:Net", "out/model.py:Net", opts)


@pytest.mark.parametrize("bug", [None, "softmax_axis", "mask_added"])
@pytest.mark.parametrize("limit", LIMITS)
def test_kept_tensors_stay_within_the_users_limit(tmp_path, monkeypatch, limit, bug):
    out = _convert(tmp_path, "forward")
    if bug is not None:
        old, new, _line, _kb = BUGS[bug]
        text = (out / "model.py").read_text(encoding="utf-8")
        (out / "model.py").write_text(text.replace(old, new), encoding="utf-8")
    rep = _compare(tmp_path, monkeypatch, limit)
    assert rep.api is not None and rep.api["torch_groups"] >= 8, rep.api
    assert rep.api["kept_bytes"] <= limit * (1 << 20), (limit, rep.api["kept_bytes"])
    if limit >= 256:  # the default keeps what this small model records
        assert rep.api["kept_bytes"] > 0.02 * (1 << 20)
    if bug is None:
        assert rep.status == "match" and rep.api["status"] == "match", rep.api
    else:
        assert rep.status == "divergence"


def test_the_flag_reaches_the_recording(tmp_path):
    """``--api-max-mb`` as a user types it: the JSON report's kept bytes within it, and smaller than the default's."""
    _convert(tmp_path, "forward")
    argv = [sys.executable, "-m", "torch2ms", "compare", "--torch", "src/model.py:Net", "--ms", "out/model.py:Net"]
    argv += ["--input-shape", "2,8,8", "--no-graph", "--api", "--json"]
    kept = {}
    for limit in ("0.004", None):
        extra = ["--api-max-mb", limit] if limit else []
        run = subprocess.run(argv + extra, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        kept[limit] = json.loads(run.stdout)["api"]["kept_bytes"]
    assert 0 < kept["0.004"] <= 0.004 * (1 << 20) < kept[None], kept


def test_every_location_records_within_a_small_limit(tmp_path, monkeypatch):
    for location in sorted(LOCATIONS):
        sub = tmp_path / location
        sub.mkdir()
        _convert(sub, location)
        rep = _compare(sub, monkeypatch, 0.002)
        assert rep.api["kept_bytes"] <= 0.002 * (1 << 20) and rep.status == "match", rep.api
