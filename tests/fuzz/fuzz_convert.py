"""The convert fuzzer (issue 15): mutated and odd-but-valid sources, checked for the properties that must hold.

Seeds: the repository's example projects, ``../shared/realcode/corpus`` and the installed torchvision
source. Each case is one file; cases are converted as trees by the real ``convert_tree`` (worker
processes, time limits) and every file is checked:

* ``crash``      — the run never raises; every file is in the report
* ``valid``      — a valid input gives an output that parses, or the file is copied unchanged and reported
* ``text``       — every comment and string of the input, non-ASCII included, is in the output unchanged
* ``encoding``   — the output decodes in the input's encoding (or UTF-8 with a cookie saying so)
* ``idempotent`` — converting the output again changes nothing, byte for byte
* ``time``       — no file takes more than ~10x the time real code of its size takes

``python tests/fuzz/fuzz_convert.py --cases 3000 --seed 1`` (``make fuzz``) runs a long campaign and
prints the failures grouped by property and cause, each with the smallest case that shows it.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import os
import random
import re
import sys
import tempfile
import time
import tokenize
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("TORCH2MS_REALCODE") or REPO.parent / "shared" / "realcode") / "corpus"
# Real code converts at ~7 ms/KiB (50 ms/KiB at worst); 10x the worst, and a floor for a loaded machine.
SECONDS_PER_KIB = 0.5
SECONDS_FLOOR = 3.0
MAX_SEED_BYTES = 12_000


def seed_files() -> list[Path]:
    """Real PyTorch source to mutate: the examples, the realcode corpus, torchvision's models."""
    paths = sorted((REPO / "examples").rglob("*.py"))
    if CORPUS.is_dir():
        paths += sorted(CORPUS.rglob("*.py"))
    spec = importlib.util.find_spec("torchvision")
    if spec and spec.submodule_search_locations:
        paths += sorted((Path(list(spec.submodule_search_locations)[0]) / "models").glob("*.py"))
    return [p for p in paths if 200 < p.stat().st_size <= MAX_SEED_BYTES]


# ---- odd but valid snippets: each parses alone and appended to any module ---------------------------------

SNIPPETS = [
    "import torch\ntorch.backends.cudnn.benchmark = True  # assignment to a torch attribute\n",
    "import torch\nimport torch.nn as nn\n\n\ndef kind(m):\n    match m:\n        case nn.Linear(in_features=4):\n"
    "            return 'linear'\n        case torch.Tensor():\n            return 'tensor'\n        case _:\n"
    "            return None\n",
    "import torch\n\n\ndef f(x):\n    if x is not None:\n        with torch.no_grad(): y = x * 2\n    return x\n",
    "import torch\nflat = lambda t: t.view(t.size(0), -1)  # 展平\n",
    "import torch\n\n\ndef g(x):\n    if (n := x.size(0)) > 1:\n        return n\n    return 0\n",
    "import torch\na = torch.zeros(2); b = a.cuda(); c = b.cpu()  # 分号\n",
    "import torch\n\n\n@torch.no_grad()\ndef evaluate(model, x):\n    return model(x).argmax(dim=1)\n",
    'import torch\n\n\ndef show(x):\n    return f"shape={x.size(0)}, 形状 {x.shape!r}"\n',
    "import torch\ny = torch.cat([torch.ones(1),\n               torch.zeros(1)], \\\n              dim=0)\n",
    "import torch\n\n\ndef ident(x: torch.Tensor) -> torch.Tensor:\n    return x\n",
    "import torch\nimport torch.nn as nn\ncfg = {'in_features': 4, 'out_features': 2}\nlayer = nn.Linear(**cfg)\n"
    "parts = [torch.ones(1)]\nwhole = torch.cat(parts, *[])\n",
    "import torch\n\n\ndef safe(x):\n    try:\n        return x.cuda()\n    except torch.cuda.OutOfMemoryError:  # 显存不足\n"
    "        return x\n",
    "import torch\n\n\nasync def run(x):\n    return torch.relu(x)\n",
    "from torch import *\nz = zeros(3)\n",
    "import torch as t\nlayer = t.nn.Linear(3, 3)\n",
    "import torch\nsizes = [x.size(0) for x in [torch.ones(2), torch.ones(3)]]\n",
    '"""只有文档字符串的模块。"""\n',
    "# 只有注释\n# only comments\n",
    "",
    "import torch\n\n\nclass Holder:\n    dtype = torch.float32\n    names = ('中文', 'ascii')\n",
    "import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
    "        for _ in range(2): x = x.relu()\n        return x\n",
    "import torch\nx = torch.ones(2)\nx.add_(1); x.mul_(2)\n",
    "import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.register_buffer('mask', torch.tril(torch.ones(4, 4)))  # 因果掩码\n",
    "import torch\nimport torch.nn as nn\nopt = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)\n"
    "for step in range(2):\n    opt.zero_grad(); loss = torch.ones(1, requires_grad=True).sum(); loss.backward(); opt.step()\n",
    # Code a first pass leaves to a person keeps torch imported: the second pass reads torch code again.
    "import torch\nimport torch.nn.functional as F\n\n\ndef up(x):\n"
    "    x = F.interpolate(x, size=[4, 4], mode='bilinear', antialias=True)  # 抗锯齿\n"
    "    return x.stride(), x.argmax(), x.topk(1), x.sort(dim=0), x.median(), x.device, x.is_cuda\n",
    "from torch import *\n\n\ndef count(x, n):\n    return x.to(int), range(n), max(n, 1)\n",
    "import torch\nlike = lambda b: torch.full_like(b, 1, layout=torch.strided)\n",
    "import torch\nx = torch.ones(2, 3)\ny = x.as_strided((2,), (1,))  # 跨步视图\nz = x.t().contiguous().stride(0)\n",
]


