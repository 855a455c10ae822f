"""``compare --api``: pair the two sides' call groups through the converter's line map and name the
first call whose output differs while its inputs agree (or say that its inputs already differ).

Groups pair by (file, original line, occurrence): a MindSpore group's converted line is mapped back
with ``torch2ms-linemap.json`` (written by ``convert`` into OUT); the k-th run of a line on one side
pairs with the k-th run of the same original line on the other, so loops and repeated blocks pair
too. Groups present on one side only (a line the other side computes inside a layer) are skipped.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape

from ..convert.linemap import LINEMAP_JSON
from ..i18n import _
from .api_record import Group, Recorder, statement_line, statement_text, stats
from .api_repro import write_reproducer

REL_TOL = 1e-4


def find_line_map(ms_files: list[str]) -> tuple[Path, dict[str, Any]] | None:
    """The line map of the converted OUT holding the MindSpore model's files (searching upwards)."""
    for file in ms_files:
        for parent in Path(file).parents:
            candidate = parent / LINEMAP_JSON
            if candidate.is_file():
                return parent, json.loads(candidate.read_text(encoding="utf-8"))
    return None


def _close(a: Any, b: Any) -> tuple[bool, float]:
    """(agree, max abs difference) for two kept tensors or two summaries."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape:
            return False, float("inf")
        if a.dtype.kind in "biu" or b.dtype.kind in "biu":
            return bool(np.array_equal(a, b)), float(np.sum(a != b))
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        if not np.isfinite(fa).all() or not np.isfinite(fb).all():
            return bool(np.array_equal(np.isfinite(fa), np.isfinite(fb))), float("nan")
        diff = float(np.abs(fa - fb).max()) if fa.size else 0.0
        return diff <= REL_TOL * max(float(np.abs(fa).max()) if fa.size else 0.0, 1e-3), diff
    sa = a if isinstance(a, dict) else stats(a)
    sb = b if isinstance(b, dict) else stats(b)
    if sa["shape"] != sb["shape"]:
        return False, float("inf")
    diff = max(abs(sa["mean"] - sb["mean"]), abs(sa["absmax"] - sb["absmax"]))
    return diff <= 1e-3 * max(sa["absmax"], 1e-3), diff


def _rel_error(a: Any, b: Any) -> float | None:
    """max |a - b| / max |a| of two kept float tensors of one shape (None for anything else)."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape or a.dtype.kind != "f":
        return None
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    if not a.size or not np.isfinite(fa).all() or not np.isfinite(fb).all():
        return None
    return float(np.abs(fa - fb).max()) / max(float(np.abs(fa).max()), 1e-3)


def _input_error(t: Group, m: Group) -> float:
    """The largest relative difference between a torch input and its closest same-shape MindSpore input."""
    worst = 0.0
    for a in t.inputs:
        errors = [e for b in m.inputs if (e := _rel_error(a, b)) is not None]
        worst = max(worst, min(errors, default=0.0))
    return worst


# "Float noise growing through many calls": the first call beyond tolerance takes inputs that already
# differ by at least NOISE_FLOOR x the tolerance, and amplifies that difference at most NOISE_GAIN
# times, after at least NOISE_CALLS earlier calls whose outputs already differed: no one call is wrong.
NOISE_FLOOR, NOISE_GAIN, NOISE_CALLS = 0.01, 20.0, 3


def _cause(t: Group, m: Group, out_rel: float | None, history: list[float]) -> tuple[str, float]:
    """Why the first divergent call diverges: ``upstream``, ``float_noise`` or ``this_call``."""
    in_rel = _input_error(t, m)
    if not _inputs_agree(t, m):
        return "upstream", in_rel
    noisy = sum(1 for e in history if e >= NOISE_FLOOR * REL_TOL)
    if (
        out_rel is not None
        and in_rel >= NOISE_FLOOR * REL_TOL
        and out_rel <= NOISE_GAIN * in_rel
        and noisy >= NOISE_CALLS
    ):
        return "float_noise", in_rel
    return "this_call", in_rel


