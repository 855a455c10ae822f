"""Source-to-source conversion PyTorch → MindSpore (libcst, driven by the KB).

``pipeline.py`` lists the stages one file goes through; ``project.py`` converts a tree.
"""

from .pipeline import ConvertedModule, convert_source
from .project import ConvertError, ConvertReport, convert_tree

__all__ = ["ConvertError", "ConvertReport", "ConvertedModule", "convert_source", "convert_tree"]
