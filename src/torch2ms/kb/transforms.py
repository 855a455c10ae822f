"""Registry of named argument transforms and call handlers that the KB data refers to by name.

A *transform* rewrites one torch argument into MindSpore keywords:
``fn(value_src | None, bound, entry) -> dict[ms_keyword, source]``. ``value_src`` is the argument's
source text (``None`` when the call left it at the torch default), ``bound`` all bound arguments.
A *handler* (``template = "@name"``) renders a whole call: ``fn(bound, receiver, entry) -> source``.
Both work on source text, so the converter and the differential tests share them exactly.
The functions themselves live in ``kb/handlers/<namespace>.py``.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable

TRANSFORMS: dict[str, Callable[..., dict[str, str]]] = {}
HANDLERS: dict[str, Callable[..., str]] = {}


class Unsupported(Exception):
    """MindSpore cannot express this argument value; the call is left for a person."""


NOT_LITERAL = object()


def literal(src: str | None):
    """The Python value of a literal argument source, or ``NOT_LITERAL``."""
    if src is None:
        return NOT_LITERAL
    try:
        return ast.literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return NOT_LITERAL


def transform(fn: Callable[..., dict[str, str]]) -> Callable[..., dict[str, str]]:
    """Register an argument transform under its function name."""
    if fn.__name__ in TRANSFORMS:
        raise ValueError(f"transform {fn.__name__} registered twice")
    TRANSFORMS[fn.__name__] = fn
    return fn


def handler(fn: Callable[..., str]) -> Callable[..., str]:
    """Register a whole-call handler (``template = "@name"``) under its function name."""
    if fn.__name__ in HANDLERS:
        raise ValueError(f"handler {fn.__name__} registered twice")
    HANDLERS[fn.__name__] = fn
    return fn


def _load_handler_modules() -> None:
    # Importing each kb/handlers/<name>.py registers its functions.
    from . import handlers

    for mod in pkgutil.iter_modules(handlers.__path__):
        importlib.import_module(f"{handlers.__name__}.{mod.name}")


_load_handler_modules()
