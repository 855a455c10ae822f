"""``FileState``: everything the pipeline's stages know about one file, in one declared place."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst

from ..analysis.astwalk import bound_names, fresh_name
from ..analysis.imports import ImportMap
from ..kb import KB
from .changes import Change
from .context import RewriteContext
from .facts import ModuleFacts
from .generated import GeneratedRefs
from .index import StatementIndex
from .quiet import Quiet


@dataclass
class FileState:
    path: str
    source: str  # the original text
    kb: KB
    local_roots: frozenset[str] = frozenset()  # the project's own top-level packages
    project_modules: frozenset[str] = frozenset()  # Module subclasses defined in other project files
    # torch names this file gets from other project files (from .parts import *): name → full name
    project_names: dict[str, str] = field(default_factory=dict)
    imported_names: frozenset[str] | None = None  # names other project files import from this one
    tree: ast.Module | None = None  # the ast of ``source``: original positions
    imap: ImportMap | None = None
    facts: ModuleFacts | None = None
    quiet: Quiet | None = None  # statements with nothing to convert, hidden from libcst
    module: cst.Module | None = None  # the libcst tree the stages edit
    index: StatementIndex | None = None  # libcst statement → ast statement and original line
    generated: GeneratedRefs = field(default_factory=GeneratedRefs)
    # A construct stage rewrote statements beyond one call (distributed, training): the facts are
    # computed again from the code it wrote.
    restructured: bool = False
    data_parallel: bool = False  # a DDP wrapper: the training step averages the wrapped models' gradients
    # (class, function, name): names a training loop calls as its model, typed as Modules there
    assumed_modules: list[tuple[str, str, str]] = field(default_factory=list)
    context: RewriteContext | None = None  # the rewrite stage's (the imports stage reads what it needed)
    changes: list[Change] = field(default_factory=list)
    code: str | None = None  # the converted text, once rendered
    error: str | None = None  # why the file was copied unchanged
    done: bool = False  # nothing left to do: ``code`` (or the source) is the output

    _used_names: set[str] | None = field(default=None, repr=False)

    def fresh_name(self, base: str) -> str:
        """A name for code a stage writes that no name of the file (or earlier written code) uses."""
        if self._used_names is None:
            assert self.tree is not None
            self._used_names = bound_names(self.tree)
        return fresh_name(self._used_names, base)

    def record(self, api: str, action: str, note: str, line: int) -> None:
        """A change found by a construct stage (the rewrite stage records through its context)."""
        self.changes.append(Change(api, action, note, line))

    def finish(self, code: str | None = None, error: str | None = None) -> None:
        self.code = self.source if code is None else code
        self.error = error
        self.done = True
