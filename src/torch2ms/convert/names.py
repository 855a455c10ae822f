"""Short MindSpore names and the imports they need.

The KB and rewrite engine speak full names (``mindspore.nn.Conv2d``); converted code reads like
hand-written MindSpore (``nn.Conv2d`` with ``from mindspore import nn``). Names are shortened on the
parsed expression, never in its text: a string literal (``"mindspore.nn.weights.pt"``) is the user's
and stays byte for byte.
"""

from __future__ import annotations

import functools
import re

import libcst as cst

# (full prefix, short prefix, import statement), most specific first.
ALIASES: tuple[tuple[str, str, str], ...] = (
    ("mindspore.scipy.linalg.", "linalg.", "from mindspore.scipy import linalg"),
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
# Submodules ``import mindspore`` does not load: under the ``ms.`` fallback they are imported too.
_LOADS = {"mindspore.scipy.": "import mindspore.scipy.linalg"}

# Canonical order of generated imports (stable output).
IMPORT_ORDER = [imp for _, _, imp in reversed(ALIASES)] + sorted(_LOADS.values())


class MindSporeNames:
    """Shortens full MindSpore names in generated source and remembers the imports needed."""

    def __init__(self, taken: set[str] | frozenset[str] = frozenset()) -> None:
        # A short alias the user's own code already uses (a variable called `ops`) is not used.
        self.taken = frozenset(taken)
        self.needed: set[str] = set()

    def parse(self, source: str) -> cst.BaseExpression:
        """``source`` (full names) parsed, its names shortened; the imports they need remembered."""
        node, needed = _parse_short(source, self.taken)
        self.needed.update(needed)
        return node

    def short_name(self, full: str) -> str:
        for prefix, short, imp in ALIASES:
            if full.startswith(prefix):
                alias = short.rstrip(".")
                if alias in self.taken:
                    break
                self.needed.add(imp)
                return short + full[len(prefix) :]
        self.needed.add(_FALLBACK)
        self.needed.update(imp for prefix, imp in _LOADS.items() if full.startswith(prefix))
        return "ms." + full[len("mindspore.") :]

    def runtime_name(self, name: str) -> str:
        # Helpers of torch2ms.runtime are imported by name: `from torch2ms.runtime import add_module`;
        # under another name where the file binds that one itself (`ckpt_path = "m.pt"`, a class
        # Generator), which would shadow the helper.
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


def _chain(dotted_name: str, like: cst.Attribute) -> cst.BaseExpression:
    """A Name/Attribute chain for ``a.b.c``, with the parentheses of the node it replaces."""
    first, *rest = dotted_name.split(".")
    node: cst.BaseExpression = cst.Name(first)
    for part in rest:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node.with_changes(lpar=like.lpar, rpar=like.rpar)


class _Shortener(cst.CSTTransformer):
    """Replaces each outermost ``mindspore.a.b`` / ``torch2ms.runtime.f`` chain; strings are leaves it never edits."""

    def __init__(self, names: MindSporeNames) -> None:
        super().__init__()
        self.names = names
        self.replace: dict[int, str] = {}

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        parts = _parts(node)
        if parts is None or parts[0] not in ("mindspore", "torch2ms"):
            return True
        if parts[0] == "mindspore":
            self.replace[id(node)] = self.names.short_name(".".join(parts))
        elif len(parts) >= 3 and parts[1] == "runtime":
            self.replace[id(node)] = ".".join([self.names.runtime_name(parts[2]), *parts[3:]])
        else:
            return True
        return False

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        short = self.replace.get(id(original_node))
        return updated_node if short is None else _chain(short, updated_node)


def _parts(node: cst.BaseExpression) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return parts[::-1]


@functools.lru_cache(maxsize=8192)
def _parse_short(source: str, taken: frozenset[str]) -> tuple[cst.BaseExpression, frozenset[str]]:
    """Parsed and shortened once per (text, names the file binds): libcst nodes are immutable, so one
    node may sit in many places."""
    names = MindSporeNames(taken)
    node = cst.parse_expression(source).visit(_Shortener(names))
    assert isinstance(node, cst.BaseExpression)
    return node, frozenset(names.needed)
