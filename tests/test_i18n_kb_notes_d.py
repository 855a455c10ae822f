"""Chinese and English (issue 13, "Language"): the KB notes of the tensor-method, layer, functional,
loss, fft/special and torchvision transform/ops files have Chinese twins (kb/data/notes_zh_d.toml) that
keep the code of the English note as it is, and convert's "not converted" mark carries them under zh."""

from __future__ import annotations

import re
import tomllib

from torch2ms.kb import load_kb
from torch2ms.kb.__init__ import DATA_DIR

FILES = {
    "tensor_methods.toml",
    "torchvision_transforms.toml",
    "nn_layers.toml",
    "nn_layers_2.toml",
    "fft_special.toml",
    "nn_functional.toml",
    "nn_activations_losses.toml",
    "torchvision_ops.toml",
}

# What a translation must leave untouched: `spans`, quoted strings, dotted names, names with _ or a call's
# "(", keyword arguments ("dim="), numbers.
CODE = re.compile(
    r"`[^`]+`|(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|\b\w*_\w*\b"
    r"|\b[A-Za-z]\w*\(|\b[A-Za-z_]\w*=(?!=)|(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?"
)


def test_r20_every_note_of_these_files_has_a_chinese_twin():
    missing = [e.torch for e in load_kb() if e.source in FILES and e.note and not e.note_zh]
    assert missing == [], "add them to kb/data/notes_zh_d.toml: " + ", ".join(missing)


def test_r20_chinese_notes_keep_the_code_of_the_english_note():
    kb = load_kb()
    table = tomllib.loads((DATA_DIR / "notes_zh_d.toml").read_text(encoding="utf-8"))["note_zh"]
    assert len(table) > 400
    lost = {}
    for name, chinese in table.items():
        entry = kb.get(name)
        assert entry is not None and entry.note_zh == chinese, name
        missing = [token for token in CODE.findall(entry.note) if token not in chinese]
        if missing:
            lost[name] = missing
    assert lost == {}


def test_r20_not_converted_mark_carries_the_chinese_note(monkeypatch):
    from torch2ms.convert import convert_source

    source = "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.as_strided((2, 2), (1, 2))\n"
    marks = {}
    for lang in ("zh", "en"):
        monkeypatch.setenv("TORCH2MS_LANG", lang)
        marks[lang] = [line.strip() for line in convert_source(source).code.splitlines() if "# torch2ms: " in line]
    assert (
        "# torch2ms: 未转换 —— torch.Tensor.as_strided：MindSpore 没有 as_strided（没有带步长的视图）；"
        "请用 reshape/narrow/index_select 或 unfold 表达该视图。" in marks["zh"]
    ), marks
    assert (
        "# torch2ms: not converted — torch.Tensor.as_strided: No as_strided in MindSpore (no strided views); "
        "express the view with reshape/narrow/index_select or unfold." in marks["en"]
    ), marks
