"""What ``compare`` is asked to do: :class:`CompareOptions`, :class:`TrainOptions` and their checks.

Every check runs before anything is imported or built, so a bad option costs nothing and answers
with one line (:class:`CompareUsageError`, exit 2).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..i18n import _

LOSSES = ("ce", "mse", "l1", "model")
OPTIMIZERS = ("sgd", "adam", "adamw")
# compare keeps every layer's output of a forward: an input this big is a typo, not a test.
MAX_INPUT_ELEMENTS = 1 << 24
INPUT_DTYPES = ("float32", "float64", "float16", "int32", "int64", "bool")


class CompareUsageError(ValueError):
    """Bad specs, options, inputs or files: the CLI prints one line and exits 2."""


@dataclass(frozen=True)
class LossSpec:
    """``ce`` (class axis 1), ``ce:AXIS`` (e.g. ``ce:-1`` for (batch, time, vocab)), ``mse``, ``l1``, or
    ``model`` (the model returns the loss itself)."""

    kind: str = "ce"
    axis: int | None = None

    @classmethod
    def parse(cls, text: str) -> LossSpec:
        kind, _sep, axis = text.strip().lower().partition(":")
        if kind not in LOSSES:
            raise CompareUsageError(_("--loss {text!r}: choose one of ce, ce:AXIS, mse, l1, model").format(text=text))
        if axis and kind != "ce":
            raise CompareUsageError(_("--loss {text!r}: only ce takes an axis (ce:AXIS)").format(text=text))
        try:
            return cls(kind, int(axis) if axis else None)
        except ValueError:
            raise CompareUsageError(
                _("--loss {text!r}: the axis must be an integer, e.g. ce:-1").format(text=text)
            ) from None

    def __str__(self) -> str:
        return f"{self.kind}:{self.axis}" if self.axis is not None else self.kind


@dataclass
class TrainOptions:
    steps: int = 0
    optimizer: str = "sgd"
    lr: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 0.0
    loss: str = "ce"
    # Which element of a tuple/list (index) or dict (key) output the loss reads; None: the only tensor,
    # or the first element.
    output_index: int | str | None = None

    def validate(self) -> None:
        if self.steps < 0:
            raise CompareUsageError(
                _("--train-steps {steps}: give 0 (no training) or a positive number").format(steps=self.steps)
            )
        if self.optimizer.lower() not in OPTIMIZERS:
            raise CompareUsageError(
                _("--optimizer {optimizer!r}: choose sgd, adam or adamw").format(optimizer=self.optimizer)
            )
        for name, value in (("--lr", self.lr), ("--momentum", self.momentum), ("--weight-decay", self.weight_decay)):
            if not math.isfinite(value) or value < 0:
                raise CompareUsageError(_("{name} {value}: must be a finite number ≥ 0").format(name=name, value=value))
        LossSpec.parse(self.loss)

    def request(self) -> dict[str, Any]:
        """The JSON the torch side receives."""
        return {
            "steps": self.steps,
            "optimizer": self.optimizer.lower(),
            "lr": self.lr,
            "momentum": self.momentum,
            "weight_decay": self.weight_decay,
            "loss": str(LossSpec.parse(self.loss)),
            "output_index": self.output_index,
        }


@dataclass
class CompareOptions:
    """Everything ``compare_models`` takes besides the two specs."""

    weights: str | None = None
    inputs: str | Path | Mapping[str, Any] | None = None  # .npz path or arrays: x (or x0, x1, ...), train_*
    input_shapes: Sequence[Sequence[int]] = ()  # seeded random inputs, one shape per forward argument
    input_dtypes: Sequence[str] = ("float32",)  # one for all inputs, or one per input
    seed: int = 0
    train: TrainOptions = field(default_factory=TrainOptions)
    out_dir: str | Path | None = None
    torch_python: str | None = None
    graph: bool = True
    randomize_norms: bool = True
    threads: int | None = None
    replay_all: bool = False
    import_timeout: float | None = None  # None: the default (60 s); ≤ 0: no check
    api: bool = False  # also record every op call of the forward on both sides and name the first wrong line
    api_max_mb: float = 256.0  # tensors kept by the --api recording, both sides together

    def validate(self) -> None:
        """Raise CompareUsageError for anything wrong that can be seen without running a model."""
        self.train.validate()
        if self.weights is not None and not Path(self.weights).is_file():
            raise CompareUsageError(_("--weights {weights}: no such file").format(weights=self.weights))
        if self.inputs is None and not self.input_shapes:
            raise CompareUsageError(_("give --inputs X.npz or --input-shape (e.g. 2,3,32,32)"))
        if self.inputs is None:
            check_input_shapes(self.input_shapes, self.input_dtypes)
        if self.out_dir is not None:
            check_out_dir(Path(self.out_dir))
        if self.api and self.torch_python is not None:
            raise CompareUsageError(_("--api records torch in this process: leave out --torch-python"))
        if not math.isfinite(self.api_max_mb) or self.api_max_mb < 0:
            raise CompareUsageError(_("--api-max-mb {mb}: must be a finite number ≥ 0").format(mb=self.api_max_mb))
        if self.torch_python is not None and not Path(self.torch_python).is_file():
            raise CompareUsageError(
                _("--torch-python {torch_python}: no such interpreter").format(torch_python=self.torch_python)
            )


def check_input_shapes(shapes: Sequence[Sequence[int]], dtypes: Sequence[str]) -> None:
    if len(dtypes) not in (1, len(shapes)):
        raise CompareUsageError(
            _("{n_dtypes} --input-dtype values for {n_shapes} --input-shape values: give one, or one per input").format(
                n_dtypes=len(dtypes), n_shapes=len(shapes)
            )
        )
    for dtype in dtypes:
        if dtype not in INPUT_DTYPES:
            raise CompareUsageError(
                _("--input-dtype {dtype!r}: choose one of {choices}").format(
                    dtype=dtype, choices=", ".join(INPUT_DTYPES)
                )
            )
    for shape in shapes:
        text = ",".join(map(str, shape))
        if not shape or any(int(s) <= 0 for s in shape):
            raise CompareUsageError(
                _("--input-shape {text}: every dimension must be a positive integer").format(text=text)
            )
        if math.prod(int(s) for s in shape) > MAX_INPUT_ELEMENTS:
            raise CompareUsageError(
                _(
                    "--input-shape {text}: {elements:,} elements; compare keeps every layer's output, keep an "
                    "input under {limit:,} elements (a batch of 1 or 2 is enough)"
                ).format(text=text, elements=math.prod(int(s) for s in shape), limit=MAX_INPUT_ELEMENTS)
            )


def check_out_dir(out: Path) -> None:
    """--out must be a directory we can write (or create): never a file."""
    if out.exists() and not out.is_dir():
        raise CompareUsageError(
            _("--out {out}: is a file; give a directory for report.json and report.html").format(out=out)
        )
    parent = out
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise CompareUsageError(
            _("--out {out}: {parent} is a file, so the directory cannot be created").format(out=out, parent=parent)
        )
    if not os.access(parent, os.W_OK):
        raise CompareUsageError(_("--out {out}: {parent} is not writable").format(out=out, parent=parent))
