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
