"""Run one pipeline: load its factory, take the first K batches as numpy, count batches, describe it.

Works on a torch DataLoader, a mindspore.dataset object, or any iterable of batches (tuples, lists,
dicts or single arrays). Nothing here imports torch or MindSpore: objects are recognised by their
methods, so each side can run in its own environment (R28).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np

from ..factory import SpecError, build

__all__ = ["SpecError", "collect", "load_factory", "Side"]

# Counting batches per epoch means reading a whole epoch: an endless iterable gets a limit.
COUNT_LIMIT = 100_000
COUNT_SECONDS = 10.0
OnBatch = Callable[[int, int], None]  # (batches read, batches wanted)


@dataclass
class Side:
    name: str  # "torch" or "MindSpore"
    batches: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    batches_per_epoch: int | None = None
    pipeline: list[str] = field(default_factory=list)  # human-readable stages
    config: dict[str, Any] = field(default_factory=dict)  # shuffle, drop, batch_size, ops (for hints)
    error: str | None = None
    count_note: str | None = None  # why batches_per_epoch is unknown


def load_factory(spec: str, import_timeout: float | None = None) -> Any:
    """``module:factory``, ``path.py:factory`` or ``path.py:expression`` → the pipeline it builds
    (a non-callable is returned as is). Raises SpecError with one line naming file and line."""
    return build(spec, "data", import_timeout)


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch.Tensor
        x = x.detach().cpu().numpy()
    elif hasattr(x, "asnumpy"):  # mindspore.Tensor
        x = x.asnumpy()
    return np.asarray(x)


def _split(batch: Any) -> tuple[list[str] | None, tuple[np.ndarray, ...]]:
    if isinstance(batch, dict):
        return list(batch), tuple(_to_numpy(v) for v in batch.values())
    if isinstance(batch, (tuple, list)):
        return None, tuple(_to_numpy(v) for v in batch)
    return None, (_to_numpy(batch),)


def is_ms_dataset(obj: Any) -> bool:
    return hasattr(obj, "create_tuple_iterator") and hasattr(obj, "get_dataset_size")


def _ms_size_unknown(dataset: Any) -> bool:
    """A GeneratorDataset over a source without len(): get_dataset_size() would read it all (forever,
    for an endless generator)."""
    node = dataset
    while getattr(node, "children", None):
        node = node.children[0]
    return getattr(node, "source_len", None) == -1


def _iterate(obj: Any, k: int) -> Iterator[Any]:
    if is_ms_dataset(obj):
        it = obj.create_tuple_iterator(output_numpy=True, num_epochs=1)
        try:
            yield from islice(it, k)
        finally:
            if hasattr(it, "stop"):
                it.stop()  # free the pipeline's worker threads
    else:
        yield from islice(iter(obj), k)


def _count_by_reading(obj: Any) -> tuple[int | None, str | None]:
    """Batches in one pass, read up to COUNT_LIMIT batches or COUNT_SECONDS seconds."""
    deadline = time.monotonic() + COUNT_SECONDS
    count = 0
    for _ in _iterate(obj, COUNT_LIMIT + 1):
        count += 1
        if count > COUNT_LIMIT or time.monotonic() > deadline:
            return None, f"stopped counting after {count} batches: the pipeline looks endless"
    return count, None


def _batch_count(obj: Any) -> tuple[int | None, str | None]:
    if is_ms_dataset(obj):
        return (None, None) if _ms_size_unknown(obj) else (int(obj.get_dataset_size()), None)
    try:
        return len(obj), None
    except TypeError:
        return None, None


def _count_after_reading(obj: Any) -> tuple[int | None, str | None]:
    """For pipelines without a size: one counted pass — never over a one-shot iterator (a generator),
    whose batches are already spent."""
    if not is_ms_dataset(obj) and iter(obj) is obj:
        return None, "a one-shot iterator (e.g. a generator): batches per epoch cannot be counted"
    return _count_by_reading(obj)


def collect(obj: Any, name: str, k: int, on_batch: OnBatch | None = None) -> Side:
    """First ``k`` batches of ``obj`` as numpy tuples, batches per epoch and a description of the pipeline."""
    side = Side(name)
    side.pipeline, side.config = (describe_ms if is_ms_dataset(obj) else describe_torch)(obj)
    if is_ms_dataset(obj):
        side.columns = list(obj.get_col_names())
    try:
        side.batches_per_epoch, side.count_note = _batch_count(obj)  # known even if the pipeline then fails
    except Exception:  # noqa: BLE001 - some sources only fail once read; the iteration reports it
        pass
    try:
        for batch in _iterate(obj, k):
            cols, arrays = _split(batch)
            if cols and not side.columns:
                side.columns = cols
            side.batches.append(arrays)
            if on_batch is not None:
                on_batch(len(side.batches), k)
        if side.batches_per_epoch is None:
            side.batches_per_epoch, side.count_note = _count_after_reading(obj)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any pipeline failure is reported, then diagnosed
        side.error = f"{type(exc).__name__}: {exc}"
    if side.batches and not side.columns:
        side.columns = [f"column{i}" for i in range(len(side.batches[0]))]
    return side


# ------------------------------------------------------------------------------------------------
# Pipeline descriptions: only attributes both libraries have kept stable; anything odd is skipped.


def _op_text(op: Any) -> str:
    name = type(op).__name__
    keys = ("size", "interpolation", "antialias", "to_pil", "is_hwc", "mean", "std", "data_type", "rescale", "shift")
    parts = []
    for k in keys:
        v = getattr(op, k, None)
        if v is None and k == "size":
            v = getattr(op, "py_size", None)
        if v is not None and not callable(v):
            v = getattr(v, "name", v)  # enums
            parts.append(f"{k}={v}")
    return f"{name}({', '.join(parts)})"


def _ops_of(transform: Any) -> list[Any]:
    if transform is None:
        return []
    inner = getattr(transform, "transforms", None)
    return list(inner) if isinstance(inner, (list, tuple)) else [transform]


def describe_torch(loader: Any) -> tuple[list[str], dict[str, Any]]:
    cfg: dict[str, Any] = {"ops": []}
    stages = []
    ds = getattr(loader, "dataset", None)
    if ds is not None:
        stages.append(type(ds).__name__)
        for attr in ("transform", "target_transform"):
            ops = _ops_of(getattr(ds, attr, None))
            cfg["ops"] += [(type(o).__name__, _op_attrs(o)) for o in ops]
            if ops:
                stages.append(f"{attr}: " + " → ".join(_op_text(o) for o in ops))
    sampler = getattr(loader, "sampler", None)
    if sampler is not None:
        cfg["shuffle"] = type(sampler).__name__ == "RandomSampler"
    for attr in ("batch_size", "drop_last"):
        if hasattr(loader, attr):
            cfg[attr] = getattr(loader, attr)
    if "batch_size" in cfg:
        stages.append(
            f"DataLoader(batch_size={cfg['batch_size']}, shuffle={cfg.get('shuffle')}, "
            f"drop_last={cfg.get('drop_last')})"
        )
    return stages, cfg


def _op_attrs(op: Any) -> dict[str, Any]:
    out = {}
    for k in ("interpolation", "to_pil", "is_hwc", "size", "antialias"):
        v = getattr(op, k, None)
        if v is not None and not callable(v):
            out[k] = str(getattr(v, "name", v))
    return out


def describe_ms(dataset: Any) -> tuple[list[str], dict[str, Any]]:
    """Walk a mindspore.dataset tree from the source up: sources, map operations, batch."""
    chain = []
    node = dataset
    while node is not None:
        chain.append(node)
        children = getattr(node, "children", None) or []
        node = children[0] if children else None
    cfg: dict[str, Any] = {"ops": []}
    stages = []
    for node in reversed(chain):
        kind = type(node).__name__
        if kind == "MapDataset":
            ops = list(getattr(node, "operations", []) or [])
            cols = getattr(node, "input_columns", None)
            cfg["ops"] += [(type(o).__name__, _op_attrs(o)) for o in ops]
            stages.append(f"map({cols}): " + " → ".join(_op_text(o) for o in ops))
        elif kind == "BatchDataset":
            cfg["batch_size"] = getattr(node, "batch_size", None)
            cfg["drop_remainder"] = getattr(node, "drop_remainder", None)
            stages.append(f"batch({cfg['batch_size']}, drop_remainder={cfg['drop_remainder']})")
        else:
            sampler = getattr(node, "sampler", None)
            if sampler is not None:
                cfg["shuffle"] = type(sampler).__name__ == "RandomSampler"
                stages.append(f"{kind}(sampler={type(sampler).__name__})")
            else:
                stages.append(kind)
    return stages, cfg
