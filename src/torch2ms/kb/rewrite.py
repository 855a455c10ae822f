"""Apply one KB entry to one call, on source text.

The converter (libcst) and the differential tests (plain ``ast``) both come here, so the tests
prove exactly the argument rules the converter applies.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass, field

from ..analysis.astwalk import dotted
from .schema import Entry
from .transforms import HANDLERS, TRANSFORMS, Unsupported

_ATOMIC = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Subscript, ast.Tuple, ast.List, ast.Dict)


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


def _wrapped(src: str) -> bool:
    """Is the whole source already inside one pair of parentheses?"""
    if not (src.startswith("(") and src.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(src):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(src) - 1:
            return False
    return True


def _paren(src: str) -> str:
    if _wrapped(src.strip()):
        return src
    try:
        node = ast.parse(src.strip(), mode="eval").body
    except SyntaxError:
        return f"({src})"
    if isinstance(node, _ATOMIC) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant)):
        return src
    return f"({src})"


def _norm(src: str) -> str:
    try:
        return ast.unparse(ast.parse(src.strip(), mode="eval"))
    except SyntaxError:
        return src.strip()


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
        return CallRewrite("", ok=False, notes=[entry.note or f"{entry.torch} has no MindSpore equivalent"])
    if not entry.sig and not entry.args and not entry.template:
        # Same arguments: only the name changes.
        parts = list(args) + [f"{k}={v}" for k, v in kwargs]
        return CallRewrite(
            _render(entry, parts, receiver), func=_callee(entry, receiver), args=list(args), kwargs=list(kwargs)
        )
    bound, extra, unknown = bind(entry, args, kwargs)
    if extra:
        notes.append(f"{len(extra)} more positional argument(s) than {entry.short} takes")
    for k in unknown:
        notes.append(f"argument '{k}' is not in {entry.short}'s signature; passed through")
    defaults = entry.sig_defaults()
    try:
        if entry.template:
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
            emitted = _apply_rule(entry, rule, name, src, bound, defaults)
            is_star = entry.sig[idx].startswith("*") and not entry.sig[idx].startswith("**")
            was_positional = idx < len(args)
            if is_star and was_positional:
                # *tensors: the collected positional sources stay positional, renamed or not.
                if not positional_ok:
                    raise Unsupported(f"{entry.short}: *{name} after a keyword argument")
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


def _retarget(entry: Entry, bound: dict[str, str], defaults: dict[str, str]) -> Entry:
    """The entry with its ``ms`` class replaced when a bound argument's rule names a ``target``."""
    for name, rule in entry.args.items():
        src = bound.get(name)
        if rule.target and src is not None and _norm(src) != _norm(defaults.get(name, "None")):
            return dataclasses.replace(entry, ms=rule.target)
    return entry


def _apply_rule(entry, rule, name, src, bound, defaults) -> dict[str, str]:
    if rule is None:
        return {name: src}
    if rule.unsupported and src is not None:
        default = defaults.get(name)
        if "*" in rule.unsupported:
            if default is None or _norm(src) != _norm(default):
                raise Unsupported(rule.note or f"{entry.short}({name}={src}) has no MindSpore form")
        elif _norm(src) in {_norm(u) for u in rule.unsupported}:
            raise Unsupported(rule.note or f"{entry.short}({name}={src}) has no MindSpore form")
    if rule.ms is None and rule.transform is None:
        return {}
    if src is None:
        src_for_rule = None if rule.transform else defaults.get(name)
    else:
        src_for_rule = src
    if rule.transform:
        fn = TRANSFORMS[rule.transform]
        return {k: v for k, v in fn(src_for_rule, bound, entry).items() if v is not None}
    if src_for_rule is None:
        return {}
    return {rule.ms: src_for_rule}


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _template(entry: Entry, bound: dict[str, str], defaults: dict[str, str], receiver: str | None) -> str:
    if entry.template.startswith("@"):
        handler = HANDLERS[entry.template[1:]]
        return handler(bound, receiver, entry)

    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key == "self":
            if receiver is None:
                raise Unsupported(f"{entry.short} needs a receiver")
            return _paren(receiver)
        if key in bound:
            return _paren(bound[key])
        if key in defaults:
            return _paren(defaults[key])
        raise Unsupported(f"{entry.short}: argument '{key}' is required")

    return _PLACEHOLDER.sub(sub, entry.template)


