"""Scan report renderers: terminal (rich), Markdown, CSV, JSON."""

from __future__ import annotations

import csv
import io
import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..analysis.scan import AUTO, EFFORT_OF_ACTION, MANUAL, REVIEW, ScanReport
from ..i18n import N_, _

STATUS_ORDER = ("direct", "args-differ", "composite", "no-equivalent", "unknown")
STATUS_STYLE = {
    "direct": "green",
    "args-differ": "cyan",
    "composite": "yellow",
    "no-equivalent": "red",
    "unknown": "magenta",
}
MAX_LOCATIONS = 3
# How each status and effort column is shown to a person (JSON and CSV keep the keys).
LABELS = {
    "direct": N_("direct"),
    "args-differ": N_("args-differ"),
    "composite": N_("composite"),
    "no-equivalent": N_("no-equivalent"),
    "unknown": N_("unknown"),
    AUTO: N_("automatic"),
    REVIEW: N_("review"),
    MANUAL: N_("manual"),
}


def label(key: str) -> str:
    return _(LABELS[key]) if key in LABELS else key


def _locations(locs: list[str]) -> str:
    more = f" (+{len(locs) - MAX_LOCATIONS})" if len(locs) > MAX_LOCATIONS else ""
    return ", ".join(locs[:MAX_LOCATIONS]) + more


# How sure scan is that a method call's receiver is a tensor (analysis/scan.py ApiUse.confidence).
_CONFIDENCE_WORDS = {"certain": N_("certain"), "likely": N_("likely"), "guess": N_("guess")}


def _confidence(conf: dict) -> str:
    if set(conf) == {"certain"}:
        return ""
    words = {k: _(_CONFIDENCE_WORDS[k]) if k in _CONFIDENCE_WORDS else k for k in conf}
    return ", ".join(f"{words[k]} {v}" for k, v in sorted(conf.items()))


def render_terminal(report: ScanReport, console: Console | None = None) -> None:
    console = console or Console()
    data = report.to_dict()
    s = data["summary"]
    console.print(f"[bold]torch2ms scan[/] {report.root}: {_summary_line(s)}")
    for status in STATUS_ORDER:
        rows = [r for r in data["inventory"] if r["status"] == status]
        if not rows:
            continue
        t = Table(
            title=_("{status} ({apis} APIs, {uses} uses)").format(
                status=label(status), apis=len(rows), uses=sum(r["count"] for r in rows)
            ),
            title_style=STATUS_STYLE[status],
            title_justify="left",
        )
        t.add_column("API", overflow="fold")  # a name is the point: wrap it, never cut it with "…"
        t.add_column(_("uses"), justify="right")
        t.add_column(_("where"), overflow="fold")
        t.add_column(_("receiver guessed"))
        for r in rows:
            t.add_row(
                escape(r["api"]), str(r["count"]), escape(_locations(r["locations"])), _confidence(r["confidence"])
            )
        console.print(t)
    if data["risks"]:
        t = Table(
            title=_("static-graph risks in forward ({n})").format(n=len(data["risks"])),
            title_justify="left",
            title_style="red",
        )
        t.add_column(_("where"), overflow="fold")
        t.add_column(_("risk"), overflow="fold")
        t.add_column(_("what to do"), overflow="fold")
        for r in data["risks"]:
            t.add_row(escape(f"{r['path']}:{r['line']}"), escape(r["message"]), escape(r["fix"]))
        console.print(t)
    _render_left(data["left"], console)
    eff = Table(title=_("effort estimate"), title_justify="left")
    eff.add_column(_("file"), overflow="fold")
    for col in (AUTO, REVIEW, MANUAL):
        eff.add_column(label(col), justify="right")
    for f in data["files"]:
        if f["error"] or not any(f["effort"].values()):
            continue
        eff.add_row(escape(f["path"]), *(str(f["effort"].get(c, 0)) for c in (AUTO, REVIEW, MANUAL)))
    total = s["effort"]
    eff.add_row("[bold]" + _("total") + "[/]", *(f"[bold]{total.get(c, 0)}[/]" for c in (AUTO, REVIEW, MANUAL)))
    console.print(eff)
    n = sum(total.values()) or 1
    console.print(
        _("converted automatically: {auto}  needs review: {review}  manual: {manual}").format(
            auto=f"{100 * total.get(AUTO, 0) / n:.0f}%",
            review=f"{100 * total.get(REVIEW, 0) / n:.0f}%",
            manual=f"{100 * total.get(MANUAL, 0) / n:.0f}%",
        )
    )
    console.print(_left_line(s))
    for f in report.errors:
        console.print("[red]" + _("not scanned") + f"[/] {escape(f.path)}: {escape(f.error or '')}")
    for path, why in report.skipped:
        console.print("[dim]" + _("skipped folder") + f"[/] {escape(path)}: {escape(why)}")


# The converter's actions, as the conversion report shows them (same words, same catalog entries).
_ACTION_WORDS = {"review": N_("review"), "not-converted": N_("not-converted")}


