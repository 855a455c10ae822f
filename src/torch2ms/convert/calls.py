"""The KB's rules applied to one node: torch calls, torch names used as values, Tensor/Module/
Optimizer methods, layer parameters and Tensor attributes.

Canonicalise, then match: names were resolved to full torch names through the file's imports
(facts.imap); the entry's argument rules (kb/rewrite.py) produce MindSpore source, and the original
argument nodes whose text did not change are put back as they were (comments and layout kept).
"""

from __future__ import annotations

import ast
import dataclasses
from collections import Counter

import libcst as cst

from ..analysis.imports import legacy_type_name
from ..analysis.infer import MODULE, MODULE_ONLY_METHODS, OPTIMIZER, SCHEDULER, TENSOR, TENSOR_ONLY_METHODS
from ..i18n import _
from ..kb import Entry
from ..kb.rewrite import CallRewrite, bind, rewrite_call
from ..kb.source import known_ints
from .container_growth import grows
from .context import RewriteContext
from .cstutil import code, comment_counts, comments_in, dotted
from .hooks import ActiveHooks


def torch_call(
    ctx: RewriteContext, hooks: ActiveHooks, full: str, original: cst.Call, updated: cst.Call
) -> cst.BaseExpression:
    """A call of a torch name: a construct's hook, else the KB entry's rules, else a mark."""
    if ctx.marked_before(full):
        ctx.keep_marked(full, ctx.root_of(original.func))
        return updated  # left for a person, as the mark above it says
    for hook in hooks.kind("torch_call"):
        special = hook(ctx, full, original, updated)
        if special is not None:
            return special
    entry = ctx.kb.get(full)
    if entry is None:
        ctx.mark(full, _("not in the torch2ms knowledge base; port by hand"), ctx.root_of(original.func))
        return updated
    if original in ctx.parameter_data:
        # nn.Parameter(torch.zeros(3, requires_grad=True)): the Parameter is trainable by its own flag.
        updated = updated.with_changes(
            args=[a for a in updated.args if a.keyword is None or a.keyword.value != "requires_grad"]
        )
    if entry.status == "no-equivalent":
        ctx.mark(entry.torch, entry.note_shown or _("no MindSpore equivalent"), ctx.root_of(original.func))
        return updated
    return apply_entry(ctx, entry, original, updated, None, entry.torch)


# A container that gets cells after it is built (issue 24): torch2ms.runtime's, which names them by their path.
_GROWING = {"torch.nn.Sequential": "torch2ms.runtime.Sequential", "torch.nn.ModuleList": "torch2ms.runtime.ModuleList"}


def apply_entry(
    ctx: RewriteContext, entry: Entry, original: cst.Call, updated: cst.Call, receiver: str | None, api: str
) -> cst.BaseExpression:
    if entry.torch in _GROWING and receiver is None and grows(ctx, original):
        entry = dataclasses.replace(entry, ms=_GROWING[entry.torch])  # cells arrive later: named by their path
    split = ctx.split_args(updated)
    if split is None:
        if not entry.sig and not entry.args and not entry.template and entry.status == "direct":
            res = rewrite_call(entry, [], [], receiver)
            ctx.record(api)
            return updated.with_changes(func=ctx.parse_ms(res.func or ""))
        starred = _star_into_varargs(ctx, entry, updated) if receiver is None else None
        if starred is not None:
            split = starred  # meshgrid(*axis_pos, indexing='ij'): the rule places the starred names as written
        elif receiver is None and entry.kind in ("class", "function"):
            # *args/**kwargs: the arguments are only known at run time.
            ctx.record(
                api, "review", _("*args/**kwargs: torch2ms.runtime.TorchCompat applies the argument rules at run time")
            )
            return updated.with_changes(func=ctx.parse_ms(f'torch2ms.runtime.TorchCompat("{entry.torch}")'))
        else:
            ctx.mark(api, _("*args/**kwargs in the call: convert by hand"), None)
            return updated
    assert split is not None
    try:
        with known_ints(ctx.int_names):  # rules may write the simple form for ints (LayerNorm((n,), ...))
            res = rewrite_call(entry, *split, receiver=receiver)
    except Exception as exc:  # noqa: BLE001 - a bad rule must not cost the whole file
        ctx.mark(
            api,
            _("rule failed on this call ({kind}: {exc}); convert by hand").format(kind=type(exc).__name__, exc=exc),
            ctx.root_of(original.func),
        )
        return updated
    if not res.ok:
        ctx.mark(api, "; ".join(res.notes) or entry.note_shown, ctx.root_of(original.func))
        return updated
    if res.notes:
        ctx.record(api, "review", "; ".join(res.notes))
    elif entry.status == "composite":
        ctx.record(api, "review" if entry.review else "converted", entry.note_shown)
    else:
        ctx.record(api)
    return build_call(ctx, res, updated)


