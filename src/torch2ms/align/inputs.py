"""Inputs the user gives (an .npz file or a mapping of arrays), in the names both sides use:
``x0..xN`` for the forward, ``train_x0..`` and ``train_y`` for training."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..i18n import _
from .options import CompareUsageError


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise CompareUsageError(_("--inputs {path}: no such file").format(path=path))
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise CompareUsageError(
                    _("--inputs {path}: a single array; save with np.savez(path, x=...)").format(path=path)
                )
            return {k: archive[k] for k in archive.files}
    except CompareUsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same usage error
        raise CompareUsageError(
            _("--inputs {path}: not a readable .npz ({type}: {exc})").format(
                path=path, type=type(exc).__name__, exc=exc
            )
        ) from None


def _renamed(data: Mapping[str, np.ndarray], single: str, prefix: str) -> dict[str, np.ndarray]:
    """``x`` → ``x0``; ``x0, x1, ...`` kept (also for ``train_x``)."""
    if single in data:
        return {f"{prefix}0": np.asarray(data[single])}
    keys = [k for k in data if k.startswith(prefix) and k[len(prefix) :].isdigit()]
    return {k: np.asarray(data[k]) for k in keys}


def given_inputs(inputs: str | Path | Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The forward inputs (and training batches, when present) of an .npz or a mapping."""
    data = dict(inputs) if isinstance(inputs, Mapping) else _read_npz(Path(inputs))
    out = _renamed(data, "x", "x")
    if not out:
        raise CompareUsageError(_("inputs: expected an array named 'x' (or x0, x1, ... for several inputs)"))
    out |= _renamed(data, "train_x", "train_x")
    if "train_y" in data:
        out["train_y"] = np.asarray(data["train_y"])
    return out


def check_training_batches(inputs: Mapping[str, np.ndarray], steps: int, loss_kind: str) -> None:
    """Given batches: one per step for every forward input, and targets unless the model computes the loss."""
    train_x = [k for k in inputs if k.startswith("train_x")]
    if not train_x and "train_y" not in inputs:
        return  # seeded batches, drawn by the torch side
    if not train_x or ("train_y" not in inputs and loss_kind != "model"):
        raise CompareUsageError(_("inputs: give train_x (or train_x0, ...) and train_y together, or neither"))
    n_forward = len([k for k in inputs if k[0] == "x" and k[1:].isdigit()])
    if len(train_x) != n_forward:
        raise CompareUsageError(
            _("inputs: {n_forward} forward input(s) but {n_train_x} train_x array(s)").format(
                n_forward=n_forward, n_train_x=len(train_x)
            )
        )
    short = [k for k in [*train_x, "train_y"] if k in inputs and len(inputs[k]) < steps]
    if short:
        raise CompareUsageError(
            _("inputs: {arrays} hold fewer than {steps} batches (--train-steps)").format(
                arrays=", ".join(short), steps=steps
            )
        )
