"""Issue 24 (KB honesty): no argument is dropped in silence. Every drop rule (``device = false``) has a note,
its own or its parameter class's from ONE table of reasons (kb/data/drop_reasons.toml), in English and
Chinese; the class says at which values the drop is exact (``device='cuda'``, ``inplace=True``: no review
mark, the note stays for ``lookup``) and at which it changes behaviour (``requires_grad=True``,
``dtype=torch.float64`` on a layer: the note goes on the converted line). Static: no framework needed.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest

from torch2ms.kb import KBError, load_kb
from torch2ms.kb.schema import entry_from_toml, with_drop_reasons

KB = load_kb()
REASONS = Path(__file__).resolve().parents[1] / "src/torch2ms/kb/data/drop_reasons.toml"


def _drops():
    return [(e, name, rule) for e in KB for name, rule in e.args.items() if rule.is_drop]


def test_every_drop_rule_says_what_happens_in_both_languages():
    silent = [f"{e.torch}:{name}" for e, name, rule in _drops() if not rule.note]
    untranslated = [f"{e.torch}:{name}" for e, name, rule in _drops() if rule.note and not e.arg_notes_zh.get(name)]
    assert silent == [] and untranslated == [], (silent[:20], untranslated[:20])


def test_the_reasons_table_gives_most_drop_rules_their_note():
    """The table is data: one note per class of parameter; what each class got is counted (issue 24 report)."""
    import tomllib

    classes = tomllib.loads(REASONS.read_text(encoding="utf-8"))["drop_reason"]
    notes = {c["note"].replace("{name}", p.rsplit(":", 1)[-1]): c["class"] for c in classes for p in c["params"]}
    got = Counter(notes[rule.note] for _e, _n, rule in _drops() if rule.note in notes)
    assert sum(got.values()) >= 300 and len(got) == len(classes), got
    # the behaviour-changing classes mark every value but the ones listed; the exact ones mark none
    by_class = {c["class"]: c for c in classes}
    assert by_class["placement"]["exact"] == ["*"] and by_class["inplace"]["exact"] == ["*"]
    assert by_class["autograd-flag"]["exact"] == ["False"]
    assert "torch.float64" not in by_class["layer-dtype"]["exact"]


def _entry(torch="torch.t", **args):
    raw = {"torch": torch, "kind": "function", "status": "args-differ", "ms": "mindspore.ops.t"}
    return entry_from_toml({**raw, "sig": ["x", *(f"{a}=None" for a in args)], "args": args}, "t.toml")


def _reason(params, note="{name}= is dropped.", **extra):
    return ({"class": "c", "params": params, "note": note, "note_zh": "{name}= 被丢弃。", **extra}, "r.toml")


def test_a_reason_fills_the_note_the_twin_and_the_exact_values():
    [e] = with_drop_reasons([_entry(device=False)], [_reason(["device"], exact=["*"])])
    assert e.args["device"].note == "device= is dropped." and e.arg_notes_zh["device"] == "device= 被丢弃。"
    assert e.args["device"].exact == ("*",)


def test_an_entry_specific_reason_wins_and_a_written_note_is_kept():
    own = {"ms": False, "note": "own note"}
    e, other = with_drop_reasons(
        [_entry(dim=False, device=own), _entry("torch.u", dim=False, device=False)],
        [_reason(["torch.t:dim"], note="specific {name}"), _reason(["dim", "device"], note="plain {name}")],
    )
    assert e.args["dim"].note == "specific dim" and e.args["device"].note == "own note"
    assert other.args["dim"].note == "plain dim" and other.args["device"].note == "plain device"


@pytest.mark.parametrize(
    "reasons, message",
    [
        ([_reason(["nothing_drops_me"])], "no entry drops"),
        ([_reason(["device"]), _reason(["device"])], "already in class"),
        ([({"class": "c", "params": ["device"], "note": "n"}, "r.toml")], "missing"),
        ([_reason(["device"], why="?")], "unknown keys"),
    ],
)
def test_a_reason_table_that_does_not_fit_is_a_load_error(reasons, message):
    with pytest.raises(KBError, match=message):
        with_drop_reasons([_entry(device=False)], reasons)


def test_check_names_a_drop_without_a_note():
    from torch2ms.kb import KB as KBClass
    from torch2ms.kb.check import check_kb

    problems = check_kb(KBClass([_entry(device=False)]), resolve_targets=False)
    assert any("'device' is dropped without a note" in p for p in problems), problems


# --------------------------------------------------------------------------------------------------------
# On the converted line: a value at which the drop is exact gets no review mark; another gets the note.
# Each spelling in each place users write it (module level, a function, a Module's forward/__init__).

INFORMATIONAL = [
    ("torch.zeros", "device", "torch.zeros(3, device='cuda')"),
    ("torch.ones", "device", "torch.ones(2, 3, device=x.device, dtype=torch.float32)"),
    ("torch.empty", "pin_memory", "torch.empty(2, 3, pin_memory=True)"),
    ("torch.zeros", "requires_grad", "torch.zeros(3, requires_grad=False)"),
    ("torch.zeros", "layout", "torch.zeros(3, layout=torch.strided)"),
    ("torch.nn.functional.relu", "inplace", "F.relu(x, inplace=True)"),
    ("torch.nn.functional.dropout", "inplace", "F.dropout(x, 0.1, True, True)"),
    ("torch.nn.Dropout", "inplace", "nn.Dropout(0.1, inplace=True)"),
    ("torch.nn.ReLU", "inplace", "nn.ReLU(True)"),
    ("torch.nn.Linear", "dtype", "nn.Linear(3, 4, dtype=torch.float32)"),
    ("torch.nn.Linear", "dtype", "nn.Linear(3, 4, device='cuda', dtype=torch.float)"),
    ("torch.sort", "stable", "torch.sort(x, stable=True)"),
    ("torch.optim.Adam", "foreach", "torch.optim.Adam(params, lr=0.1, foreach=True)"),
    ("torch.optim.SGD", "fused", "torch.optim.SGD(params, lr=0.1, fused=True)"),
    ("torch.Tensor.contiguous", "memory_format", "x.contiguous(memory_format=torch.channels_last)"),
    ("torch.Tensor.cuda", "non_blocking", "x.cuda(non_blocking=True)"),
]
ATTENTION = [
    ("torch.zeros", "requires_grad", "torch.zeros(3, requires_grad=True)"),
    ("torch.randn", "requires_grad", "torch.randn(2, 3, requires_grad=True)"),
    ("torch.zeros", "layout", "torch.zeros(3, layout=torch.sparse_coo)"),
    ("torch.nn.Linear", "dtype", "nn.Linear(3, 4, dtype=torch.float64)"),
    ("torch.nn.Conv2d", "dtype", "nn.Conv2d(3, 4, 3, dtype=torch.float16)"),
    ("torch.asarray", "copy", "torch.asarray(x, copy=False)"),
    ("torch.optim.Adam", "differentiable", "torch.optim.Adam(params, differentiable=True)"),
    ("torch.Tensor.is_contiguous", "memory_format", "x.is_contiguous(memory_format=torch.channels_last)"),
]

PLACES = {
    "module": "x = torch.rand(2, 3)\nparams = [x]\ny = {call}\n",
    "function": "def f(x, params):\n    return {call}\n",
    "forward": textwrap.dedent("""\
        class Net(nn.Module):
            def forward(self, x, params=None):
                y = {call}
                return y
        """),
    "init": textwrap.dedent("""\
        class Net(nn.Module):
            def __init__(self, x, params=None):
                super().__init__()
                self.y = {call}
        """),
}
HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"


def _marks(call: str, place: str, monkeypatch) -> list[str]:
    from torch2ms.convert import convert_source

    monkeypatch.setenv("TORCH2MS_LANG", "en")
    code = convert_source(HEAD + PLACES[place].format(call=call)).code
    return [line.strip() for line in code.splitlines() if "# torch2ms: review" in line]


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("api, name, call", INFORMATIONAL, ids=[c for *_, c in INFORMATIONAL])
def test_an_exact_drop_puts_no_mark_on_the_line(api, name, call, place, monkeypatch):
    note = KB.get(api).args[name].note
    assert note  # lookup still says it
    assert not [m for m in _marks(call, place, monkeypatch) if note in m]


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("api, name, call", ATTENTION, ids=[c for *_, c in ATTENTION])
def test_a_behaviour_changing_drop_puts_its_note_on_the_line(api, name, call, place, monkeypatch):
    note = KB.get(api).args[name].note
    assert [m for m in _marks(call, place, monkeypatch) if note in m], _marks(call, place, monkeypatch)


def test_lookup_shows_the_note_of_an_exact_drop(capsys, monkeypatch):
    from torch2ms.cli import main

    monkeypatch.setenv("TORCH2MS_LANG", "en")
    main(["lookup", "nn.ReLU"])
    out = " ".join(capsys.readouterr().out.split())  # lookup wraps its lines
    assert KB.get("torch.nn.ReLU").args["inplace"].note in out
    assert "inplace: dropped (the results do not depend on it: no review mark)" in out
    main(["lookup", "torch.zeros"])
    out = " ".join(capsys.readouterr().out.split())
    assert "requires_grad: dropped; a value other than False gets a review mark with this note" in out


@pytest.mark.parametrize(
    "extra, wanted",
    [
        ({"proven_by": "tests/test_kb_drop_reasons.py", "one_sided": "no onnx"}, False),
        ({"one_sided": "no onnx", "case": [{"call": "torch.t(x)"}]}, True),  # a case runs both sides
        ({"one_sided": "no onnx"}, True),  # nothing proves even MindSpore's side
    ],
)
def test_check_wants_one_sided_with_proven_by_and_no_case(extra, wanted):
    from torch2ms.kb import KB as KBClass
    from torch2ms.kb.check import check_kb

    raw = {"torch": "torch.t", "kind": "function", "status": "direct", "ms": "mindspore.ops.t", **extra}
    problems = check_kb(KBClass([entry_from_toml(raw, "t.toml")]), resolve_targets=False)
    assert any("one_sided needs proven_by" in p for p in problems) == wanted, problems
