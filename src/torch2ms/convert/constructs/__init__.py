"""Constructs beyond one call: each module converts one kind (no_grad blocks, in-place statements,
autograd.Function, data pipelines, checkpoints, distributed, training loops).

A module of this package (or a package in it) that declares ``CONSTRUCT = Construct(...)`` is a
construct (construct.py says what a declaration holds); the others are helpers of constructs. The
pipeline's stages and the rewrite stage's hooks are built from ``declared()``: nothing else names a
construct, so adding one is adding one module here (README: "How to add a construct").
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import replace

from ..construct import Construct, Constructs


@functools.cache
def declared() -> Constructs:
    """Every construct module of this package imported (which registers its hooks), by ``order``
    (then name). Folders added to the package's ``__path__`` before the first call count too."""
    found: list[Construct] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        construct = getattr(module, "CONSTRUCT", None)
        if isinstance(construct, Construct):
            found.append(replace(construct, module=module.__name__))
    found.sort(key=lambda c: (c.order, c.name))
    return Constructs(tuple(found), {c.module: c for c in found})
