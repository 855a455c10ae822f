"""Issue 24: the signature audit — every parameter of a torch callable the KB maps (``inspect.signature``,
else the entry's ``sig``) is mapped with a case that passes a non-default value, or refused with a mark;
``torch2ms kb check`` prints the coverage (the 300 most used APIs / all)."""

from __future__ import annotations

import pytest
from requires_support import REFERENCE, require_module, require_reference

from torch2ms.cli import main
from torch2ms.kb.check import default_priority_file, priority_apis, signature_audit

require_module("torch")  # the signatures are torch's
PRIORITY = REFERENCE / "torch_api_priority.tsv"


@pytest.fixture(scope="module")
def audit():
    return signature_audit()


def _verdicts(audit, api: str) -> dict[str, str]:
    return {p.param: p.verdict for p in audit.params if p.api == api}


@pytest.mark.parametrize(
    "api, param, verdict",
    [
        ("torch.sum", "out", "marked"),  # unsupported with a note
        ("torch.nn.InstanceNorm2d", "num_features", "covered"),  # passed positionally
        ("torch.nn.InstanceNorm2d", "affine", "covered"),  # a case passes affine=True
        ("torch.nn.InstanceNorm2d", "momentum", "covered"),  # a case passes momentum=0.3
        ("torch.autograd.functional.jacobian", "create_graph", "untested"),  # handled, no case passes another value
        ("torch.jit.trace", "check_trace", "marked"),  # dropped with a note
        ("torch.nn.functional.interpolate", "mode", "covered"),
        # no rule, passed through by name to torch2ms.runtime.Normal; the cases pass it: proven
        ("torch.distributions.Normal", "scale", "covered"),
        # dropped with a note, said on the converted call
        ("torch.distributions.Normal", "validate_args", "marked"),
        # passed through, no case gives it another value than its default: neither
        ("torch.optim.lr_scheduler.CyclicLR", "scale_fn", "unmapped"),
        # a placeholder template that leaves it out drops it in silence, though a case passes it
        ("torch.is_conj", "input", "unmapped"),
        # dropped, with the note of its class (kb/data/drop_reasons.toml)
        ("torch.zeros", "requires_grad", "marked"),
        ("torch.nn.ReLU", "inplace", "marked"),
        ("torch.optim.Adam", "foreach", "marked"),
        # check = "onnx" cases: both exported models run in onnxruntime (a tensor / a tuple of 2; a path / a file object)
        ("torch.onnx.export", "model", "covered"),
        ("torch.onnx.export", "args", "covered"),
        ("torch.onnx.export", "f", "covered"),
        ("torch.onnx.export", "opset_version", "marked"),
    ],
)
def test_audit_classifies_parameters(audit, api, param, verdict):
    assert _verdicts(audit, api).get(param) == verdict, _verdicts(audit, api)


def test_audit_reads_torch_signatures_not_only_the_kb(audit):
    # nn.LayerNorm's bias (torch >= 2.1) is in torch's signature: the audit sees it
    assert "bias" in _verdicts(audit, "torch.nn.LayerNorm")
    done, total = audit.coverage()
    assert 0 < done <= total and total > 1000


def test_kb_check_prints_the_coverage(capsys):
    """Both figures, without --priority too: the checkout's reference list is found by itself."""
    require_reference(PRIORITY)
    top = priority_apis(PRIORITY)
    assert 250 <= len(top) <= 300
    assert default_priority_file() is not None
    assert default_priority_file().resolve() == PRIORITY.resolve()
    main(["kb", "check", "--no-targets"])
    out = capsys.readouterr().out
    assert "300 most used APIs:" in out and "all entries:" in out
    assert "parameters (" in out.split("300 most used APIs:", 1)[1].splitlines()[0]


def _one(rule, **entry):
    from torch2ms.kb.check import _verdict
    from torch2ms.kb.schema import entry_from_toml

    raw = {"torch": "torch.t", "kind": "function", "status": "args-differ", "ms": "mindspore.ops.t", "sig": ["x=None"]}
    return _verdict(entry_from_toml({**raw, **entry, "args": {"x": rule}}, "t.toml"), "x", set())


@pytest.mark.parametrize("form", [False, {"ms": False}])
def test_a_drop_without_a_note_is_unmapped_and_with_one_marked(form):
    """A drop in silence is not an accounted-for parameter; its note (own, or its class's) makes it one."""
    assert _one(form) == "unmapped"
    note = {"ms": False, "note": "x= is dropped: no effect."}
    assert _one(note) == "marked"
    assert _one({**note, "exact": ["*"]}) == "marked"


def test_one_sided_counts_apart_and_never_as_covered():
    ok = {"ms": "x"}
    assert _one(ok, proven_by="tests/t.py", one_sided="no onnx") == "one-sided"
    assert _one(ok, proven_by="tests/t.py") == "untested"


def test_the_300_most_used_apis_are_all_accounted_for(audit):
    """Issue 24: 100% of the top 300: every parameter covered or marked (torch.onnx.export's model/args/f, once
    one-sided for want of the onnx package, are covered by its check = "onnx" cases)."""
    require_reference(PRIORITY)
    top = priority_apis(PRIORITY)
    left = [
        (p.api, p.param, p.verdict) for p in audit.params if p.api in top and p.verdict not in ("covered", "marked")
    ]
    assert left == [], left
    assert audit.one_sided() == []


def test_kb_check_names_no_one_sided_parameter(capsys):
    main(["kb", "check", "--no-targets"])
    out = capsys.readouterr().out
    assert "proven on MindSpore's side only" not in out
