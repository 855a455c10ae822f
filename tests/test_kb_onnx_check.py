"""check = "onnx" (proof/onnx_files.py): torch.onnx.export's KB cases write a model on each side and run both in
onnxruntime. The cases pass (values, input and output counts), and the check catches a model that differs."""

from __future__ import annotations

import io

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.kb import Case, load_kb
from torch2ms.proof import run_entry
from torch2ms.proof.compare import CaseFailure

pytestmark = pytest.mark.differential


@pytest.fixture(scope="module")
def onnx_stack():
    require_module("onnx")
    require_module("onnxruntime")
    return require_module("torch")


def _export(torch, model, args) -> io.BytesIO:
    f = io.BytesIO()
    torch.onnx.export(model, args, f, dynamo=False)
    return f


def test_torch_onnx_export_cases_run_both_models(onnx_stack):
    entry = load_kb().get("torch.onnx.export")
    assert [c.check for c in entry.cases] == ["onnx"] * 3 and not entry.one_sided
    results = run_entry(entry, load_kb(), lambda *a: pytest.fail("no GRAPH_MODE run for an export"))
    assert len(results) == 3 and all(r.max_abs < 1e-5 for r in results)
    assert "torch2ms.runtime.onnx_export(m, (x, y), f)" in results[1].ms_src


def test_the_check_catches_other_weights_and_other_counts(onnx_stack):
    from torch2ms.proof.onnx_files import compare_onnx_files

    torch = onnx_stack
    x = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")
    case = Case(call="", inputs={"x": "randn(4, 3)"}, check="onnx")
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    t = torch.from_numpy(x)
    assert compare_onnx_files(_export(torch, a, t), _export(torch, a, t), {"x": x}, case) == 0.0
    with pytest.raises(CaseFailure, match="max abs error"):
        compare_onnx_files(_export(torch, a, t), _export(torch, b, t), {"x": x}, case)

    class Two(torch.nn.Module):
        def forward(self, v):
            return v + 1, v * 2

    with pytest.raises(CaseFailure, match="1 outputs, MindSpore's 2"):
        compare_onnx_files(_export(torch, a, t), _export(torch, Two(), t), {"x": x}, case)
    with pytest.raises(CaseFailure, match="wrote no file"):
        compare_onnx_files("/nonexistent/model.onnx", _export(torch, a, t), {"x": x}, case)
