"""``torch.onnx.export`` for converted code: ``mindspore.export(..., file_format='ONNX')``."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import mindspore

__all__ = ["onnx_export", "onnx_export_outputs"]


def onnx_export(model: Any, args: Any = (), f: Any = None, *, kwargs: Any = None, **options: Any) -> None:
    """torch's ``args`` (one tensor, or a tuple of the forward's arguments; a trailing dict holds
    keyword arguments, which MindSpore's export cannot pass) → ``mindspore.export(model, *inputs)``.
    The file lands where torch writes it: MindSpore appends ``.onnx`` to a name without that suffix,
    and torch also takes a file object. torch's exporter options (opset, names, dynamic axes) have no
    MindSpore form and are ignored."""
    inputs = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    if (inputs and isinstance(inputs[-1], dict)) or kwargs:
        raise TypeError("onnx_export: keyword inputs cannot be exported by mindspore.export; pass them by position")
    _forget_earlier_export(model)
    if f is None or hasattr(f, "write"):
        with tempfile.TemporaryDirectory() as tmp:
            name = os.path.join(tmp, "model.onnx")
            mindspore.export(model, *inputs, file_name=name, file_format="ONNX")
            with open(name, "rb") as written:
                data = written.read()
        if f is not None:
            f.write(data)
        return None
    name = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(name))
    mode = os.stat(folder).st_mode if os.path.isdir(folder) else None
    mindspore.export(model, *inputs, file_name=name, file_format="ONNX")
    if not name.endswith(".onnx"):  # MindSpore wrote name + ".onnx"
        os.replace(name + ".onnx", name)
    # MindSpore leaves the file read-only and its folder private (0o700); torch changes neither.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(name, 0o666 & ~umask)
    if mode is not None:
        os.chmod(folder, mode)
    return None


def onnx_export_outputs(model: Any, args: Any = (), f: Any = None, **options: Any) -> Any:
    """Old torch's ``torch.onnx._export``: exports as ``onnx_export`` and returns ``model(*args)``."""
    onnx_export(model, args, f, **options)
    inputs = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    return model(*inputs)


def _forget_earlier_export(model: Any) -> None:
    """MindSpore 2.10 reuses the graph of an earlier ONNX export of the same Cell, already converted,
    and fails ("i: 3 out of range"): the second export compiles afresh."""
    phase = getattr(model, "phase_cache", {}).get("export.onnx")
    cache = getattr(model, "compile_cache", None)
    if phase is not None and isinstance(cache, set):
        cache.discard(phase)
