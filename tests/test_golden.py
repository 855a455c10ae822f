"""Whole converted files, pinned (R6–R20): each ``tests/golden/<case>/input.py`` must convert to
``expected.py`` byte for byte, with the report in ``expected_changes.txt``.

The inputs were written for this project (a training loop, a data pipeline, a GPT block, custom
autograd, DDP, mixed precision); torchvision's ResNet is read from the installed package and pinned
by a digest (its converted text is third-party code, not kept here). A deliberate converter change
regenerates them: ``.venv/bin/python -m pytest tests/test_golden.py --update-golden``, then read the diff.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from requires_support import require_package_dir

from torch2ms.convert import ConvertedModule, convert_source

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.py").is_file())


def _report(res: ConvertedModule) -> str:
    return "".join(f"{c.line}: {c.action} {c.api}: {c.note}\n" for c in res.changes)


def _check(path: Path, actual: str, update: bool) -> None:
    """A missing expected file fails (a deleted golden must not turn green); --update-golden writes it."""
    if update:
        path.write_text(actual, encoding="utf-8")
    elif not path.exists():
        pytest.fail(f"{path} is missing: run with --update-golden to write it, then read it", pytrace=False)
    assert actual == path.read_text(encoding="utf-8"), f"{path} differs: rerun with --update-golden and read the diff"


@pytest.mark.parametrize("case", CASES)
def test_r6_golden_file_converts_to_its_pinned_output(case: str, request) -> None:
    update = request.config.getoption("--update-golden")
    folder = GOLDEN / case
    source = (folder / "input.py").read_text(encoding="utf-8")
    res = convert_source(source, "input.py")
    assert res.error is None
    _check(folder / "expected.py", res.code, update)
    _check(folder / "expected_changes.txt", _report(res), update)
    assert convert_source(res.code, "input.py").code == res.code  # converting again changes nothing


def test_r6_golden_torchvision_resnet_is_pinned(request) -> None:
    torchvision_dir = require_package_dir("torchvision")
    source = (torchvision_dir / "models" / "resnet.py").read_text(encoding="utf-8")
    res = convert_source(source, "resnet.py")
    digest = hashlib.sha256(res.code.encode()).hexdigest()
    pinned = f"sha256 {digest}\n" + _report(res)
    _check(GOLDEN / "torchvision_resnet.txt", pinned, request.config.getoption("--update-golden"))


def test_r6_every_golden_folder_is_a_case() -> None:
    """A folder under tests/golden without input.py would be silently left out of CASES."""
    folders = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == CASES
