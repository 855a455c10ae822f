"""``torch.utils.tensorboard.SummaryWriter`` for converted scripts, without torch.

MindSpore's own ``mindspore.SummaryRecord`` writes MindInsight summaries through another API (a network
and a callback), so a script's ``writer.add_scalar(...)`` calls would need rewriting by hand. This writer
keeps them: with the ``tensorboard`` package installed it writes TensorBoard event files as torch does
(scalars and histograms; TensorBoard reads them alike); without it, or for a kind of record it does not
write, it warns once and records nothing, and the training runs on.
"""

from __future__ import annotations

import os
import socket
import time
import warnings
from datetime import datetime
from typing import Any

__all__ = ["SummaryWriter"]


def _number(value: Any) -> float:
    return float(value.asnumpy() if hasattr(value, "asnumpy") else value)


def _event_writer(log_dir: str, max_queue: int, flush_secs: int, filename_suffix: str) -> Any:
    try:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError:
        warnings.warn(
            "torch2ms SummaryWriter: the tensorboard package is not installed, no event file is written "
            "(pip install tensorboard)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return EventFileWriter(log_dir, max_queue, flush_secs, filename_suffix)


class SummaryWriter:
    """torch's SummaryWriter API: add_scalar / add_scalars / add_histogram write TensorBoard events;
    the other ``add_*`` methods warn once and record nothing."""

    def __init__(
        self,
        log_dir: str | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str = "",
    ) -> None:
        if not log_dir:  # torch's default: runs/<date>_<host><comment>
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self._options = (max_queue, flush_secs, filename_suffix)
        self._writer = _event_writer(self.log_dir, *self._options)
        self._available = self._writer is not None
        self._warned: set[str] = set()

    def _file_writer(self) -> Any:
        """The open event file; after close(), a new one in the same folder, as torch's writer reopens
        on the next add_* (a script that closes it after add_graph and logs on in the loop)."""
        if self._writer is None and self._available:
            self._writer = _event_writer(self.log_dir, *self._options)
        return self._writer

    def get_logdir(self) -> str:
        return self.log_dir

    def _add(self, summary: Any, global_step: Any, walltime: float | None) -> None:
        from tensorboard.compat.proto.event_pb2 import Event

        step = int(_number(global_step)) if global_step is not None else None
        event = Event(summary=summary, wall_time=walltime if walltime is not None else time.time())
        if step is not None:
            event.step = step
        self._file_writer().add_event(event)

    def add_scalar(
        self, tag: str, scalar_value: Any, global_step: Any = None, walltime: float | None = None, **_: Any
    ) -> None:
        if self._file_writer() is None:
            return
        from tensorboard.compat.proto.summary_pb2 import Summary

        value = Summary.Value(tag=tag, simple_value=_number(scalar_value))
        self._add(Summary(value=[value]), global_step, walltime)

    def add_scalars(
        self, main_tag: str, tag_scalar_dict: dict, global_step: Any = None, walltime: float | None = None
    ) -> None:
        """One tag per key, ``main_tag/key`` (torch writes each to its own sub-folder of log_dir)."""
        for key, value in tag_scalar_dict.items():
            self.add_scalar(f"{main_tag}/{key}", value, global_step, walltime)

    def add_histogram(
        self,
        tag: str,
        values: Any,
        global_step: Any = None,
        bins: Any = "tensorflow",
        walltime: float | None = None,
        **_: Any,
    ) -> None:
        """numpy's bins (30 for torch's default 'tensorflow' scheme): the same counts TensorBoard plots."""
        if self._file_writer() is None:
            return
        import numpy as np
        from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary

        data = np.asarray(values.asnumpy() if hasattr(values, "asnumpy") else values, dtype=np.float64).ravel()
        counts, edges = np.histogram(data, bins=30 if bins == "tensorflow" else bins)
        hist = HistogramProto(
            min=float(data.min()), max=float(data.max()), num=int(data.size), sum=float(data.sum()),
            sum_squares=float((data * data).sum()), bucket_limit=edges[1:].tolist(), bucket=counts.tolist(),
        )  # fmt: skip
        self._add(Summary(value=[Summary.Value(tag=tag, histo=hist)]), global_step, walltime)

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("add_"):
            raise AttributeError(name)

        def not_recorded(*args: Any, **kwargs: Any) -> None:
            if name not in self._warned:
                self._warned.add(name)
                warnings.warn(f"torch2ms SummaryWriter: {name} records nothing", RuntimeWarning, stacklevel=2)

        return not_recorded
