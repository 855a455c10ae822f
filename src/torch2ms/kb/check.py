"""``torch2ms kb check``: validate the knowledge-base data beyond what the schema loader enforces."""

from __future__ import annotations

import importlib
import re
from collections import Counter
from dataclasses import dataclass, field
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
        if e.one_sided and not (e.proven_by and not e.cases):
            problems.append(f"{where}: one_sided needs proven_by and no case (a case runs both sides)")
        for arg, rule in e.args.items():
            if rule.is_drop and not rule.note:
                problems.append(
                    f"{where}: '{arg}' is dropped without a note: add it to a class of kb/data/drop_reasons.toml "
                    "or give the rule a note"
                )
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


# ---------------------------------------------------------------------------------------------
# The signature audit: every parameter of every torch callable the KB maps is mapped (and a
# differential case passes it a non-default value) or refused with a mark.

_SKIP_PARAMS = frozenset({"self", "cls"})


@dataclass
class ParamAudit:
    api: str
    param: str
    # "covered" | "marked" | "untested" (mapped, no case passes it) | "unmapped" | "one-sided" (proven on
    # MindSpore's side only: torch cannot run it here, Entry.one_sided; counted apart, never as covered)
    verdict: str


@dataclass
class SignatureAudit:
    params: list[ParamAudit] = field(default_factory=list)
    no_signature: list[str] = field(default_factory=list)  # entries whose torch signature is unknown
    sig_drift: list[str] = field(default_factory=list)  # "api: param" the KB's sig lacks

    def coverage(self, apis: set[str] | None = None) -> tuple[int, int]:
        rows = [p for p in self.params if apis is None or p.api in apis]
        return sum(p.verdict in ("covered", "marked") for p in rows), len(rows)

    def one_sided(self, apis: set[str] | None = None) -> list[ParamAudit]:
        """The parameters proven on MindSpore's side only (torch cannot run them here)."""
        return [p for p in self.params if p.verdict == "one-sided" and (apis is None or p.api in apis)]


def _torch_params(api: str, kind: str) -> list[tuple[str, str | None]] | None:
    """(name, default source or None) of the torch callable's parameters, from ``inspect.signature``."""
    import inspect

    obj = _resolve_torch(api)
    if obj is None:
        return None
    try:
        sig = inspect.signature(obj.__init__ if kind == "class" else obj)
    except (TypeError, ValueError):
        return None
    out = []
    for p in sig.parameters.values():
        if p.name in _SKIP_PARAMS or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out.append((p.name, None if p.default is p.empty else repr(p.default)))
    return out


def _resolve_torch(api: str):
    parts = api.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _passed(e, names: list[str], defaults: dict[str, str | None]) -> set[str]:
    """Parameters some differential case of the entry passes a value other than the default."""
    import ast

    short = e.torch.rsplit(".", 1)[-1]
    out: set[str] = set()
    for case in e.cases:
        texts = [f"f({case.init})"] if e.kind == "class" and case.init is not None else [case.call]
        for text in texts:
            try:
                tree = ast.parse(text, mode="eval")
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                fname = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if fname not in (short, "f"):
                    continue
                skip = 1 if e.kind == "method" and names and names[0] in ("input", "self") else 0
                for i, arg in enumerate(node.args):
                    if not isinstance(arg, ast.Starred) and i + skip < len(names):
                        out.add(names[i + skip])
                for kw in node.keywords:
                    if kw.arg and ast.unparse(kw.value) != (defaults.get(kw.arg) or ""):
                        out.add(kw.arg)
    return out


def _verdict(e, name: str, passed: set[str]) -> str:
    rule = e.args.get(name)
    if e.status == "no-equivalent" or (rule is not None and rule.unsupported):
        return "marked"
    if rule is not None and rule.is_drop and f"{{{name}}}" not in e.template:
        return "marked" if rule.note else "unmapped"  # a drop without a note is a drop in silence
    if rule is not None and rule.ms is None:
        return "marked"
    mapped = (
        rule is not None
        or e.status == "direct"
        or e.template.startswith("@")
        or f"{{{name}}}" in e.template
        or name in {p.split("=", 1)[0].lstrip("*") for p in e.ms_sig}
    )
    if rule is None and e.template and not e.template.startswith("@") and f"{{{name}}}" not in e.template:
        return "unmapped"  # a placeholder template without it drops it in silence, whatever a case shows
    if e.one_sided and mapped:
        return "one-sided"
    if name in passed:
        # passed through as written (no rule: the same keyword, the same position) and a differential case
        # gives it a non-default value: what the case proves is the mapping
        return "covered"
    return "untested" if mapped else "unmapped"


