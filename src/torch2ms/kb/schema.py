"""The shape of one knowledge-base entry: a torch API and how it maps to MindSpore 2.10.

Entries live as TOML in ``kb/data/*.toml`` (one ``[[api]]`` table each). This module turns the
TOML into typed, validated objects; nothing here knows any particular API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..i18n import pick

STATUSES = ("direct", "args-differ", "composite", "no-equivalent")
KINDS = ("class", "function", "method", "attribute", "dtype", "module")
BACKENDS = ("CPU", "GPU", "Ascend")
CHECKS = ("values", "shape", "stats", "state", "optimizer", "scheduler", "onnx")
# How convert treats a construct beyond the call itself (convert/handlers.py):
# grad-context: ``with x():`` is unwrapped and ``@x`` dropped (MindSpore differentiates only inside
# grad functions); drop-decorator: ``@x`` means something only to TorchScript/FX/autograd, dropped;
# drop-context: ``with x(...):`` guards something MindSpore does not have (unpickling allow-lists), unwrapped.
ROLES = ("", "grad-context", "drop-decorator", "drop-context")


class KBError(ValueError):
    """A knowledge-base entry that does not follow the schema."""


@dataclass(frozen=True)
class ArgRule:
    """How one torch argument becomes MindSpore arguments.

    ``ms`` is the MindSpore keyword (``None``: drop the argument). ``transform`` names a function in
    ``kb/transforms.py`` that rewrites the argument's source text (and may emit several keywords).
    ``always``: emit the rule even when the torch call omits the argument, from the torch default,
    because MindSpore's own default differs silently. ``unsupported``: source values MindSpore
    cannot express; a call using one is left for a person, with ``note``. ``target``: when the call
    passes the argument with a value other than its default, it builds this class instead of the
    entry's ``ms`` (a torch2ms.runtime subclass that supplies what the argument does in torch).
    ``exact``: for a drop with a note, the values (source text; ``"*"``: any) at which dropping changes
    nothing the user sees (``device='cuda'``, ``inplace=True``): a call passing one gets no review mark,
    the note stays for ``lookup``; any other value puts the note on the converted call.
    """

    torch: str
    ms: str | None
    transform: str | None = None
    always: bool = False
    unsupported: tuple[str, ...] = ()
    note: str = ""
    target: str | None = None
    exact: tuple[str, ...] = ()

    @property
    def is_drop(self) -> bool:
        """``name = false`` (or ``{ ms = false, note = ... }``): the argument is left out of the MindSpore call."""
        return self.ms is None and not self.transform and not self.unsupported and not self.target


@dataclass(frozen=True)
class Case:
    """One differential test: random inputs, a torch call, what to compare."""

    call: str
    inputs: dict[str, str] = field(default_factory=dict)
    init: str | None = None
    train: bool = False
    check: str = "values"
    atol: float = 1e-5
    rtol: float = 1e-5
    graph: bool | None = None  # None: auto (first case of a function/method entry)
    setup: str = ""
    # The input an in-place call mutates, compared after the call (None: the receiver of an
    # in-place Tensor method; "": none).
    mutates: str | None = None


@dataclass(frozen=True)
class Entry:
    torch: str
    kind: str
    status: str
    ms: str = ""
    aliases: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()
    note: str = ""
    note_zh: str = ""  # the note in Chinese (inline, or from a file's [note_zh] table: see docs/kb.md)
    sig: tuple[str, ...] = ()
    ms_sig: tuple[str, ...] = ()
    args: dict[str, ArgRule] = field(default_factory=dict)
    # Argument → its rule's note in Chinese (from the [arg_note_zh] tables: see docs/kb.md).
    arg_notes_zh: dict[str, str] = field(default_factory=dict)
    template: str = ""
    # Instance attributes that MindSpore names differently (Linear.out_features → out_channels).
    attrs: dict[str, str | None] = field(default_factory=dict)
    # What a user class subclassing this torch class should inherit from, when not ``ms``.
    ms_base: str = ""
    role: str = ""  # one of ROLES
    # A conversion no single call can show (a class rewritten whole): the test file that proves it,
    # in place of differential cases.
    proven_by: str = ""
    # Why torch's side cannot run here (torch.onnx.export needs the onnx package): ``proven_by`` then proves
    # only the MindSpore side, and the signature audit counts the parameters apart, by name.
    one_sided: str = ""
    # A composite the user must know about in the code, not only in the report (a sparse product
    # computed densely): the converted call gets a ``# torch2ms: review`` mark with the note.
    review: bool = False
    params: dict[str, str | None] = field(default_factory=dict)
    layout: dict[str, str] = field(default_factory=dict)
    cases: tuple[Case, ...] = ()
    source: str = ""

    @property
    def short(self) -> str:
        """The name users type: ``nn.Conv2d``, ``F.relu``, ``Tensor.view``."""
        name = self.torch
        for prefix, short in _SHORT_PREFIXES:
            if name.startswith(prefix):
                return short + name[len(prefix) :]
        return name

    @property
    def note_shown(self) -> str:
        """The note in the language torch2ms speaks (the English one where no Chinese one is written)."""
        return pick(self.note, self.note_zh)

    def arg_note(self, name: str) -> str:
        """The note of the rule for argument ``name`` in the language torch2ms speaks ("" without one)."""
        rule = self.args.get(name)
        return pick(rule.note, self.arg_notes_zh.get(name, "")) if rule is not None else ""

    @property
    def namespace(self) -> str:
        for prefix, ns in _NAMESPACES:
            if self.torch.startswith(prefix):
                return ns
        return "torch"

    @property
    def is_method(self) -> bool:
        return self.kind == "method" or self.torch.startswith("torch.Tensor.")

    @property
    def rebinds_receiver(self) -> bool:
        """An in-place Tensor method converted out of place: a statement ``x.add_(y)`` becomes
        ``x = x.add(y)``, since MindSpore's in-place methods do not mutate in PyNative (unless the
        rewrite itself mutates, through ``set_data`` or ``assign``)."""
        attr = self.torch.rsplit(".", 1)[-1]
        return (
            self.is_method
            and attr.endswith("_")
            and not attr.startswith("_")
            and self.status == "composite"
            and "set_data" not in self.template
            and "assign" not in self.template
        )

    def sig_names(self) -> list[str]:
        return [p.split("=", 1)[0].lstrip("*") for p in self.sig]

    def sig_defaults(self) -> dict[str, str]:
        return {p.split("=", 1)[0].lstrip("*"): p.split("=", 1)[1] for p in self.sig if "=" in p}


def name_index(entries: Sequence[Entry]) -> dict[str, int]:
    """Every torch name and alias → the position of its entry (the first one, if defined twice)."""
    index: dict[str, int] = {}
    for i, e in enumerate(entries):
        for name in (e.torch, *e.aliases):
            index.setdefault(name, i)
    return index


_SHORT_PREFIXES = (
    ("torch.nn.functional.", "F."),
    ("torch.Tensor.", "Tensor."),
    ("torch.nn.Module.", "Module."),
    ("torch.optim.Optimizer.", "Optimizer."),
    ("torch.nn.", "nn."),
)

# Namespace of an entry (``kb stats`` rows), by the longest prefix listed; other ``torch.x.*``
# names count under ``torch``, other ``torchvision.x.*`` under ``torchvision``.
_NAMESPACES = tuple(
    (f"{ns}.", ns)
    for ns in sorted(
        (
            "torch.nn.functional",
            "torch.nn.init",
            "torch.nn.utils",
            "torch.nn.Module",
            "torch.nn",
            "torch.optim.lr_scheduler",
            "torch.optim",
            "torch.Tensor",
            "torch.utils.data",
            "torch.distributed",
            "torch.distributions",
            "torch.cuda",
            "torch.backends",
            "torch.accelerator",
            "torch.linalg",
            "torch.fft",
            "torch.special",
            "torch.signal",
            "torch.sparse",
            "torch.testing",
            "torchvision.ops",
            "torchvision.transforms",
            "torchvision.datasets",
            "torchvision.models",
            "torchvision.utils",
            "torchvision.io",
            "torchvision",
        ),
        key=len,
        reverse=True,
    )
)

_ENTRY_KEYS = {
    "torch",
    "kind",
    "status",
    "ms",
    "aliases",
    "backends",
    "note",
    "note_zh",
    "sig",
    "ms_sig",
    "args",
    "template",
    "params",
    "layout",
    "case",
    "attrs",
    "ms_base",
    "role",
    "proven_by",
    "one_sided",
    "review",
}
_ARG_KEYS = {"ms", "transform", "always", "unsupported", "note", "target", "exact"}
_CASE_KEYS = {"call", "inputs", "init", "train", "check", "atol", "rtol", "graph", "setup", "mutates"}


def _arg_rule(name: str, raw: Any, where: str) -> ArgRule:
    # Shorthands keep the data terse: "group" renames, false drops.
    if raw is False:
        return ArgRule(torch=name, ms=None)
    if isinstance(raw, str):
        return ArgRule(torch=name, ms=raw)
    if not isinstance(raw, dict):
        raise KBError(f"{where}: args.{name} must be a string, false or a table")
    extra = set(raw) - _ARG_KEYS
    if extra:
        raise KBError(f"{where}: args.{name} has unknown keys {sorted(extra)}")
    ms = raw.get("ms", name)
    return ArgRule(
        torch=name,
        ms=None if ms is False else ms,
        transform=raw.get("transform"),
        always=bool(raw.get("always", False)),
        unsupported=tuple(raw.get("unsupported", ())),
        note=raw.get("note", ""),
        target=raw.get("target"),
        exact=tuple(raw.get("exact", ())),
    )


def _case(raw: dict, where: str) -> Case:
    extra = set(raw) - _CASE_KEYS
    if extra:
        raise KBError(f"{where}: case has unknown keys {sorted(extra)}")
    if raw.get("check", "values") not in CHECKS:
        raise KBError(f"{where}: case check must be one of {CHECKS}")
    if "call" not in raw:
        raise KBError(f"{where}: case needs 'call'")
    return Case(
        call=raw["call"],
        inputs=dict(raw.get("inputs", {})),
        init=raw.get("init"),
        train=bool(raw.get("train", False)),
        check=raw.get("check", "values"),
        atol=float(raw.get("atol", 1e-5)),
        rtol=float(raw.get("rtol", 1e-5)),
        graph=None if "graph" not in raw else bool(raw["graph"]),
        setup=raw.get("setup", ""),
        mutates=raw.get("mutates"),
    )


def entry_from_toml(raw: dict, source: str) -> Entry:
    where = f"{source}: {raw.get('torch', '<no torch name>')}"
    extra = set(raw) - _ENTRY_KEYS
    if extra:
        raise KBError(f"{where}: unknown keys {sorted(extra)}")
    for key in ("torch", "kind", "status"):
        if key not in raw:
            raise KBError(f"{where}: missing '{key}'")
    if raw["status"] not in STATUSES:
        raise KBError(f"{where}: status must be one of {STATUSES}, got {raw['status']!r}")
    if raw["kind"] not in KINDS:
        raise KBError(f"{where}: kind must be one of {KINDS}, got {raw['kind']!r}")
    backends = tuple(raw.get("backends", ()))
    for b in backends:
        if b not in BACKENDS:
            raise KBError(f"{where}: unknown backend {b!r}")
    if raw.get("role", "") not in ROLES:
        raise KBError(f"{where}: role must be one of {ROLES}, got {raw['role']!r}")
    if raw["status"] != "no-equivalent" and not (raw.get("ms") or raw.get("template")):
        raise KBError(f"{where}: a mapped entry needs 'ms' or 'template'")
    params = {k: (None if v is False else v) for k, v in raw.get("params", {}).items()}
    return Entry(
        torch=raw["torch"],
        kind=raw["kind"],
        status=raw["status"],
        ms=raw.get("ms", ""),
        aliases=tuple(raw.get("aliases", ())),
        backends=backends,
        note=raw.get("note", ""),
        note_zh=raw.get("note_zh", ""),
        sig=tuple(raw.get("sig", ())),
        ms_sig=tuple(raw.get("ms_sig", ())),
        args={k: _arg_rule(k, v, where) for k, v in raw.get("args", {}).items()},
        template=raw.get("template", ""),
        attrs={k: (None if v is False else v) for k, v in raw.get("attrs", {}).items()},
        ms_base=raw.get("ms_base", ""),
        role=raw.get("role", ""),
        proven_by=raw.get("proven_by", ""),
        one_sided=raw.get("one_sided", ""),
        review=bool(raw.get("review", False)),
        params=params,
        layout=dict(raw.get("layout", {})),
        cases=tuple(_case(c, where) for c in raw.get("case", ())),
        source=source,
    )


def with_chinese_notes(entries: list[Entry], notes: dict[str, tuple[str, str]]) -> list[Entry]:
    """Each entry with its Chinese note from the ``[note_zh]`` tables (torch name or alias → note,
    with the file it came from). A name no entry has is an error: a translation left behind."""
    from dataclasses import replace

    index = name_index(entries)
    for name, (_note, source) in notes.items():
        if name not in index:
            raise KBError(f"{source}: [note_zh] names {name!r}, which no entry has")
        if not entries[index[name]].note:
            raise KBError(f"{source}: [note_zh] translates {name!r}, whose entry has no English note")
    by_position = {index[name]: note for name, (note, _source) in notes.items()}
    return [replace(e, note_zh=by_position[i]) if i in by_position else e for i, e in enumerate(entries)]


def with_chinese_arg_notes(entries: list[Entry], notes: dict[str, tuple[str, str]]) -> list[Entry]:
    """Each entry with the Chinese notes of its argument rules from the ``[arg_note_zh]`` tables
    ("torch name:argument" → note, with the file it came from). A key whose entry has no such rule,
    or whose rule has no English note, is an error: a translation left behind."""
    from dataclasses import replace

    index = name_index(entries)
    by_entry: dict[int, dict[str, str]] = {}
    for key, (note, source) in notes.items():
        name, _sep, arg = key.rpartition(":")
        rule = entries[index[name]].args.get(arg) if name in index else None
        if rule is None or not rule.note:
            raise KBError(f"{source}: [arg_note_zh] names {key!r}, and no entry has that argument rule with a note")
        by_entry.setdefault(index[name], {})[arg] = note
    return [replace(e, arg_notes_zh=by_entry[i]) if i in by_entry else e for i, e in enumerate(entries)]


_REASON_KEYS = {"class", "params", "exact", "note", "note_zh"}


def _reasons_by_param(reasons: list[tuple[dict, str]]) -> dict[str, dict]:
    """``[[drop_reason]]`` tables → each parameter key ("device", or "torch name:argument") → its reason."""
    by_param: dict[str, dict] = {}
    for raw, source in reasons:
        where = f"{source}: [[drop_reason]] {raw.get('class', '<no class>')}"
        if extra := set(raw) - _REASON_KEYS:
            raise KBError(f"{where}: unknown keys {sorted(extra)}")
        if missing := [k for k in ("class", "params", "note", "note_zh") if not raw.get(k)]:
            raise KBError(f"{where}: missing {missing}")
        for name in raw["params"]:
            if name in by_param:
                raise KBError(f"{where}: {name!r} is already in class {by_param[name]['class']!r}")
            by_param[name] = raw
    return by_param


def with_drop_reasons(entries: list[Entry], reasons: list[tuple[dict, str]]) -> list[Entry]:
    """Each drop rule without a note of its own (``device = false``) with the note of its parameter's class
    from the ``[[drop_reason]]`` tables (kb/data/drop_reasons.toml: one reason per class of parameter, in
    English and Chinese, ``{name}`` standing for the argument, and the values at which the drop is exact).
    A parameter is named alone (every entry's rule) or as "torch name:argument" (that entry's, first). A
    name that no such rule has is an error: a reason left behind."""
    from dataclasses import replace

    by_param = _reasons_by_param(reasons)
    used: set[str] = set()
    out = []
    for e in entries:
        args, zh = dict(e.args), dict(e.arg_notes_zh)
        for arg, rule in e.args.items():
            key = next((k for k in (f"{e.torch}:{arg}", arg) if k in by_param), None)
            if key is None or not rule.is_drop or rule.note:
                continue
            used.add(key)
            raw = by_param[key]
            args[arg] = replace(rule, note=raw["note"].replace("{name}", arg), exact=tuple(raw.get("exact", ())))
            zh[arg] = raw["note_zh"].replace("{name}", arg)
        out.append(replace(e, args=args, arg_notes_zh=zh) if args != e.args else e)
    if stale := sorted(set(by_param) - used):
        raise KBError(f"[[drop_reason]] names {stale}, and no entry drops such an argument without a note")
    return out
