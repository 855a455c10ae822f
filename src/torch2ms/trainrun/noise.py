"""Noise, not a bug: how far the torch script drifts from itself.

When the MindSpore run parts from torch's beyond the tolerances, the torch script runs once more as a
reference: first in float64 (the trained models and their inputs in float64 from the first step on, the
same data and draws), so that the float32 run's distance from it is torch's own rounding error as the
training amplifies it — every op's rounding, as the two frameworks' kernels differ in every op. A script
that cannot train in float64 runs instead with every trained parameter's initial value and every applied
gradient perturbed at float32 rounding level (relative 2**-23, a fixed ±1 pattern, no random stream
touched). The rule: a loss step or a parameter counts as different only beyond max(tolerance,
NOISE_FACTOR × that drift); what the band absorbs is reported as "within torch's own run-to-run noise".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .diagnose import loss_rel

NOISE_FACTOR = 10.0
PERTURBATION = 2.0**-23
NOISE_SIDE = "torch_noise"


def noise_config(config: Path, float64: bool = True) -> Path:
    """The torch side's config for the reference run, float64 or perturbed (its files go to work/torch_noise)."""
    data = json.loads(config.read_text(encoding="utf-8"))
    data.update(side=NOISE_SIDE, data="own")
    data.update(float64=True) if float64 else data.update(perturb=PERTURBATION)
    path = config.with_name("config_noise.json")
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def loss_band(t_events: list[dict[str, Any]], n_events: list[dict[str, Any]]) -> list[float]:
    """Per step: the largest relative loss difference between the two torch runs up to that step."""
    first: dict[int, float | None] = {}
    for t in t_events:
        first.setdefault(t["opt"], t["loss"])
    band, worst = [], 0.0
    for i, t in enumerate(t_events):
        n = n_events[i] if i < len(n_events) else None
        r = loss_rel(t["loss"], n["loss"], first[t["opt"]]) if n else None
        worst = max(worst, r if r is not None and np.isfinite(r) else 0.0)
        band.append(worst)
    return band


def parameter_band(work: Path, t_rec: dict[str, Any], n_rec: dict[str, Any]) -> dict[str, float]:
    """Per trained parameter (MindSpore's name, as compare_parameters gives it): the two torch runs'
    largest difference, relative to the parameter's largest magnitude."""
    from ..kb import load_kb
    from ..weights import convert_state_dict

    kb, out = load_kb(), {}
    n_models = {m["key"]: m for m in n_rec.get("models", [])}
    for tm in t_rec.get("models", []):
        nm = n_models.get(tm["key"])
        a_path, b_path = work / "torch" / tm["final"], work / NOISE_SIDE / (nm["final"] if nm else "")
        if not nm or not a_path.is_file() or not b_path.is_file():
            continue
        with np.load(a_path) as z:
            a = convert_state_dict({k: z[k] for k in z.files}, tm["layer_types"], kb)
        with np.load(b_path) as z:
            b = convert_state_dict({k: z[k] for k in z.files}, tm["layer_types"], kb)
        for name, x in a.items():
            if name in b and b[name].shape == x.shape and x.size and x.dtype.kind == "f":
                x64, y64 = x.astype(np.float64), b[name].astype(np.float64)
                scale = max(float(np.abs(x64).max()), 1e-12)
                out[f"{tm['key']}:{name}"] = float(np.abs(x64 - y64).max()) / scale
    return out