def build_call(ctx: RewriteContext, res: CallRewrite, updated: cst.Call) -> cst.BaseExpression:
    if res.func is None or res.args is None:
        return _comments_above(ctx, updated, ctx.parse_ms(res.source))
    # Reuse the original argument nodes whose source is unchanged (keeps comments/format):
    # positional by position first, keywords by name, then any unused argument of the same source.
    srcs = [ctx.source_of(a.value) for a in updated.args]
    used: set[int] = set()

    def take(src: str, keyword: str | None, pos: int | None) -> cst.Arg | None:
        cands = [pos] if pos is not None else []
        cands += [
            i for i, a in enumerate(updated.args) if keyword and a.keyword is not None and a.keyword.value == keyword
        ]
        cands += range(len(updated.args))
        for i in cands:
            if i is not None and i < len(srcs) and i not in used and srcs[i] == src:
                used.add(i)
                return updated.args[i]
        return None

    eq = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    new_args: list[cst.Arg] = []
    for i, src in enumerate(res.args):
        a = take(src, None, i)
        new_args.append(a if a is not None and a.keyword is None else cst.Arg(ctx.parse_ms(src)))
    for k, src in res.kwargs or []:
        a = take(src, k, None)
        if a is not None and a.keyword is not None and a.keyword.value == k:
            new_args.append(a)
        elif a is not None:
            new_args.append(a.with_changes(keyword=cst.Name(k), equal=eq, star=""))
        else:
            new_args.append(cst.Arg(ctx.parse_ms(src), keyword=cst.Name(k), equal=eq))
    new_args = _fix_commas(new_args, list(updated.args))
    lost = [c for i, a in enumerate(updated.args) if i not in used and (c := _comma_comment(a)) is not None]
    if lost:
        new_args = _keep_comments(new_args, set(map(id, updated.args)), lost)
    return _comments_above(ctx, updated, updated.with_changes(func=ctx.parse_ms(res.func), args=new_args))


def _comments_above(ctx: RewriteContext, old: cst.CSTNode, new: cst.BaseExpression) -> cst.BaseExpression:
    """Comments inside a call the rewrite could not keep in place go above its statement, never away."""
    if ctx.in_one_line_statement():
        return new  # nothing inside a one-line statement can be a comment
    if not ctx.markers or not (before := comment_counts(old)) or before.keys() <= comment_counts(new).keys():
        return new  # no comment lost (the common case), found without a visitor
    kept = set(comments_in(new))
    ctx.markers[-1].extend(c for c in comments_in(old) if c not in kept)
    return new


def _comma_comment(arg: cst.Arg) -> cst.Comment | None:
    """``padding=p,  # type: ignore[arg-type]``: the comment after an argument of a one-per-line call."""
    ws = arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else None
    return ws.first_line.comment if isinstance(ws, cst.ParenthesizedWhitespace) else None


