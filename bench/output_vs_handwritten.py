"""Regenerate docs/output-vs-handwritten.md: WHOLE converted files side by side with MindSpore written by
people for the same thing, and what differs and why (issue 21 §3).

- torchvision's ResNet, converted (``pytorch/examples`` of the kit is converted as a project; its
  ``imagenet`` script pulls ``torchvision_ms/models/resnet.py`` in) vs mindcv's ``mindcv/models/resnet.py``,
  read from the installed mindcv (0.3.0 in the venv) at generation time;
- pytorch/examples' ``mnist/main.py``, converted, vs MindSpore's official quick start: the Python blocks of
  ``tutorials/source_en/beginner/quick_start.md`` from github.com/mindspore-ai/docs (Apache-2.0), read from
  ``--quickstart`` (the markdown or a notebook) or, without it, from the copy the previous doc quotes.

    .venv/bin/python bench/output_vs_handwritten.py --quickstart quick_start.md   # or no flag: reuse the quote
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "realcode" / "corpus"
DOC = ROOT / "docs" / "output-vs-handwritten.md"
QUICKSTART_SOURCE = (
    "github.com/mindspore-ai/docs, tutorials/source_en/beginner/quick_start.md "
    "(commit 2237038df800f4acd398eedcce1facf2625969c1, the r2.6 text; Apache-2.0)"
)
QUOTE_START, QUOTE_END = "<!-- quick start: begin -->", "<!-- quick start: end -->"
WIDTH = 78  # characters per column of the side-by-side view
CONTINUED = "↳"  # the mark of a row that continues a wrapped line


def convert_examples(out: Path) -> Path:
    """The kit's pytorch/examples converted as one project (the way users run the converter)."""
    src = CORPUS / "pytorch" / "examples"
    if not src.is_dir():
        sys.exit(f"the real-code kit is needed: {src}")
    run = subprocess.run(
        [sys.executable, "-m", "torch2ms", "convert", str(src), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        sys.exit(run.stdout + run.stderr)
    return out


def mindcv_resnet() -> tuple[str, str]:
    """(source, version) of the installed mindcv's models/resnet.py, found without importing mindcv."""
    spec = importlib.util.find_spec("mindcv")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("mindcv is needed (it is in the venv: .venv/bin/python)")
    root = Path(list(spec.submodule_search_locations)[0])
    version = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", (root / "version.py").read_text(encoding="utf-8"))
    return (root / "models" / "resnet.py").read_text(encoding="utf-8"), version.group(1) if version else "?"


def quickstart_code(path: Path | None) -> str:
    """The quick start as one script: its Python blocks in order (markdown), or its code cells (notebook);
    without a path, the script the current doc quotes."""
    if path is None:
        text = DOC.read_text(encoding="utf-8")
        if QUOTE_START not in text:
            sys.exit("no quick start quoted in the doc yet: pass --quickstart quick_start.md")
        quoted = text.split(QUOTE_START, 1)[1].split(QUOTE_END, 1)[0]
        return quoted.split("```python\n", 1)[1].rsplit("```", 1)[0]
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        cells = [c for c in json.loads(text)["cells"] if c["cell_type"] == "code"]
        blocks = ["".join(c["source"]).rstrip() for c in cells]
    else:
        blocks = [b.rstrip() for b in re.findall(r"```python\n(.*?)```", text, flags=re.S)]
    return "\n\n".join(blocks) + "\n"


def side_by_side(left: str, right: str) -> tuple[str, dict[str, int]]:
    """Both files whole, aligned line by line (difflib on stripped lines). Marks: two spaces = the same
    line, ``|`` changed, ``<`` only on the left, ``>`` only on the right; long lines wrap with ``…``."""
    a, b = left.splitlines(), right.splitlines()
    matcher = difflib.SequenceMatcher(None, [x.strip() for x in a], [y.strip() for y in b], autojunk=False)
    rows: list[str] = []
    stats = {"left": len(a), "right": len(b), "same": 0, "changed": 0, "left_only": 0, "right_only": 0}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            x = a[i1 + k] if i1 + k < i2 else None
            y = b[j1 + k] if j1 + k < j2 else None
            mark = " " if tag == "equal" else "|" if x is not None and y is not None else "<" if y is None else ">"
            key = {" ": "same", "|": "changed", "<": "left_only", ">": "right_only"}[mark]
            stats[key] += 1
            rows += _row(x, y, mark)
    return "\n".join(rows), stats


def _row(x: str | None, y: str | None, mark: str) -> list[str]:
    lefts, rights = _wrap(x or ""), _wrap(y or "")
    out = []
    for k in range(max(len(lefts), len(rights))):
        lt = lefts[k] if k < len(lefts) else ""
        rt = rights[k] if k < len(rights) else ""
        out.append(f"{lt:<{WIDTH}} {mark if k == 0 else CONTINUED} {rt}".rstrip())
    return out


def _wrap(line: str) -> list[str]:
    line = line.replace("\t", "    ")
    if len(line) <= WIDTH:
        return [line]
    step = WIDTH - 1
    return [line[i : i + step] + ("…" if i + step < len(line) else "") for i in range(0, len(line), step)]


def _stats_line(stats: dict[str, int], left: str, right: str) -> str:
    return (
        f"{left}: {stats['left']} lines; {right}: {stats['right']} lines. Aligned: {stats['same']} rows the same "
        f"(ignoring indentation), {stats['changed']} changed, {stats['left_only']} only in {left}, "
        f"{stats['right_only']} only in {right}."
    )


def _count(text: str, pattern: str) -> int:
    return len(re.findall(pattern, text))


def _lines_from(text: str, pattern: str) -> int:
    """How many lines the file has from the first line matching ``pattern`` to its end."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(pattern, line)), len(lines))
    return len(lines) - start


def render(converted: Path, quickstart: str) -> str:
    """The doc: the prose (bench/output_vs_handwritten_text.py) around the generated views."""
    from output_vs_handwritten_text import LEFT_TEXT, MNIST_TEXT, RESNET_TEXT, TOP

    resnet = (converted / "torchvision_ms" / "models" / "resnet.py").read_text(encoding="utf-8")
    mnist = (converted / "mnist" / "main.py").read_text(encoding="utf-8")
    mindcv, version = mindcv_resnet()
    resnet_view, resnet_stats = side_by_side(resnet, mindcv)
    mnist_view, mnist_stats = side_by_side(mnist, quickstart)
    marks = {
        "resnet_review": _count(resnet, r"# torch2ms:"),
        "resnet_compat": _count(resnet, r"TorchCompat\("),
        "mnist_review": _count(mnist, r"# torch2ms:"),
        "mnist_compat": _count(mnist, r"TorchCompat\("),
        "resnet_lines": len(resnet.splitlines()),
        "resnet_api_lines": _lines_from(resnet, r"^_COMMON_META = "),
    }
    return "\n".join(
        [
            TOP.format(source=QUICKSTART_SOURCE, mindcv=version),
            RESNET_TEXT.format(
                stats=_stats_line(resnet_stats, "converted", f"mindcv {version}"), mindcv=version, **marks
            ),
            "```text",
            f"{'converted torchvision models/resnet.py':<{WIDTH}}   mindcv {version} models/resnet.py",
            resnet_view,
            "```",
            "",
            MNIST_TEXT.format(stats=_stats_line(mnist_stats, "converted", "quick start"), **marks),
            "```text",
            f"{'converted pytorch/examples mnist/main.py':<{WIDTH}}   MindSpore quick start",
            mnist_view,
            "```",
            "",
            LEFT_TEXT,
            "## The quick start's source",
            "",
            f"The quick start as the view above shows it, one script ({QUICKSTART_SOURCE}); regenerating "
            "without `--quickstart` reads it from here:",
            "",
            QUOTE_START,
            "```python",
            quickstart.rstrip("\n"),
            "```",
            QUOTE_END,
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quickstart", type=Path, help="quick_start.md (or .ipynb) of mindspore-ai/docs")
    parser.add_argument("-o", "--out", type=Path, default=DOC)
    args = parser.parse_args(argv)
    quickstart = quickstart_code(args.quickstart)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    with tempfile.TemporaryDirectory(prefix="t2m-handwritten-") as tmp:
        text = render(convert_examples(Path(tmp) / "out"), quickstart)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
