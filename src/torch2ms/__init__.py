"""torch2ms: move a PyTorch project to MindSpore 2.x and prove the move is right."""

__version__ = "0.1.0"