def _inputs_agree(t: Group, m: Group) -> bool:
    """Every torch input that has a same-shape counterpart on the MindSpore side matches one of them."""
    for a in t.inputs:
        shape = a.shape if isinstance(a, np.ndarray) else a["shape"]
        same = [b for b in m.inputs if list(b.shape if isinstance(b, np.ndarray) else b["shape"]) == list(shape)]
        if same and not any(_close(a, b)[0] for b in same):
            return False
    return True


class LineMap:
    def __init__(self, found: tuple[Path, dict[str, Any]] | None) -> None:
        self.root: Path | None = found[0] if found is not None else None
        data: dict[str, Any] = found[1] if found is not None else {}
        self.files: dict[str, Any] = data.get("files", {})
        self.source: str = data.get("source", "")

    def ms_key(self, file: str, line: int) -> tuple[str, int]:
        rel = _relative(file, self.root) if self.root is not None else os.path.basename(file)
        if rel not in self.files:  # moved or renamed since convert: the one entry of that file name
            same = [k for k in self.files if k.rpartition("/")[2] == rel.rpartition("/")[2]]
            rel = same[0] if len(same) == 1 else rel
        entry = self.files.get(rel, {})
        orig = int(entry.get("lines", {}).get(str(line), line if not entry else -line))
        if orig > 0 and self.source:
            orig = statement_line(os.path.join(self.source, rel), orig)
        return rel, orig

    def torch_key(self, file: str, line: int) -> tuple[str, int]:
        return (_relative(file, Path(self.source)) if self.source else os.path.basename(file)), line

    def kb(self, rel: str, line: int) -> list[dict[str, str]]:
        return list(self.files.get(rel, {}).get("kb", {}).get(str(line), []))


def _relative(file: str, root: Path | None) -> str:
    try:
        return Path(file).resolve().relative_to(Path(root or "/").resolve()).as_posix()
    except ValueError:
        return os.path.basename(file)


def _keyed(groups: list[Group], key: Any) -> dict[tuple[str, int, int], Group]:
    counts: Counter = Counter()
    out = {}
    for g in groups:
        k = key(g.file, g.line)
        out[(*k, counts[k])] = g
        counts[k] += 1
    return out


def _text(file: str, line: int) -> str:
    return statement_text(file, line)


def _finding(lmap: LineMap, t: Group | None, m: Group | None, where: tuple[str, int] | None) -> dict[str, Any]:
    rel, orig = lmap.ms_key(*where) if where is not None else lmap.torch_key(t.file, t.line)  # type: ignore[union-attr]
    torch_file = t.file if t is not None else os.path.join(lmap.source, rel)
    ms_file, ms_line = (m.file, m.line) if m is not None else where  # type: ignore[misc]
    return {
        "original": {"file": rel, "line": orig, "text": _text(torch_file, orig)},
        "converted": {"file": _relative(ms_file, lmap.root), "line": ms_line, "text": _text(ms_file, ms_line)},
        "kb": lmap.kb(rel, orig),
        "torch_calls": t.calls if t is not None else [],
        "ms_calls": m.calls if m is not None else [],
        "torch_args": t.args if t is not None else [],
        "ms_args": m.args if m is not None else [],
        "torch_output": t.out_summary if t is not None else None,
        "ms_output": m.out_summary if m is not None else None,
    }


