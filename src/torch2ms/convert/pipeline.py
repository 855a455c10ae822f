"""Convert one module: an explicit list of stages over one ``FileState``.

    parse        source → ast; a syntax error (or a file without torch) ends the work here
    facts        imports resolved, Module classes, lazily inferred types, the statement plan (facts.py)
    (sees)       per construct that declares ``sees``: the plain-Python statements it must see, marked
    (facts)      per construct that declares ``facts``: its facts (the data pipeline's loaders, columns)
    libcst       the libcst tree, statements with nothing to convert hidden (quiet.py) unless a
                 ``whole_file`` construct applies, matched to the plan (index.py)
    (stages)     per construct that declares a ``stage``, by order: it restructures statements
                 (distributed, checkpoints, training loops)
    refresh      after a construct stage restructured statements: facts of the code it wrote
    rewrite      every torch use by the KB and the construct hooks (rewriter.py, calls.py, hooks.py)
    imports      torch imports that are no longer read go, MindSpore's come in (imports.py)
    render       the text, hidden statements put back

The stages in parentheses come from the constructs' declarations (construct.py, constructs/): this
module names no construct. Every stage works on the trees in the state. A construct stage that fails is reported as a change
and the file goes on without it; any other failing stage leaves the file as it was, with the reason.
"""

from __future__ import annotations

import ast
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

import libcst as cst

from ..analysis.imports import ImportMap
from ..kb import KB, load_kb
from .changes import MARK, Change, earlier_marks
from .construct import Construct, Constructs, Facts
from .constructs import declared
from .context import RewriteContext
from .facts import ModuleFacts, module_facts
from .imports import ALIAS_ROOTS, settle_imports
from .index import StatementIndex
from .quiet import hide_quiet_statements
from .rewriter import Rewriter
from .state import FileState


@dataclass
class ConvertedModule:
    path: str
    source: str
    code: str
    changes: list[Change] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.code != self.source


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[FileState], None]
    construct: bool = False  # a failure is reported and the file goes on without this stage


def parse(state: FileState) -> None:
    try:
        if state.tree is None:  # (a caller that parsed the source already hands its tree in)
            state.tree = ast.parse(state.source, filename=state.path)
    except SyntaxError as exc:
        state.finish(error=f"syntax error at line {exc.lineno}: {exc.msg}; copied unchanged")
        return
    except ValueError as exc:  # e.g. NUL bytes
        state.finish(error=f"cannot parse ({exc}); copied unchanged")
        return
    state.imap = imap = project_import_map(state.tree, state.local_roots, state.project_names)
    if not imap.uses_torch() and not any(imap.is_framework(m) for m in imap.stars):
        state.finish()


def project_import_map(tree: ast.Module, local_roots: frozenset[str], project_names: dict[str, str]) -> ImportMap:
    """The file's imports, plus the torch names it gets from other project files
    (``from .parts import *``: ``nn``, ``F``, ``torch``) that it does not bind itself."""
    imap = ImportMap.from_tree(tree, local_roots)
    if project_names:
        own = _top_level_stores(tree)
        for name, full in project_names.items():
            # a name the file imports from the project module that re-exports it (from .util import F)
            # is that torch name too; one the file binds from torch itself or assigns stays its own
            if name not in own and not imap.is_framework(imap.names.get(name)):
                imap._bind(name, full, imap.lines.get(name, 0))
    return imap


