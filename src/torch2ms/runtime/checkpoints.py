"""``torch.save`` / ``torch.load`` of checkpoints that hold more than tensors (issue 23 §2.3).

A torch checkpoint is any pickled object: ``state_dict['mask_values'] = [0, 1]`` saved with the
model's weights, ``{'epoch': 3, 'model': sd, 'optimizer': osd, 'config': {...}}``. A MindSpore .ckpt
holds named tensors, plus (``append_dict``) ints, floats, bools and strings, and loads an int back as a
Parameter. ``mindspore.save_checkpoint`` refuses the rest or drops it, so a resumed run fails with a
KeyError.

The decision: the tensors stay checkpoint parameters, named by their path in the object
(``fc.weight`` at the top level, ``model.fc.weight`` inside ``'model'``), so a plain state dict is the
plain MindSpore checkpoint it always was and ``load_param_into_net`` reads it as before. Everything
else (numbers, strings, lists, tuples, nested dicts, None, and where each tensor sat) is one JSON
string in the same file, under the ``append_dict`` key ``__torch2ms_extra__``: one file, no sidecar,
readable by ``mindspore.load_checkpoint`` (the string comes back as is). ``load_checkpoint`` rebuilds the
object; a value JSON cannot hold (a set, a custom class) raises at save time, naming the key.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["EXTRA_KEY", "ckpt_path", "load_checkpoint", "save_checkpoint"]

EXTRA_KEY = "__torch2ms_extra__"
_TENSOR, _TUPLE = "__torch2ms_tensor__", "__torch2ms_tuple__"


def save_checkpoint(obj: Any, path: Any) -> None:
    """``torch.save(obj, path)``: a Cell or a dict of tensors as MindSpore writes it; other entries kept."""
    import mindspore as ms

    if isinstance(obj, ms.nn.Cell) or not isinstance(obj, dict):
        ms.save_checkpoint(obj, ckpt_path(path))
        return
    params: list[dict[str, Any]] = []
    tree = _encode(obj, "", params)
    extra = {EXTRA_KEY: json.dumps(tree)} if any(not _is_tensor(v) for v in obj.values()) else None
    ms.save_checkpoint(params, ckpt_path(path), append_dict=extra)


def load_checkpoint(path: Any) -> Any:
    """``torch.load(path)``: the dict of Parameters MindSpore reads, or the object saved, rebuilt."""
    import mindspore as ms

    loaded = ms.load_checkpoint(ckpt_path(path))
    extra = loaded.pop(EXTRA_KEY, None)
    if extra is None:
        return loaded
    return _decode(json.loads(str(extra)), loaded)


def ckpt_path(path: Any) -> Any:
    """The file name MindSpore really uses: save_checkpoint appends ``.ckpt`` to any other name and
    load_checkpoint refuses a name without it, so ``torch.save(sd, "m.pth")`` then
    ``torch.load("m.pth")`` must both go through here to meet at ``m.pth.ckpt``. An open file
    (``with open(p, "wb") as f: torch.save(model, f)``) stands for its name: MindSpore writes and
    reads checkpoints by name only. The one definition: ``torch2ms.runtime.ckpt_path`` is this function
    (re-exported through the package's ``__all__`` index, and so in the vendored ``__init__``)."""
    import os

    if hasattr(path, "name") and hasattr(path, "fileno"):
        path = path.name
    name = os.fspath(path)
    if isinstance(name, str) and not name.endswith((".ckpt", ".safetensors")):
        return name + ".ckpt"
    return path


def _is_tensor(value: Any) -> bool:
    import mindspore as ms
    import numpy as np

    return isinstance(value, (ms.Tensor, np.ndarray))


def _encode(value: Any, path: str, params: list[dict[str, Any]]) -> Any:
    import mindspore as ms

    if _is_tensor(value):
        params.append({"name": path, "data": value if isinstance(value, ms.Tensor) else ms.Tensor(value)})
        return {_TENSOR: path}
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"torch2ms checkpoint: key {k!r} is not a string")
            out[k] = _encode(v, f"{path}.{k}" if path else k, params)
        return out
    if isinstance(value, (list, tuple)):
        items = [_encode(v, f"{path}.{i}", params) for i, v in enumerate(value)]
        return {_TUPLE: items} if isinstance(value, tuple) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item") and getattr(value, "shape", None) == ():  # a numpy scalar
        return value.item()
    raise TypeError(
        f"torch2ms checkpoint: {path or 'the object'} is a {type(value).__name__}, which a .ckpt cannot hold"
    )


def _decode(tree: Any, params: dict[str, Any]) -> Any:
    if isinstance(tree, dict):
        if set(tree) == {_TENSOR}:
            return params[tree[_TENSOR]]
        if set(tree) == {_TUPLE}:
            return tuple(_decode(v, params) for v in tree[_TUPLE])
        return {k: _decode(v, params) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_decode(v, params) for v in tree]
    return tree
