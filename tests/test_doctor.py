"""R5: the environment doctor flags known-bad combinations with what to do."""

from torch2ms.doctor import diagnose


def test_r5_numpy2_with_mindspore_is_an_error():
    rep = diagnose(
        {
            "torch": "2.14.1",
            "torchvision": "0.29.1",
            "mindspore": "2.10.0",
            "numpy": "2.4.6",
            "libcst": "1",
            "rich": "1",
            "safetensors": "1",
        },
        probe_device=False,
    )
    err = [f for f in rep.findings if f.level == "error"]
    assert len(err) == 1 and "numpy" in err[0].message and err[0].fix == "pip install 'numpy<2'"
    assert not rep.ok


def test_r5_missing_packages_named_with_fix():
    rep = diagnose(
        {
            "torch": None,
            "torchvision": None,
            "mindspore": None,
            "numpy": "1.26.4",
            "libcst": None,
            "rich": "1",
            "safetensors": None,
        },
        probe_device=False,
    )
    text = " ".join(f.message + f.fix for f in rep.findings)
    assert "mindspore is not installed" in text and "pip install mindspore==2.10.0" in text
    assert "libcst is missing" in text and not rep.ok


def test_r5_real_environment_reports_versions_and_device():
    rep = diagnose()
    assert rep.versions["python"].startswith("3.")
    if rep.versions.get("mindspore"):
        assert rep.device_target == "CPU"
    assert rep.ok


def test_r5_avx512_cpu_gets_the_onednn_advice(tmp_path, monkeypatch):
    from torch2ms import doctor

    flags = tmp_path / "cpuinfo"
    flags.write_text("processor : 0\nflags : fpu sse avx2 avx512f avx512bw\n")
    assert doctor._has_avx512(str(flags))
    flags.write_text("processor : 0\nflags : fpu sse avx2\n")
    assert not doctor._has_avx512(str(flags))
    assert not doctor._has_avx512(str(tmp_path / "missing"))


def test_r5_cpu_without_single_threaded_dispatch_gets_the_advice(monkeypatch):
    versions = {
        "torch": None,
        "torchvision": None,
        "mindspore": "2.10.0",
        "numpy": "1.26.4",
        "libcst": "1",
        "rich": "1",
        "safetensors": "1",
    }
    monkeypatch.delenv("MS_DEV_HOST_BLOCKING_RUN", raising=False)
    monkeypatch.setenv("MS_DEV_LAUNCH_BLOCKING", "1")
    advice = [f for f in diagnose(versions, probe_device=False).findings if "dispatch" in f.fix]
    assert len(advice) == 1 and advice[0].fix.startswith("export MS_DEV_HOST_BLOCKING_RUN=1 ")
    monkeypatch.setenv("MS_DEV_HOST_BLOCKING_RUN", "1")
    assert not [f for f in diagnose(versions, probe_device=False).findings if "dispatch" in f.fix]
