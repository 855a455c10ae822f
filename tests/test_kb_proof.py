"""The proof harness itself (torch2ms.proof): what it catches and how it batches GRAPH_MODE runs.

Real torch and real MindSpore on small entries built here: a harness that cannot fail proves nothing.
"""

import pytest
from requires_support import require_module

from torch2ms.kb import KB
from torch2ms.kb.schema import entry_from_toml

pytestmark = pytest.mark.differential


@pytest.fixture(scope="module")
def frameworks():
    torch = require_module("torch")
    ms = require_module("mindspore")
    torch.set_num_threads(1)
    try:
        ms.set_device("CPU")
    except RuntimeError:
        pass  # the runtime of this worker already started (on CPU)
    return torch, ms


def _entry(torch_name, **raw):
    return entry_from_toml({"torch": torch_name, **raw}, "test.toml")


def _fn(torch_name, ms_name, call, **extra):
    case = {"inputs": {"x": "randn(3, 4)"}, "call": call}
    return _entry(torch_name, kind="function", status="direct", ms=ms_name, case=[case], **extra)


def test_r2_inplace_method_that_does_not_mutate_in_mindspore_is_caught(frameworks):
    from torch2ms.proof import CaseFailure, mutated_input, run_case

    # MindSpore's Tensor.add_ returns the sum but leaves its tensor as it was in PyNative (facts §2).
    raw = {"kind": "method", "status": "direct", "ms": "Tensor.add_"}
    case = {"inputs": {"x": "randn(3, 4)", "y": "randn(3, 4)"}, "call": "x.add_(y)", "graph": False}
    naive = _entry("torch.Tensor.add_", **raw, case=[case])
    assert mutated_input(naive, naive.cases[0]) == "x"
    with pytest.raises(CaseFailure, match="x after the call"):
        run_case(naive, naive.cases[0], 0, KB([naive]))
    # The KB's entry is composite: the converter assigns the result back, and the case passes.
    fixed = _entry("torch.Tensor.add_", **{**raw, "status": "composite", "ms": "Tensor.add"}, case=[case])
    assert fixed.rebinds_receiver
    run_case(fixed, fixed.cases[0], 0, KB([fixed]))


def test_r2_mutates_can_name_the_input_or_turn_the_check_off(frameworks):
    from torch2ms.proof import mutated_input

    base = {"kind": "method", "status": "composite", "ms": "Tensor.add"}
    named = _entry(
        "torch.Tensor.add_", **base, case=[{"inputs": {"x": "randn(2)"}, "call": "x.add_(1)", "mutates": ""}]
    )
    assert mutated_input(named, named.cases[0]) is None
    dunder = _entry("torch.Tensor.__iadd__", **base, case=[{"inputs": {"x": "randn(2)"}, "call": "x.__iadd__(1)"}])
    assert mutated_input(dunder, dunder.cases[0]) == "x"
    plain = _entry("torch.Tensor.__add__", **base, case=[{"inputs": {"x": "randn(2)"}, "call": "x.__add__(1)"}])
    assert mutated_input(plain, plain.cases[0]) is None


def test_r2_distribution_methods_are_looked_up_on_the_class_and_sampling_is_proven_by_statistics(frameworks):
    from torch2ms.proof import run_entry

    params = {"mu": "randn(3)", "sd": "randpos(3)"}
    normal = _entry(
        "torch.distributions.Normal",
        kind="class",
        status="args-differ",
        ms="mindspore.nn.probability.distribution.Normal",
        sig=["loc", "scale", "validate_args=None"],
        args={"validate_args": False},
        case=[
            {"init": "mu, sd", "inputs": {**params, "v": "randn(3)"}, "call": "m.log_prob(v)"},
            {"init": "mu, sd", "inputs": params, "call": "m.rsample((4000,))", "check": "stats", "atol": 0.05},
        ],
    )
    # A method entry of the class (not of Tensor or Module) rewrites the call on `m`.
    rsample = _entry(
        "torch.distributions.Normal.rsample",
        kind="method",
        status="composite",
        ms="mindspore.nn.probability.distribution.Normal.sample",
        sig=["sample_shape=()"],
        template="{self}.sample({sample_shape})",
        case=[{"call": "m.rsample((2,))", "check": "shape"}],
    )
    results = run_entry(normal, KB([normal, rsample]))
    assert results[1].ms_src.endswith("m.sample((4000,))")


def test_r27_graph_batches_compile_many_cases_once_and_isolate_a_failing_one(frameworks):
    from torch2ms.proof import EntryFailure, GraphBatches, run_entry

    entries = [
        _fn("torch.abs", "mindspore.ops.abs", "torch.abs(x)"),
        # Works in PyNative, but a Parameter cannot be created inside a GRAPH_MODE construct.
        _entry(
            "torch.clone",
            kind="function",
            status="composite",
            ms="mindspore.Parameter",
            sig=["input"],
            template="mindspore.Parameter({input}, name='p')",
            case=[{"inputs": {"x": "randn(3, 4)"}, "call": "torch.clone(x)"}],
        ),
        _fn("torch.neg", "mindspore.ops.neg", "torch.neg(x)"),
        _fn("torch.exp", "mindspore.ops.exp", "torch.exp(x)"),
    ]
    kb = KB(entries)
    batches = GraphBatches(kb, entries)
    run_entry(entries[0], kb, batches)
    # One compile for all four, which fails; halves: [abs, clone] fails, [abs] ok, [clone] fails alone
    # (left to compile on its own), [neg, exp] ok.
    assert batches.compiles == 5
    for entry in (entries[2], entries[3]):
        run_entry(entry, kb, batches)
    assert batches.compiles == 5  # served from the batch
    with pytest.raises(EntryFailure, match=r"torch\.clone#0: .*GRAPH_MODE"):
        run_entry(entries[1], kb, batches)


def test_r27_a_batched_graph_run_gives_the_numbers_of_a_run_on_its_own(frameworks):
    from torch2ms.proof import GraphBatches, run_case

    entries = [
        _fn("torch.sin", "mindspore.ops.sin", "torch.sin(x)"),
        _fn("torch.cos", "mindspore.ops.cos", "torch.cos(x)"),
    ]
    kb = KB(entries)
    batches = GraphBatches(kb, entries)
    for entry in entries:
        alone, batched = run_case(entry, entry.cases[0], 0, kb), run_case(entry, entry.cases[0], 0, kb, batches)
        assert alone.max_abs == batched.max_abs
        assert alone.modes == batched.modes == ("pynative", "graph")
    assert batches.compiles == 1
