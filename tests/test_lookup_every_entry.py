"""Issue 23, crash class "lookup fails on a KB entry": ``torch2ms lookup optim.Adam`` ended in an
internal ``KeyError: 'params'`` (its example put the optimizer's class on a line of its own, called
with no arguments, before the case's call). Every KB entry, by its full name, its short name and each
alias, in text and JSON: an answer, never an internal error; an optimizer's or scheduler's example is
the case's call alone."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from torch2ms.cli import main
from torch2ms.kb import load_kb


def _names() -> list[str]:
    names: set[str] = set()
    for e in load_kb():
        names.update(n for n in (e.torch, e.short, *e.aliases) if n)
    return sorted(names)


def _run(args: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        rc = main(args)
    return rc, buf.getvalue()


@pytest.mark.slow  # every name of every entry: minutes on a loaded machine
def test_lookup_answers_every_entry_by_every_name_without_internal_error():
    bad = []
    for name in _names():
        rc, out = _run(["lookup", name])
        if rc != 0 or "internal error" in out or "Traceback" in out:
            bad.append((name, rc, out[-200:]))
    assert not bad, bad[:10]


@pytest.mark.slow
def test_lookup_json_answers_every_entry():
    bad = []
    for e in load_kb():
        rc, out = _run(["lookup", e.torch, "--json"])
        if rc != 0:
            bad.append((e.torch, out[-200:]))
            continue
        d = json.loads(out)
        ex = d.get("example") or {}
        if e.kind == "class" and e.cases and e.cases[0].check in ("optimizer", "scheduler") and ex:
            if f"= {e.torch}()" in ex["torch"] or e.cases[0].call not in ex["torch"]:
                bad.append((e.torch, ex["torch"]))
    assert not bad, bad[:10]


def test_lookup_optim_adam_shows_its_mapping():
    rc, out = _run(["lookup", "optim.Adam"])
    assert rc == 0 and "mindspore.experimental.optim.AdamW(params, weight_decay=0.0)" in out
