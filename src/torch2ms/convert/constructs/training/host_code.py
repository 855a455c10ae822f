"""Host code the training step reaches (issue 22, class 10): the step then runs uncompiled.

The fused step is a ``TrainStep`` Cell whose ``construct`` is compiled (``@mindspore.jit``). A forward that
pulls a value to the host (``attn.data.numpy()`` kept for a plot, ``x.item()``, ``x.tolist()``) or builds
a layer on each call (``nn.Linear(d, d)(x)``, ``nn.LayerNorm(d)(x)``: a fresh Cell, so a parameter name the
graph already holds) cannot be compiled: "the 'Parameter' object's method 'asnumpy' is not supported in
'construct'", "its name 'weight' already exists". torch runs such a forward eagerly; so does the step here:
the Cell is written without ``@mindspore.jit`` and says why.

State kept on the module (issue 22, class 3) counts too: an attribute the step's methods read as
``self.hidden`` and that is assigned again after ``__init__`` (``out, self.hidden = self.lstm(x, self.hidden)``
in forward, ``model.hidden = model.init_hidden(n)`` or ``model.hidden = repackage(model.hidden)`` in the
loop). A compiled graph reads such an attribute as a constant of its compilation and cannot carry what it
assigns to it ("'hx' must be a Tuple", measured on 2.10); torch reads it on each call, and so does an
uncompiled step.

What the step reaches: the forward statements of the loop, and, for each torch Module class of the file,
``forward`` and the methods it calls on ``self`` (a whole-file view: a class whose instance the loop never
calls costs only the compilation).
"""

from __future__ import annotations

import ast

from ....analysis.forward_state import forward_caches, recast_attributes, self_attr
from ....analysis.imports import ImportMap
from ..fresh_layers import fresh_calls

_HOST_METHODS = frozenset({"numpy", "asnumpy", "item", "tolist"})


def _module_classes(tree: ast.Module, imap: ImportMap) -> list[ast.ClassDef]:
    """Classes of the file whose base is a torch.nn class or another such class of the file."""
    found: list[ast.ClassDef] = []
    names: set[str] = set()
    for n in tree.body:
        if not isinstance(n, ast.ClassDef):
            continue
        for b in n.bases:
            full = imap.resolve(b) or ""
            if full.startswith("torch.nn.") or (isinstance(b, ast.Name) and b.id in names):
                found.append(n)
                names.add(n.name)
                break
    return found


def _reached_methods(cls: ast.ClassDef) -> list[ast.FunctionDef]:
    """``forward`` and the methods it calls on ``self``, transitively."""
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    todo, seen = ["forward"], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in methods:
            continue
        seen.add(name)
        for n in ast.walk(methods[name]):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "self"
            ):
                todo.append(n.func.attr)
    return [methods[m] for m in sorted(seen)]


_COMPREHENSIONS = (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)