def signature_audit(kb: KB | None = None) -> SignatureAudit:
    """Each callable entry's torch parameters (``inspect.signature``, else the entry's ``sig``) against
    its argument rules and its cases. Needs torch for the signatures."""
    kb = kb or load_kb()
    audit = SignatureAudit()
    for e in kb:
        if e.kind not in ("class", "function", "method"):
            continue
        params = _torch_params(e.torch, e.kind)
        if params is None:
            params = [(p.split("=", 1)[0].lstrip("*"), p.split("=", 1)[1] if "=" in p else None) for p in e.sig]
            if not params:
                audit.no_signature.append(e.torch)
                continue
        elif e.sig:
            known = set(e.sig_names())
            audit.sig_drift += [f"{e.torch}: {n}" for n, _ in params if n not in known]
        names = [n for n, _ in params]
        passed = _passed(e, names, dict(params))
        audit.params += [ParamAudit(e.torch, n, _verdict(e, n, passed)) for n in names]
    return audit


def priority_apis(path: Path, top: int = 300) -> set[str]:
    """The ``top`` most used APIs of the priority list (canonical names)."""
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return {canonical_name(line.split("\t", 1)[0].strip()) for line in lines[:top] if line.strip()}


PRIORITY_FILE = "torch_api_priority.tsv"


def default_priority_file() -> Path | None:
    """The priority list of a development checkout: ``$TORCH2MS_REFERENCE``, else ``shared/reference``
    beside the checkout (or above the current folder)."""
    import os

    env = os.environ.get("TORCH2MS_REFERENCE")
    places = [Path(env)] if env else []
    here = Path(__file__).resolve().parents
    places += [here[min(4, len(here) - 1)] / "shared" / "reference", Path.cwd().parent / "shared" / "reference"]
    return next((p / PRIORITY_FILE for p in places if (p / PRIORITY_FILE).is_file()), None)


def signature_lines(priority_file: Path | None = None) -> list[str]:
    """What ``torch2ms kb check`` prints of the signature audit (nothing where torch is not installed)."""
    from ..i18n import _

    priority_file = priority_file or default_priority_file()

    try:
        import torch  # noqa: F401
    except ImportError:
        return [_("signature audit skipped: torch is not installed")]
    audit = signature_audit()
    lines = []
    if priority_file is not None and priority_file.exists():
        done, total = audit.coverage(priority_apis(priority_file))
        lines.append(
            _("signature coverage, 300 most used APIs: {done}/{total} parameters ({share:.1%})").format(
                done=done, total=total, share=done / max(total, 1)
            )
        )
    else:
        lines.append(
            _("signature coverage, 300 most used APIs: give --priority {file} to measure it").format(file=PRIORITY_FILE)
        )
    done, total = audit.coverage()
    lines.append(
        _(
            "signature coverage, all entries: {done}/{total} parameters ({share:.1%}) mapped and tested, or marked"
        ).format(done=done, total=total, share=done / max(total, 1))
    )
    if one_sided := audit.one_sided():
        by_api: dict[str, list[str]] = {}
        for p in one_sided:
            by_api.setdefault(p.api, []).append(p.param)
        names = "; ".join(f"{api} ({', '.join(params)})" for api, params in by_api.items())
        lines.append(
            _(
                "{n} parameters proven on MindSpore's side only, torch cannot run them here "
                "(counted above as not covered): {names}"
            ).format(n=len(one_sided), names=names)
        )
    if audit.sig_drift:
        lines.append(
            _("{n} torch parameters missing from their entry's sig (first: {first})").format(
                n=len(audit.sig_drift), first=", ".join(audit.sig_drift[:3])
            )
        )
    return lines
