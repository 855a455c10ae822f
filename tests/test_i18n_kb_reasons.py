"""Chinese and English (issue 13, "Language"): why a KB handler or rule refuses a call (its
``Unsupported`` reason) is written into the ``# torch2ms: not converted`` mark in the language of the
run. Under zh the reasons of handlers in different files are Chinese and a second conversion changes
nothing; under en each mark is exactly the English it always was."""

from __future__ import annotations

from pathlib import Path

import pytest
from requires_support import REFERENCE, require_reference

LOCALE_VARS = ("TORCH2MS_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")

# One refused call per handler file: einsum.py, torch_ops.py (twice), torch_ops_shape.py, init_optim.py,
# nn_activations_losses.py, nn_layers.py (twice).
SOURCE = """import torch
import torch.nn as nn


def f(x, eq, k, nl, idx, src):
    a = torch.einsum(eq, x, x)
    b = torch.diff(x, n=k)
    d = torch.scatter(x, 0, idx, src, reduce="multiply")
    g = nn.init.calculate_gain(nl)
    h = torch.norm(x, p=3, dim=(0, 1))
    return a, b, d, g, h


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.GELU(approximate="fast")
        self.norm = nn.InstanceNorm2d(8, track_running_stats=True)
        self.up = nn.Upsample(scale_factor=1.5)
"""

MARKS = {
    "torch.einsum": (
        "torch.einsum: the equation must be a string literal to convert",
        "torch.einsum：方程必须是字符串字面量才能转换",
    ),
    "torch.diff": ("torch.diff(n=k): n must be a positive int literal", "torch.diff(n=k)：n 必须是正整数字面量"),
    "torch.scatter": (
        "torch.scatter(reduce=\"multiply\") has no MindSpore CPU form; only 'add'",
        "torch.scatter(reduce=\"multiply\") 在 MindSpore CPU 上没有对应写法；只支持 'add'",
    ),
    "torch.nn.init.calculate_gain": (
        "calculate_gain with non-literal arguments: MindSpore has no public function; compute the gain in Python "
        "(math.sqrt(2.0) for relu, 5/3 for tanh, ...)",
        "参数不是字面量的 calculate_gain：MindSpore 没有公开的对应函数；请用 Python 计算增益"
        "（relu 为 math.sqrt(2.0)，tanh 为 5/3，……）",
    ),
    "torch.norm": (
        "torch.norm over several dims with p != 2 is not supported",
        "不支持在多个维度上计算 p != 2 的 torch.norm",
    ),
    "torch.nn.GELU": ('GELU(approximate="fast") is not a torch mode', 'GELU(approximate="fast") 不是 torch 的模式'),
    "torch.nn.InstanceNorm2d": (
        "track_running_stats=True has no MindSpore CPU form: GroupNorm keeps no running statistics; normalise with "
        "the batch's own statistics (the default) or use nn.BatchNorm on GPU/Ascend.",
        "track_running_stats=True 在 MindSpore CPU 上没有对应写法：GroupNorm 不保存运行统计量；请用批内统计量归一化（默认），"
        "或在 GPU/Ascend 上用 nn.BatchNorm。",
    ),
    "torch.nn.Upsample": (
        "Upsample with a fractional scale_factor: MindSpore only supports recompute_scale_factor=True "
        "(a different coordinate map); pass size= instead",
        "Upsample 的 scale_factor 为小数：MindSpore 只支持 recompute_scale_factor=True（坐标映射不同）；请改为传入 size=",
    ),
}


@pytest.fixture
def convert_in(monkeypatch):
    """``convert_in("zh", source)``: the converted code in that language."""
    for var in LOCALE_VARS:
        monkeypatch.delenv(var, raising=False)

    def run(lang: str, source: str) -> str:
        from torch2ms.convert import convert_source

        monkeypatch.setenv("TORCH2MS_LANG", lang)
        return convert_source(source).code

    return run


def _marks(code: str) -> list[str]:
    return [line.split("# torch2ms: ", 1)[1] for line in code.splitlines() if "# torch2ms: " in line]


def test_r20_kb_handler_reasons_in_chinese_and_stable_when_converted_again(convert_in):
    code = convert_in("zh", SOURCE)
    marks = _marks(code)
    for api, (_english, chinese) in MARKS.items():
        assert f"未转换 —— {api}：{chinese}" in marks, (api, marks)
    assert convert_in("zh", code) == code


