"""``torch2ms replay``: every recorded call configuration through the KB mapping on MindSpore, against torch.

Each configuration's torch expression is rewritten by the converter's own rules (``kb/rewrite.py``, as
the proof harness does for KB cases) and both are evaluated on the same inputs — the recorded ones (the
user's regime: real activations, real index ranges) or, with ``regenerate``, seeded inputs of the same
shapes, dtypes and ranges. The error of a configuration is max |torch − MindSpore| over max |torch|
(integers and booleans: exact); beyond ``tol`` it fails. A Tensor method torch returns None from
(``x[k] = v``) is compared by the receiver it changed. Random APIs are listed, not compared.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..kb import KB, load_kb
from ..proof import CaseFailure, make_inputs, to_numpy
from ..proof.cases import case_owners, rewrite_case_source
from .record import CallConfig

TOL = 1e-4
_RANDOM = ("rand", "dropout", "bernoulli", "multinomial", "normal_", "uniform_", "exponential_", "poisson")


@dataclass
class ConfigResult:
    config: CallConfig
    status: str  # ok | beyond | raised | no_rule | random
    error: float | None = None
    ms_call: str = ""
    detail: str = ""


@dataclass
class ReplayReport:
    results: list[ConfigResult] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    regenerated: bool = False
    tol: float = TOL

    def table(self) -> list[dict[str, Any]]:
        """One row per API: configurations, calls, worst error, configurations beyond tolerance."""
        rows: dict[str, dict[str, Any]] = {}
        for r in self.results:
            row = rows.setdefault(
                r.config.api,
                {"api": r.config.api, "configs": 0, "calls": 0, "worst": None, "failing": 0, "statuses": []},
            )
            row["configs"] += 1
            row["calls"] += r.config.count
            if r.error is not None:
                row["worst"] = max(row["worst"] or 0.0, r.error)
            row["failing"] += r.status in ("beyond", "raised")
            if r.status not in row["statuses"]:
                row["statuses"].append(r.status)
        return sorted(rows.values(), key=lambda x: (-x["failing"], -(x["worst"] or 0.0), x["api"]))

    def failing(self) -> list[ConfigResult]:
        return [r for r in self.results if r.status in ("beyond", "raised")]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tol": self.tol,
            "regenerated": self.regenerated,
            "table": self.table(),
            "configurations": [
                {
                    "api": r.config.api,
                    "call": r.config.call,
                    "ms_call": r.ms_call,
                    "signature": r.config.signature,
                    "where": r.config.where,
                    "calls": r.config.count,
                    "status": r.status,
                    "error": r.error,
                    "detail": r.detail,
                }
                for r in self.results
            ],
            "not_replayable": self.skipped,
        }


def _flat(value: Any) -> list[np.ndarray]:
    value = to_numpy(value)
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat(v)]
    return [np.asarray(value)]


def config_error(t_out: Any, m_out: Any) -> float:
    """max |Δ| / max |torch| over the outputs (inf: shapes or structure differ; 1.0: integers differ)."""
    ts, ms_ = _flat(t_out), _flat(m_out)
    if len(ts) != len(ms_):
        return float("inf")
    worst = 0.0
    for a, b in zip(ts, ms_):
        if a.shape != b.shape:
            return float("inf")
        if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
            if not np.array_equal(a, b):
                return 1.0
            continue
        fa, fb = (
            a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
            b.astype(np.float64 if b.dtype.kind == "f" else np.complex128),
        )
        finite = np.isfinite(fa) & np.isfinite(fb)
        if not np.array_equal(np.isfinite(fa), np.isfinite(fb)) or not np.array_equal(fa[~finite], fb[~finite]):
            return float("inf")
        if finite.any():
            scale = max(float(np.abs(fa[finite]).max()), 1e-3)
            worst = max(worst, float(np.abs(fa[finite] - fb[finite]).max()) / scale)
    return worst


def _inputs(config: CallConfig, regenerate: bool) -> dict[str, np.ndarray]:
    if config.inputs and not regenerate:
        return config.inputs
    rng = np.random.default_rng(zlib.crc32(config.signature.encode()))
    return make_inputs(config.specs, rng)


def replay_config(config: CallConfig, kb: KB, regenerate: bool = False, tol: float = TOL) -> ConfigResult:
    import mindspore as ms
    import torch

    import torch2ms.runtime  # binds torch2ms: rewritten calls may name torch2ms.runtime helpers

    if any(word in config.api.rsplit(".", 1)[-1] for word in _RANDOM):
        return ConfigResult(config, "random")
    raw = _inputs(config, regenerate)
    try:
        ms_call = rewrite_case_source(kb, config.call, case_owners(raw))
    except CaseFailure as exc:
        return ConfigResult(config, "no_rule", detail=str(exc))
    ms.set_context(mode=ms.PYNATIVE_MODE)
    t_ns = {"torch": torch, "np": np, **{k: torch.from_numpy(v.copy()) for k, v in raw.items()}}
    m_ns = {
        "mindspore": ms,
        "ms": ms,
        "np": np,
        "torch2ms": torch2ms,
        **{k: ms.Tensor(v.copy()) for k, v in raw.items()},
    }
    try:
        t_out = eval(config.call, t_ns)
    except Exception as exc:  # noqa: BLE001 - torch itself refuses the regenerated inputs
        return ConfigResult(config, "no_rule", ms_call=ms_call, detail=f"torch: {type(exc).__name__}: {exc}")
    try:
        m_out = eval(ms_call, m_ns)
    except Exception as exc:  # noqa: BLE001 - the mapped call raises where torch's does not
        return ConfigResult(config, "raised", ms_call=ms_call, detail=f"{type(exc).__name__}: {str(exc)[:300]}")
    if t_out is None and config.api.startswith("torch.Tensor."):
        # torch's in-place call returns None (x[k] = v): its result is the receiver it changed
        receiver = config.call.split(".", 1)[0]
        t_out, m_out = t_ns[receiver], m_ns[receiver]
    error = config_error(t_out, m_out)
    return ConfigResult(config, "beyond" if not error <= tol else "ok", error, ms_call)


def replay(configs: list[CallConfig], kb: KB | None = None, regenerate: bool = False, tol: float = TOL) -> ReplayReport:
    """Every configuration replayed (``kb``: the KB whose rules map them; the installed one by default)."""
    import torch2ms.runtime

    torch2ms.runtime.load_helpers()  # rewritten calls may name torch2ms.runtime helpers
    kb = kb if kb is not None else load_kb()
    rep = ReplayReport(regenerated=regenerate, tol=tol)
    rep.results = [replay_config(c, kb, regenerate, tol) for c in configs]
    return rep
