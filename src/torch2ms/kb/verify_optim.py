"""Differential checks that need several training steps: optimizers and LR schedulers.

(To be filled in: runs the torch optimizer and the rewritten MindSpore optimizer for a few steps
on the same parameters and gradients and compares the parameters after each step.)
"""

from __future__ import annotations

from . import KB, Case, Entry


def run_optimizer_case(entry: Entry, case: Case, index: int, kb: KB):
    raise NotImplementedError("optimizer/scheduler checks are not implemented yet")
