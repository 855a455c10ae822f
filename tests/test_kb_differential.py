"""R2/R4: every KB entry that is not `no-equivalent` is proven by real PyTorch vs real MindSpore.

The cases are data in the KB; this file only generates one test per case.
"""

from pathlib import Path

import pytest

from torch2ms.kb import load_kb

pytestmark = pytest.mark.differential

KB = load_kb()
CASES = [
    pytest.param(e, c, i, id=f"{e.torch}#{i}") for e in KB if e.status != "no-equivalent" for i, c in enumerate(e.cases)
]


@pytest.fixture(scope="module")
def frameworks():
    torch = pytest.importorskip("torch")
    ms = pytest.importorskip("mindspore")
    torch.set_num_threads(1)
    try:
        ms.set_device("CPU")
    except RuntimeError:
        pass  # another test in this worker already started the MindSpore runtime (on CPU)
    return torch, ms


@pytest.mark.parametrize("entry, case, index", CASES)
def test_r2_differential(frameworks, entry, case, index):
    from torch2ms.kb.verify import run_case

    run_case(entry, case, index, KB)


def test_r2_every_mapped_entry_has_a_case():
    # A class rewritten whole (no single call to replay) names its proving test file instead.
    tests = Path(__file__).parent
    missing = [
        e.torch
        for e in KB
        if e.status != "no-equivalent" and not e.cases and not (e.proven_by and (tests.parent / e.proven_by).is_file())
    ]
    assert not missing, f"entries without a differential case: {missing}"
    assert all(e.proven_by.startswith("tests/test_") for e in KB if e.proven_by)