def test_r20_kb_handler_reasons_in_english_exactly_as_before(convert_in):
    code = convert_in("en", SOURCE)
    marks = _marks(code)
    for api, (english, _chinese) in MARKS.items():
        assert f"not converted — {api}: {english}" in marks, (api, marks)
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in code)
    assert convert_in("en", code) == code


def test_r20_rewrite_note_for_an_unknown_keyword_in_the_language_of_the_run(convert_in):
    from torch2ms.kb import load_kb
    from torch2ms.kb.rewrite import rewrite_call

    entry = load_kb().get("torch.nn.Linear")
    assert entry is not None
    notes = {}
    for lang in ("zh", "en"):
        convert_in(lang, "")  # sets the language of the run
        notes[lang] = rewrite_call(entry, ["4", "2"], [("colour", "1")]).notes
    assert "参数 'colour' 不在 nn.Linear 的签名中；已原样传递" in notes["zh"], notes
    assert "argument 'colour' is not in nn.Linear's signature; passed through" in notes["en"], notes


def test_r20_refused_argument_note_in_the_not_converted_mark(convert_in):
    source = "import torch\nimport torch.nn as nn\n\n\ndef f(x, y):\n    return torch.fft.fft(x, out=y), nn.L1Loss(size_average=y)\n"
    zh = convert_in("zh", source)
    assert "# torch2ms: 未转换 —— torch.fft.fft：不支持 out=；请改为给结果赋值。" in zh, zh
    assert (
        "# torch2ms: 未转换 —— torch.nn.L1Loss：size_average 在 torch 中已弃用：直接写出的 True/False/None "
        "会换成它代表的 reduction=，但只在运行时才知道的值不行：请先改写为 reduction='sum'|'mean'。" in zh
    )
    assert convert_in("zh", zh) == zh
    en = convert_in("en", source)
    assert "# torch2ms: not converted — torch.fft.fft: out= is not supported; assign the result." in en, en


def test_r20_no_equivalent_note_in_the_not_converted_mark(convert_in):
    source = "import torch\nimport torch.nn as nn\n\n\ndef f(x):\n    return torch.frexp(x), nn.LazyLinear(4)\n"
    zh = convert_in("zh", source)
    assert (
        "# torch2ms: 未转换 —— torch.frexp：2.10 中没有 mindspore.ops.frexp；请对 x.asnumpy() 使用 numpy.frexp。" in zh
    )
    assert (
        "未转换 —— torch.nn.LazyLinear：MindSpore 没有延迟确定形状的层：请显式给出 in_features 并使用 nn.Dense。" in zh
    )
    assert convert_in("zh", zh) == zh
    en = convert_in("en", source)
    assert (
        "# torch2ms: not converted — torch.frexp: No mindspore.ops.frexp in 2.10; use numpy.frexp on x.asnumpy()." in en
    )


def test_r20_composite_note_in_the_conversion_record_in_the_language_of_the_run(monkeypatch):
    """A composite entry's note is what convert's JSON report records for the converted call."""
    from torch2ms.convert import convert_source

    for var in LOCALE_VARS:
        monkeypatch.delenv(var, raising=False)
    source = "import torch\n\ny = torch.max(torch.randn(3))\n"
    notes = {}
    for lang in ("zh", "en"):
        monkeypatch.setenv("TORCH2MS_LANG", lang)
        notes[lang] = {c.api: c.note for c in convert_source(source).changes}
    assert notes["zh"]["torch.max"].startswith("torch.max(x) → ops.max(x)[0]（MindSpore 返回 (value, index)）；")
    assert notes["en"]["torch.max"].startswith("torch.max(x) → ops.max(x)[0] (MS returns (value, index));")


PRIORITY = REFERENCE / "torch_api_priority.tsv"


def test_r20_no_kb_reason_is_a_plain_english_literal():
    """A reason written as a bare string or f-string would reach a Chinese run in English: every
    ``Unsupported(...)`` of kb/ takes ``_(...)`` (or a value built from one)."""
    require_reference(PRIORITY)
    import ast

    kb_dir = Path(__file__).resolve().parents[1] / "src" / "torch2ms" / "kb"
    plain = []
    for path in sorted(kb_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Unsupported":
                first = node.args[0] if node.args else None
                if isinstance(first, (ast.Constant, ast.JoinedStr)):
                    plain.append(f"{path.relative_to(kb_dir)}:{node.lineno}")
    assert plain == [], "wrap these reasons in _() from torch2ms.i18n: " + ", ".join(plain)
