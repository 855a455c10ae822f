"""What a test needs that CI always has: the frameworks (and the packages of the ``frameworks`` and
``test`` extras), the real-code kit (``../shared/realcode``) and ``../shared/reference``.

Every test that needs one of them asks here instead of skipping by hand. In CI (``CI`` set, as
``.ci/run`` exports it) a missing one FAILS the test, since CI has them all and a skip there would
turn a test that never ran into green; on a user's machine it skips, tagged with its kind, and
``tests/conftest.py`` ends the run with one line saying what was skipped and why.

Skips for what a machine may legitimately lack (a GPU, a FIFO, Chromium outside CI) stay plain
``pytest.skip`` at their site.

``TORCH2MS_REALCODE`` / ``TORCH2MS_REFERENCE`` point at another kit / reference folder (a missing
folder hides it, to see the fail-vs-skip behaviour).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
KIT = Path(os.environ.get("TORCH2MS_REALCODE") or SHARED / "realcode")
CORPUS = KIT / "corpus"
REFERENCE = Path(os.environ.get("TORCH2MS_REFERENCE") or SHARED / "reference")

# The kinds of expected things; a skip reason starts with "<kind>: " so the summary can count them.
MODULE, KIT_KIND, REFERENCE_KIND = "missing module", "missing kit", "missing reference"
KINDS = (MODULE, KIT_KIND, REFERENCE_KIND)


def in_ci() -> bool:
    return bool(os.environ.get("CI"))


def missing(kind: str, what: str) -> NoReturn:
    """Fail in CI, skip elsewhere (also usable at module level and in fixtures)."""
    reason = f"{kind}: {what}"
    if in_ci():
        pytest.fail(f"{reason} — CI has it, so this test must run (CI is set)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_module(name: str) -> ModuleType:
    """``pytest.importorskip`` that fails in CI: torch, mindspore, torchvision, einops, scipy, …"""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        error = str(exc)
    missing(MODULE, f"{name} is not importable ({error})")


def require_package_dir(name: str) -> Path:
    """The folder of an installed package, found without importing it (a static test reading
    torchvision's source stays free of torch); fails in CI, skips elsewhere when it is not installed."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        missing(MODULE, f"{name} is not installed (no package folder found)")
    return Path(list(spec.submodule_search_locations)[0])


def require_modules(*names: str) -> None:
    for name in names:
        require_module(name)


def require_kit(path: Path | None = None) -> Path:
    """The kit's corpus (or a path inside the kit): fails in CI, skips elsewhere when it is not here."""
    path = CORPUS if path is None else path
    if not path.exists():
        missing(KIT_KIND, f"{path} is not here (the real-code kit beside the checkout; TORCH2MS_REALCODE)")
    return path


def require_reference(path: Path) -> Path:
    """A file of ``../shared/reference``: fails in CI, skips elsewhere when it is not here."""
    if not path.exists():
        missing(REFERENCE_KIND, f"{path} is not here (../shared/reference beside the checkout)")
    return path


def kind_of(reason: str) -> str:
    """The kind of a skip reason: one of KINDS, or "other" (a GPU, a FIFO, Chromium …)."""
    head = reason.removeprefix("Skipped: ")
    return next((k for k in KINDS if head.startswith(k + ":")), "other")


def _reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)


def skip_summary(reports) -> str:
    """``skipped 5: missing kit 3, missing module 2 (torch) — in CI these fail`` (empty when none)."""
    counts: dict[str, int] = {}
    modules: set[str] = set()
    for report in reports:
        reason = _reason(report).removeprefix("Skipped: ")
        kind = kind_of(reason)
        counts[kind] = counts.get(kind, 0) + 1
        if kind == MODULE:
            modules.add(reason.removeprefix(MODULE + ": ").split(" ", 1)[0])
    if not counts:
        return ""
    parts = [
        f"{kind} {n}" + (f" ({', '.join(sorted(modules))})" if kind == MODULE else "") for kind, n in counts.items()
    ]
    tail = " — in CI (CI set) the expected ones fail instead" if set(counts) - {"other"} else ""
    return f"skipped {sum(counts.values())}: " + ", ".join(parts) + tail
