"""R6–R8, R20: the converter on small hand-written modules (static: no frameworks needed)."""

from torch2ms.convert import convert_source

SRC = '''\
"""Docstring stays."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        # the conv keeps its comment
        self.conv = nn.Conv2d(3, 8, 3, padding=(1, 2), bias=False)
        self.bn = nn.BatchNorm2d(8, momentum=0.1)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x.add_(1)
        with torch.no_grad():
            n = x.size(0)  # batch
        return x.view(n, -1)
'''


def test_r6_r7_r8_module_converted_with_comments():
    res = convert_source(SRC, "block.py")
    assert res.error is None
    code = res.code
    assert code.startswith('"""Docstring stays."""')
    assert "import torch" not in code
    assert "from mindspore import nn, ops" in code
    assert "class Block(nn.Cell):" in code
    assert "def construct(self, x):" in code
    assert "# the conv keeps its comment" in code and "# batch" in code
    assert "nn.Conv2d(3, 8, 3, pad_mode='pad', padding=(1, 1, 2, 2), has_bias=False)" in code
    assert "nn.BatchNorm2d(8, momentum=0.9)" in code
    assert "x = x.add(1)" in code
    assert "n = x.shape[0]" in code and "no_grad" not in code


def test_idempotent_and_deterministic():
    first = convert_source(SRC, "block.py").code
    assert convert_source(SRC, "block.py").code == first
    assert convert_source(first, "block.py").code == first


def test_r20_unconvertible_kept_and_marked():
    src = "import torch\n\ny = torch.definitely_not_an_api(3)\n"
    res = convert_source(src, "x.py")
    assert "torch.definitely_not_an_api(3)" in res.code
    assert "# torch2ms: not converted — torch.definitely_not_an_api" in res.code
    assert "import torch" in res.code  # still needed by the unconverted line
    assert [c.action for c in res.changes] == ["not-converted"]
    assert convert_source(res.code, "x.py").code == res.code  # markers are not repeated


def test_syntax_error_copied_unchanged():
    src = "import torch\ndef f(:\n"
    res = convert_source(src, "bad.py")
    assert res.code == src and "syntax error at line 2" in res.error


def test_reexported_torch_names_stay_importable():
    # torchvision's _internally_replaced_utils re-exports load_state_dict_from_url for other modules.
    src = (
        "try:\n    from torch.hub import load_state_dict_from_url  # noqa: 401\n"
        "except ImportError:\n    from torch.utils.model_zoo import load_url as load_state_dict_from_url\n"
        "import torch.nn as nn\nlayer = nn.ReLU()\n"
    )
    code = convert_source(src, "utils.py").code
    assert "from torch.hub import load_state_dict_from_url  # noqa: 401" in code
    assert "from torch.utils.model_zoo import load_url as load_state_dict_from_url" in code
    assert "import torch.nn as nn" not in code  # a namespace import is no re-export


def test_r8_device_moves_leave_no_self_assignments():
    src = (
        "import torch\n\ndef f(loader, device):\n    for x, y in loader:\n"
        "        x, y = x.to(device), y.to(device)\n        a, b = y, x\n    return a, b\n"
    )
    code = convert_source(src, "loop.py").code
    assert "x, y = x, y" not in code and ".to(" not in code
    assert "a, b = y, x" in code  # a real assignment stays


def test_r8_tensor_methods_already_in_mindspore_form_are_left_alone():
    """A file converted once still imports torch when something stayed torch; converting it again must
    not read ``x.argmax(axis=1, keepdims=False)`` (MindSpore keywords) as a torch call."""
    src = "import torch\n\ndef f(model, x):\n    return model(x).argmax(axis=1, keepdims=False)\n"
    res = convert_source(src)
    assert "model(x).argmax(axis=1, keepdims=False)" in res.code
    assert not [c for c in res.changes if c.api == "torch.Tensor.argmax"]
    torch_form = convert_source("import torch\n\ndef f(x: torch.Tensor):\n    return x.argmax(dim=1)\n")
    assert "x.argmax(axis=1, keepdims=False)" in torch_form.code
