"""Class-name guards narrow a receiver like ``isinstance`` does: the DCGAN-style init function

    classname = m.__class__.__name__
    if classname.find('BatchNorm') != -1:
        m.weight ...

holds a BatchNorm in that branch, so its ``weight`` is MindSpore's ``gamma``. Recognised tests on
``m.__class__.__name__`` / ``type(m).__name__`` (or a name assigned one of them in the function):
``.find('S') != -1`` / ``>= 0``, ``'S' in name``, ``name.startswith('S')``, ``name == 'S'``; the
candidate classes are the torch.nn layers of the knowledge base whose class name fits."""

from __future__ import annotations

from functools import cache
from typing import Any

import libcst as cst


def class_name_aliases(func: cst.FunctionDef) -> dict[str, str]:
    """``classname = m.__class__.__name__`` (or ``type(m).__name__``) at the function's top level → {"classname": "m"}."""
    out: dict[str, str] = {}
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else []
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, owner = small.targets[0].target, _class_name_of(small.value)
                if isinstance(target, cst.Name) and owner is not None:
                    out[target.value] = owner
    return out


def _class_name_of(node: cst.BaseExpression) -> str | None:
    """The receiver name of ``m.__class__.__name__`` or ``type(m).__name__``."""
    if not (isinstance(node, cst.Attribute) and node.attr.value == "__name__"):
        return None
    inner = node.value
    if isinstance(inner, cst.Attribute) and inner.attr.value == "__class__" and isinstance(inner.value, cst.Name):
        return inner.value.value
    if (
        isinstance(inner, cst.Call)
        and isinstance(inner.func, cst.Name)
        and inner.func.value == "type"
        and len(inner.args) == 1
        and isinstance(inner.args[0].value, cst.Name)
    ):
        return inner.args[0].value.value
    return None


def _owner(node: cst.BaseExpression, aliases: dict[str, str]) -> str | None:
    if isinstance(node, cst.Name):
        return aliases.get(node.value)
    return _class_name_of(node)


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _guard(test: cst.BaseExpression, aliases: dict[str, str]) -> tuple[str, str, str] | None:
    """(receiver, how, text) of a class-name test, how in contains/startswith/equals."""
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and len(test.args) == 1:
        owner, text = _owner(test.func.value, aliases), _string(test.args[0].value)
        if owner and text is not None and test.func.attr.value == "startswith":
            return owner, "startswith", text
        return None
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    op, right, left = test.comparisons[0].operator, test.comparisons[0].comparator, test.left
    if isinstance(op, cst.In) and (owner := _owner(right, aliases)) and (text := _string(left)) is not None:
        return owner, "contains", text
    if isinstance(op, cst.Equal) and (owner := _owner(left, aliases)) and (text := _string(right)) is not None:
        return owner, "equals", text
    if isinstance(op, cst.NotEqual | cst.GreaterThanEqual) and _is_found(left, right, op):
        assert isinstance(left, cst.Call) and isinstance(left.func, cst.Attribute)
        owner, text = _owner(left.func.value, aliases), _string(left.args[0].value)
        if owner and text is not None:
            return owner, "contains", text
    return None


def _is_found(left: cst.BaseExpression, right: cst.BaseExpression, op: Any) -> bool:
    """``x.find('S') != -1`` or ``x.find('S') >= 0``."""
    if not (
        isinstance(left, cst.Call)
        and isinstance(left.func, cst.Attribute)
        and left.func.attr.value == "find"
        and len(left.args) == 1
    ):
        return False
    if isinstance(op, cst.NotEqual):
        return (
            isinstance(right, cst.UnaryOperation)
            and isinstance(right.operator, cst.Minus)
            and _is_int(right.expression, "1")
        )
    return _is_int(right, "0")


def _is_int(node: cst.BaseExpression, value: str) -> bool:
    return isinstance(node, cst.Integer) and node.value == value


@cache
def _layer_names(kb: Any) -> tuple[tuple[str, str], ...]:
    """(class name, torch name) of every torch.nn layer class in the knowledge base."""
    out = []
    for entry in kb:
        if entry.kind == "class" and entry.torch.startswith("torch.nn.") and entry.torch.count(".") == 2:
            out.append((entry.torch.rsplit(".", 1)[-1], entry.torch))
    return tuple(out)


def class_name_classes(kb: Any, test: cst.BaseExpression, aliases: dict[str, str]) -> dict[str, list[str]]:
    """{receiver: the torch layer classes whose name passes the test}, or {} when it is no class-name guard."""
    guard = _guard(test, aliases)
    if guard is None:
        return {}
    owner, how, text = guard
    fits = {
        "contains": lambda name: text in name,
        "startswith": lambda name: name.startswith(text),
        "equals": lambda name: name == text,
    }[how]
    names = [torch for name, torch in _layer_names(kb) if fits(name)]
    return {owner: names} if names else {}