def _data_in_comprehension(node: ast.AST) -> str | None:
    """``tuple(h.data for h in hidden)``: MindSpore 2.10's graph cannot compile ``.data`` on a comprehension's
    own variable ("Illegal AnfNode for evaluating", measured; ``h.data`` elsewhere compiles)."""
    if not isinstance(node, _COMPREHENSIONS):
        return None
    own = {t.id for g in node.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr == "data" and isinstance(n.value, ast.Name) and n.value.id in own:
            return f"{n.value.id}.data in a comprehension"
    return None


def _host_call(node: ast.AST, imap: ImportMap) -> str | None:
    """What makes this node host code: ``.numpy()``/``.item()``/``.tolist()``, or a torch layer built, or
    ``.data`` on a comprehension's variable."""
    if not isinstance(node, ast.Call):
        return _data_in_comprehension(node)
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _HOST_METHODS and not node.args and not node.keywords:
        return f".{func.attr}()"
    full = imap.resolve(func) or ""
    last = full.rsplit(".", 1)[-1]
    if full.startswith("torch.nn.") and full.count(".") == 2 and last[:1].isupper() and last != "Parameter":
        return f"{last}(...)"
    return None


def _state_writes(cls: ast.ClassDef) -> list[tuple[str, ast.AST]]:
    """Attributes the compiled methods of ``cls`` assign (``self.hidden = (h, c)`` kept for the next call): a
    graph cannot carry a value assigned to the Cell in construct ("the 'hx' must be Tuple, but got
    Tensor[Float64]"). The caches and casts the graph-mode construct rewrites into locals are left out."""
    caches = set(forward_caches(cls))
    recasts = recast_attributes(cls)
    out: list[tuple[str, ast.AST]] = []
    for m in _reached_methods(cls):
        kept = caches | set(recasts.get(m.name, []))
        for n in ast.walk(m):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
            for t in targets:
                for leaf in ast.walk(t):
                    attr = self_attr(leaf)
                    if (
                        isinstance(leaf, ast.Attribute)
                        and isinstance(leaf.ctx, ast.Store)
                        and attr
                        and attr not in kept
                    ):
                        out.append((f"self.{attr} = ... in {cls.name}.{m.name}", n))
    return out


def _assigned_attrs(node: ast.AST, on_self: bool, imap: ImportMap) -> dict[str, int]:
    """attr -> line of each ``X.attr = ...`` in `node` (``X`` is ``self`` when `on_self`, else anything but
    ``self``: ``model.hidden``, ``self.model.hidden``),
    tuple targets and augmented assignments included; a layer put in place (``model.fc = nn.Linear(...)``)
    is no state."""
    found: dict[str, int] = {}
    for n in ast.walk(node):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
        value = getattr(n, "value", None)
        full = (imap.resolve(value.func) or "") if isinstance(value, ast.Call) else ""
        if full.startswith("torch.nn.") and full.rsplit(".", 1)[-1][:1].isupper():
            continue
        for t in targets:
            for e in ast.walk(t):
                if not (isinstance(e, ast.Attribute) and isinstance(e.ctx, ast.Store)):
                    continue
                is_self = isinstance(e.value, ast.Name) and e.value.id == "self"
                if on_self == is_self:
                    found.setdefault(e.attr, e.lineno)
    return found


def _module_state(
    tree: ast.Module, imap: ImportMap, classes: list[ast.ClassDef], methods: list[ast.FunctionDef]
) -> tuple[str, int] | None:
    """(what, line) of state kept on the module: ``self.A`` read by the step's methods and assigned again by
    them or, on the model, by code outside the file's module classes (the training loop, a Trainer)."""
    read = {
        n.attr
        for m in methods
        for n in ast.walk(m)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
        and isinstance(n.ctx, ast.Load)
    }
    inside: dict[str, int] = {}
    for m in methods:
        for attr, line in _assigned_attrs(m, True, imap).items():
            inside.setdefault(attr, line)
    outside: dict[str, int] = {}
    for n in tree.body:
        if not any(n is c for c in classes):
            for attr, line in _assigned_attrs(n, False, imap).items():
                outside.setdefault(attr, line)
    for attr in sorted(read):
        if attr in inside:
            return f"self.{attr} = ...", inside[attr]
        if attr in outside:
            return f".{attr} = ...", outside[attr]
    return None


def host_code(tree: ast.Module, imap: ImportMap, forward: list[ast.stmt]) -> tuple[str, int] | None:
    """(what, line) of the first host code the step reaches: a method of the file's modules' forward,
    or a forward statement of the loop, or state kept on a module; None when the step can be compiled."""
    places: list[tuple[str, ast.AST]] = [("", s) for s in forward]
    reached: list[ast.FunctionDef] = []
    classes = _module_classes(tree, imap)
    for cls in classes:
        reached += _reached_methods(cls)
        places += [(f"{cls.name}.{m.name}", m) for m in _reached_methods(cls)]
    for cls in classes:
        for state, node in _state_writes(cls):
            return state, getattr(node, "lineno", 0)
    for where, place in places:
        fresh = fresh_calls(place, imap)  # built where used: runtime functions a graph compiles
        for n in ast.walk(place):
            what = _host_call(n, imap) if id(n) not in fresh else None
            if what is not None and not (where and isinstance(place, ast.FunctionDef) and n is place):
                return (f"{what} in {where}" if where else what), getattr(n, "lineno", 0)
    return _module_state(tree, imap, classes, reached)


# host random streams: a draw inside the compiled step would not run per step (MindSpore's JIT parses it
# once, a constant in the graph); matched on the resolved name, so ``from random import randint`` counts
HOST_RANDOM = ("numpy.random.", "random.")


def _called_functions(node: ast.AST, functions: dict[str, ast.FunctionDef]) -> list[ast.FunctionDef]:
    """The file's module-level functions that ``node`` calls by name."""
    return [
        functions[n.func.id]
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in functions
    ]


def _draw_places(tree: ast.Module, imap: ImportMap, forward: list[ast.stmt]) -> list[ast.AST]:
    """What the step runs: its forward statements, every class's ``forward`` and the methods it calls on
    ``self``, and the file's functions any of these call by name (``noise()`` in forward), transitively."""
    classes = [c for c in tree.body if isinstance(c, ast.ClassDef)]
    places: list[ast.AST] = [*forward]
    for cls in classes:
        if any(isinstance(f, ast.FunctionDef) and f.name == "forward" for f in cls.body):
            places += _reached_methods(cls)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    todo, seen = list(places), {id(p) for p in places}
    while todo:
        for f in _called_functions(todo.pop(), functions):
            if id(f) not in seen:
                seen.add(id(f))
                places.append(f)
                todo.append(f)
    return places


def host_draws(tree: ast.Module, imap: ImportMap, forward: list[ast.stmt]) -> list[str]:
    """The host random draws the step reaches, in order: numpy's and Python's streams (any import
    spelling), and a ``torch.Generator``'s (``generator=``: the runtime draws those with numpy)."""
    names: list[str] = []
    for place in _draw_places(tree, imap, forward):
        for n in ast.walk(place):
            if not isinstance(n, ast.Call):
                continue
            written = ast.unparse(n.func)
            dotted = all(part.isidentifier() for part in written.split("."))
            full = imap.resolve(n.func) or ""
            if dotted and isinstance(n.func, ast.Attribute) and any(k.arg == "generator" for k in n.keywords):
                name = written + "(generator=)"
            elif full.startswith(HOST_RANDOM):
                name = written if written.startswith(("np.", *HOST_RANDOM)) else full  # rd.random → random.random
            else:
                continue
            if name not in names:
                names.append(name)
    return names