def _top_level_stores(tree: ast.Module) -> set[str]:
    """Names the module assigns or defines at its top level."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out


def facts(state: FileState) -> None:
    assert state.tree is not None
    state.facts = module_facts(
        state.tree, state.kb, state.local_roots, state.project_modules, state.imap, state.imported_names
    )
    state.facts.source = state.source


def construct_sees(construct: Construct, state: FileState) -> None:
    assert state.facts is not None and state.tree is not None and construct.sees is not None
    construct.sees(state.source, state.tree, state.facts.plan)


def construct_facts(construct: Construct, state: FileState) -> None:
    assert state.facts is not None and state.tree is not None and construct.facts is not None
    found = construct.facts.compute(state.source, state.tree, state.facts.imap, state.kb, state.facts.plan)
    if found is not None:
        state.facts.construct_facts[construct.facts] = found


def parse_cst(constructs: Constructs, state: FileState) -> None:
    """The libcst tree. Restructuring stages (distributed, training) read whole functions, so their
    files keep every statement; elsewhere statements with nothing to convert never reach libcst."""
    assert state.facts is not None and state.tree is not None
    restructuring = any(c.whole_file is not None and c.whole_file(state) for c in constructs.all)
    state.quiet = None if restructuring else hide_quiet_statements(state.source, state.tree, state.facts.plan)
    if state.quiet is not None:
        state.facts.plan = state.quiet.plan
    state.module = cst.parse_module(state.quiet.source if state.quiet is not None else state.source)
    state.index = StatementIndex.match(state.module, state.facts.plan)


def refresh(constructs: Constructs, state: FileState) -> None:
    """A construct stage wrote statements: types, names and the plan come from the code as it now is
    (original lines still come from the index)."""
    if not state.restructured:
        return
    assert state.module is not None and state.index is not None
    code = state.module.code
    tree = ast.parse(code)
    imap = project_import_map(tree, state.local_roots, state.project_names)
    new = module_facts(tree, state.kb, state.local_roots, state.project_modules, imap, state.imported_names)
    new.source = code
    for cls, fn, name in state.assumed_modules:
        new.assume_module(cls, fn, name)
    for construct in constructs.all:  # (every construct's statements marked first, then any facts)
        if construct.sees is not None:
            _refresh_facts(state, construct, partial(construct.sees, code, tree, new.plan))
    for construct in constructs.all:
        facts = construct.facts
        if facts is not None:
            _refresh_facts(state, construct, partial(_store_facts, new, facts, code, tree, state.kb))
    state.facts = new
    state.index = state.index.rematch(state.module, new.plan)


def _store_facts(new: ModuleFacts, facts: Facts[object], code: str, tree: ast.Module, kb: KB) -> None:
    found = facts.compute(code, tree, new.imap, kb, new.plan)
    if found is not None:
        new.construct_facts[facts] = found


def _refresh_facts(state: FileState, construct: Construct, step: Callable[[], None]) -> None:
    try:
        step()
    except Exception as exc:  # noqa: BLE001 - without a construct's facts the per-call KB rules still apply
        _report_failure(state, f"{construct.name} facts", exc)


def rewrite(constructs: Constructs, state: FileState) -> None:
    """The KB pass. A MindSpore alias that would shadow a torch name unconverted code still reads
    (``nn`` when a ``torch.nn`` layer has no mapping) is reserved, and the pass runs again."""
    assert state.facts is not None and state.module is not None and state.index is not None
    ctx, module = _rewrite_once(constructs, state)
    clash = ctx.still_needed & ALIAS_ROOTS
    if clash:
        state.facts.taken |= clash
        ctx, module = _rewrite_once(constructs, state)
    state.module, state.context = module, ctx
    state.changes = sorted([*ctx.changes, *state.changes], key=lambda c: c.line)


def imports(state: FileState) -> None:
    assert state.module is not None and state.context is not None
    state.code = settle_imports(state.module, state.context)


def _rewrite_once(constructs: Constructs, state: FileState) -> tuple[RewriteContext, cst.Module]:
    assert state.facts is not None and state.module is not None and state.index is not None
    ctx = RewriteContext(state.kb, state.facts, state.index, state.generated)
    ctx.earlier_marks = earlier_marks(state.source)
    ctx.converted_before = state.facts.imports_mindspore and MARK in state.source
    return ctx, state.module.visit(Rewriter(ctx, constructs))


def render(state: FileState) -> None:
    assert state.code is not None
    if state.quiet is not None:
        state.code = state.quiet.restore(state.code)
    state.finish(state.code)


def build_stages(constructs: Constructs) -> tuple[Stage, ...]:
    """The stage list, with the constructs' own stages where the pipeline keeps a place for them."""
    return (
        Stage("parse", parse),
        Stage("facts", facts),
        *(Stage(f"{c.name} statements", partial(construct_sees, c), construct=True) for c in constructs.all if c.sees),
        *(Stage(f"{c.name} facts", partial(construct_facts, c), construct=True) for c in constructs.all if c.facts),
        Stage("libcst", partial(parse_cst, constructs)),
        *(Stage(c.name, c.stage, construct=True) for c in constructs.stages if c.stage is not None),
        Stage("refresh", partial(refresh, constructs)),
        Stage("rewrite", partial(rewrite, constructs)),
        Stage("imports", imports),
        Stage("render", render),
    )