def _keep_comments(args: list[cst.Arg], reused: set[int], lost: list[cst.Comment]) -> list[cst.Arg]:
    """The comments of rewritten arguments go after the arguments written in their place, in order."""
    out = []
    for a in args:
        comma = a.comma
        ws = comma.whitespace_after if isinstance(comma, cst.Comma) else None
        if (
            lost
            and isinstance(comma, cst.Comma)
            and id(a) not in reused
            and isinstance(ws, cst.ParenthesizedWhitespace)
            and ws.first_line.comment is None
        ):
            first = ws.first_line.with_changes(comment=lost.pop(0), whitespace=cst.SimpleWhitespace("  "))
            a = a.with_changes(comma=comma.with_changes(whitespace_after=ws.with_changes(first_line=first)))
        out.append(a)
    return out


def method_owner(ctx: RewriteContext, receiver: cst.BaseExpression, attr: str) -> tuple[str | None, str]:
    rtype = ctx.receiver_type(receiver)
    if rtype in (TENSOR, MODULE, OPTIMIZER, SCHEDULER):
        return rtype, "certain"
    if _is_super(receiver) and ctx.in_module_class:
        return MODULE, "certain"  # super(Bottle, self).forward(x): the base layer's forward
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        if ctx.in_module_class:
            return MODULE, "certain"
        # A class whose base comes from elsewhere in the project is most likely a Module too.
        return (MODULE, "likely") if ctx.class_has_bases and ctx.class_has_bases[-1] else (None, "")
    root = ctx.chain_root(receiver)
    if (
        isinstance(root, cst.Name)
        and root.value in ctx.imap.names
        and not ctx.imap.is_framework(ctx.imap.names[root.value])
    ):
        return None, ""  # a module such as mindspore's `ops` (converted code converted again)
    if rtype is None and attr in TENSOR_ONLY_METHODS:
        return TENSOR, "likely"
    if rtype is None and attr in MODULE_ONLY_METHODS:
        return MODULE, "likely"
    if rtype is None and ctx.kb.method(attr, MODULE) is not None and ctx.used_as_module(receiver):
        return MODULE, "likely"  # ctx.model.train() where ctx.model.parameters() is called too
    return None, ""


def _legacy_type_arg(ctx: RewriteContext, call: cst.Call) -> bool:
    """One argument that names a torch legacy tensor type (``torch.cuda.LongTensor``, an alias of one)."""
    return len(call.args) == 1 and legacy_type_name(ctx.resolve(call.args[0].value)) is not None


