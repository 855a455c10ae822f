"""Dump what `torch2ms convert` makes of real code, to prove a refactor changed nothing.

Converts the installed torchvision package and every repository of ``../shared/realcode/corpus``
as projects (``convert_tree``, the path users take) and writes one JSON file: per source file, the
converted text and the change list (api, action, line, note). Run it before and after a change and
compare the two files (``--diff OLD NEW`` prints the files whose output differs).

    .venv/bin/python bench/convert_dump.py -o /tmp/before.json
    .venv/bin/python bench/convert_dump.py -o /tmp/after.json --diff /tmp/before.json
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

from torch2ms.convert import convert_tree
from torch2ms.convert.project import REPORT_JSON

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "realcode" / "corpus"


def projects() -> dict[str, Path]:
    """Name → source tree: torchvision, then each corpus repository (owner/repo folders)."""
    out: dict[str, Path] = {}
    spec = importlib.util.find_spec("torchvision")
    if spec is not None and spec.submodule_search_locations:
        out["torchvision"] = Path(list(spec.submodule_search_locations)[0])
    if CORPUS.is_dir():
        for owner in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
            for repo in sorted(p for p in owner.iterdir() if p.is_dir()):
                out[f"{owner.name}/{repo.name}"] = repo
    return out


def dump(jobs: int) -> dict[str, dict]:
    result: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="t2m-dump-") as tmp:
        for name, src in projects().items():
            out = Path(tmp) / name.replace("/", "__")
            convert_tree(src, out, jobs=jobs)
            report = json.loads((out / REPORT_JSON).read_text(encoding="utf-8"))
            for f in report["files"]:
                path = out / f["path"]
                result[f"{name}:{f['path']}"] = {
                    "code": path.read_text(encoding="utf-8", errors="surrogateescape"),
                    "error": f["error"],
                    "changes": [[c["api"], c["action"], c["line"], c["note"]] for c in f["changes"]],
                }
    return result


def diff(old: dict[str, dict], new: dict[str, dict], show: int) -> int:
    keys = sorted(set(old) | set(new))
    bad = [k for k in keys if old.get(k) != new.get(k)]
    for k in bad[:show]:
        a, b = old.get(k), new.get(k)
        print(f"== {k}")
        if a is None or b is None:
            print("   only in", "new" if a is None else "old")
            continue
        if a["code"] != b["code"]:
            lines = difflib.unified_diff(a["code"].splitlines(), b["code"].splitlines(), "old", "new", lineterm="", n=1)
            print("\n".join(list(lines)[:40]))
        if a["changes"] != b["changes"] or a["error"] != b["error"]:
            sa, sb = {tuple(c) for c in a["changes"]}, {tuple(c) for c in b["changes"]}
            for c in sorted(sa - sb, key=str)[:10]:
                print("   - change", c)
            for c in sorted(sb - sa, key=str)[:10]:
                print("   + change", c)
            if a["error"] != b["error"]:
                print("   error:", a["error"], "->", b["error"])
    print(f"{len(keys)} files, {len(bad)} differ")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True, help="JSON file to write")
    ap.add_argument("--diff", help="an earlier dump: print the files whose output differs")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--show", type=int, default=30, help="how many differing files to print")
    args = ap.parse_args()
    data = dump(args.jobs)
    Path(args.out).write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    print(f"{len(data)} files dumped to {args.out}")
    if args.diff:
        sys.exit(diff(json.loads(Path(args.diff).read_text(encoding="utf-8")), data, args.show))


if __name__ == "__main__":
    main()
