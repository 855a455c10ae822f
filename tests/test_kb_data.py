"""The KB data itself: schema, consistency, coverage (R1, R2, R4)."""

import pytest
from requires_support import REFERENCE, require_module, require_reference

from torch2ms.cli import main
from torch2ms.kb import STATUSES, KBError, load_kb
from torch2ms.kb.check import check_kb
from torch2ms.kb.schema import entry_from_toml

PRIORITY = REFERENCE / "torch_api_priority.tsv"


def test_kb_check_clean_without_importing_mindspore():
    assert check_kb(resolve_targets=False) == []


def test_schema_rejects_bad_entries():
    with pytest.raises(KBError, match="status"):
        entry_from_toml({"torch": "torch.x", "kind": "function", "status": "maybe"}, "t.toml")
    with pytest.raises(KBError, match="unknown keys"):
        entry_from_toml({"torch": "torch.x", "kind": "function", "status": "direct", "ms": "a", "colour": 1}, "t.toml")
    with pytest.raises(KBError, match="needs 'ms'"):
        entry_from_toml({"torch": "torch.x", "kind": "function", "status": "direct"}, "t.toml")


def test_kb_stats_cli(capsys):
    assert main(["kb", "stats", "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert data["total"] == len(load_kb())
    assert set().union(*(set(v) for k, v in data.items() if k != "total")) <= set(STATUSES)


def test_r1_kb_covers_at_least_600_apis():
    kb = load_kb()
    assert len(kb) >= 600
    stats = kb.stats()
    for ns in ("torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.optim", "torch.Tensor"):
        assert sum(stats[ns].values()) > 0, ns


def test_r1_every_priority_torch_api_has_an_entry():
    require_reference(PRIORITY)
    from torch2ms.kb.check import _priority_gaps

    assert _priority_gaps(load_kb(), PRIORITY) == []


@pytest.mark.differential
def test_r4_every_mindspore_target_exists():
    require_module("mindspore")
    problems = [p for p in check_kb(resolve_targets=True) if "does not exist" in p]
    assert problems == []


def test_r4_a_mapped_entry_needs_cases_or_an_existing_proving_test():
    from torch2ms.kb import KB
    from torch2ms.kb.schema import entry_from_toml

    base = {"torch": "torch.fake.Thing", "kind": "class", "status": "composite", "ms": "mindspore.nn.Cell"}
    bare = check_kb(KB([entry_from_toml(base, "t.toml")]), resolve_targets=False)
    assert any("without a differential case" in p for p in bare)
    missing = check_kb(
        KB([entry_from_toml({**base, "proven_by": "tests/no_such_test.py"}, "t.toml")]), resolve_targets=False
    )
    assert any("proven_by tests/no_such_test.py does not exist" in p for p in missing)
    ok = check_kb(
        KB([entry_from_toml({**base, "proven_by": "tests/test_autograd_function.py"}, "t.toml")]), resolve_targets=False
    )
    assert not any("torch.fake.Thing" in p for p in ok)


@pytest.mark.parametrize(
    "rule",
    [
        {"template": "@tensor_methods.no_such_handler"},
        {"template": "@no_such_module.to"},
        {"template": "@tm_to"},  # the old, unqualified name
        {"sig": ["x", "dim=0"], "args": {"dim": {"transform": "common.no_such_transform"}}},
        {"sig": ["x", "dim=0"], "args": {"dim": {"transform": "dim_tuple"}}},
    ],
)
def test_issue10_kb_check_fails_on_an_unknown_handler_or_transform(rule):
    from torch2ms.kb import KB

    raw = {"torch": "torch.fake.op", "kind": "function", "status": "composite", "ms": "mindspore.ops.abs", **rule}
    raw["case"] = [{"inputs": {"x": "randn(2)"}, "call": "torch.fake.op(x)"}]
    problems = check_kb(KB([entry_from_toml(raw, "t.toml")]), resolve_targets=False)
    assert any("unknown handler" in p or "unknown transform" in p for p in problems), problems


def test_issue10_known_handler_and_transform_names_pass_kb_check():
    from torch2ms.kb import KB

    raw = {
        "torch": "torch.fake.op",
        "kind": "function",
        "status": "composite",
        "ms": "mindspore.ops.abs",
        "sig": ["x", "dim=0"],
        "args": {"dim": {"transform": "common.dim_tuple"}},
        "template": "@torch_ops.indices_int64",
        "case": [{"inputs": {"x": "randn(2)"}, "call": "torch.fake.op(x)"}],
    }
    assert check_kb(KB([entry_from_toml(raw, "t.toml")]), resolve_targets=False) == []


def test_r4_cpu_is_listed_only_where_a_case_proves_it():
    from torch2ms.kb import KB

    base = {"torch": "torch.fake.op", "kind": "function", "ms": "mindspore.ops.abs", "backends": ["CPU", "GPU"]}
    unproven = check_kb(KB([entry_from_toml({**base, "status": "no-equivalent"}, "t.toml")]), resolve_targets=False)
    assert any("lists CPU without a case" in p for p in unproven)
    case = [{"inputs": {"x": "randn(2)"}, "call": "torch.fake.op(x)"}]
    proven = check_kb(
        KB([entry_from_toml({**base, "status": "direct", "case": case}, "t.toml")]), resolve_targets=False
    )
    assert proven == []


def test_no_case_writes_to_a_fixed_path():
    """Cases run in several xdist workers at once: a file a case writes goes under `tmp`, its process's own
    folder. A shared absolute path raced (one worker read a PNG another was still writing)."""
    import re

    fixed = re.compile(r"""['"]/(tmp|var|home|root)/""")
    offenders = [
        f"{entry.torch} case {i}"
        for entry in load_kb()
        for i, case in enumerate(entry.cases)
        if any(fixed.search(text or "") for text in (case.setup, case.init, case.call))
    ]
    assert offenders == []