def _action(action: str) -> str:
    return _(_ACTION_WORDS[action]) if action in _ACTION_WORDS else action


def _left_line(s: dict) -> str:
    return _(
        "left for the user: {left} ({review} to review, {manual} not converted), as `torch2ms convert` reports them"
    ).format(left=s["left_for_user"], review=s["effort"].get(REVIEW, 0), manual=s["effort"].get(MANUAL, 0))


def _render_left(left: list[dict], console: Console) -> None:
    """The conversion's "needs a person" list: each item torch2ms convert leaves or marks."""
    if not left:
        return
    t = Table(title=_("left for the user ({n})").format(n=len(left)), title_justify="left", title_style="yellow")
    t.add_column(_("where"), overflow="fold")
    t.add_column("API", overflow="fold")
    t.add_column(_("action"))
    t.add_column(_("why"), overflow="fold")
    for item in left:
        t.add_row(
            escape(f"{item['path']}:{item['line']}"),
            escape(_(item["api"])),
            _action(item["action"]),
            escape(item["note"] or ""),
        )
    console.print(t)


def _summary_line(s: dict) -> str:
    return _("{files} files, {lines} lines, {uses} torch API uses of {apis} distinct APIs").format(
        files=s["files"], lines=s["lines"], uses=s["api_uses"], apis=s["distinct_apis"]
    )


def to_json(report: ScanReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"


def to_csv(report: ScanReport) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["kind", "path", "line", "api_or_risk", "status", "confidence", "effort", "message"])
    for path, u in report.uses:
        w.writerow(["api", path, u.line, u.api, u.status, u.confidence, "", ""])
    for path, r in report.risks:
        w.writerow(["risk", path, r.line, r.code, "", "", "", r.message])
    for path, item in report.left:  # what the conversion leaves: the only rows with an effort
        effort = EFFORT_OF_ACTION.get(item["action"], item["action"])
        w.writerow(["left", path, item["line"], item["api"], "", "", effort, item["note"]])
    for f in report.errors:
        w.writerow(["error", f.path, "", "", "", "", "", f.error])
    return buf.getvalue()


def to_markdown(report: ScanReport) -> str:
    data = report.to_dict()
    s = data["summary"]
    out = [
        f"# torch2ms scan: {report.root}",
        "",
        _("{summary}.").format(summary=_summary_line(s)),
        "",
        "| " + _("status") + " | " + _("APIs") + " | " + _("uses") + " |",
        "|---|---:|---:|",
    ]
    for status in STATUS_ORDER:
        rows = [r for r in data["inventory"] if r["status"] == status]
        if rows:
            out.append(f"| {label(status)} | {len(rows)} | {sum(r['count'] for r in rows)} |")
    out += [
        "",
        "## " + _("Operator inventory"),
        "",
        "| API | " + _("status") + " | " + _("uses") + " | " + _("where") + " |",
    ]
    out.append("|---|---|---:|---|")
    for r in data["inventory"]:
        out.append(f"| `{r['api']}` | {label(r['status'])} | {r['count']} | {_locations(r['locations'])} |")
    if data["risks"]:
        out += [
            "",
            "## " + _("Static-graph risks"),
            "",
            "| " + _("where") + " | " + _("risk") + " | " + _("what to do") + " |",
        ]
        out.append("|---|---|---|")
        for r in data["risks"]:
            out.append(f"| {r['path']}:{r['line']} | {r['message']} | {r['fix']} |")
    if data["left"]:
        out += [
            "",
            "## " + _("Needs a person"),
            "",
            "| " + _("where") + " | API | " + _("action") + " | " + _("why") + " |",
            "|---|---|---|---|",
        ]
        for r in data["left"]:
            api = _(r["api"])  # a torch name stays as is; a construct ("training loop") is translated
            out.append(f"| {r['path']}:{r['line']} | `{api}` | {_action(r['action'])} | {r['note']} |")
    out += [
        "",
        "## " + _("Effort"),
        "",
        "| " + _("file") + " | " + " | ".join(label(c) for c in (AUTO, REVIEW, MANUAL)) + " |",
    ]
    out.append("|---|---:|---:|---:|")
    for f in data["files"]:
        if not f["error"] and any(f["effort"].values()):
            out.append(
                f"| {f['path']} | " + " | ".join(str(f["effort"].get(c, 0)) for c in (AUTO, REVIEW, MANUAL)) + " |"
            )
    t = s["effort"]
    out.append("| **" + _("total") + "** | " + " | ".join(f"**{t.get(c, 0)}**" for c in (AUTO, REVIEW, MANUAL)) + " |")
    out += ["", _left_line(s)]
    if report.errors:
        out += ["", "## " + _("Not scanned"), ""]
        out += [f"- `{f.path}`: {f.error}" for f in report.errors]
    if report.skipped:
        out += ["", "## " + _("Folders skipped"), ""]
        out += [f"- `{path}`: {why}" for path, why in report.skipped]
    return "\n".join(out) + "\n"
