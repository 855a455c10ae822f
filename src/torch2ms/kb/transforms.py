"""Registry of the argument transforms and call handlers that KB data names.

A *transform* rewrites one torch argument into MindSpore keywords:
``fn(value_src | None, bound, entry) -> dict[ms_keyword, source]``. ``value_src`` is the argument's
source text (``None`` when the call left it at the torch default), ``bound`` all bound arguments.
A *handler* (``template = "@module.function"``) renders a whole call: ``fn(bound, receiver, entry) -> source``.
Both work on source text, so the converter and the differential tests share them exactly.

The functions live in ``kb/handlers/<module>.py`` and are registered under ``<module>.<function>``
(``tensor_methods.to``, ``common.conv_padding``). A module is imported the first time one of its
names is asked for, so loading the KB or rewriting one call imports only the handlers it uses.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

__all__ = ["HANDLERS", "TRANSFORMS", "Registry", "Unsupported", "handler", "registry_name", "transform"]

# Relative to this package: a converted project's torch2ms_runtime carries a copy of it (convert/runtime_kb.py).
_HANDLER_PACKAGE = f"{__package__ or 'torch2ms.kb'}.handlers"


class Unsupported(Exception):
    """MindSpore cannot express this argument value; the call is left for a person."""


@functools.cache
def _handler_modules() -> tuple[str, ...]:
    from . import handlers

    return tuple(sorted(m.name for m in pkgutil.iter_modules(handlers.__path__)))


class Registry(dict[str, Callable[..., Any]]):
    """``<module>.<function>`` → function; asking for a name imports its module on first use."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def _import_module_of(self, name: str) -> None:
        module = name.split(".", 1)[0]
        if "." in name and module.isidentifier() and module in _handler_modules():
            importlib.import_module(f"{_HANDLER_PACKAGE}.{module}")

    def __missing__(self, name: str) -> Callable[..., Any]:
        self._import_module_of(name)
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        raise KeyError(f"unknown {self.kind} {name!r} (expected <kb/handlers module>.<function>)")

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and not dict.__contains__(self, name):
            self._import_module_of(name)
        return dict.__contains__(self, name)

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[name] if name in self else default

    def load_all(self) -> Registry:
        """Import every handler module (``kb check`` and ``lookup`` listings need all names)."""
        for module in _handler_modules():
            importlib.import_module(f"{_HANDLER_PACKAGE}.{module}")
        return self


TRANSFORMS = Registry("transform")
HANDLERS = Registry("handler")


def registry_name(fn: Callable[..., Any]) -> str:
    """``<module>.<function>``: the name KB data uses for a function in ``kb/handlers/<module>.py``."""
    package, _, module = fn.__module__.rpartition(".")
    if package != _HANDLER_PACKAGE:
        raise ValueError(f"{fn.__module__}.{fn.__name__}: transforms and handlers live in {_HANDLER_PACKAGE}")
    return f"{module}.{fn.__name__}"


def _register(registry: Registry, fn: Callable[..., Any]) -> None:
    name = registry_name(fn)
    if dict.__contains__(registry, name):
        raise ValueError(f"{registry.kind} {name} registered twice")
    registry[name] = fn


def transform(fn: Callable[..., dict[str, str]]) -> Callable[..., dict[str, str]]:
    """Register an argument transform as ``<module>.<function>``."""
    _register(TRANSFORMS, fn)
    return fn


def handler(fn: Callable[..., str]) -> Callable[..., str]:
    """Register a whole-call handler (``template = "@<module>.<function>"``)."""
    _register(HANDLERS, fn)
    return fn
