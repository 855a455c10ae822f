"""The construct protocol (convert/construct.py): a construct is one module that declares itself.

A construct module placed in a folder the ``constructs`` package searches, and nothing else, takes
part in a conversion through every part of its declaration (stage, whole file, facts, plain-Python
statements it must see, hooks, gate, cache); the pipeline and the rewrite stage name no construct;
hooks of several constructs on one node type run in the declared order.
"""

from __future__ import annotations

import ast
import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from torch2ms.convert import hooks
from torch2ms.convert.construct import Construct, Constructs
from torch2ms.convert.constructs import declared
from torch2ms.convert.facts import module_facts
from torch2ms.convert.pipeline import build_stages
from torch2ms.kb import load_kb

CONVERT = Path(__file__).resolve().parents[1] / "src" / "torch2ms" / "convert"

# One construct, declared only in its own module: it uses every part of the protocol.
_SHOUT = """
import ast
from dataclasses import dataclass

import libcst as cst

from torch2ms.convert.construct import Cache, Construct, Facts
from torch2ms.convert.hooks import leave


def _count(source, tree, imap, kb, plan):
    n = sum(isinstance(n, ast.Name) and n.id == "answer" for n in ast.walk(tree))
    return n or None


ANSWERS = Facts(_count)


def _sees(source, tree, plan):
    for info in plan:
        if any(isinstance(n, ast.Name) and n.id == "answer" for n in ast.walk(info.node)):
            info.interesting = info.header = True


def _stage(state):
    state.record("shout.stage", "converted", "stage ran", 0)


def _whole(state):
    return "WHOLE" in state.source


@dataclass
class _Seen:
    statements: int = 0


SEEN = Cache(_Seen)
CONSTRUCT = Construct(
    "shout", order=990, gate=lambda facts: "GATED" not in (facts.source or ""),
    stage=_stage, whole_file=_whole, facts=ANSWERS, sees=_sees,
)


@leave(cst.SimpleStatementLine)
def answer(ctx, original, updated):
    seen = SEEN.of(ctx)
    seen.statements += 1
    body = updated.body[0]
    if isinstance(body, cst.Assign) and isinstance(body.value, cst.Integer) and body.value.value == "41":
        ctx.record("shout.answer", "converted", f"count {ANSWERS.of(ctx.facts)} seen {seen.statements}")
        return updated.with_changes(body=[body.with_changes(value=cst.Integer("42"))])
    return updated
"""

_RUN = """
import json, sys
import torch2ms.convert.constructs as package
package.__path__.append(sys.argv[1])
from torch2ms.convert import convert_source
out = {}
for name, source in json.loads(sys.argv[2]).items():
    mod = convert_source(source)
    out[name] = {"code": mod.code, "changes": [[c.api, c.note] for c in mod.changes if c.api.startswith("shout")]}
print(json.dumps(out))
"""

_BODY = "import torch\nx = torch.zeros(3)\nanswer = 41\nprint(answer)\n"
# the construct's switches, every combination: gated off, whole file kept, the answer in a function
_CASES = {
    f"gated={g} whole={w} nested={n}": (
        ("# GATED\n" if g else "")
        + ("# WHOLE\n" if w else "")
        + (
            _BODY
            if not n
            else "import torch\n\n\ndef f():\n    x = torch.zeros(3)\n    answer = 41\n    return answer\n"
        )
    )
    for g, w, n in itertools.product((False, True), repeat=3)
}


