"""Helpers on Python source fragments, shared by the rewrite engine and its handlers.

Rules and handlers work on source text (so the converter and the differential tests share them
exactly); these are the few questions they ask of a fragment. Only the standard library: ``kb``
sits at the bottom of torch2ms and imports nothing above it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["NOT_LITERAL", "dotted", "draws_random", "is_int", "known_ints", "literal", "normalise", "paren"]

# Fragments that never need parentheses around them before ``.attr``, ``[i]`` or an operator.
_ATOMIC = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Subscript, ast.Tuple, ast.List, ast.Dict)

NOT_LITERAL: Any = object()


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def literal(src: str | None) -> Any:
    """The Python value of a literal argument source, or ``NOT_LITERAL``."""
    if src is None:
        return NOT_LITERAL
    try:
        return ast.literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return NOT_LITERAL


# Names the caller (the converter) has shown to be ints where the call is made: see analysis/int_names.py.
# Held as a function: finding them costs a walk of the function, and few rules ever ask.
_KNOWN_INTS: ContextVar[Callable[[], frozenset[str]]] = ContextVar("torch2ms_known_ints", default=frozenset)


@contextmanager
def known_ints(names: frozenset[str] | Callable[[], frozenset[str]]) -> Iterator[None]:
    """While rules run on one call: these names are ints there (``is_int`` answers for them).
    ``names`` may be a function giving them, called only when a rule asks."""
    token = _KNOWN_INTS.set(names if callable(names) else lambda: names)
    try:
        yield
    finally:
        _KNOWN_INTS.reset(token)


def is_int(src: str | None) -> bool:
    """Is the fragment an int: an int literal, or a name the converter has shown to be one?"""
    value = literal(src)
    if value is not NOT_LITERAL:
        return type(value) is int
    return src is not None and src.strip() in _KNOWN_INTS.get()()


def _wrapped(src: str) -> bool:
    """Is the whole source already inside one pair of parentheses?"""
    if not (src.startswith("(") and src.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(src):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(src) - 1:
            return False
    return True


def paren(src: str) -> str:
    """``src`` parenthesised unless it is atomic: safe before ``.attr``, ``[i]`` or an operator."""
    if _wrapped(src.strip()):
        return src
    try:
        node = ast.parse(src.strip(), mode="eval").body
    except SyntaxError:
        return f"({src})"
    if isinstance(node, _ATOMIC) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant)):
        return src
    return f"({src})"


def normalise(src: str) -> str:
    """One spelling per expression (``ast.unparse``), to compare argument values."""
    try:
        return ast.unparse(ast.parse(src.strip(), mode="eval"))
    except SyntaxError:
        return src.strip()


# Calls whose tensor is drawn at random (or left uninitialised): a buffer registered with one holds values
# the checkpoint has and a rebuilt network has not.
_RANDOM_CALL = re.compile(
    r"\b(randn|rand|randint|randperm|randn_like|rand_like|randint_like|normal|standard_normal|uniform|"
    r"bernoulli|multinomial|empty|empty_like|normal_|uniform_)\s*\("
)


def draws_random(src: str) -> bool:
    """Whether an expression's source draws its tensor at random (``scale * torch.randn((2, n))``,
    ``ops.randn``, ``torch.empty(...).normal_()``), torch or converted spelling alike."""
    return bool(_RANDOM_CALL.search(src))
