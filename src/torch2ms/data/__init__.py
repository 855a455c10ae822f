"""Data-pipeline check (R25, with R14–R16): same data through a torch and a MindSpore pipeline, compared."""

from .check import check_data, compare_sides
from .collect import Side, SpecError, collect, load_factory
from .diagnose import Finding
from .report import ColumnReport, DataReport

__all__ = ["check_data", "compare_sides", "collect", "load_factory", "Side", "SpecError", "Finding",
           "ColumnReport", "DataReport"]
