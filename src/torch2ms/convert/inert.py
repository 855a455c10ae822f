"""Expressions inside a rewritten statement that hold nothing the rewrite stage could change.

The plan (plan.py) skips whole statements that mention no torch name and no KB method or attribute
name. A statement it keeps is mostly made of such parts too (``self.conv1(x)`` beside one
``torch.flatten``), and a libcst visit of them costs Python dispatch per node for nothing. Here one
plain walk per top-level expression (several times cheaper than a visit) finds which of its nodes
hold, anywhere inside, a name the rewrite acts on; the rewrite stage does not enter the others.

What counts is the plan's own test, taken more widely: a torch name (or a name a construct stage
wrote), any attribute named like a KB method, layer parameter or Tensor attribute (also after
``self.``), and the few names construct hooks act on (``"{:.2f}".format``, ``F.apply``,
``get_parameters``, ``map``). Files with a data pipeline are visited whole: its hooks act on the project's own
names (loaders, dataset classes).
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from ..analysis.imports import ImportMap
from ..kb import KB
from .plan import attribute_names

# Names construct hooks rewrite without any torch name in sight (python_side, autograd_function,
# optimizer_params).
_HOOK_ATTRIBUTES = frozenset({"format", "apply", "get_parameters"})

_FIELDS: dict[type, tuple[str, ...]] = {}
# Fields that hold only punctuation and whitespace (half of all nodes): never a name.
_PUNCTUATION = frozenset(
    {
        "lpar",
        "rpar",
        "comma",
        "operator",
        "equal",
        "colon",
        "dot",
        "semicolon",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
    }
)


def _fields(kind: type, node: cst.CSTNode) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(
            f.name
            for f in dataclasses.fields(node)  # type: ignore[arg-type]
            if f.name not in _PUNCTUATION and not f.name.startswith("whitespace")
        )
    return names


class InertExpressions:
    """Answers, for an expression node of the module being rewritten: may the rewrite change it?"""

    def __init__(self, imap: ImportMap, kb: KB, generated: dict[int, str] | None) -> None:
        self.names = frozenset(
            {local for local, full in imap.names.items() if imap.is_framework(full)}
            | {
                "mindspore",
                "torch2ms",
                "map",
                "format",
            }  # map(lambda ...): graph_mode.py; format(x, spec): python_side.py
        )
        self.attributes = attribute_names(kb) | _HOOK_ATTRIBUTES
        self.generated = generated or {}
        self._live: dict[int, bool] = {}  # id of a node of the module (alive all pass long) → live

    def live(self, node: cst.CSTNode) -> bool:
        hit = self._live.get(id(node))
        return self._mark(node) if hit is None else hit

    def known_inert(self, node: cst.CSTNode) -> bool:
        """A node inside an expression already walked (an argument, a list element, a slice) that
        holds nothing to change; False for nodes not walked yet."""
        return self._live.get(id(node)) is False

    def _mark(self, root: cst.CSTNode) -> bool:
        """Walk ``root`` once, breadth first, and record every node inside it: a parent is live when
        it or anything below it is."""
        found: list[cst.CSTNode] = [root]
        parents = [-1]
        at = 0
        while at < len(found):
            node = found[at]
            for name in _fields(type(node), node):
                value = getattr(node, name)
                if isinstance(value, cst.CSTNode):
                    found.append(value)
                    parents.append(at)
                elif type(value) in (list, tuple):
                    for item in value:
                        found.append(item)
                        parents.append(at)
            at += 1
        flags = [self._acts_on(node) for node in found]
        for i in range(len(found) - 1, 0, -1):
            if flags[i]:
                flags[parents[i]] = True
        for node, flag in zip(found, flags):
            self._live[id(node)] = flag
        return flags[0]

    def _acts_on(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind is cst.Name:
            return node.value in self.names  # type: ignore[attr-defined]
        if kind is cst.Attribute:
            return node.attr.value in self.attributes or id(node) in self.generated  # type: ignore[attr-defined]
        return False
