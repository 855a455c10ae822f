"""``compare-train --api``, torch side: record the API calls of one training step's forward and loss.

At the step the parent names (``api_step`` in the config: the first divergent one), the recording starts
at the first outermost call of a trained model with gradients on and ends when that step's backward()
starts; the calls made from the script's lines and from the trained models' classes are kept (as
``compare --api`` keeps them) and written to this side's folder for the parent to align. Loaded by path
(torch_boot's ``_load``): the torch side may run where torch2ms is not installed, so the recorder comes
from ``align/api_record.py`` by path too, and it needs numpy and the standard library only.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any


def _api_record() -> Any:
    key = "_torch2ms_align_api_record"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, Path(__file__).parents[1] / "align" / "api_record.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]


class TorchApiWindow:
    def __init__(self, side: Any, config: dict[str, Any]) -> None:
        self.side, self.step = side, int(config["api_step"])
        self.budget = int(config.get("api_bytes") or 1 << 26)
        self.script = config["torch_script"]
        self.rec: Any = None
        self.mode: Any = None
        self.done = False

    def maybe_start(self, module: Any) -> None:
        """At an outermost module call: start when it is a trained model's training forward of the step."""
        import torch

        if self.done or self.mode is not None or len(self.side.rec.events) != self.step:
            return
        if not torch.is_grad_enabled() or all(m.module is not module for m in self.side.models):
            return
        api = _api_record()
        framework = os.path.dirname(os.path.realpath(torch.__file__))
        modules = [x for m in self.side.models for x in m.module.modules()]
        files = api.user_files(modules, framework) | {self.script, os.path.realpath(self.script)}
        self.rec = api.Recorder(api.torch_numpy, self.budget)
        self.mode = api.torch_mode(self.rec, files)
        self.mode.__enter__()

    def at_backward(self) -> None:
        self.stop()

    def stop(self, error: dict[str, Any] | None = None) -> None:
        """The step's backward() starts (or the script ends): leave the mode and write the recording."""
        if self.mode is None:
            return
        self.mode.__exit__(None, None, None)
        self.mode, self.done = None, True
        _api_record().save_groups(self.rec, self.side.rec.out, error)
