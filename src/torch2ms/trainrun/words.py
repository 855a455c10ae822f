"""The words the compare-train reports show for its status, data mode and finding severities, in the
current language (report.json keeps the English values)."""

from __future__ import annotations

from ..i18n import N_, _

STATUS_WORDS = {"same": N_("SAME"), "different": N_("DIFFERENT"), "error": N_("ERROR")}
DATA_WORDS = {"replay": N_("replay data"), "own": N_("own data")}
SEVERITY_WORDS = {"warning": N_("warning"), "difference": N_("difference")}


def severity_word(severity: str) -> str:
    """A finding's severity in the current language (report.json keeps the English one)."""
    return _(SEVERITY_WORDS[severity]) if severity in SEVERITY_WORDS else severity