def _callee(entry: Entry, receiver: str | None) -> str | None:
    if entry.is_method and not entry.ms.startswith("mindspore."):
        return f"{_paren(receiver or 'self')}.{_ms_attr(entry)}"
    if entry.kind in ("attribute", "dtype"):
        return None
    return entry.ms


def _render(entry: Entry, parts: list[str], receiver: str | None) -> str:
    joined = ", ".join(parts)
    if entry.is_method and not entry.ms.startswith("mindspore."):
        return f"{_paren(receiver or 'self')}.{_ms_attr(entry)}({joined})"
    if entry.kind in ("attribute", "dtype"):
        return entry.ms
    return f"{entry.ms}({joined})"


# ---- whole expressions (used by the differential tests and lookup examples) ----------------


class _ExprRewriter(ast.NodeTransformer):
    def __init__(self, kb, receiver_types: dict[str, str]):
        self.kb = kb
        self.receiver_types = receiver_types
        self.notes: list[str] = []
        self.failed = False

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        name = dotted(node.func)
        entry = None
        receiver = None
        if name and name.split(".")[0] in ("torch", "torchvision"):
            entry = self.kb.get(name)
        elif isinstance(node.func, ast.Attribute):
            receiver = ast.unparse(node.func.value)
            owner = self.receiver_types.get(receiver, "torch.Tensor")
            entry = self.kb.method(node.func.attr, owner)
        if entry is None:
            return node
        args = [ast.unparse(a) for a in node.args]
        kwargs = [(k.arg, ast.unparse(k.value)) for k in node.keywords if k.arg]
        res = rewrite_call(entry, args, kwargs, receiver)
        self.notes += res.notes
        if not res.ok:
            self.failed = True
            return node
        return ast.parse(res.source, mode="eval").body

    def visit_Attribute(self, node: ast.Attribute):
        name = dotted(node)
        if name and name.startswith(("torch.", "torchvision.")):
            entry = self.kb.get(name)
            if entry is not None and entry.kind in ("dtype", "attribute") and entry.ms:
                return ast.parse(entry.ms, mode="eval").body
            return node
        self.generic_visit(node)
        receiver = ast.unparse(node.value)
        owner = self.receiver_types.get(receiver)
        entry = self.kb.method(node.attr, owner) if owner else None
        if entry is not None and entry.kind == "attribute":
            # ``x.T``, ``x.is_cuda``: only for receivers whose type is known.
            if entry.status == "no-equivalent":
                self.failed = True
                self.notes.append(entry.note or f"{entry.torch} has no MindSpore equivalent")
                return node
            if entry.template:
                res = rewrite_call(entry, [], [], receiver)
                self.notes += res.notes
                return ast.parse(res.source, mode="eval").body if res.ok else node
            return ast.parse(f"{_paren(receiver)}.{_ms_attr(entry)}", mode="eval").body
        return node


def rewrite_expression(kb, src: str, receiver_types: dict[str, str] | None = None) -> CallRewrite:
    """Rewrite every torch call in Python source to MindSpore.

    ``receiver_types`` names the owner of method receivers (``{"m": "torch.nn.Module"}``);
    any other receiver is taken to be a Tensor.
    """
    tree = ast.parse(src.strip(), mode="exec")
    rw = _ExprRewriter(kb, receiver_types or {})
    tree = rw.visit(tree)
    ast.fix_missing_locations(tree)
    return CallRewrite(ast.unparse(tree), ok=not rw.failed, notes=rw.notes)