STAGES: tuple[Stage, ...] | None = None  # built from the declared constructs on first use (stages())


def stages() -> tuple[Stage, ...]:
    global STAGES
    if STAGES is None:
        STAGES = build_stages(declared())
    return STAGES


def convert_source(
    source: str,
    path: str = "<string>",
    kb: KB | None = None,
    local_roots: frozenset[str] = frozenset(),
    project_modules: frozenset[str] = frozenset(),
    project_names: dict[str, str] | None = None,
    tree: ast.Module | None = None,
    imported_names: frozenset[str] | None = None,
    cpu_fast_conv: bool = False,
) -> ConvertedModule:
    """Convert one module. A file that cannot be parsed comes back unchanged with the error.

    ``local_roots``: the project's own top-level packages (their imports are not torch's).
    ``project_modules``: names of the project's nn.Module subclasses defined in other files.
    ``project_names``: torch names the file gets from other project files (analysis/project_names.py).
    ``tree``: ``ast.parse(source)`` when the caller has it already (not parsed twice).
    ``imported_names``: names other project files import from this one (None: not known).
    ``cpu_fast_conv``: torch's Conv2d / ConvTranspose1d/2d/3d become torch2ms.runtime's (fast on CPU;
    convert/fast_conv.py) instead of MindSpore's own layers.
    """
    kb = kb or load_kb()
    if cpu_fast_conv:
        from .fast_conv import fast_conv_kb

        kb = fast_conv_kb(kb)
    state = FileState(path, source, kb, local_roots, project_modules, dict(project_names or {}))
    state.imported_names = imported_names
    state.tree = tree
    with collector_paused():
        for stage in stages():
            if state.done:
                break
            run_stage(stage, state)
    if not state.done:  # a stage list without render: the source is the output
        state.finish()
    assert state.code is not None
    return ConvertedModule(path, source, state.code, state.changes, state.error)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while one file converts. Its trees hold no reference
    cycles (libcst nodes have no parent links; cached ast walks leave the root out), so there is
    nothing for it to find, yet the millions of short-lived nodes set it off over and over, each
    full pass scanning everything alive (the KB too): about a tenth of the convert time. Whatever
    the file left behind is collected by the next pass after it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def run_stage(stage: Stage, state: FileState) -> None:
    if not stage.construct:
        try:
            stage.run(state)
        except Exception as exc:  # noqa: BLE001 - any converter crash must leave the file intact
            state.changes = []
            state.finish(error=f"converter failed ({type(exc).__name__}: {exc}); copied unchanged")
        return
    saved = (state.module, len(state.changes), state.restructured, state.data_parallel, len(state.assumed_modules))
    try:
        stage.run(state)
    except Exception as exc:  # noqa: BLE001 - the per-call rules still convert (or mark) every call
        state.module, n, state.restructured, state.data_parallel, m = saved
        del state.changes[n:], state.assumed_modules[m:]
        _report_failure(state, stage.name, exc)


def _report_failure(state: FileState, stage: str, exc: Exception) -> None:
    state.record(
        "torch2ms",
        "not-converted",
        f"the {stage} stage failed ({type(exc).__name__}: {exc}); its constructs are left to the per-call rules",
        0,
    )