def _is_super(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super"


def method_call(ctx: RewriteContext, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
    func = original.func
    assert isinstance(func, cst.Attribute)
    attr = func.attr.value
    owner, confidence = method_owner(ctx, func.value, attr)
    if owner is None and attr == "to" and _device_args(original):
        owner, confidence = TENSOR, "likely"  # .to("cuda") / .to(device): only torch objects move
    if owner is None and attr == "type" and _legacy_type_arg(ctx, original):
        owner, confidence = TENSOR, "likely"  # x.type(torch.FloatTensor) / x.type(Tensor): a torch tensor's cast
    if owner is None and attr == "size" and len(original.args) <= 1:
        # numpy's, PIL's and pandas' ``size`` are attributes, never called: x.size(-1) is torch's.
        owner, confidence = TENSOR, "likely"
    if owner is None:
        return updated
    if confidence == "likely" and ctx.facts.imports_mindspore:
        # Converted code converted again (a torch import stayed for something unconvertible): a method
        # of an untyped receiver is MindSpore's by now, not torch's.
        return updated
    if owner == MODULE and attr == "forward":
        ctx.record("torch.nn.Module.forward")
        return updated.with_changes(func=func_of(updated).with_changes(attr=cst.Name("construct")))
    entry = ctx.kb.method(attr, owner)
    if entry is None:
        return updated
    if owner == TENSOR and ctx.converted_before:
        # torch2ms's output converted again: a Tensor is typed only through a torch call the first pass
        # kept, and its methods were converted then (tuple(x.stride()) must not wrap again).
        if ctx.marked_before(entry.torch):
            ctx.keep_marked(entry.torch, None)
        return updated
    receiver = ctx.converted_receivers[id(func.value)] = func_of(updated).value
    if not _stands_alone(receiver):
        return _method_rule(ctx, entry, original, updated, ctx.source_of(receiver), owner, confidence)
    # The receiver goes into the rule's text as a name and its node is put back in the result: a chain
    # of n methods (x.float().view(-1).relu()...) costs O(n), not the O(n²) of writing and parsing the
    # ever longer receiver text at every link.
    call = updated.with_changes(func=func_of(updated).with_changes(value=cst.Name(_RECEIVER)))
    result = _method_rule(ctx, entry, original, call, _RECEIVER, owner, confidence)
    if result is call:
        return updated
    if ctx.breaks_line(receiver):
        # Over several lines, its text was written in parentheses (it does not parse alone): so is its node,
        # which the rule's result may carry out of the statement's brackets.
        receiver = receiver.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return _put_back(result, receiver)


def _method_rule(
    ctx: RewriteContext,
    entry: Entry,
    original: cst.Call,
    updated: cst.Call,
    receiver: str,
    owner: str,
    confidence: str,
) -> cst.BaseExpression:
    split = ctx.split_args(updated)
    if split is not None and _already_mindspore(entry, split[1]):
        return updated  # ``x.argmax(axis=1)``: converted before; converting again changes nothing
    if confidence == "likely" and split is not None and not _fits(entry, *split):
        return updated  # numpy's img.transpose((2, 0, 1)): arguments torch's method cannot take
    if entry.status == "no-equivalent":
        ctx.mark(entry.torch, entry.note_shown or _("no MindSpore equivalent"))
        return updated
    result = apply_entry(ctx, entry, original, updated, receiver, entry.torch)
    if confidence == "likely" and result is not updated:
        ctx.changes[-1].note = (ctx.changes[-1].note + "; " if ctx.changes[-1].note else "") + _(
            "receiver assumed to be a {kind}"
        ).format(kind="Tensor" if owner == TENSOR else "Module")
    return result


# The name a method call's receiver stands as in its rule's text (put back as the node after).
_RECEIVER = "__torch2ms_receiver__"


def _stands_alone(receiver: cst.BaseExpression) -> bool:
    """Can the receiver's node replace a name in any rule's output? Atomic (a call, attribute or
    subscript) or parenthesised, not a bare token (its text costs nothing), and not ``x.flatten()``,
    whose text Tensor.norm's rule reads (converting again changes nothing)."""
    if not isinstance(receiver, (cst.Call, cst.Attribute, cst.Subscript)) and not getattr(receiver, "lpar", None):
        return False
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and not receiver.args:
        return receiver.func.attr.value != "flatten"
    return True


class _PutBack(cst.CSTTransformer):
    def __init__(self, node: cst.BaseExpression) -> None:
        super().__init__()
        self.node = node

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.node if original_node.value == _RECEIVER else updated_node


def _put_back(result: cst.BaseExpression, receiver: cst.BaseExpression) -> cst.BaseExpression:
    """The rule's result with the receiver's node where its name stands."""
    out = result.visit(_PutBack(receiver))
    assert isinstance(out, cst.BaseExpression)
    return out


def _layer_renames(ctx: RewriteContext, classes: list[str], attr: str) -> dict[str, str | None]:
    """torch layer class → MindSpore name of its ``attr`` parameter/attribute (the KB's renames)."""
    out: dict[str, str | None] = {}
    for cls in classes:
        entry = ctx.kb.get(cls)
        if entry is None:
            continue
        if attr in entry.params:
            out[cls] = entry.params[attr]
        elif attr in entry.attrs:
            out[cls] = entry.attrs[attr]
    return out


def _by_layer_class(
    ctx: RewriteContext, by_class: dict[str, str | None], attr: str, original: cst.Attribute, updated: cst.Attribute
) -> cst.BaseExpression | None:
    """``isinstance(m, (nn.Linear, nn.Embedding))`` then ``m.weight``: the name depends on the layer,
    so the converted read picks it by class: ``(m.embedding_table if isinstance(m, nn.Embedding)
    else m.weight)``. None when that cannot be written (an assignment to the attribute itself)."""
    names = {n for n in by_class.values() if n is not None}
    if original in ctx.assign_targets or not all(part.isidentifier() for n in names for part in n.split(".")):
        return None  # a dotted name (BatchNorm3d's bn2d.gamma) is an attribute chain too
    counts = Counter(n for n in by_class.values() if n is not None)
    default = attr if attr in names else min(names, key=lambda n: (-counts[n], n))  # the most layers' name
    receiver = code(updated.value).strip()
    expr = f"{receiver}.{default}"
    for cls, name in by_class.items():
        entry = ctx.kb.get(cls)
        if name is None or name == default or entry is None or not entry.ms:
            continue
        expr = f"({receiver}.{name} if isinstance({receiver}, {entry.ms}) else {expr})"
    return ctx.parse_ms(expr)


def layer_parameter(ctx: RewriteContext, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression | None:
    """``bn.weight`` → ``bn.gamma`` when bn is known to be a BatchNorm (the KB's params renames)."""
    classes = ctx.layer_classes(original.value)
    attr = original.attr.value
    by_class = _layer_renames(ctx, classes, attr)
    renames = set(by_class.values())
    if not renames:
        return None
    api = f"{classes[0]}.{attr}"
    if len(renames) > 1:
        picked = _by_layer_class(ctx, by_class, attr, original, updated)
        if picked is not None:
            ctx.record(
                api,
                "converted",
                _("'{attr}' is named by the layer's class in MindSpore: {names}").format(
                    attr=attr, names=sorted(map(str, renames))
                ),
            )
            return picked
        ctx.record(
            api,
            "review",
            _("'{attr}' is named {names} in MindSpore depending on the layer").format(
                attr=attr, names=sorted(map(str, renames))
            ),
        )
        return updated
    new = renames.pop()
    if new is None:
        ctx.mark(api, _("MindSpore's layer has no '{attr}'").format(attr=attr))
        return updated
    if not new.isidentifier():
        ctx.record(api, "review", _("MindSpore keeps '{attr}' at '{new}'").format(attr=attr, new=new))
        return updated
    if new != attr:
        ctx.record(api, "converted", _("parameter renamed {attr} → {new}").format(attr=attr, new=new))
        return updated.with_changes(attr=cst.Name(new))
    return updated


def method_attribute(ctx: RewriteContext, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
    """``x.T``, ``x.is_cuda``, ``x.device``: Tensor attributes of receivers known to be tensors."""
    if original in ctx.call_funcs:
        return updated
    if original.attr.value == "forward" and method_owner(ctx, original.value, "forward")[0] == MODULE:
        ctx.record("torch.nn.Module.forward")  # ctx.forward passed around: construct in MindSpore
        return updated.with_changes(attr=cst.Name("construct"))
    layer = layer_parameter(ctx, original, updated)
    if layer is not None:
        return layer
    owner = ctx.receiver_type(original.value)
    if owner not in (TENSOR, MODULE):  # a Module's own attributes: self._modules → self._cells
        return updated
    entry = ctx.kb.method(original.attr.value, owner)
    if entry is None or entry.kind != "attribute":
        return updated
    if ctx.converted_before:  # converted code converted again: see method_call
        if ctx.marked_before(entry.torch):
            ctx.keep_marked(entry.torch, None)
        return updated
    if entry.status == "no-equivalent":
        ctx.mark(entry.torch, entry.note_shown or _("no MindSpore equivalent"))
        return updated
    if entry.template:
        res = rewrite_call(entry, [], [], code(updated.value).strip())
        if res.ok:
            ctx.record(entry.torch)
            return ctx.parse_ms(res.source)
        return updated
    ms_attr = entry.ms.rsplit(".", 1)[-1]
    if ms_attr != original.attr.value:
        ctx.record(entry.torch)
        return updated.with_changes(attr=cst.Name(ms_attr))
    return updated


def reference(
    ctx: RewriteContext, hooks: ActiveHooks, full: str, original: cst.BaseExpression, updated: cst.BaseExpression
) -> cst.BaseExpression:
    """A torch name used as a value: a class (base class, isinstance), a dtype, a function."""
    if ctx.is_call_func(original):
        return updated  # the call handler converts (or marks) the whole call
    entry = ctx.kb.get(full)
    root = ctx.root_of(original)
    if entry is None:
        ctx.mark(full, _("not in the torch2ms knowledge base; port by hand"), root)
        return updated
    # A torch2ms.runtime helper without argument rules takes torch's own arguments (that is what it is
    # for: torch.distributions.Normal → torch2ms.runtime.Normal), so its name is the value itself.
    runtime_helper = entry.ms.startswith("torch2ms.runtime.") and not (_acting_rules(entry) or entry.template)
    if entry.status == "no-equivalent" or not entry.ms.startswith(("mindspore.", "torch2ms.runtime.")):
        ctx.mark(entry.torch, entry.note_shown or _("no MindSpore equivalent"), root)
        return updated
    settable = entry.kind == "attribute" and entry.ms.startswith("torch2ms.runtime.")  # cudnn.benchmark = True
    if ctx.in_target and not settable:
        ctx.mark(entry.torch, _("assigned to: MindSpore's name is not the same object; port by hand"), root)
        return updated
    if ctx.in_pattern:
        ctx.mark(entry.torch, _("a match class pattern: MindSpore's class has other attributes; port by hand"), root)
        return updated
    in_type_position = ctx.in_type_position(original)
    for hook in hooks.kind("reference"):
        special = hook(ctx, entry, original, updated)
        if special is not None:
            return special
    if ctx.in_bases and entry.ms_base:
        ctx.record(entry.torch, "converted", _("subclassed: base is {base}").format(base=entry.ms_base))
        return ctx.parse_ms(entry.ms_base)
    if ctx.in_bases and _translated_base(entry):
        # class Linear(nn.Linear) is built with torch's arguments (Linear(i, o, bias), Conv1d(..., padding=1)):
        # its base translates them by the entry's rules, as a written-out call would be.
        ctx.record(entry.torch, "converted", _("subclassed: torch2ms.runtime.compat_base translates torch's arguments"))
        return ctx.parse_ms(f'torch2ms.runtime.compat_base("{entry.torch}")')
    if (
        not in_type_position
        and entry.kind in ("class", "function")
        and (_acting_rules(entry) or entry.template or (entry.sig and not runtime_helper))
        and not (_same_positional_call(entry) and not _bound_by_partial(ctx, original))
    ):
        # Passed around as a value (conv_layer=nn.Conv2d, partial(nn.LayerNorm, eps=1e-6)): the
        # calls made through it are only known at run time, so the KB rules run then.
        ctx.record(
            entry.torch,
            "review",
            _("used as a value: torch2ms.runtime.TorchCompat applies its argument rules at run time"),
        )
        return ctx.parse_ms(f'torch2ms.runtime.TorchCompat("{entry.torch}")')
    ctx.record(entry.torch)
    return ctx.parse_ms(entry.ms)


def _acting_rules(entry) -> bool:
    """Argument rules that change a call made through the name. A runtime helper takes torch's whole
    signature, so a plain drop (``validate_args`` noted as ignored) changes nothing there: the name used as a
    value (``register_kl(Shifted, Normal)``) stays the runtime class, not TorchCompat."""
    helper = entry.ms.startswith("torch2ms.runtime.")
    return any(
        not (helper and r.ms is None and not (r.transform or r.unsupported or r.target or r.always))
        for r in entry.args.values()
    )


def _same_positional_call(entry: Entry) -> bool:
    """A torch function whose MindSpore function takes the same arguments by position: its rules only drop
    trailing ones (``inplace=``, ``out=``), nothing is renamed or transformed (F.relu, F.gelu, torch.tanh).
    Used as a value (``return F.relu`` from an activation getter, detr), the MindSpore function itself is
    equal and compiles in GRAPH_MODE, where TorchCompat does not; a keyword it lacks fails loudly."""
    if entry.kind != "function" or entry.status != "direct" or entry.template or not entry.ms:
        return False
    if not entry.ms.startswith("mindspore."):
        return False
    names = entry.sig_names()
    dropped = [n for n, rule in entry.args.items() if rule.ms is None and not rule.transform and not rule.always]
    if len(dropped) != len(entry.args) or any(n not in names for n in dropped):
        return False
    kept = names[: len(names) - len(dropped)]
    if entry.ms_sig and [p.split("=", 1)[0] for p in entry.ms_sig[: len(kept)]] != kept:
        return False  # MindSpore's parameters are named otherwise: a keyword call would differ
    return all(names.index(n) >= len(kept) for n in dropped)  # trailing: positions unchanged


def _bound_by_partial(ctx: RewriteContext, original: cst.BaseExpression) -> bool:
    """The value is the first argument of a ``partial(...)`` in its statement that binds more arguments
    (``partial(F.relu, inplace=True)``): torch's keywords reach the call, so TorchCompat's rules must apply."""
    name = dotted(original)
    info = ctx.statement
    if name is None or info is None:
        return False
    for node in ast.walk(info.node):
        if (
            isinstance(node, ast.Call)
            and (ast.unparse(node.func).rsplit(".", 1)[-1] == "partial")
            and node.args
            and ast.unparse(node.args[0]) == name
            and (len(node.args) > 1 or node.keywords)
        ):
            return True
    return False


def _translated_base(entry: Entry) -> bool:
    """A layer class whose constructor arguments differ (argument rules, no template)."""
    return (
        entry.kind == "class"
        and entry.status == "args-differ"
        and not entry.template
        and entry.ms.startswith(("mindspore.nn.", "torch2ms.runtime."))
    )


_DEVICE_STRINGS = ("'cuda", '"cuda', "'cpu", '"cpu', "'mps", '"mps', "'xla", '"xla')


# numpy-style keywords MindSpore uses where torch says dim / keepdim / correction
MINDSPORE_KEYWORDS = frozenset({"axis", "keepdims", "ddof"})


def _already_mindspore(entry: Entry, kwargs: list[tuple[str, str]]) -> bool:
    """A keyword only MindSpore's side names (``axis=`` where torch says ``dim=``): the call is
    MindSpore code already (a torch method would reject the keyword)."""
    torch_names = set(entry.sig_names())
    ms_names = set(entry.ms_sig) | {rule.ms for rule in entry.args.values() if rule.ms} | MINDSPORE_KEYWORDS
    return any(k in ms_names and k not in torch_names for k, _ in kwargs)


def _fits(entry: Entry, args: list[str], kwargs: list[tuple[str, str]]) -> bool:
    """Do these arguments bind to the torch signature (no extra positional, no unknown keyword, every
    parameter without a default given)? A receiver guessed to be a Tensor whose call does not fit
    is some other library's object."""
    if not entry.sig:
        return True
    bound, extra, unknown = bind(entry, args, kwargs)
    required = [p for p in entry.sig if "=" not in p and not p.startswith("*")]
    return not extra and not unknown and all(p in bound for p in required)


def func_of(call: cst.Call) -> cst.Attribute:
    """The ``x.method`` of a method call."""
    assert isinstance(call.func, cst.Attribute)
    return call.func


_TO_KEYWORDS = frozenset({"device", "dtype", "non_blocking", "memory_format"})  # Tensor.to's, no other library's


def _device_args(call: cst.Call) -> bool:
    """Is this ``.to(...)`` call clearly a torch move (a device string, ``device``, ``torch.device(...)``,
    or torch's own keywords: ``.to(dtype=x.dtype, device=x.device)``)?"""
    if any(a.keyword is not None and a.keyword.value in _TO_KEYWORDS for a in call.args):
        return True
    if len(call.args) != 1 or call.args[0].star:
        return False
    a = call.args[0]
    if a.keyword is not None:
        return a.keyword.value == "device"
    v = a.value
    if isinstance(v, cst.SimpleString):
        return v.value.startswith(_DEVICE_STRINGS)
    if isinstance(v, cst.Name):
        return _device_name(v.value)
    if isinstance(v, cst.Attribute):
        return _device_name(v.attr.value)
    return isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "device"


def _device_name(name: str) -> bool:
    """``device``, ``dev``, ``DEVICE``, ``torch_device``, ``args.Device``: a name that says it holds a device."""
    low = name.lower()
    return low in ("device", "dev") or low.endswith(("_device", "_dev")) or low.startswith(("device_", "dev_"))


def _multiline(ws) -> bool:
    return isinstance(ws, cst.ParenthesizedWhitespace)


def _fix_commas(args: list[cst.Arg], originals: list[cst.Arg]) -> list[cst.Arg]:
    """Every argument but the last needs a comma; the layout of a multi-line call carries over to
    the arguments the rewrite added (one per line, the original trailing comma kept at the end)."""
    last_orig = originals[-1] if originals else None
    sep: cst.Comma | None = None  # the separator between arguments of a one-per-line call
    if (
        len(originals) >= 2
        and isinstance(originals[-2].comma, cst.Comma)
        and _multiline(originals[-2].comma.whitespace_after)
    ):
        ws = originals[-2].comma.whitespace_after
        sep = originals[-2].comma.with_changes(whitespace_after=ws.with_changes(first_line=cst.TrailingWhitespace()))
    trailing = (
        last_orig is not None
        and isinstance(last_orig.comma, cst.Comma)
        and _multiline(last_orig.comma.whitespace_after)
    )
    default_sep = sep or cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    out = []
    for i, a in enumerate(args):
        if i == len(args) - 1:
            if a is last_orig:
                out.append(a)
            elif trailing:
                ws = last_orig.comma.whitespace_after  # type: ignore[union-attr]
                out.append(
                    a.with_changes(
                        comma=last_orig.comma.with_changes(  # type: ignore[union-attr]
                            whitespace_after=ws.with_changes(first_line=cst.TrailingWhitespace())
                        )
                    )
                )
            elif last_orig is not None and _multiline(last_orig.whitespace_after_arg):
                out.append(
                    a.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=last_orig.whitespace_after_arg)
                )
            else:
                out.append(a.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        elif a is last_orig and trailing and sep is not None:
            # No longer last: its comma (and comment) stays, the next line is indented like the others.
            assert isinstance(a.comma, cst.Comma) and isinstance(sep.whitespace_after, cst.ParenthesizedWhitespace)
            ws = a.comma.whitespace_after
            layout = {"indent": sep.whitespace_after.indent, "last_line": sep.whitespace_after.last_line}
            out.append(a.with_changes(comma=a.comma.with_changes(whitespace_after=ws.with_changes(**layout))))
        elif a is last_orig and _multiline(a.whitespace_after_arg):
            out.append(a.with_changes(comma=default_sep, whitespace_after_arg=cst.SimpleWhitespace("")))
        elif isinstance(a.comma, cst.MaybeSentinel):
            out.append(a.with_changes(comma=default_sep))
        else:
            out.append(a)
    return out


def _star_into_varargs(
    ctx: RewriteContext, entry: Entry, call: cst.Call
) -> tuple[list[str], list[tuple[str, str]]] | None:
    """Argument sources of ``f(a, *rest, k=v)`` when every positional argument goes to the entry's leading
    ``*name`` parameter and the entry's rule is ``star_call`` (it passes them on as written): a starred
    one keeps its ``*``. None otherwise (``**kwargs``, or a rule that must see each argument)."""
    if not entry.sig or not entry.sig[0].startswith("*") or entry.sig[0].startswith("**"):
        return None
    if entry.template not in _STAR_TEMPLATES:
        return None
    args: list[str] = []
    kwargs: list[tuple[str, str]] = []
    for a in call.args:
        if a.star == "**":
            return None
        if a.keyword is not None:
            kwargs.append((a.keyword.value, ctx.source_of(a.value)))
        elif kwargs:
            return None
        else:
            args.append(("*" if a.star else "") + ctx.source_of(a.value))
    return args, kwargs


# Rules that pass a ``*name`` parameter's arguments on as written (kb/handlers/torch_ops_shape.star_call).
_STAR_TEMPLATES = frozenset({"@torch_ops_shape.meshgrid", "@torch_ops_shape.star_call"})
