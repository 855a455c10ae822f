"""Apply one KB entry to one call, on source text.

The converter (libcst) and the differential tests (plain ``ast``) both come here, so the tests
prove exactly the argument rules the converter applies.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..i18n import _
from .once import evaluate_once
from .results import call_returns_tensor
from .schema import ArgRule, Entry
from .source import dotted, normalise, paren
from .transforms import HANDLERS, TRANSFORMS, Unsupported

__all__ = [
    "CallRewrite",
    "apply_rule",
    "bind",
    "keyword_args",
    "render_by_rules",
    "rewrite_call",
    "rewrite_expression",
]


@dataclass
class CallRewrite:
    source: str
    ok: bool = True
    notes: list[str] = field(default_factory=list)
    # For a plain call (no template): the callee and the argument sources, so the converter
    # can keep each unchanged argument's original formatting and comments.
    func: str | None = None
    args: list[str] | None = None
    kwargs: list[tuple[str, str]] | None = None


def bind(entry: Entry, args: list[str], kwargs: list[tuple[str, str]]) -> tuple[dict[str, str], list[str], list[str]]:
    """Map positional and keyword argument sources to torch parameter names.

    Returns (bound, extra_positional, unknown_keywords). A ``*name`` parameter collects the rest
    of the positional arguments as one comma-joined source.
    """
    names = entry.sig
    bound: dict[str, str] = {}
    extra: list[str] = []
    i = 0
    for p in names:
        pname = p.split("=", 1)[0]
        if pname.startswith("*"):
            if i < len(args):
                bound[pname.lstrip("*")] = ", ".join(args[i:])
                i = len(args)
            break
        if i < len(args):
            bound[pname] = args[i]
            i += 1
    extra = args[i:]
    known = set(entry.sig_names())
    unknown = []
    for k, v in kwargs:
        if known and k not in known:
            unknown.append(k)
        bound[k] = v
    return bound, extra, unknown


def _ms_attr(entry: Entry) -> str:
    return entry.ms.rsplit(".", 1)[-1]


def rewrite_call(
    entry: Entry, args: list[str], kwargs: list[tuple[str, str]], receiver: str | None = None
) -> CallRewrite:
    """Rewrite ``torch_api(*args, **kwargs)`` (or ``receiver.method(...)``) to MindSpore source."""
    notes: list[str] = []
    if entry.status == "no-equivalent":
        return CallRewrite(
            "", ok=False, notes=[entry.note_shown or _("{api} has no MindSpore equivalent").format(api=entry.torch)]
        )
    if not entry.sig and not entry.args and not entry.template:
        # Same arguments: only the name changes.
        parts = list(args) + [f"{k}={v}" for k, v in kwargs]
        return CallRewrite(
            _render(entry, parts, receiver), func=_callee(entry, receiver), args=list(args), kwargs=list(kwargs)
        )
    bound, extra, unknown = bind(entry, args, kwargs)
    bound = _legacy_reduction(entry, bound)
    if extra:
        notes.append(
            _("{count} more positional argument(s) than {api} takes").format(count=len(extra), api=entry.short)
        )
    # A ``**name`` parameter takes any keyword (einops' axis lengths): passed through, nothing to note.
    if not any(p.startswith("**") for p in entry.sig):
        for k in unknown:
            notes.append(
                _("argument '{name}' is not in {api}'s signature; passed through").format(name=k, api=entry.short)
            )
    defaults = entry.sig_defaults()
    if entry.template and (other := _retarget(entry, bound, defaults)) is not entry:
        entry = dataclasses.replace(other, template="")  # another callee: the plain call through the rules
    notes += _dropped_notes(entry, bound, defaults)
    try:
        if entry.template:
            # neither a placeholder template nor a handler need read the rules: refused values are refused here
            _refuse_unsupported(entry, bound, defaults)
            return CallRewrite(_template(entry, bound, defaults, receiver), notes=notes)
        out_pos: list[str] = []
        out_kw: dict[str, str] = {}
        positional_ok = True
        ms_sig = list(entry.ms_sig)
        for idx, name in enumerate(entry.sig_names()):
            if name not in bound and not (name in entry.args and entry.args[name].always):
                continue
            rule = entry.args.get(name)
            src = bound.get(name)
            emitted = apply_rule(entry, rule, name, src, bound, defaults)
            is_star = entry.sig[idx].startswith("*") and not entry.sig[idx].startswith("**")
            # a parameter after *args takes keywords only (the star collected every positional)
            was_positional = idx < len(args) and not any(p.startswith("*") for p in entry.sig[:idx])
            if is_star and was_positional:
                # *tensors: the collected positional sources stay positional, renamed or not.
                if not positional_ok:
                    raise Unsupported(_("{api}: *{name} after a keyword argument").format(api=entry.short, name=name))
                out_pos.append(next(iter(emitted.values())) if emitted else (src or ""))
                continue
            if (
                was_positional
                and positional_ok
                and len(emitted) == 1
                and (ms_sig[idx] if idx < len(ms_sig) else (None if ms_sig else name)) == next(iter(emitted))
            ):
                out_pos.append(next(iter(emitted.values())))
                continue
            positional_ok = False
            for k, v in emitted.items():
                out_kw[k] = v
        # Keywords the signature does not know pass through unchanged.
        for k in unknown:
            out_kw.setdefault(k, bound[k])
        entry = _retarget(entry, bound, defaults)
        parts = out_pos + [f"{k}={v}" for k, v in out_kw.items()]
        return CallRewrite(
            _render(entry, parts, receiver),
            notes=notes,
            func=_callee(entry, receiver),
            args=out_pos,
            kwargs=list(out_kw.items()),
        )
    except Unsupported as exc:
        return CallRewrite("", ok=False, notes=notes + [str(exc)])


_LEGACY = ("size_average", "reduce")


def _legacy_reduction(entry: Entry, bound: dict[str, str]) -> dict[str, str]:
    """Canonicalise torch's deprecated ``size_average=``/``reduce=`` into the ``reduction=`` they stand
    for (torch's own ``_Reduction.legacy_get_string``: either given, ``reduction`` is ignored), so every loss
    maps them like ``reduction``. Values that are not literal booleans/None stay and meet the refusal."""
    if not any(k in bound for k in _LEGACY) or not {"size_average", "reduce", "reduction"} <= set(entry.sig_names()):
        return bound
    if "reduction" in bound:  # both spellings at once (kl_div then also reads reduction='batchmean'): refused
        return bound
    values = {}
    for k in _LEGACY:
        try:
            v = ast.literal_eval(bound[k]) if k in bound else None
        except (ValueError, SyntaxError):
            return bound
        if v is not None and not isinstance(v, bool):
            return bound
        values[k] = True if v is None else v
    if all(bound.get(k, "None").strip() == "None" for k in _LEGACY):
        out = {k: v for k, v in bound.items() if k not in _LEGACY}
        return out  # both None: torch keeps ``reduction``
    size_average, reduce = values["size_average"], values["reduce"]
    reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
    out = {k: v for k, v in bound.items() if k not in _LEGACY}
    out["reduction"] = repr(reduction)
    return out


def _refuse_unsupported(entry: Entry, bound: dict[str, str], defaults: dict[str, str]) -> None:
    """Raise :class:`Unsupported` for a bound argument whose rule refuses its value (``out=``, a
    ``generator=``): a template with ``{name}`` placeholders would otherwise drop it in silence."""
    for name, rule in entry.args.items():
        if rule.unsupported and name in bound:
            apply_rule(entry, rule, name, bound[name], bound, defaults)


def _dropped_notes(entry: Entry, bound: dict[str, str], defaults: dict[str, str]) -> list[str]:
    """The notes of the drop rules (``name = { ms = false, note = ... }``) whose argument the call passes
    with a value other than its default: what MindSpore does without it is said, never dropped in silence.
    A value at which the drop is exact (the rule's ``exact``: ``device='cuda'``, ``inplace=True``) needs no
    review: its note stays for ``lookup``, the converted call gets no mark."""
    out = []
    for name, rule in entry.args.items():
        if not rule.is_drop or not rule.note or name not in bound:
            continue
        value = normalise(bound[name])
        if value == normalise(defaults.get(name, "None")) or drop_is_exact(rule, value):
            continue
        out.append(entry.arg_note(name))
    return out


def drop_is_exact(rule: ArgRule, value: str) -> bool:
    """Whether dropping this argument at this (normalised) source value changes nothing the user sees.
    A torch name matches its converted spelling too (``torch.float32`` is ``ms.float32`` once the argument
    itself was converted)."""
    return "*" in rule.exact or _framework_tail(value) in {_framework_tail(normalise(v)) for v in rule.exact}


_FRAMEWORK_NAME = re.compile(r"(?:torch|ms|mindspore)\.([A-Za-z_][\w.]*)")


def _framework_tail(value: str) -> str:
    """``torch.float32``/``ms.float32``/``mindspore.float32`` → ``float32``; other values as they are."""
    m = _FRAMEWORK_NAME.fullmatch(value)
    return m.group(1) if m else value


def _retarget(entry: Entry, bound: dict[str, str], defaults: dict[str, str]) -> Entry:
    """The entry with its ``ms`` class replaced when a bound argument's rule names a ``target``."""
    for name, rule in entry.args.items():
        src = bound.get(name)
        if rule.target and src is not None and normalise(src) != normalise(defaults.get(name, "None")):
            return dataclasses.replace(entry, ms=rule.target)
    return entry


def apply_rule(
    entry: Entry, rule: ArgRule | None, name: str, src: str | None, bound: dict[str, str], defaults: dict[str, str]
) -> dict[str, str]:
    """The MindSpore keywords one torch argument becomes under its rule (``{}``: dropped)."""
    if rule is None:
        return {} if src is None else {name: src}
    if rule.unsupported and src is not None:
        default = defaults.get(name)
        if "*" in rule.unsupported:
            if default is None or normalise(src) != normalise(default):
                raise Unsupported(
                    entry.arg_note(name)
                    or _("{call} has no MindSpore form").format(call=f"{entry.short}({name}={src})")
                )
        elif normalise(src) in {normalise(u) for u in rule.unsupported}:
            raise Unsupported(
                entry.arg_note(name) or _("{call} has no MindSpore form").format(call=f"{entry.short}({name}={src})")
            )
    if rule.ms is None and rule.transform is None:
        return {}
    if src is None:
        src_for_rule = None if rule.transform else defaults.get(name)
    else:
        src_for_rule = src
    if rule.transform:
        fn = TRANSFORMS[rule.transform]
        return {k: v for k, v in fn(src_for_rule, bound, entry).items() if v is not None}
    if src_for_rule is None or rule.ms is None:
        return {}
    return {rule.ms: src_for_rule}


def render_by_rules(entry: Entry, bound: dict[str, str]) -> str:
    """The call rendered through the entry's own argument rules, as if it had no template.

    Handlers start from this (renames, drops, ``unsupported`` checks done) and post-process the
    MindSpore source, e.g. cast int32 indices to torch's int64.
    """
    plain = dataclasses.replace(entry, template="")
    names = plain.sig_names()
    args: list[str] = []
    for n in names:
        if n not in bound:
            break
        args.append(bound[n])
    kwargs = [(k, v) for k, v in bound.items() if k not in names[: len(args)]]
    res = rewrite_call(plain, args, kwargs)
    if not res.ok:
        raise Unsupported("; ".join(res.notes))
    return res.source


def keyword_args(entry: Entry, bound: dict[str, str], skip: tuple[str, ...] = ()) -> list[str]:
    """``keyword=source`` for every bound (or ``always``) argument not in ``skip``, through its rule."""
    defaults = entry.sig_defaults()
    out: list[str] = []
    for name in entry.sig_names():
        if name in skip:
            continue
        rule = entry.args.get(name)
        if name not in bound and not (rule and rule.always):
            continue
        for k, v in apply_rule(entry, rule, name, bound.get(name), bound, defaults).items():
            out.append(f"{k}={v}")
    return out


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _template(entry: Entry, bound: dict[str, str], defaults: dict[str, str], receiver: str | None) -> str:
    """The call through the entry's template or handler; an argument it writes twice runs once."""
    return evaluate_once(_template_text(entry, bound, defaults, receiver), [("self", receiver), *bound.items()])


def _template_text(entry: Entry, bound: dict[str, str], defaults: dict[str, str], receiver: str | None) -> str:
    if entry.template.startswith("@"):
        handler = HANDLERS[entry.template[1:]]
        return handler(bound, receiver, entry)

    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key == "self":
            if receiver is None:
                raise Unsupported(_("{api} needs a receiver").format(api=entry.short))
            return paren(receiver)
        if key in bound:
            return paren(bound[key])
        if key in defaults:
            return paren(defaults[key])
        raise Unsupported(_("{api}: argument '{name}' is required").format(api=entry.short, name=key))

    return _PLACEHOLDER.sub(sub, entry.template)


def _callee(entry: Entry, receiver: str | None) -> str | None:
    if entry.is_method and not entry.ms.startswith("mindspore."):
        return f"{paren(receiver or 'self')}.{_ms_attr(entry)}"
    if entry.kind in ("attribute", "dtype"):
        return None
    return entry.ms


def _render(entry: Entry, parts: list[str], receiver: str | None) -> str:
    joined = ", ".join(parts)
    if entry.is_method and not entry.ms.startswith("mindspore."):
        return f"{paren(receiver or 'self')}.{_ms_attr(entry)}({joined})"
    if entry.kind in ("attribute", "dtype"):
        return entry.ms
    return f"{entry.ms}({joined})"


# ---- whole expressions (used by the differential tests and lookup examples) ----------------


# Roots of the names the KB maps (einops: its functions and torch layers work on torch tensors).
_KB_ROOTS = ("torch", "torchvision", "einops")


# dict methods that are Tensor methods too (sparse ``values()``): not a Tensor's on what a module call returned
_DICT_METHODS = frozenset({"values", "keys", "items", "get", "update", "pop"})


class _ExprRewriter(ast.NodeTransformer):
    def __init__(self, kb, receiver_types: Mapping[str, str | tuple[str, ...]]):
        self.kb = kb
        self.receiver_types = receiver_types
        self.notes: list[str] = []
        self.failed = False

    def _method(self, attr: str, owners: str | tuple[str, ...]) -> Entry | None:
        """The method entry of the first owner (a class, then its bases) that has one."""
        for owner in (owners,) if isinstance(owners, str) else owners:
            entry = self.kb.method(attr, owner)
            if entry is not None:
                return entry
        return None

    def _type_argument(self, node: ast.expr) -> ast.expr:
        """A torch class named in isinstance/issubclass → its MindSpore class (the converter's rule for
        a name in type position: the class itself, whatever its argument rules)."""
        if isinstance(node, ast.Tuple):
            node.elts = [self._type_argument(e) for e in node.elts]
            return node
        name = dotted(node)
        entry = self.kb.get(name) if name and name.startswith(("torch.", "torchvision.")) else None
        if entry is None or entry.status == "no-equivalent":
            return node
        runtime_helper = entry.ms.startswith("torch2ms.runtime.") and not (entry.args or entry.template)
        if not (entry.ms.startswith("mindspore.") or runtime_helper):
            return node
        return ast.parse(entry.ms, mode="eval").body

    def visit_Call(self, node: ast.Call):
        # ``torch.load(f).values()``: a dict's method, not a Tensor's (decided before the inner call is rewritten).
        inner = node.func.value if isinstance(node.func, ast.Attribute) else None
        not_tensor = isinstance(inner, ast.Call) and not call_returns_tensor(
            dotted(inner.func), inner.func.attr if isinstance(inner.func, ast.Attribute) else None
        )
        if isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            node.args[1] = self._type_argument(node.args[1])
        name = dotted(node.func)
        if name and name.split(".")[0] in _KB_ROOTS:
            # the callee is this call's entry (not a renamed reference): only the arguments are visited
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
        else:
            self.generic_visit(node)
            name = dotted(node.func)
        entry = None
        receiver = None
        if name and name.split(".")[0] in _KB_ROOTS:
            entry = self.kb.get(name)
        elif isinstance(node.func, ast.Attribute) and not not_tensor:
            receiver = ast.unparse(node.func.value)
            entry = self._method(node.func.attr, self.receiver_types.get(receiver, "torch.Tensor"))
        if entry is None:
            return node
        args = [ast.unparse(a) for a in node.args]
        kwargs = [(k.arg, ast.unparse(k.value)) for k in node.keywords if k.arg]
        # A receiver of no known type is taken to be a Tensor; when its method's rule does not fit the call
        # (``q.put(7)`` on a queue, ``d.values()`` on a dict), it is not a Tensor's: left as written.
        assumed = receiver is not None and receiver not in self.receiver_types
        try:
            res = rewrite_call(entry, args, kwargs, receiver)
        except Exception:
            if assumed:
                return node
            raise
        called = isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)  # m(x).values(): m's output
        if assumed and (not res.ok or (called and node.func.attr in _DICT_METHODS)):  # type: ignore[attr-defined]
            return node
        self.notes += res.notes
        if not res.ok:
            self.failed = True
            return node
        return ast.parse(res.source, mode="eval").body

    def visit_Attribute(self, node: ast.Attribute):
        name = dotted(node)
        if name and name.split(".")[0] in _KB_ROOTS and "." in name:
            entry = self.kb.get(name)
            if entry is not None and (entry.kind in ("dtype", "attribute") or _renamed_only(entry)) and entry.ms:
                return ast.parse(entry.ms, mode="eval").body
            return node
        self.generic_visit(node)
        receiver = ast.unparse(node.value)
        owner = self.receiver_types.get(receiver)
        entry = self._method(node.attr, owner) if owner else None
        if entry is not None and entry.kind == "attribute":
            # ``x.T``, ``x.is_cuda``: only for receivers whose type is known.
            if entry.status == "no-equivalent":
                self.failed = True
                self.notes.append(entry.note_shown or _("{api} has no MindSpore equivalent").format(api=entry.torch))
                return node
            if entry.template:
                res = rewrite_call(entry, [], [], receiver)
                self.notes += res.notes
                return ast.parse(res.source, mode="eval").body if res.ok else node
            return ast.parse(f"{paren(receiver)}.{_ms_attr(entry)}", mode="eval").body
        return node


def _renamed_only(entry: Entry) -> bool:
    """A class or function whose conversion is its name alone: used as a value (a block class passed
    to a model class), it becomes the MindSpore name, as the converter writes it."""
    return (
        entry.kind in ("class", "function")
        and entry.status == "direct"
        and not (entry.sig or entry.args or entry.template)
    )


def rewrite_expression(kb, src: str, receiver_types: Mapping[str, str | tuple[str, ...]] | None = None) -> CallRewrite:
    """Rewrite every torch call in Python source to MindSpore.

    ``receiver_types`` names the owner of method receivers (``{"m": "torch.nn.Module"}``), or
    owners to try in order (``("torch.distributions.Normal", "torch.distributions.Distribution")``);
    any other receiver is taken to be a Tensor.
    """
    tree = ast.parse(src.strip(), mode="exec")
    rw = _ExprRewriter(kb, receiver_types or {})
    tree = rw.visit(tree)
    ast.fix_missing_locations(tree)
    return CallRewrite(ast.unparse(tree), ok=not rw.failed, notes=rw.notes)
