"""The comparison report: a dataclass (report_files.py writes report.json, and report_text /
report_html the terminal table and a self-contained HTML page with the plots)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .rows import Divergence, LayerRow, OutputCheck, TrainingResult

# Formatting helpers the terminal and HTML reports share live in report_format.py.
STATUS_EXIT = {"match": 0, "divergence": 1}


@dataclass
class CompareReport:
    status: str  # "match" | "divergence"
    torch_spec: str
    ms_spec: str
    seed: int
    input_shapes: list[list[int]]
    alignment: str = "name"
    layers: list[LayerRow] = field(default_factory=list)
    first_divergence: Divergence | None = None
    output: dict[str, OutputCheck] = field(default_factory=dict)  # "pynative", "graph"
    weights: dict[str, Any] = field(default_factory=dict)
    missing_layers: list[str] = field(default_factory=list)
    extra_ms_cells: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    training: TrainingResult | None = None
    post_training_layers: list[LayerRow] | None = None
    two_process: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    api: dict[str, Any] | None = None  # compare --api: the first divergent call (api_align.align)

    @property
    def exit_code(self) -> int:
        return STATUS_EXIT.get(self.status, 1)

    @property
    def ok(self) -> bool:
        return self.status == "match"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["training"] = self.training.to_dict() if self.training is not None else None
        return data
