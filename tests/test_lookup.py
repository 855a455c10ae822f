"""R2/R4: lookup prints the mapping, argument differences, pitfall, backends and a before/after example."""

import json

from torch2ms.cli import main
from torch2ms.kb.lookup import lookup, lookup_dict


def test_r2_lookup_conv2d_full_and_short_names():
    for name in ("torch.nn.Conv2d", "nn.Conv2d", "torch.nn.modules.conv.Conv2d"):
        d = lookup_dict(lookup(name))
        assert d["found"] and d["torch"] == "torch.nn.Conv2d"
    d = lookup_dict(lookup("nn.Conv2d"))
    assert d["mindspore"] == "mindspore.nn.Conv2d"
    assert d["status"] == "args-differ"
    assert "CPU" in d["backends"]
    diffs = "\n".join(d["argument_differences"])
    assert "groups → group" in diffs and "has_bias" in diffs and "pad_mode" in diffs
    assert "pad_mode='valid'" in d["example"]["mindspore"] and "has_bias=True" in d["example"]["mindspore"]
    assert d["example"]["torch"].startswith("m = torch.nn.Conv2d(")


def test_r2_lookup_short_forms():
    assert lookup("Tensor.view").entry.torch == "torch.Tensor.view"
    assert lookup("nn.BatchNorm2d").entry.params["running_mean"] == "moving_mean"


def test_r2_lookup_typo_suggests(capsys):
    res = lookup("nn.Conv2x")
    assert not res.found and res.suggestions[0] == "torch.nn.Conv2d"
    assert main(["lookup", "nn.Conv2x"]) == 1
    assert "Did you mean" in capsys.readouterr().out


def test_r2_lookup_json(capsys):
    assert main(["lookup", "nn.BatchNorm2d", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["parameter_renames"]["weight"] == "gamma"
    assert "momentum=0.9" in d["example"]["mindspore"]
