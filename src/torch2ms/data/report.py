"""DataReport: the result of check_data, as a rich table, JSON and Markdown."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..i18n import N_, _
from .diagnose import ERROR, Finding

_LEVEL_WORDS = {"error": N_("error"), "warn": N_("warn"), "info": N_("info")}


def level_word(level: str) -> str:
    """A finding's level in the current language (report.json keeps the English one)."""
    return _(_LEVEL_WORDS[level]) if level in _LEVEL_WORDS else level


COLUMN_HEADS = (
    N_("column"),
    N_("shape"),
    N_("dtype"),
    N_("channel mean"),
    N_("channel std"),
    N_("max Δmean"),
    N_("max Δstd"),
    N_("max |Δ|"),
    N_("labels equal"),
)


@dataclass
class ColumnReport:
    name: str
    kind: str  # image | tensor | label
    torch_shape: list[int]
    ms_shape: list[int]
    torch_dtype: str
    ms_dtype: str
    compared_batches: int = 0
    torch_mean: list[float] | None = None
    torch_std: list[float] | None = None
    ms_mean: list[float] | None = None
    ms_std: list[float] | None = None
    d_mean: float | None = None  # max over channels of |Δ mean|
    d_std: float | None = None
    max_abs: float | None = None  # paired samples only
    paired_batches: int = 0
    label_agreement: float | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class DataReport:
    torch: Any  # collect.Side
    ms: Any
    columns: list[ColumnReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(f.level == ERROR for f in self.findings)

    @property
    def verdict(self) -> str:
        return "pipelines agree" if self.ok else "pipelines differ"

    @property
    def verdict_shown(self) -> str:
        """The verdict in the current language (report.json keeps the English one)."""
        return _("pipelines agree") if self.ok else _("pipelines differ")

    def _side(self, s: Any) -> dict:
        return {
            "batches_per_epoch": s.batches_per_epoch,
            "batches_read": len(s.batches),
            "columns": s.columns,
            "pipeline": s.pipeline,
            "error": s.error,
            "count_note": s.count_note,
        }

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "ok": self.ok,
            "settings": self.settings,
            "torch": self._side(self.torch),
            "mindspore": self._side(self.ms),
            "columns": [c.to_dict() for c in self.columns],
            "findings": [f.to_dict() for f in self.findings],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def to_markdown(self) -> str:
        d = self.to_dict()
        lines = [
            f"# torch2ms check-data: {self.verdict_shown}",
            "",
            self.compared_line(),
            "",
            "- "
            + _("batches per epoch: torch {torch}, MindSpore {ms}").format(
                torch=d["torch"]["batches_per_epoch"], ms=d["mindspore"]["batches_per_epoch"]
            ),
            "",
        ]
        for name, side in (("torch", d["torch"]), ("MindSpore", d["mindspore"])):
            stages = " ⟶ ".join(f"`{s}`" for s in side["pipeline"]) or "—"
            lines.append("**" + _("{name} pipeline:").format(name=name) + "** " + stages)
            lines.append("")
        lines += [
            _(
                "| column | shape torch / MS | dtype torch / MS | mean torch | mean MS | std torch | std MS "
                "| max Δmean | max Δstd | max abs Δ | labels equal |"
            ),
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in self.columns:
            lines.append(
                f"| {c.name} | {tuple(c.torch_shape)} / {tuple(c.ms_shape)} | {c.torch_dtype} / {c.ms_dtype} "
                f"| {_vec(c.torch_mean)} | {_vec(c.ms_mean)} | {_vec(c.torch_std)} | {_vec(c.ms_std)} "
                f"| {_num(c.d_mean)} | {_num(c.d_std)} | {_num(c.max_abs)} | {_pct(c.label_agreement)} |"
            )
        lines += ["", "## " + _("Findings"), ""]
        if not self.findings:
            lines.append(_("None: shapes, dtypes, statistics, values and batch counts agree."))
        for f in self.findings:
            col = f" ({f.column})" if f.column else ""
            lines.append(f"- **{level_word(f.level)}: {f.title}**{col}: {f.message}  ")
            lines.append("  " + _("fix:") + f" {f.fix}")
            lines += [f"  - {e}" for e in f.evidence]
        return "\n".join(lines) + "\n"

    def compared_line(self) -> str:
        return _("Compared the first {batches} batches (atol {atol}).").format(
            batches=self.settings.get("batches"), atol=self.settings.get("atol")
        )

    def render(self, console: Console | None = None) -> None:
        console = console or Console()
        style = "green" if self.ok else "red"
        first = _("first {batches} batches, atol {atol}").format(
            batches=self.settings.get("batches"), atol=self.settings.get("atol")
        )
        console.print(f"[bold]torch2ms check-data[/]: [{style}]{self.verdict_shown}[/] ({first})")
        bt, bm = self.torch.batches_per_epoch, self.ms.batches_per_epoch
        mark = "" if bt == bm else "  [yellow]?[/]" if bt is None or bm is None else "  [red]✗[/]"
        console.print(_("batches per epoch: torch {torch}, MindSpore {ms}").format(torch=bt, ms=bm) + mark)
        for side in (self.torch, self.ms):
            if side.count_note:
                console.print(f"      {escape(side.name)}: {escape(side.count_note)}")
        t = Table(title=_("first batches per column (upper line torch, lower line MindSpore)"))
        for h in COLUMN_HEADS:
            # numbers stay on one line; names and vectors wrap rather than end in "…"
            t.add_column(_(h), no_wrap=h not in ("column", "channel mean", "channel std"), overflow="fold")
        for c in self.columns:
            t.add_row(
                escape(c.name),
                f"{tuple(c.torch_shape)}\n{tuple(c.ms_shape)}",
                f"{c.torch_dtype}\n{c.ms_dtype}",
                f"{_vec(c.torch_mean)}\n{_vec(c.ms_mean)}",
                f"{_vec(c.torch_std)}\n{_vec(c.ms_std)}",
                _num(c.d_mean),
                _num(c.d_std),
                _num(c.max_abs),
                _pct(c.label_agreement),
            )
        if self.columns:
            console.print(t)
        colour = {"error": "red", "warn": "yellow", "info": "cyan"}
        for f in self.findings:
            col = escape(f" [{f.column}]") if f.column else ""
            console.print(
                f"[{colour[f.level]}]{level_word(f.level):5s}[/] [bold]{escape(f.title)}[/]{col}: {escape(f.message)}"
            )
            for e in f.evidence:
                console.print(f"      · {escape(e)}")
            console.print(f"      → {escape(f.fix)}")


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


def _vec(v: list[float] | None) -> str:
    if not v:
        return "—"
    return " ".join(f"{x:.4f}" for x in v[:4]) + (" …" if len(v) > 4 else "")
