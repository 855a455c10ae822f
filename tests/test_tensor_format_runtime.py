"""Issue 22, class 8: a 0-dim tensor formatted with a spec where the converter cannot see a tensor. The imagenet
example's ``AverageMeter.__str__`` builds its format string at run time (``'{name} {val' + self.fmt + '}'``) and
formats ``**self.__dict__``; before, its first progress line raised ``TypeError: unsupported format string passed
to Tensor.__format__`` after one step. torch formats a 0-dim tensor as its number; a converted module that formats with a
format string built at run time now imports the runtime's ``tensors_format_like_torch``
(convert/imports.py), which gives MindSpore's Tensor that behaviour (runtime/tensor_format.py).

Matrix: where the value is (a local, an object attribute, a dict entry, ``**obj.__dict__``) × how it is formatted
(``str.format`` with a spec built at run time or written out, positional/keyword fields, ``format()``, an f-string
over a subscript) × value kind (float mean, integer count turned float, a percentage); each line printed by torch
and by the converted code must be the same text. A non-0-dim tensor with a spec still raises TypeError, as torch.
"""

from __future__ import annotations

import itertools
import re
import sys

import pytest
from requires_support import require_module
from script_support import load_script

from torch2ms.convert import convert_source

VALUES = {
    "mean": "((x - 1) ** 2).mean()",
    "count": "(x > 0).sum().float()",
    "percent": "(x > 0).float().sum() * 100.0 / x.shape[0]",
}
HOLDERS = {
    "local": ("value = {v}", "value"),
    "attribute": ("meter.update({v})", "meter.val"),
    "dict": ("stats = {{'loss': {v}}}", "stats['loss']"),
}
FORMATS = {
    "runtime_spec": "('{{:' + spec + '}}').format({ref})",
    "written_spec": "'{{0:>9.3f}}'.format({ref})",
    "keyword": "'{{v:.4f}}'.format(v={ref})",
    "builtin": "format({ref}, '.2f')",
    "fstring_subscript": 'f"{{[{ref}][0]:.3f}}"',
}

HEAD = """
import torch

device = torch.device("cpu")


class AverageMeter(object):
    def __init__(self, name, fmt=':f'):
        self.name, self.fmt = name, fmt
        self.val = self.avg = self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = '{name} {val' + self.fmt + '} ({avg' + self.fmt + '})'
        return fmtstr.format(**self.__dict__)


def lines():
    x = torch.tensor([0.5, -1.25, 2.0, 3.5, -0.75, 1.5]).to(device)
    spec = '.3f'
    meter = AverageMeter('Acc@1', ':6.2f')
    out = []
"""


def script() -> str:
    body = []
    for (vk, v), (hk, (setup, ref)), (fk, fmt) in itertools.product(VALUES.items(), HOLDERS.items(), FORMATS.items()):
        body.append(f"    {setup.format(v=v)}")
        body.append(f"    out.append(({vk!r}, {hk!r}, {fk!r}, {fmt.format(ref=ref)}))")
    body.append("    out.append(('meter', 'str', '__dict__', str(meter)))")
    body.append("    return out")
    return (
        HEAD
        + "\n".join(body)
        + "\n\n\ndef wide():\n    spec = '.2f'\n    return ('{:' + spec + '}').format(torch.tensor([1.0, 2.0]))\n"
    )


@pytest.mark.differential
def test_zero_dim_tensor_formats_as_torch_where_its_type_is_not_visible(tmp_path):
    require_module("torch")
    require_module("mindspore")
    src = script()
    conv = convert_source(src)
    assert conv.error is None, conv.error
    assert "import tensors_format_like_torch" in conv.code
    assert not re.search(r"^\s*(import torch\b|from torch\b)", conv.code, re.M), conv.code
    (tmp_path / "t.py").write_text(src, encoding="utf-8")
    (tmp_path / "m.py").write_text(conv.code, encoding="utf-8")
    names = ("t2m_fmt_t", "t2m_fmt_m")
    try:
        t, m = load_script(tmp_path / "t.py", names[0]), load_script(tmp_path / "m.py", names[1])
        expected, got = t.lines(), m.lines()
        assert len(expected) == len(VALUES) * len(HOLDERS) * len(FORMATS) + 1
        assert got == expected
        for side in (t, m):
            with pytest.raises(TypeError, match="unsupported format string"):
                side.wide()
    finally:
        for name in names:
            sys.modules.pop(name, None)
