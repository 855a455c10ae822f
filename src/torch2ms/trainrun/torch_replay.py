"""``torch2ms replay --train``, torch side: the call configurations of N training steps.

From the first training-mode call of a trained model to the end of the run (the steps the config asks
for), every torch call made by the script's lines and the trained models' classes is logged as a
configuration (replay/record.py) and the log is written to this side's folder for the parent to replay.
Loaded by path (torch_boot's ``_load``), as is the recorder: numpy and the standard library only.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any


def _load(path: Path, key: str) -> Any:
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]


def _record() -> Any:
    return _load(Path(__file__).parents[1] / "replay" / "record.py", "_torch2ms_replay_record")


def _api_record() -> Any:
    return _load(Path(__file__).parents[1] / "align" / "api_record.py", "_torch2ms_align_api_record")


class ReplayWindow:
    def __init__(self, side: Any, config: dict[str, Any]) -> None:
        self.side, self.script = side, config["torch_script"]
        self.log = _record().CallLog(int(config.get("replay_bytes") or 1 << 28))
        self.mode: Any = None
        self.done = False

    def maybe_start(self, module: Any) -> None:
        import torch

        if self.done or self.mode is not None or not torch.is_grad_enabled():
            return
        if all(m.module is not module for m in self.side.models):
            return
        framework = os.path.dirname(os.path.realpath(torch.__file__))
        modules = [x for m in self.side.models for x in m.module.modules()]
        files = _api_record().user_files(modules, framework) | {self.script, os.path.realpath(self.script)}
        self.mode = _record().call_mode(self.log, files)
        self.mode.__enter__()

    def at_backward(self) -> None:
        """The backward of a step: the recording goes on through the steps."""

    def stop(self, error: dict[str, Any] | None = None) -> None:
        if self.mode is None:
            return
        self.mode.__exit__(None, None, None)
        self.mode, self.done = None, True
        _record().save_log(self.log, self.side.rec.out)
