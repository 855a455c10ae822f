"""``torch2ms doctor`` (R5): versions, device target and known-bad combinations, with what to do."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field
from importlib import metadata

from .i18n import N_, _

PACKAGES = ("torch", "torchvision", "mindspore", "numpy", "libcst", "rich", "safetensors")
PINNED = {"mindspore": "2.10.0", "torch": "2.14.1", "torchvision": "0.29.1"}
# MindSpore's documented switches for single-threaded PyNative dispatch (bench/train_step_bench.py).
CPU_DISPATCH_ENV = ("MS_DEV_LAUNCH_BLOCKING", "MS_DEV_HOST_BLOCKING_RUN")
# Every CPU speed switch doctor asks for, with its value (compare-train sets them for its MindSpore side):
# oneDNN capped at AVX2, as on an AVX-512 host MindSpore 2.10's bundled oneDNN picks a naive convolution.
MS_SPEED_ENV = {"ONEDNN_MAX_CPU_ISA": "AVX2", **{k: "1" for k in CPU_DISPATCH_ENV}}


@dataclass
class Finding:
    level: str  # ok | warn | error
    message: str
    fix: str = ""


@dataclass
class DoctorReport:
    versions: dict[str, str | None] = field(default_factory=dict)
    device_target: str | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.level == "error" for f in self.findings)


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def _major(v: str) -> int:
    try:
        return int(v.split(".")[0])
    except ValueError:
        return 0


def diagnose(versions: dict[str, str | None] | None = None, probe_device: bool = True) -> DoctorReport:
    """Inspect the environment (or a given set of versions, for tests)."""
    rep = DoctorReport()
    rep.versions = {"python": platform.python_version()} | (
        versions if versions is not None else {p: _version(p) for p in PACKAGES}
    )
    rep.findings += _version_findings(rep.versions)
    if probe_device and rep.versions.get("mindspore"):
        try:
            import mindspore

            rep.device_target = mindspore.get_context("device_target")
        except Exception as exc:  # noqa: BLE001 - any import failure is a finding for the user
            rep.findings.append(
                Finding(
                    "error",
                    _("import mindspore failed: {error}").format(error=exc),
                    _("reinstall mindspore with numpy<2"),
                )
            )
    if rep.versions.get("mindspore") and rep.device_target in (None, "CPU"):
        rep.findings += _cpu_findings()
    if not rep.findings or all(f.level == "ok" for f in rep.findings):
        rep.findings.append(Finding("ok", _("no known-bad combination found")))
    return rep


def _version_findings(v: dict[str, str | None]) -> list[Finding]:
    """Python, MindSpore, torch, numpy and torch2ms's own packages: missing, unproven or known-bad."""
    out = []
    py = v["python"] or ""
    if not py.startswith("3.11"):
        out.append(
            Finding(
                "warn",
                _("Python {version}: torch2ms is tested on Python 3.11").format(version=py),
                _("use a Python 3.11 environment"),
            )
        )
    ms, torch, np_ = v.get("mindspore"), v.get("torch"), v.get("numpy")
    if ms is None:
        out.append(
            Finding(
                "warn",
                _(
                    "mindspore is not installed: convert/scan/lookup work, compare and weight checks against a net do not"
                ),
                f"pip install mindspore=={PINNED['mindspore']} 'numpy<2'",
            )
        )
    elif ms != PINNED["mindspore"]:
        out.append(
            Finding(
                "warn",
                _("mindspore {version}: the knowledge base was proven on {pinned}").format(
                    version=ms, pinned=PINNED["mindspore"]
                ),
                f"pip install mindspore=={PINNED['mindspore']}",
            )
        )
    if ms and np_ and _major(np_) >= 2:
        out.append(
            Finding(
                "error",
                _(
                    "numpy {version} with mindspore: mindspore.dataset.GeneratorDataset fails on python/numpy-scalar "
                    "items ('Unable to avoid copy while creating an array')"
                ).format(version=np_),
                "pip install 'numpy<2'",
            )
        )
    if torch is None:
        out.append(
            Finding(
                "warn",
                _("torch is not installed: fine for the MindSpore side; compare needs --torch-python PY"),
                _("point compare at a torch environment with --torch-python"),
            )
        )
    if torch and v.get("torchvision") is None:
        out.append(
            Finding(
                "warn",
                _("torchvision is not installed: data-pipeline checks of torchvision transforms are unavailable"),
                f"pip install torchvision=={PINNED['torchvision']}",
            )
        )
    if torch and ms:
        out.append(
            Finding(
                "ok",
                _(
                    "torch and mindspore share this environment: fine for compare; to keep them apart (often wanted "
                    "in production), install them in two environments and give compare --torch-python"
                ),
            )
        )
    for pkg in ("libcst", "rich"):
        if v.get(pkg) is None:
            out.append(
                Finding(
                    "error",
                    _("{package} is missing: torch2ms itself needs it").format(package=pkg),
                    f"pip install {pkg}",
                )
            )
    return out


def _cpu_findings() -> list[Finding]:
    """MindSpore's own speed switches on a CPU target, when they are not set."""
    out = []
    if _has_avx512() and not os.environ.get("ONEDNN_MAX_CPU_ISA"):
        out.append(
            Finding(
                "warn",
                _(
                    "this CPU has AVX-512: MindSpore 2.10's bundled oneDNN then picks a naive convolution "
                    "(measured 155 ms vs 4 ms for one 32x3x32x32 conv; training steps 20x slower)"
                ),
                _("export ONEDNN_MAX_CPU_ISA=AVX2 before starting MindSpore"),
            )
        )
    unset = [k for k in CPU_DISPATCH_ENV if os.environ.get(k) != "1"]
    if unset:
        out.append(
            Finding(
                "warn",
                _(
                    "PyNative dispatches ops and compiled steps across threads: on a CPU target that "
                    "costs ~3 ms per eager op and makes a compiled training step that returns several tensors "
                    "1.7x slower (measured 21.6 vs 12.7 ms per step on 2 cores)"
                ),
                " ".join(f"export {k}=1" for k in unset) + " " + _("(single-threaded dispatch; CPU only)"),
            )
        )
    return out


def _has_avx512(cpuinfo: str = "/proc/cpuinfo") -> bool:
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            return any(line.startswith("flags") and "avx512f" in line.split() for line in f)
    except OSError:
        return False


def main_text(rep: DoctorReport) -> list[str]:
    missing, device, where = _("not installed"), _("device"), _("platform")
    lines = [f"{k:12s} {val or missing}" for k, val in rep.versions.items()]
    unknown = _("unknown (mindspore not imported)")
    lines.append(f"{device:12s} {rep.device_target or unknown}")
    lines.append(f"{where:12s} {platform.platform()} ({sys.executable})")
    return lines


_LEVEL_WORDS = {"ok": N_("ok"), "warn": N_("warn"), "error": N_("error")}


def level_word(level: str) -> str:
    """A finding's level in the current language (--json keeps the English one)."""
    return _(_LEVEL_WORDS[level]) if level in _LEVEL_WORDS else level
