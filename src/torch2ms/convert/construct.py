"""The construct protocol: what a module in ``constructs/`` declares, and all the pipeline and the
rewrite stage know of it.

A construct module declares one ``CONSTRUCT = Construct(...)`` at its top level; the package finds
every such module (constructs/__init__.py) and builds from the declarations both the pipeline's
stages (pipeline.py) and the rewrite stage's hooks (hooks.py). Neither names a construct: adding
one is adding one module. A declaration says

- ``name``: how reports call it (``the {name} stage failed``);
- ``order``: constructs that are stages run in this order; hooks of several constructs on the same
  kind of node run in this order (two constructs sharing a slot must not share a number);
- ``gate``: a predicate on the file's facts, evaluated once per file: when false, none of the
  construct's hooks run (each hook may have its own ``when`` too);
- ``stage``: set for a construct that restructures whole statements before the KB pass (it reads
  and edits ``FileState``); hooks (hooks.py) are for constructs that rewrite nodes in the one pass;
- ``whole_file``: the stage reads whole functions, so a file it applies to keeps every statement
  (quiet.py hides none);
- ``facts``: facts it needs that the cheap ``ast`` pass computes before the libcst tree exists (and
  again after a stage restructured the file), read back with ``facts.of(module_facts)``;
- ``sees``: marks in the statement plan the plain-Python statements (no torch name in them) the
  construct must see, so that plan.py / quiet.py do not hide them;
- ``whole_expressions``: when true for the file, the rewrite visits every expression (its hooks act
  on the project's own names, which no torch name announces).

A per-file cache a construct's hooks share is ``Cache(make)``: ``cache.of(ctx)`` is typed, made
once per file.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from ..analysis.imports import ImportMap
from ..kb import KB
from .context import RewriteContext
from .facts import ModuleFacts
from .plan import Stmt
from .state import FileState

T = TypeVar("T")
Gate = Callable[[ModuleFacts], bool]


class Facts(Generic[T]):
    """Facts one construct computes per file: ``compute(source, tree, imports, kb, plan)`` (None: the
    file has none of the construct), stored in the file's ``ModuleFacts`` under this object."""

    def __init__(self, compute: Callable[[str, ast.Module, ImportMap, KB, list[Stmt]], T | None]) -> None:
        self.compute = compute

    def of(self, facts: ModuleFacts) -> T | None:
        return cast("T | None", facts.construct_facts.get(self))


class Cache(Generic[T]):
    """A construct's per-file cache: ``make()`` on first use in a file, the same object after."""

    def __init__(self, make: Callable[[], T]) -> None:
        self.make = make

    def of(self, ctx: RewriteContext) -> T:
        caches = ctx.caches
        found = caches.get(self)
        if found is None:
            found = caches[self] = self.make()
        return cast("T", found)


@dataclass(frozen=True, eq=False)
class Construct:
    name: str
    order: int
    gate: Gate | None = None
    stage: Callable[[FileState], None] | None = None
    whole_file: Callable[[FileState], bool] | None = None
    facts: Facts[Any] | None = None
    sees: Callable[[str, ast.Module, list[Stmt]], None] | None = None
    whole_expressions: Gate | None = None
    module: str = field(default="", compare=False)  # the declaring module (set when the package finds it)


@dataclass(frozen=True)
class Constructs:
    """Every declared construct, in order, and which module declared which."""

    all: tuple[Construct, ...]
    by_module: dict[str, Construct]

    def owner(self, module: str) -> Construct | None:
        """The construct a module's hooks belong to: its own declaration, else its package's."""
        while module:
            found = self.by_module.get(module)
            if found is not None:
                return found
            module = module.rpartition(".")[0]
        return None

    @property
    def stages(self) -> tuple[Construct, ...]:
        return tuple(c for c in self.all if c.stage is not None)
