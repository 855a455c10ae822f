"""Short MindSpore names and the imports they need.

The KB and rewrite engine speak full names (``mindspore.nn.Conv2d``); converted code reads like
hand-written MindSpore (``nn.Conv2d`` with ``from mindspore import nn``).
"""

from __future__ import annotations

import re

# (full prefix, short prefix, import statement), most specific first.
ALIASES: tuple[tuple[str, str, str], ...] = (
    ("mindspore.experimental.optim.", "optim.", "from mindspore.experimental import optim"),
    ("mindspore.common.initializer.", "init.", "from mindspore.common import initializer as init"),
    ("mindspore.dataset.vision.", "vision.", "from mindspore.dataset import vision"),
    ("mindspore.dataset.transforms.", "transforms.", "from mindspore.dataset import transforms"),
    ("mindspore.dataset.", "ds.", "import mindspore.dataset as ds"),
    ("mindspore.nn.", "nn.", "from mindspore import nn"),
    ("mindspore.ops.", "ops.", "from mindspore import ops"),
    ("mindspore.", "ms.", "import mindspore as ms"),
)
_FALLBACK = "import mindspore as ms"
_RUNTIME = re.compile(r"(?<![\w.])torch2ms\.runtime\.([A-Za-z_]\w*)")
_FULL = re.compile(r"(?<![\w.])mindspore(?:\.[A-Za-z_]\w*)+")

# Canonical order of generated imports (stable output).
IMPORT_ORDER = [imp for _, _, imp in reversed(ALIASES)]


class MindSporeNames:
    """Shortens full MindSpore names in generated source and remembers the imports needed."""

    def __init__(self, taken: set[str] | frozenset[str] = frozenset()) -> None:
        # A short alias the user's own code already uses (a variable called `ops`) is not used.
        self.taken = set(taken)
        self.needed: set[str] = set()

    def _short(self, full: str) -> str:
        for prefix, short, imp in ALIASES:
            if full.startswith(prefix):
                alias = short.rstrip(".")
                if alias in self.taken:
                    break
                self.needed.add(imp)
                return short + full[len(prefix) :]
        self.needed.add(_FALLBACK)
        return "ms." + full[len("mindspore.") :]

    def shorten(self, source: str) -> str:
        source = _RUNTIME.sub(self._runtime, source)
        return _FULL.sub(lambda m: self._short(m.group(0)), source)

    def _runtime(self, m: re.Match) -> str:
        # Helpers of torch2ms.runtime are imported by name: `from torch2ms.runtime import add_module`;
        # under another name where the file binds that one itself (`ckpt_path = "m.pt"`, a class
        # Generator), which would shadow the helper.
        name = m.group(1)
        if name not in self.taken:
            self.needed.add(f"from torch2ms.runtime import {name}")
            return name
        alias = f"torch2ms_{name}"
        self.needed.add(f"from torch2ms.runtime import {name} as {alias}")
        return alias

    def import_lines(self) -> list[str]:
        lines = [imp for imp in IMPORT_ORDER if imp in self.needed]
        helpers = sorted(imp.split(" import ", 1)[1] for imp in self.needed if imp.startswith("from torch2ms.runtime "))
        if helpers:
            lines.append("from torch2ms.runtime import " + ", ".join(helpers))
        # `from mindspore import nn` + `from mindspore import ops` → `from mindspore import nn, ops`
        plain = sorted(line.rsplit(" ", 1)[1] for line in lines if _PLAIN.fullmatch(line))
        out = [line for line in lines if not _PLAIN.fullmatch(line)]
        if plain:
            at = 1 if out and out[0] == "import mindspore as ms" else 0
            out.insert(at, "from mindspore import " + ", ".join(plain))
        return out


_PLAIN = re.compile(r"from mindspore import \w+")
