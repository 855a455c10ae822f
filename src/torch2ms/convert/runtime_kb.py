"""The knowledge base a vendored ``TorchCompat`` / ``compat_base`` carries: ``torch2ms_runtime/_kb/``.

``TorchCompat("torch.nn.Conv2d")`` and ``compat_base("torch.nn.Linear")`` apply a KB entry's argument
rules to arguments known only at run time. In a converted project they reach the KB through
``torch2ms_runtime/_kb/`` (the package replacing ``runtime/_kb.py``): the entries the project names,
written out as data, and the rule engine that applies them — ``kb/rewrite.py`` with the transforms and
handlers those entries use, copied from torch2ms and pruned with ``ast`` like the helpers
(:mod:`.runtime_sources`). The copy keeps torch2ms's layout (``i18n.py``, ``kb/``, ``kb/handlers/``),
so its relative imports and the handler registry work as they are; the same code runs, so the same rules.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..kb import load_kb
from ..kb.schema import Entry
from .runtime_render import part_header, render
from .runtime_sources import Closure, Need, SourceTree

__all__ = ["KbSnapshot", "kb_snapshot"]

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # torch2ms/: the snapshot mirrors its layout
# What the engine needs whatever the entries: the call rewrite and the entry's shape.
_ENGINE: list[Need] = [("kb/rewrite.py", "rewrite_call"), ("kb/schema.py", "Entry"), ("kb/schema.py", "ArgRule")]
_PACKAGES = ("kb/__init__.py", "kb/handlers/__init__.py")  # kept even when empty: they make the packages
# What the rules never read; the Chinese notes too: the vendored runtime speaks English (its errors copy
# torch's), and the copy should not change when a translation does.
_DROPPED_FIELDS = {"cases", "source", "proven_by", "review", "params", "layout", "note_zh", "arg_notes_zh"}
_RUNTIME_NAME = re.compile(r"torch2ms\.runtime\.(\w+)")
_REGISTERED = re.compile(r"(\w+)\.(\w+)")


@dataclass
class KbSnapshot:
    files: dict[str, str]  # path inside _kb/ → text
    runtime_names: set[str]  # torch2ms.runtime helpers the entries' MindSpore source can name


@functools.cache
def kb_sources() -> SourceTree:
    """``torch2ms/i18n.py`` and ``torch2ms/kb/``, parsed once (a handler module is pruned to the functions used)."""
    paths = [PACKAGE_ROOT / "i18n.py", *(PACKAGE_ROOT / "kb").rglob("*.py")]
    return SourceTree(paths, PACKAGE_ROOT)


def kb_snapshot(apis: Iterable[str]) -> KbSnapshot:
    """The ``_kb/`` package for the torch APIs ``apis`` (the names given to TorchCompat / compat_base)."""
    kb = load_kb()
    entries = {name: e for name in sorted(set(apis)) if (e := kb.get(name)) is not None}
    tree = kb_sources()
    needs = list(_ENGINE)
    for entry in entries.values():
        needs += [n for reg in _registered_names(entry) if (n := _handler_need(tree, reg)) is not None]
    closure = _closure(tree, needs)
    for key in _PACKAGES:
        closure.statements.setdefault(key, set())
    files = {key: render(tree.modules[key], closure, []) for key in sorted(closure.statements)}
    files["__init__.py"] = _entry_module(entries)
    names = {m for e in entries.values() for m in _RUNTIME_NAME.findall(_entry_text(e))}
    names |= {m for text in _kept_texts(tree, closure) for m in _RUNTIME_NAME.findall(text)}
    return KbSnapshot(files, names)


def _registered_names(entry: Entry) -> list[str]:
    """The transforms and the handler its data names (``<handlers module>.<function>``)."""
    names = [rule.transform for rule in entry.args.values() if rule.transform]
    if entry.template.startswith("@"):
        names.append(entry.template[1:])
    return names


def _handler_need(tree: SourceTree, registered: str) -> Need | None:
    module, _, function = registered.partition(".")
    key = f"kb/handlers/{module}.py"
    mod = tree.modules.get(key)
    return (key, function) if mod is not None and function in mod.binds else None


def _closure(tree: SourceTree, needs: list[Need]) -> Closure:
    """What the needs reach, and what a kept handler names by its registry string
    (``HANDLERS["torch_ops.xlogy"]``), until nothing new is named."""
    while True:
        closure = tree.closure(needs)
        named = {
            need
            for key, kept in closure.statements.items()
            if key.startswith("kb/handlers/")
            for i in kept
            for node in ast.walk(tree.modules[key].tree.body[i])
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _REGISTERED.fullmatch(node.value)
            if (need := _handler_need(tree, node.value)) is not None
        }
        if named <= set(needs):
            return closure
        needs = needs + sorted(named - set(needs), key=str)


def _kept_texts(tree: SourceTree, closure: Closure) -> Iterable[str]:
    for key, kept in closure.statements.items():
        mod = tree.modules[key]
        lines = _lines(mod.text) if kept else []
        for i in kept:
            segment = _segment(lines, mod.tree.body[i])
            if segment:
                yield segment


_LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def _lines(text: str) -> list[str]:
    """``text`` split as the parser splits it (after ``\\n``, ``\\r\\n`` and ``\\r`` only), line ends kept."""
    lines = _LINE_END.split(text)
    return lines[:-1] if lines and not lines[-1] else lines


def _segment(lines: list[str], node: ast.stmt) -> str | None:
    """``ast.get_source_segment(text, node)`` from the text's lines, split once per module (the library
    function splits the whole text for every statement)."""
    if node.end_lineno is None or node.end_col_offset is None:
        return None
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first].encode()[node.col_offset : node.end_col_offset].decode()
    head = lines[first].encode()[node.col_offset :].decode()
    tail = lines[last].encode()[: node.end_col_offset].decode()
    return "".join([head, *lines[first + 1 : last], tail])


def _entry_text(entry: Entry) -> str:
    return " ".join([entry.ms, entry.template, *(r.target or "" for r in entry.args.values())])


def _entry_module(entries: dict[str, Entry]) -> str:
    """``_kb/__init__.py``: the entries as data, and the two names ``compat.py`` imports."""
    body = "".join(f"    {name!r}: {_literal(entry, 4)},\n" for name, entry in entries.items())
    uses_rules = any(e.args for e in entries.values())
    return (
        part_header()
        + '"""The knowledge-base entries this project gives TorchCompat / compat_base, as data, and the rule\n'
        + "engine that applies their argument rules to run-time arguments (kb/: a pruned copy of torch2ms's).\n"
        + '"""\n\nfrom __future__ import annotations\n\n'
        + "from .kb.rewrite import rewrite_call\n"
        + f"from .kb.schema import {'ArgRule, Entry' if uses_rules else 'Entry'}\n\n"
        + '__all__ = ["ENTRIES", "kb_entry", "rewrite_call"]\n\n'
        + f"ENTRIES = {{\n{body}}}\n\n\n"
        + "def kb_entry(torch_name: str) -> Entry | None:\n"
        + '    """The entry of ``torch_name`` (None: not one this project names)."""\n'
        + "    return ENTRIES.get(torch_name)\n"
    )


def _literal(value: Any, indent: int) -> str:
    """Python source for an entry's value: a dataclass by its fields not at their defaults, a dict one
    item a line; anything else (str, bool, None, tuples of them) as ``repr`` writes it."""
    pad = " " * indent
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [
            (f.name, getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name not in _DROPPED_FIELDS and getattr(value, f.name) != _default(f)
        ]
        inner = "".join(f"{pad}    {name}={_literal(v, indent + 4)},\n" for name, v in fields)
        return f"{type(value).__name__}(\n{inner}{pad})"
    if isinstance(value, dict) and value:
        inner = "".join(f"{pad}    {k!r}: {_literal(v, indent + 4)},\n" for k, v in value.items())
        return f"{{\n{inner}{pad}}}"
    return repr(value)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING  # required: always written
