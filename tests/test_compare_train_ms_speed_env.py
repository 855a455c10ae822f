"""Issue 22, class 12: compare-train starts the MindSpore side with MindSpore's CPU speed switches where the
user left them unset (an AVX-512 host otherwise runs oneDNN's naive convolution: a DCGAN step past 600 s where
torch took a minute); the torch side keeps its own settings, and a value the user set wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from torch2ms.doctor import MS_SPEED_ENV
from torch2ms.trainrun.runner import _child_env, is_mindspore_command, ms_command, torch_command


@pytest.fixture
def unset(monkeypatch):
    for key in MS_SPEED_ENV:
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


@pytest.mark.parametrize("nproc", [1, 2])
def test_the_mindspore_side_gets_the_speed_switches(unset, tmp_path: Path, nproc: int):
    command = ms_command(tmp_path / "config.json", nproc)
    assert is_mindspore_command(command)
    env = _child_env(0, mindspore=is_mindspore_command(command))
    assert {k: env.get(k) for k in MS_SPEED_ENV} == MS_SPEED_ENV
    assert env["ONEDNN_MAX_CPU_ISA"] == "AVX2"


@pytest.mark.parametrize("nproc", [1, 2])
def test_the_torch_side_keeps_its_own_onednn_level(unset, tmp_path: Path, nproc: int):
    command = torch_command(None, tmp_path / "config.json", nproc)
    assert not is_mindspore_command(command)
    env = _child_env(0, mindspore=is_mindspore_command(command))
    assert not any(k in env for k in MS_SPEED_ENV)


def test_a_value_the_user_set_wins(unset, tmp_path: Path):
    unset.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE")
    env = _child_env(0, mindspore=True)
    assert env["ONEDNN_MAX_CPU_ISA"] == "AVX512_CORE"
    assert env["MS_DEV_LAUNCH_BLOCKING"] == "1"
