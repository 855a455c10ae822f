"""R2/R4: every KB entry that is not `no-equivalent` is proven by real PyTorch vs real MindSpore.

The cases are data in the KB; this file generates one test per entry, which runs all of the
entry's cases and names each failing one (``torch.Tensor.add_#1: ...``). Select by entry or
namespace with ``-k`` (``-k "torch.nn.functional"``, ``-k "torch.Tensor.add_"``). The GRAPH_MODE
runs (R27) of function and method cases are compiled in batches (torch2ms.proof.batch): a
compile costs about the same for one case as for a hundred; with ``--dist loadgroup`` the
entries of one batch run in one xdist worker, so each batch compiles once.
"""

from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.kb import load_kb
from torch2ms.proof import GraphBatches, run_entry

pytestmark = pytest.mark.differential

KB = load_kb()
ENTRIES = [e for e in KB if e.status != "no-equivalent" and e.cases]
CHUNKS = GraphBatches(KB, ENTRIES)  # the batches of a full run (compiles nothing by itself)


def _param(entry):
    # Under `pytest -n N --dist loadgroup` one worker runs all entries of a chunk: it compiles once.
    chunk = CHUNKS.chunk_of(entry)
    marks = [] if chunk is None else [pytest.mark.xdist_group(f"kb-graph-{chunk}")]
    return pytest.param(entry, id=entry.torch, marks=marks)


@pytest.fixture(scope="module")
def graph_batches(request, frameworks):
    """Batches over the selected entries only (a `-k` run compiles what it runs; a full run: CHUNKS)."""
    # Only this test's items: other files name a parameter `entry` too (a string, a loss entry).
    selected = [
        item.callspec.params["entry"]
        for item in request.session.items
        if getattr(item, "function", None) is test_r2_differential and "entry" in _params(item)
    ]
    return GraphBatches(KB, selected)


def _params(item) -> dict:
    return getattr(getattr(item, "callspec", None), "params", {})


@pytest.fixture(scope="module")
def frameworks():
    torch = require_module("torch")
    ms = require_module("mindspore")
    torch.set_num_threads(1)
    try:
        ms.set_device("CPU")
    except RuntimeError:
        pass  # another test in this worker already started the MindSpore runtime (on CPU)
    return torch, ms


@pytest.mark.every_case  # one KB entry, one proof: the lean tier never cuts it
@pytest.mark.parametrize("entry", [_param(e) for e in ENTRIES])
def test_r2_differential(graph_batches, entry):
    if any(c.check == "onnx" for c in entry.cases):  # torch.onnx.export: both models run in onnxruntime
        require_module("onnx")
        require_module("onnxruntime")
    run_entry(entry, KB, graph_batches)


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
