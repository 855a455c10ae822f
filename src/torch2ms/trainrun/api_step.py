"""``compare-train --api``: name the line behind the first divergent training step.

Once the two runs part at step K (event index K), both scripts run again for K + 1 steps, unmodified,
the MindSpore side in PyNative: each records the API calls of step K's forward and loss (torch_api.py,
ms_api.py) into ``torch_api/`` and ``ms_api/`` of the work directory, and the two recordings are aligned
as ``compare --api`` aligns one forward (align/api_align.py): through the converter's line map, the
first call whose output differs while its inputs agree, its KB entry, the cause, a reproducer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ..align.api_align import align
from ..align.api_record import load_groups
from ..i18n import _
from .runner import ms_command, run_side, torch_command

API_SIDES = {"torch": "torch_api", "ms": "ms_api"}
REPRO_DIR = "api_repro"
DEFAULT_BYTES = 1 << 26


def api_configs(config: Path, index: int, max_bytes: int) -> dict[str, Path]:
    """Each side's config for the recording run: K + 1 steps, step K recorded, PyNative."""
    data = json.loads(config.read_text(encoding="utf-8"))
    data.update(steps=index + 1, api_step=index, api_bytes=max_bytes, mode="pynative")
    paths = {}
    for side, name in API_SIDES.items():
        path = config.with_name(f"config_{name}.json")
        path.write_text(json.dumps({**data, "side": name}, indent=1) + "\n", encoding="utf-8")
        paths[side] = path
    return paths


def _ms_error(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """A crash of the MindSpore side, as compare --api's error (the line that raised when known)."""
    if not record or record.get("status") != "crashed":
        return None
    err = record.get("error") or {}
    where = str(err.get("where") or "")
    file, _sep, line = where.rpartition(":")
    at = (file, int(line)) if file and line.isdigit() else None
    return {"error": f"{err.get('type')}: {err.get('message')}", "at": at}


def api_divergence(
    first: dict[str, Any],
    config: Path,
    work: Path,
    run: tuple[Path, float, Any, int, str | None],
    mode: str,
    max_bytes: int = DEFAULT_BYTES,
) -> dict[str, Any]:
    """The API-level verdict of the first divergent step ``first`` (rep.first_divergence), as compare
    --api's JSON plus ``step``/``index``; ``run`` = (cwd, timeout, progress, seed, torch python)."""
    run_dir, timeout, progress, seed, torch_python = run
    index = int(first["index"])
    for name in (*API_SIDES.values(), REPRO_DIR):
        shutil.rmtree(work / name, ignore_errors=True)
    configs = api_configs(config, index, max_bytes)
    cfg = json.loads(config.read_text(encoding="utf-8"))
    t_label = _("torch: recording the API calls of step {step}").format(step=first["step"])
    m_label = _("MindSpore: recording the API calls of step {step}").format(step=first["step"])
    t_cmd = torch_command(torch_python, configs["torch"])
    run_side(API_SIDES["torch"], t_cmd, work, run_dir, timeout, progress, t_label, index + 1, seed)
    m = run_side(API_SIDES["ms"], ms_command(configs["ms"]), work, run_dir, timeout, progress, m_label, index + 1, seed)
    base = {"step": first["step"], "index": index, "switched_to_pynative": mode == "graph"}
    t_found, m_found = load_groups(work / API_SIDES["torch"]), load_groups(work / API_SIDES["ms"])
    if t_found is None or m_found is None:
        missing = [side for side, found in (("torch", t_found), ("MindSpore", m_found)) if found is None]
        return base | {"status": "not_recorded", "missing": missing, "first": None}
    ms_error = m_found[1] or _ms_error(m.record)
    result = align(t_found[0], m_found[0], ms_error, [cfg["ms_script"]], work / REPRO_DIR)
    return base | result