@pytest.fixture(scope="module")
def shout_results(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("constructs")
    (folder / "shout.py").write_text(_SHOUT, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-c", _RUN, str(folder), json.dumps(_CASES)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_construct_declared_in_one_module_runs(shout_results: dict, case: str) -> None:
    got = shout_results[case]
    apis = [api for api, _ in got["changes"]]
    assert "shout.stage" in apis  # its stage ran (the pipeline built it from the declaration)
    notes = [note for api, note in got["changes"] if api == "shout.answer"]
    if case.startswith("gated=True"):
        assert "answer = 41" in got["code"] and not notes  # the gate turned its hooks off
        return
    # the plain-Python statement was visited (sees), the hook ran, the facts and the cache reached it
    assert "answer = 42" in got["code"]
    assert len(notes) == 1 and notes[0].startswith("count 2 seen ")
    assert "ops.zeros(3)" in got["code"]  # the KB pass still converts the rest


def _slots(constructs: Constructs) -> dict[tuple[str, object], set[Construct]]:
    slots: dict[tuple[str, object], set[Construct]] = {}
    for hook, owner in hooks.ordered(constructs):
        slots.setdefault((hook.kind, hook.node_type), set()).add(owner)
    return slots


def test_constructs_sharing_a_node_type_declare_their_order() -> None:
    constructs = declared()
    orders = [c.order for c in constructs.all]
    assert len(orders) == len(set(orders)), "two constructs declare the same order"
    for slot, owners in _slots(constructs).items():
        assert len({c.order for c in owners}) == len(owners), slot


def test_hooks_on_one_node_type_run_in_the_declared_order() -> None:
    constructs = declared()
    tree = ast.parse("import torch\nx = torch.zeros(3)\n")
    facts = module_facts(tree, load_kb(), frozenset(), frozenset(), None)
    facts.source = "import torch\nx = torch.zeros(3)\n"
    active = hooks.ActiveHooks(facts, constructs)
    place = {c.module: c.order for c in constructs.all}
    for node_type in (cst.SimpleStatementLine, cst.For, cst.FunctionDef, cst.ClassDef, cst.With):
        found = [place[constructs.owner(fn.__module__).module] for fn in active.leave(node_type)]  # type: ignore[union-attr]
        assert found == sorted(found), node_type
    assert len(active.leave(cst.SimpleStatementLine)) >= 5  # several constructs share it


def test_a_hook_outside_any_construct_is_named() -> None:
    stray = hooks.Hook("leave", cst.For, lambda ctx, o, u: u, None)
    hooks.REGISTRY.append(stray)
    try:
        with pytest.raises(LookupError, match="declares no CONSTRUCT"):
            hooks.ordered(declared())
    finally:
        hooks.REGISTRY.remove(stray)


def test_the_pipeline_has_a_stage_for_each_declared_stage_in_order() -> None:
    constructs = declared()
    names = [s.name for s in build_stages(constructs)]
    expected = [c.name for c in constructs.stages]
    assert [n for n in names if n in expected] == expected
    assert names.index("libcst") < names.index(expected[0]) and names.index(expected[-1]) < names.index("refresh")
    for c in constructs.all:
        if c.facts is not None:
            assert f"{c.name} facts" in names
        if c.sees is not None:
            assert f"{c.name} statements" in names


def _construct_modules() -> set[str]:
    folder = CONVERT / "constructs"
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in folder.iterdir() if (p / "__init__.py").exists()
    }


@pytest.mark.parametrize("path", sorted(p.name for p in CONVERT.glob("*.py")))
def test_the_core_names_no_construct(path: str) -> None:
    """Outside constructs/, the converter reaches the constructs only through ``declared()``: no
    import of a construct module, no ``constructs.<module>``."""
    tree = ast.parse((CONVERT / path).read_text(encoding="utf-8"))
    modules = _construct_modules()
    wrong = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level and (node.module or "").startswith("constructs"):
            if node.module != "constructs" or [a.name for a in node.names] != ["declared"]:
                wrong.append(ast.unparse(node))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch2ms.convert.constructs"):
            wrong.append(ast.unparse(node))
        elif (
            isinstance(node, ast.Attribute) and node.attr in modules and ast.unparse(node.value).endswith("constructs")
        ):
            wrong.append(ast.unparse(node))
    assert wrong == []


def test_every_construct_module_declares_itself_once() -> None:
    declared_modules = {c.module.rsplit(".", 1)[-1] for c in declared().all}
    sources = {
        name: (
            CONVERT
            / "constructs"
            / (f"{name}.py" if (CONVERT / "constructs" / f"{name}.py").exists() else f"{name}/__init__.py")
        ).read_text(encoding="utf-8")
        for name in _construct_modules()
    }
    for name, text in sources.items():
        registers = "from ..hooks import" in text or "from ...hooks import" in text
        if registers:
            assert name in declared_modules, f"{name} registers hooks but declares no CONSTRUCT"
        assert textwrap.dedent(text).count("\nCONSTRUCT = ") <= 1, name
