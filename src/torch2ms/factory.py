"""Resolve ``PATH_OR_MODULE:FACTORY`` specs (``model.py:Net``, ``pkg.models:resnet18``).

Standard library only: ``align/torch_worker.py`` also runs as a plain script under another
interpreter (``compare --torch-python``) that may not have torch2ms's dependencies.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def load_object(spec: str, tag: str = "side") -> Any:
    """The object a ``PATH_OR_MODULE:NAME`` spec names (not called)."""
    return load_factory(spec, tag, need_callable=False)


class SpecError(ValueError):
    """A PATH_OR_MODULE:FACTORY spec that cannot be resolved (usage error)."""


def _package_root(path: Path) -> tuple[Path, str]:
    """For a file inside packages (dirs with __init__.py): (dir to put on sys.path, dotted name)."""
    parts = [path.stem]
    d = path.parent
    while (d / "__init__.py").exists():
        parts.insert(0, d.name)
        d = d.parent
    return d, ".".join(parts)


def load_factory(spec: str, tag: str = "side", need_callable: bool = True) -> Callable[[], Any]:
    """Resolve ``PATH_OR_MODULE:FACTORY`` to a no-argument callable (class or function)."""
    mod_part, sep, attr = spec.rpartition(":")
    if not sep or not mod_part or not attr:
        raise SpecError(f"{spec!r}: expected PATH_OR_MODULE:FACTORY (e.g. model.py:Net or pkg.models:resnet18)")
    path = Path(mod_part)
    try:
        if mod_part.endswith(".py") or path.exists():
            if not path.is_file():
                raise SpecError(f"{mod_part}: no such file")
            path = path.resolve()
            root, dotted = _package_root(path)
            if "." in dotted:  # inside a package: import it as such so relative imports work
                sys.path.insert(0, str(root))
                module = importlib.import_module(dotted)
            else:
                sys.path.insert(0, str(path.parent))  # sibling imports of a standalone file
                name = f"_t2m_{tag}_{path.stem}"
                s = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(s)
                sys.modules[name] = module
                s.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_part)
    except SpecError:
        raise
    except ImportError as exc:
        raise SpecError(f"{spec}: cannot import {mod_part}: {exc}") from exc
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SpecError(f"{spec}: {mod_part} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if need_callable and not callable(obj):
        raise SpecError(f"{spec}: {attr} is not callable")
    return obj
