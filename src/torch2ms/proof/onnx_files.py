"""``check = "onnx"``: the case's call writes an ONNX model on each side (``torch.onnx.export`` and its
conversion, ``mindspore.export(..., file_format='ONNX')``) to ``f``, a path or a file object the setup
names. Both models run in onnxruntime on the case's array inputs (in the order of ``inputs``): the same
numbers of graph inputs and outputs, the same output values."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..kb import Case
from .compare import CaseFailure, compare

__all__ = ["compare_onnx_files"]


def _model_bytes(f: Any, side: str) -> bytes:
    if hasattr(f, "getvalue"):  # io.BytesIO
        return f.getvalue()
    if not isinstance(f, (str, os.PathLike)) or not os.path.isfile(f):
        raise CaseFailure(f"onnx check: {side} wrote no file at f={f!r}")
    with open(f, "rb") as written:
        data = written.read()
    os.remove(f)
    return data


def _run(data: bytes, arrays: list[np.ndarray], side: str) -> tuple[int, list[np.ndarray]]:
    import onnxruntime

    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(arrays):
        raise CaseFailure(f"onnx check: {side}'s model has {len(names)} inputs, the case gives {len(arrays)}")
    return len(session.get_outputs()), session.run(None, dict(zip(names, arrays)))


def compare_onnx_files(torch_f: Any, ms_f: Any, raw_inputs: dict[str, Any], case: Case) -> float:
    """Run both written models in onnxruntime on the case's arrays; return the worst output difference."""
    arrays = [np.asarray(raw_inputs[k]) for k in case.inputs if isinstance(raw_inputs.get(k), np.ndarray)]
    t_count, t_out = _run(_model_bytes(torch_f, "torch"), arrays, "torch")
    m_count, m_out = _run(_model_bytes(ms_f, "MindSpore"), arrays, "MindSpore")
    if t_count != m_count:
        raise CaseFailure(f"onnx check: torch's model has {t_count} outputs, MindSpore's {m_count}")
    return compare(t_out, m_out, case, "onnxruntime output")
