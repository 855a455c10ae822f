"""``compare-train --api``, MindSpore side: record the API calls of one training step's forward and loss.

At the step the parent names (``api_step``), the first Python-level call of the ``value_and_grad``
function (the differentiated forward and loss) runs under ``compare --api``'s profiler; the calls made
from the converted script's lines and from the trained Cells' classes are written to this side's
folder. PyNative only: the parent runs this side in PyNative for the recording.
"""

from __future__ import annotations

import os
from typing import Any

from ..align import api_record


class MsApiWindow:
    def __init__(self, side: Any, config: dict[str, Any]) -> None:
        self.side, self.step = side, int(config["api_step"])
        self.budget = int(config.get("api_bytes") or 1 << 26)
        self.script = config["ms_script"]
        self.rec: api_record.Recorder | None = None
        self.prof: api_record.MsProfile | None = None
        self.done = False

    def start(self) -> None:
        if self.done or self.prof is not None or len(self.side.rec.events) != self.step:
            return
        cells = [c for m in self.side.models for _n, c in m.cell.cells_and_names()]
        files = api_record.user_files(cells, api_record.ms_dir()) | {self.script, os.path.realpath(self.script)}
        self.rec = api_record.Recorder(api_record.ms_numpy, self.budget)
        self.prof = api_record.MsProfile(self.rec, files)
        self.prof.start()

    def stop(self, error: dict[str, Any] | None = None) -> None:
        if self.prof is None or self.rec is None:
            return
        self.prof.stop()
        self.prof, self.done = None, True
        api_record.save_groups(self.rec, self.side.rec.out, error)