# ---- cases ------------------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    kind: str  # how it was made (the mutation)
    text: str
    encoding: str = "utf-8"

    @property
    def data(self) -> bytes:
        return self.text.encode(self.encoding)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [""]


def _nonascii(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    words = ["中文注释", "张量的形状", "日本語", "naïve café", "Ünïcödé", "训练 loss 下降"]
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        line = lines[i]
        if line.strip() and not line.rstrip().endswith(("\\", ",", "(", "[", "{")) and "#" not in line:
            try:  # only where a comment cannot land inside a string or a bracket
                ast.parse(line.strip())
            except SyntaxError:
                continue
            lines[i] = line.rstrip("\r\n") + f"  # {rng.choice(words)}\n"
    lines.append(f'\n说明 = "{rng.choice(words)}"  # {rng.choice(words)}\n')
    return "".join(lines)


def _encoded(rng: random.Random, text: str) -> tuple[str, str]:
    enc, word = rng.choice([("latin-1", "café naïve"), ("gbk", "中文注释"), ("shift_jis", "日本語のコメント")])
    body = f"# -*- coding: {enc} -*-\n# {word}\n" + text + f'\nlabel = "{word}"  # {word}\n'
    try:
        body.encode(enc)
    except UnicodeEncodeError:  # written as UTF-8 under the cookie that says otherwise: Python reads mojibake
        return body, "utf-8"
    return body, enc


def _deep(rng: random.Random) -> str:
    n = rng.choice([300, 800, 1500, 2500])
    kind = rng.choice(["plus", "ifexp", "attr", "call"])
    expr = {
        "plus": " + ".join(["x"] * n),
        "ifexp": " if c else ".join(["x"] * n),
        "attr": "x" + ".a" * n,
        "call": "x" + "()" * n,
    }[kind]
    return f"import torch\n\nx = torch.ones(1)\nc = True\ny = {expr}\n"


def _mutate(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    op = rng.choice(["delete", "duplicate", "swap", "truncate", "indent", "token"])
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(i, lines[i])
    elif op == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "truncate":
        return text[: rng.randrange(len(text) + 1)]
    elif op == "indent":
        lines[i] = "    " + lines[i]
    else:
        pos = rng.randrange(len(text) + 1)
        return text[:pos] + rng.choice(["(", ")", ":", "torch.", " x.size(0) ", "'", "#", "\\\n", "\t"]) + text[pos:]
    return "".join(lines)


def make_cases(seed: int, count: int) -> list[Case]:
    """``count`` cases from a fixed seed: the same list every time."""
    rng = random.Random(seed)
    seeds = seed_files()
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in seeds]
    cases = []
    for i in range(count):
        text = rng.choice(texts)
        kind = rng.choices(
            ["snippet", "nonascii", "encoded", "crlf", "deep", "mutated", "seed"], [5, 4, 3, 1, 1, 5, 1]
        )[0]
        enc = "utf-8"
        if kind == "snippet":
            text = rng.choice(SNIPPETS) if rng.random() < 0.5 else text + "\n\n" + rng.choice(SNIPPETS)
        elif kind == "nonascii":
            text = _nonascii(rng, text)
        elif kind == "encoded":
            text, enc = _encoded(rng, text)
        elif kind == "crlf":
            text = text.replace("\n", "\r\n")
        elif kind == "deep":
            text = _deep(rng)
        elif kind == "mutated":
            text = _mutate(rng, text)
        cases.append(Case(f"case{i:05d}.py", kind, text, enc))
    return cases


# ---- properties -------------------------------------------------------------------------------------------


@dataclass
class Failure:
    prop: str
    case: str
    kind: str
    cause: str  # short, for grouping


@dataclass
class Campaign:
    cases: list[Case]
    failures: list[Failure] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def by_property(self, prop: str) -> list[Failure]:
        return [f for f in self.failures if f.prop == prop]


def _decode(data: bytes) -> str | None:
    try:
        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(enc)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


def _valid(text: str | None) -> bool:
    if text is None:
        return False
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


_COOKIE = re.compile(r"^#.*?coding[:=]")


def text_tokens(text: str) -> Counter:
    """The text a person wrote that must survive: every comment (but the coding line, which may say
    utf-8 after a re-encoding) and every string literal holding non-ASCII text. ASCII literals may be
    consumed by a rewrite ('cuda' in a removed device call, 'relu' in a gain folded to a constant), and
    an f-string holds code the converter rewrites."""
    out: Counter = Counter()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                if not tok.string.startswith("# torch2ms:") and not _COOKIE.match(tok.string):
                    out[tok.string.rstrip()] += 1
            elif tok.type == tokenize.STRING and not tok.string.isascii():
                if not re.match(r"[rRbB]*[fF]", tok.string):
                    out[tok.string] += 1
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def _cause(text: str) -> str:
    """A short, groupable cause: the first line that differs, or the error's kind."""
    text = re.sub(r"line \d+", "line N", text)
    text = re.sub(r"\d+(\.\d+)? s\b", "N s", text)
    return text[:120]


def check_case(case: Case, out_data: bytes, error: str | None, again: bytes | None, seconds: float) -> list[Failure]:
    """Every property of one case, given its output bytes, its reported error and its second conversion."""
    fails = []
    add = lambda prop, cause: fails.append(Failure(prop, case.name, case.kind, _cause(cause)))  # noqa: E731
    # What Python reads from the file's bytes: a case whose cookie does not match its bytes (a latin-1
    # cookie over UTF-8 text, see _encoded) reads as mojibake, and that is the text that must survive.
    src_text = _decode(case.data)
    src_ok = _valid(src_text)
    out_text = _decode(out_data)
    copied = out_data == case.data
    if out_text is None:
        add("encoding", "output does not decode in its declared encoding")
        return fails
    if src_ok and not _valid(out_text) and not (copied and error):
        add("valid", "valid input, output does not parse" + ("" if error else " and no error was reported"))
    if case.encoding != "utf-8" and not copied:
        declared = tokenize.detect_encoding(io.BytesIO(out_data).readline)[0]
        if declared.replace("_", "-") not in (case.encoding.replace("_", "-"), "utf-8", "iso-8859-1", "cp932", "gbk"):
            add("encoding", f"output declares {declared}, input was {case.encoding}")
    if src_ok and not copied:
        missing = text_tokens(src_text or "") - text_tokens(out_text)
        if missing:
            lost = next(iter(missing))
            add("text", f"{'comment' if lost.startswith('#') else 'string'} lost: {lost[:60]}")
    if again is not None and again != out_data:
        add("idempotent", _first_difference(out_data, again))
    limit = max(SECONDS_FLOOR, SECONDS_PER_KIB * len(case.data) / 1024)
    if seconds > limit:  # CPU seconds of the worker: other load on the machine does not count
        add("time", f"{seconds:.1f} s CPU for {len(case.data)} bytes (limit {limit:.1f} s)")
    return fails


def _first_difference(a: bytes, b: bytes) -> str:
    la, lb = a.decode("utf-8", "replace").splitlines(), b.decode("utf-8", "replace").splitlines()
    for x, y in zip(la, lb):
        if x != y:
            return f"second run changed: {x.strip()[:50]!r} -> {y.strip()[:50]!r}"
    return f"second run changed the line count {len(la)} -> {len(lb)}"


def run_campaign(cases: list[Case], jobs: int = 2, workdir: Path | None = None) -> Campaign:
    """Convert every case (as one tree), convert the output again, check every property."""
    from torch2ms.convert import convert_tree

    camp = Campaign(cases)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        src, out, out2 = Path(tmp) / "src", Path(tmp) / "out", Path(tmp) / "out2"
        src.mkdir()
        for c in cases:
            (src / c.name).write_bytes(c.data)
        try:
            report = convert_tree(src, out, jobs=jobs)
            report2 = convert_tree(out, out2, jobs=jobs)
        except Exception as exc:  # noqa: BLE001 - the property under test
            camp.failures.append(Failure("crash", "*", "*", f"convert_tree raised {type(exc).__name__}: {exc}"))
            return camp
        results = {f.path: f for f in report.files}
        again_ok = {f.path for f in report2.files if not f.error}
        for c in cases:
            res = results.get(c.name)
            if res is None:
                camp.failures.append(Failure("crash", c.name, c.kind, "file missing from the report"))
                continue
            camp.seconds[c.name] = res.seconds
            again = (out2 / c.name).read_bytes() if c.name in again_ok and not res.error else None
            camp.failures += check_case(c, (out / c.name).read_bytes(), res.error, again, res.seconds)
    return camp


def check_tree(name: str, root: Path, work: Path) -> dict:
    """A real tree converted twice: files that fail, that change again, that stop parsing, that lose text."""
    from torch2ms.convert import convert_tree

    out, out2 = work / "once" / root.name, work / "twice" / root.name  # same folder name: same local packages
    start = time.perf_counter()
    first = convert_tree(root, out)
    second = convert_tree(out, out2)
    failed_first = {f.path for f in first.failed}
    failed_second = {f.path for f in second.failed}
    res: dict = {"files": len(first.files), "failed": len(failed_first), "seconds": time.perf_counter() - start}
    res["not_idempotent"], res["invalid"], res["text_lost"] = [], [], []
    for f in first.files:
        if f.path in failed_first:
            continue
        src_text = _decode((root / f.path).read_bytes())
        data = (out / f.path).read_bytes()
        out_text = _decode(data)
        if _valid(src_text) and not _valid(out_text):
            res["invalid"].append(f.path)
        lost = text_tokens(src_text or "") - text_tokens(out_text or "")
        if lost:
            res["text_lost"].append((f.path, sum(lost.values()), next(iter(lost))))
        if f.path not in failed_second and (out2 / f.path).read_bytes() != data:
            res["not_idempotent"].append((f.path, _first_difference(data, (out2 / f.path).read_bytes())))
    return res


def summary(camp: Campaign, cases: dict[str, Case] | None = None) -> str:
    """Failures grouped by property and cause, each with its smallest case."""
    cases = cases or {c.name: c for c in camp.cases}
    groups: dict[tuple[str, str], list[Failure]] = defaultdict(list)
    for f in camp.failures:
        groups[(f.prop, f.cause)].append(f)
    lines = [f"{len(camp.cases)} cases, {len(camp.failures)} failures in {len(groups)} groups"]
    for (prop, cause), fs in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        smallest = min(fs, key=lambda f: len(cases[f.case].text) if f.case in cases else 0)
        size = len(cases[smallest.case].text) if smallest.case in cases else 0
        lines.append(f"  [{prop}] x{len(fs)} {cause}  (smallest: {smallest.case}, {smallest.kind}, {size} chars)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--keep", help="write every failing case into this folder")
    args = ap.parse_args(argv)
    cases = make_cases(args.seed, args.cases)
    start = time.perf_counter()
    camp = run_campaign(cases, args.jobs)
    import resource

    print(summary(camp))
    slowest = max(camp.seconds.items(), key=lambda kv: kv[1], default=("-", 0.0))
    print(
        f"converted twice in {time.perf_counter() - start:.0f} s; slowest file {slowest[0]} {slowest[1]:.1f} s; "
        f"peak RSS main {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MB, "
        f"largest worker {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss >> 10} MB"
    )
    if args.keep:
        keep = Path(args.keep)
        keep.mkdir(parents=True, exist_ok=True)
        by_name = {c.name: c for c in cases}
        for f in camp.failures:
            if f.case in by_name:
                (keep / f.case).write_bytes(by_name[f.case].data)
    return 1 if camp.failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    sys.exit(main())
