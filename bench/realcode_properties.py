"""Issue 15 on real code: convert ../shared/realcode/corpus and the installed torchvision, convert the
output again, and count the files whose second conversion changes them (idempotence), whose output does
not parse, and that lose comments or non-ASCII strings. Prints the counts and a few examples.

    python bench/realcode_properties.py [--examples N]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "fuzz"))

from fuzz_convert import CORPUS, check_tree  # noqa: E402


def trees() -> dict[str, Path]:
    out = {}
    if CORPUS.is_dir():
        out["realcode corpus"] = CORPUS
    spec = importlib.util.find_spec("torchvision")
    if spec and spec.submodule_search_locations:
        out["torchvision"] = Path(list(spec.submodule_search_locations)[0])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, root) in enumerate(trees().items()):
            r = check_tree(name, root, Path(tmp) / str(i))
            lost = sum(n for _, n, _ in r["text_lost"])
            print(
                f"{name}: {r['files']} Python files in {r['seconds']:.0f} s (converted twice); "
                f"{r['failed']} reported failed; {len(r['not_idempotent'])} change when converted again; "
                f"{len(r['invalid'])} valid inputs give output that does not parse; "
                f"{lost} comments / non-ASCII strings lost in {len(r['text_lost'])} files"
            )
            for path, diff in r["not_idempotent"][: args.examples]:
                print(f"  not idempotent: {path}: {diff}")
            for path, n, example in r["text_lost"][: args.examples]:
                print(f"  text lost: {path}: {n}, e.g. {example[:70]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