def align(
    torch_rec: Recorder,
    ms_rec: Recorder,
    ms_error: dict[str, Any] | None,
    ms_files: list[str],
    repro_dir: Path | None = None,
) -> dict[str, Any]:
    """The verdict of ``compare --api`` as JSON-able data (and the reproducer in ``repro_dir``)."""
    lmap = LineMap(find_line_map(ms_files))
    tk = _keyed(torch_rec.groups, lmap.torch_key)
    mk = _keyed(ms_rec.groups, lmap.ms_key)
    result: dict[str, Any] = {
        "line_map": str(lmap.root / LINEMAP_JSON) if lmap.root is not None else None,
        "torch_groups": len(tk),
        "ms_groups": len(mk),
        "paired": len(tk.keys() & mk.keys()),
        "kept_bytes": torch_rec.kept + ms_rec.kept,
        "first": None,
    }
    history: list[float] = []  # relative output differences of the agreeing pairs so far, in order
    for key, t in tk.items():
        m = mk.get(key)
        if m is None or t.output is None or m.output is None:
            continue
        agree, diff = _close(t.output, m.output)
        out_rel = _rel_error(t.output, m.output)
        if not agree:
            cause, in_rel = _cause(t, m, out_rel, history)
            result["first"] = _finding(lmap, t, m, None) | {
                "inputs_agree": cause != "upstream",
                "cause": cause,
                "max_abs": diff,
                "rel_error": out_rel,
                "input_rel_error": in_rel,
                "trend": [round(e, 9) for e in history[-8:]],
            }
            if repro_dir is not None and cause != "upstream":
                root = str(lmap.root) if lmap.root is not None else None
                script, lacking = write_reproducer(repro_dir, result["first"], t, m, root)
                result["first"]["reproducer"] = str(script) if script is not None else None
                result["first"]["reproducer_lacks"] = lacking
            break
        history.append(out_rel or 0.0)
    if result["first"] is None and ms_error is not None:
        at = ms_error.get("at")
        found: dict[str, Any] = _finding(lmap, None, None, (at[0], at[1])) if at else {}
        result["first"] = found | {"error": ms_error["error"], "inputs_agree": True, "cause": "error"}
    result["status"] = "divergence" if result["first"] is not None else "match"
    return result


def print_api(api: dict[str, Any], console: Any) -> None:
    """The API-level verdict in the terminal."""
    if api.get("switched_to_pynative"):
        console.print(_("api: GRAPH_MODE was set; the calls were recorded in PyNative"))
    if api.get("line_map") is None:
        console.print(_("api: no {name} next to the MindSpore model: lines paired by number").format(name=LINEMAP_JSON))
    summary = _("api: {torch} torch and {ms} MindSpore call groups, {paired} paired by original line").format(
        torch=api["torch_groups"], ms=api["ms_groups"], paired=api["paired"]
    )
    console.print(summary)
    first = api.get("first")
    if first is None:
        console.print("[green]" + _("api: every paired call agrees") + "[/]")
        return
    if "original" in first:
        o, c = first["original"], first["converted"]
        console.print("[bold red]" + _("api: first divergent call") + "[/]")
        console.print(
            "  " + _("original  {file}:{line}").format(file=o["file"], line=o["line"]) + f"  {escape(o['text'])}"
        )
        console.print(
            "  " + _("converted {file}:{line}").format(file=c["file"], line=c["line"]) + f"  {escape(c['text'])}"
        )
        for entry in first.get("kb", []):
            console.print(
                "  "
                + _("KB entry:")
                + f" {escape(entry['api'])}"
                + (f" — {escape(entry['note'])}" if entry["note"] else "")
            )
        calls = _("torch calls: {torch}; MindSpore calls: {ms}").format(
            torch=", ".join(first["torch_calls"]), ms=", ".join(first["ms_calls"])
        )
        console.print("  " + escape(calls))
        if first.get("max_abs") is not None:
            console.print("  " + _("max abs difference: {diff:.3g}").format(diff=first["max_abs"]))
    if first.get("error"):
        console.print("  " + _("error:") + f" {escape(first['error'])}")
    if first.get("reproducer_lacks"):
        console.print(
            "  "
            + _("no reproducer: the statement also needs {names}, which a run of it alone would not have").format(
                names=", ".join(first["reproducer_lacks"])
            )
        )
    if first.get("reproducer"):
        console.print(
            "  " + _("reproducer (this call alone, torch and MindSpore): {path}").format(path=first["reproducer"])
        )
    if not first.get("inputs_agree", True):
        console.print(
            "  [yellow]" + _("its inputs already differ: the cause is upstream (state, weights or data)") + "[/]"
        )
    elif first.get("cause") == "float_noise":
        trend = ", ".join(f"{e:.1e}" for e in first.get("trend", []))
        console.print(
            "  [yellow]"
            + _(
                "float noise growing through many calls, not one wrong call: its inputs already differ by "
                "{inputs:.1e} (relative), its output by {output:.1e}; the last calls before it: {trend}"
            ).format(inputs=first["input_rel_error"], output=first["rel_error"], trend=trend)
            + "[/]"
        )
