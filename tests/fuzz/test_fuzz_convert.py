"""R20 / issue 15: the convert fuzzer in CI — a fixed seed, a few hundred mutated and odd-but-valid
files converted as one tree by the real pipeline, every property checked on every file (see
fuzz_convert.py; ``make fuzz`` runs a long campaign). Each converter defect a campaign found has a
minimal reproducer in test_converter_defects.py."""

from __future__ import annotations

import pytest
from fuzz_convert import Campaign, make_cases, run_campaign, summary

SEED, CASES = 15, 240
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Campaign:
    return run_campaign(make_cases(SEED, CASES), jobs=2, workdir=tmp_path_factory.mktemp("fuzz"))


def _holds(camp: Campaign, prop: str) -> None:
    fails = camp.by_property(prop)
    assert not fails, summary(Campaign(camp.cases, fails))


def test_r20_fuzz_cases_are_varied(campaign: Campaign):
    kinds = {c.kind for c in campaign.cases}
    assert kinds >= {"snippet", "nonascii", "encoded", "crlf", "deep", "mutated"}
    assert any(not c.text.isascii() for c in campaign.cases)


def test_r20_fuzz_no_crash_every_file_reported(campaign: Campaign):
    _holds(campaign, "crash")


def test_r20_fuzz_valid_input_valid_output_or_copied_and_reported(campaign: Campaign):
    _holds(campaign, "valid")


def test_r20_fuzz_output_keeps_encoding(campaign: Campaign):
    _holds(campaign, "encoding")


def test_r20_fuzz_time_per_file_bounded(campaign: Campaign):
    _holds(campaign, "time")


def test_r20_fuzz_comments_and_nonascii_strings_kept(campaign: Campaign):
    _holds(campaign, "text")


def test_r20_fuzz_converting_twice_changes_nothing(campaign: Campaign):
    _holds(campaign, "idempotent")
