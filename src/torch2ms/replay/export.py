"""``torch2ms replay --export-cases DIR``: the failing configurations as KB differential cases.

``DIR/replay_cases.toml`` holds one ``[[api]]`` per API with its failing configurations as
``[[api.case]]`` tables in docs/kb.md's format (``call`` over inputs ``a0``, ``a1``, ...; ``inputs``
regenerating each one's shape, dtype and range): paste them into the entry, or run them with the proof
harness. The recorded inputs of each case are saved beside it (``DIR/inputs/<api>#<n>.npz``), to rerun
a case in the exact regime it failed in.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..i18n import _
from .run import ReplayReport

CASES_TOML = "replay_cases.toml"


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a TOML basic string: JSON's escapes are TOML's


def export_cases(rep: ReplayReport, folder: Path) -> Path | None:
    """Write the failing configurations (None when none fails)."""
    failing = rep.failing()
    if not failing:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "inputs").mkdir(exist_ok=True)
    header = _("torch2ms replay: call configurations whose KB mapping differs from torch beyond {tol:g}")
    lines = [f"# {header.format(tol=rep.tol)}", ""]
    by_api: dict[str, list] = {}
    for r in failing:
        by_api.setdefault(r.config.api, []).append(r)
    for api, results in by_api.items():
        lines += ["[[api]]", f"torch = {_toml_string(api)}", ""]
        for n, r in enumerate(results):
            c = r.config
            error = "inf" if r.error is None or r.error == float("inf") else f"{r.error:.3g}"
            lines.append(f"# {c.where}: {r.status}, error {error}; MindSpore: {r.ms_call or '-'}")
            if r.detail:
                lines.append("# " + r.detail.splitlines()[0][:200])
            inputs = ", ".join(f"{k} = {_toml_string(v)}" for k, v in c.specs.items())
            lines += ["[[api.case]]", f"call = {_toml_string(c.call)}", f"inputs = {{ {inputs} }}", ""]
            if c.inputs:
                np.savez(folder / "inputs" / f"{api}#{n}.npz", **c.inputs)
    path = folder / CASES_TOML
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
