"""``torch2ms kb check``: validate the knowledge-base data beyond what the schema loader enforces."""

from __future__ import annotations

import importlib
import re
from collections import Counter
from pathlib import Path

from . import KB, canonical_name, load_kb
from .transforms import HANDLERS, TRANSFORMS

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_NAMING = "<module in kb/handlers>.<function>"
# The checkout's tests (absent in an installed copy, where proven_by cannot be checked).
_REPO_TESTS = Path(__file__).resolve().parents[3] / "tests"


def _resolve_ms(target: str):
    """Import a dotted MindSpore name; ``Tensor.x``/``Cell.x`` resolve on those classes."""
    import mindspore as ms

    if target.startswith(("Tensor.", "Cell.")):
        owner, attr = target.split(".", 1)
        cls = ms.Tensor if owner == "Tensor" else ms.nn.Cell
        # Some attributes (Cell.training) only exist on instances.
        if hasattr(cls, attr) or (owner == "Cell" and attr in vars(ms.nn.Cell())):
            return True
        raise AttributeError(f"{owner} has no attribute {attr!r}")
    elif target.startswith("mindspore"):
        parts = target.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                rest = parts[i:]
                break
            except ImportError:
                continue
        else:
            raise AttributeError(target)
    else:
        return None  # other owners (Optimizer., Parameter.) are checked by their tests
    for attr in rest:
        obj = getattr(obj, attr)
    return obj


def check_kb(kb: KB | None = None, resolve_targets: bool = True, priority_file: Path | None = None) -> list[str]:
    """Problems found in the KB; empty when it is consistent."""
    kb = kb or load_kb()
    problems: list[str] = []
    names = Counter()
    for e in kb:
        for n in (e.torch, *e.aliases):
            names[n] += 1
    for n, c in names.items():
        if c > 1:
            problems.append(f"duplicate: {n} is defined {c} times")
    try:
        import mindspore  # noqa: F401

        have_ms = resolve_targets
    except ImportError:
        have_ms = False
    for e in kb:
        where = f"{e.source}: {e.torch}"
        sig = set(e.sig_names())
        for arg, rule in e.args.items():
            if sig and arg not in sig:
                problems.append(f"{where}: argument rule for '{arg}', which is not in sig")
            if rule.transform and rule.transform not in TRANSFORMS:
                problems.append(f"{where}: unknown transform '{rule.transform}' (expected {_NAMING})")
        if e.template.startswith("@"):
            if e.template[1:] not in HANDLERS:
                problems.append(f"{where}: unknown handler '{e.template}' (expected @{_NAMING})")
        elif e.template:
            for ph in _PLACEHOLDER.findall(e.template):
                if ph != "self" and ph not in sig:
                    problems.append(f"{where}: template placeholder '{{{ph}}}' is not in sig")
        if e.status != "no-equivalent" and not e.cases and not e.proven_by:
            problems.append(f"{where}: mapped entry without a differential case")
        if "CPU" in e.backends and not (e.status != "no-equivalent" and (e.cases or e.proven_by)):
            problems.append(f"{where}: lists CPU without a case that proves it there (backends are as measured)")
        if e.proven_by and _REPO_TESTS.is_dir() and not (_REPO_TESTS.parent / e.proven_by).is_file():
            problems.append(f"{where}: proven_by {e.proven_by} does not exist")
        if have_ms and e.ms and e.status != "no-equivalent":
            try:
                _resolve_ms(e.ms)
            except (AttributeError, ImportError) as exc:
                problems.append(f"{where}: MindSpore target {e.ms} does not exist ({exc})")
    if priority_file and priority_file.exists():
        problems.extend(_priority_gaps(kb, priority_file))
    return problems


REQUIRED_PREFIXES = ("torch.", "torch.Tensor.", "torch.nn.Module.", "torch.optim.Optimizer.")


def _priority_gaps(kb: KB, path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        api = line.split("\t", 1)[0].strip()
        if not api or api.startswith(("torchvision", "torchtext", "torchaudio")):
            continue
        full = canonical_name(api)
        if full.startswith(REQUIRED_PREFIXES) and kb.get(full) is None:
            out.append(f"priority API {api} has no KB entry")
    return out
