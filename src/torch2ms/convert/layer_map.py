"""The layer map: per module class of the converted project, which attribute holds which layer.

``torch2ms weights`` renames a checkpoint's parameters by layer type (BatchNorm ``weight`` →
``gamma``, Embedding ``weight`` → ``embedding_table``...). Told from the key names alone, a user's own
``class LayerNorm(nn.Module)`` (whose ``weight`` keeps its name in the converted Cell) looks like
``nn.LayerNorm``, and an ``nn.PReLU`` held as ``self.act`` like nothing. So the converter writes, into
OUT, what the source says: for each class, ``self.NAME = <call>`` as

* ``{"layer": "torch.nn.Linear"}`` — a torch.nn layer;
* ``{"class": "pkg.mod.Block"}`` — a project class (its parameters keep their names);
* ``{"list": [spec, ...]}`` / ``{"each": spec}`` — ``nn.Sequential``/``nn.ModuleList`` by position,
  or every element alike (a comprehension); ``{"dict": {key: spec}}`` — ``nn.ModuleDict``;
* ``{"none": true}`` — ``None`` (one side of ``x if c else None``);
* ``{"param": true}`` — an ``nn.Parameter``; ``{"buffer": true}`` — ``register_buffer`` (a converted
  Cell holds it as a tensor, not a Parameter: no .ckpt entry loads it); ``{"any": [spec, ...]}`` —
  assigned more than one way.

``"ties"``: ``self.a.weight = self.b.weight`` as ``{"a.weight": "b.weight"}`` (the key that borrows the
Parameter → the key of the layer that made it). What the source does not say (a factory function's
result, a list built in a loop) is not recorded: ``weights`` then tells the class by the attribute
names the checkpoint shows, or lists the renames it had to guess. Only ``ast`` (no torch, no KB).

``"inventory"`` (added later; a map without it reads as before): ``layers``, every torch.nn layer
class the project names anywhere (called, passed as an argument or a default, in a ``partial``, an
alias, a base class), and ``open``, the places that could build a layer it cannot name
(``getattr(nn, name)``, ``eval``, a name from a package outside the project and not known to hold
no torch layers, ``torchvision.models``...). ``weights`` calls a rename the attributes do not
prove certain when every candidate layer agrees on it, and only with ``open`` empty
(weights/inventory.py).
"""

from __future__ import annotations

import ast
import bisect
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..analysis.astwalk import nodes
from ..analysis.imports import FRAMEWORK_ROOTS, ImportMap
from ..kb.source import draws_random

LAYER_MAP_FILE = "torch2ms_layers.json"  # weights/project_map.py reads it under the same name
_LISTS = ("torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ParameterList")
_DICTS = ("torch.nn.ModuleDict", "torch.nn.ParameterDict")

Spec = dict[str, Any]


def _name(full: str) -> str:
    """``torch.nn.modules.linear.Linear`` → ``torch.nn.Linear`` (the KB knows both; one spelling here)."""
    if full.startswith("torch.nn.modules."):
        return "torch.nn." + full.rsplit(".", 1)[-1]
    return full


def _merge(a: Spec | None, b: Spec | None) -> Spec | None:
    if a is None or b is None:
        return None  # one way unknown: the attribute is unknown
    if a == b:
        return a
    alts = [*a.get("any", [a]), *(s for s in b.get("any", [b]) if s not in a.get("any", [a]))]
    return {"any": alts}


class _Recorder:
    def __init__(self, imap: ImportMap, module: str) -> None:
        self.imap, self.module = imap, module
        self.local: dict[str, Spec | None] = {}

    def full(self, func: ast.AST) -> str | None:
        full = self.imap.resolve(func)
        if full is not None:
            return _name(full) if self.imap.is_framework(full) else full
        if isinstance(func, ast.Name):
            return func.id  # a class of this file (or a name the map cannot follow): weights resolves by name
        return None

    def spec(self, node: ast.AST | None) -> Spec | None:
        if isinstance(node, ast.Name):
            return self.local.get(node.id)
        if isinstance(node, ast.Constant) and node.value is None:
            return {"none": True}  # `... if cross_attention else None`: no parameters on this side
        if isinstance(node, ast.IfExp):
            return _merge(self.spec(node.body), self.spec(node.orelse))
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            each = self.spec(node.elt)
            return {"each": each} if each is not None else None
        if isinstance(node, (ast.List, ast.Tuple)) and not any(isinstance(a, ast.Starred) for a in node.elts):
            return {"list": [self.spec(a) for a in node.elts]}
        if not isinstance(node, ast.Call):
            return None
        full = self.full(node.func)
        if full is None:
            return None
        if full == "torch.nn.Parameter" or full == "torch.nn.parameter.Parameter":
            return {"param": True}
        if full in _LISTS:
            return self.elements(node)
        if full in _DICTS:
            return self.mapping(node.args[0] if node.args else None)
        if full.startswith("torch.nn.") and full.count(".") == 2:
            return {"layer": full}
        if full.startswith("torch.nn.") and full.count(".") == 3 and full.endswith(".from_pretrained"):
            return {"layer": full.removesuffix(".from_pretrained")}  # Embedding/EmbeddingBag.from_pretrained
        if full.startswith(("torch.", "torchvision.", "einops.")):
            return None  # a function's result (torch.zeros...) or a library layer: not known here
        return {"class": full}

    def elements(self, call: ast.Call) -> Spec | None:
        args = call.args
        if len(args) == 1 and isinstance(args[0], (ast.ListComp, ast.GeneratorExp, ast.List, ast.Tuple, ast.Name)):
            inner = self.spec(args[0])  # a list, a comprehension, or a local holding one
            return inner if inner is not None and ("each" in inner or "list" in inner) else None
        if len(args) == 1 and isinstance(args[0], ast.Call) and self.full(args[0].func) in ("collections.OrderedDict",):
            return self.mapping(args[0].args[0] if args[0].args else None)
        if any(isinstance(a, ast.Starred) for a in args):
            return None
        return {"list": [self.spec(a) for a in args]}

    def mapping(self, node: ast.AST | None) -> Spec | None:
        out: dict[str, Spec | None] = {}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
            if any(kw.arg is None for kw in node.keywords):
                return None
            return {"dict": {str(kw.arg): self.spec(kw.value) for kw in node.keywords}}
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                    return None
                out[k.value] = self.spec(v)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for item in node.elts:
                if not (isinstance(item, ast.Tuple) and len(item.elts) == 2):
                    return None
                k, v = item.elts
                if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                    return None
                out[k.value] = self.spec(v)
        else:
            return None
        return {"dict": out}


def _self_attr(target: ast.AST, self_name: str) -> str | None:
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == self_name:
        return target.attr
    return None


def _dotted_self(node: ast.AST, me: str) -> str | None:
    """``self.a.b.weight`` → ``a.b.weight`` (attributes only)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == me and len(parts) >= 2:
        return ".".join(reversed(parts))
    return None


def _tie(target: ast.AST, value: ast.AST, me: str) -> tuple[str, str] | None:
    """``self.transformer.wte.weight = self.lm_head.weight``: (the key that borrows, the key that owns)."""
    borrow, own = _dotted_self(target, me), _dotted_self(value, me)
    return (borrow, own) if borrow and own else None


def _statements(body: list[ast.stmt], into_defs: bool) -> Iterator[ast.stmt]:
    """The statements of ``body`` and of the blocks inside it, in order (no expression is walked: this
    runs on every file of a project); with ``into_defs``, of nested functions and classes too."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if not into_defs and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner: list[ast.stmt] = []
        for name in ("body", "orelse", "finalbody"):
            sub = getattr(node, name, None)
            if isinstance(sub, list):
                inner += sub
        for extra in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            inner += extra.body
        stack.extend(reversed(inner))


def _method_attrs(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, rec: _Recorder, attrs: dict[str, Spec | None], ties: dict[str, str]
) -> None:
    """``self.X = ...`` (and ``setattr(self, "X", ...)``, ``self.add_module("X", ...)``) in one method."""
    if not fn.args.args:
        return
    me = fn.args.args[0].arg
    rec.local = {}
    for stmt in _statements(fn.body, into_defs=False):
        node: ast.AST = stmt.value if isinstance(stmt, ast.Expr) else stmt  # self.layers.append(...)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None:
                continue
            spec = rec.spec(node.value)
            for t in targets:
                attr = _self_attr(t, me)
                if attr is not None:
                    attrs[attr] = _merge(attrs[attr], spec) if attr in attrs else spec
                elif isinstance(t, ast.Name):
                    rec.local[t.id] = _merge(rec.local[t.id], spec) if t.id in rec.local else spec
                elif isinstance(t, ast.Subscript) and _self_attr(t.value, me):
                    attrs[_self_attr(t.value, me) or ""] = None  # self.blocks[k] = ...: not by position
                elif (tied := _tie(t, node.value, me)) is not None:
                    ties[tied[0]] = tied[1]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            _call_attr(node, me, rec, attrs)


def _call_attr(node: ast.Call, me: str, rec: _Recorder, attrs: dict[str, Spec | None]) -> None:
    func = node.func
    assert isinstance(func, ast.Attribute)
    owner = _self_attr(func.value, me)
    if owner is not None and func.attr in ("append", "extend", "insert", "update", "add_module"):
        attrs[owner] = None  # grown after construction: its positions are not known from here
    elif (
        isinstance(func.value, ast.Name)
        and func.value.id == me
        and func.attr in ("add_module", "register_module", "register_parameter", "register_buffer")
        and len(node.args) >= 2
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        kinds = {"register_parameter": {"param": True}, "register_buffer": {"buffer": True}}
        if func.attr == "register_buffer" and _random_persistent(node):
            kinds["register_buffer"] = {"param": True}  # converted to a Parameter that is not trained
        spec = kinds[func.attr] if func.attr in kinds else rec.spec(node.args[1])
        name = node.args[0].value
        attrs[name] = _merge(attrs[name], spec) if name in attrs else spec


def _random_persistent(node: ast.Call) -> bool:
    """``self.register_buffer(name, scale * torch.randn(...))``, persistent: converted to a Parameter
    (kb/handlers/module_runtime.py: register_buffer), so the checkpoint's value is loaded into it."""
    persistent = node.args[2] if len(node.args) > 2 else None
    persistent = next((k.value for k in node.keywords if k.arg == "persistent"), persistent)
    if isinstance(persistent, ast.Constant) and persistent.value is False:
        return False
    return draws_random(ast.unparse(node.args[1]))


def record(
    tree: ast.Module, module: str, roots: frozenset[str], into: dict[str, Any], imap: ImportMap | None = None
) -> None:
    """Add each class of ``tree`` (module ``module``) to ``into``: ``{"bases": [...], "attrs": {...}}``.
    ``imap``: ``ImportMap.from_tree(tree, roots)`` when the caller made it (it is only read here)."""
    imap = imap or ImportMap.from_tree(tree, roots)
    inventory(tree, module, roots, into, imap)
    classes = [n for n in _statements(tree.body, into_defs=True) if isinstance(n, ast.ClassDef)]
    if not classes:
        return
    rec = _Recorder(imap, module)
    for node in classes:
        attrs: dict[str, Spec | None] = {}
        ties: dict[str, str] = {}
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not any(
                isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in item.decorator_list
            ):
                _method_attrs(item, rec, attrs, ties)
        bases = [b for b in (rec.full(base) for base in node.bases) if b]
        entry: dict[str, Any] = {"bases": bases, "attrs": attrs}
        if ties:
            entry["ties"] = ties
        into[f"{module}.{node.name}" if module else node.name] = entry


# ---------------------------------------------------------------------------------------------
# The inventory: every torch layer class the project could put anywhere, and what hides one.

INVENTORY = " inventory"  # the key ``record`` keeps it under in ``into`` (no class is named so)
_TORCH_MODULES = ("torch.nn", "torch.nn.modules", "torch")
# packages whose objects are never torch layers (other frameworks' included) (an import of any other package the project
# calls may construct one the inventory cannot see)
_NO_LAYERS = frozenset(
    "numpy scipy PIL matplotlib pandas tqdm cv2 sklearn yaml h5py requests skimage imageio typing_extensions"
    " packaging regex ftfy tiktoken sentencepiece tensorboard tensorboardX wandb visdom seaborn tensorflow jax"
    " mpi4py blobfile".split()
)
# names that build torch layers the inventory cannot name (torch.hub.load_state_dict_from_url does not)
_OPENING = ("torchvision.models", "torchvision.ops", "torch.hub.load", "einops.layers.torch.EinMix", "importlib")


def _opening(full: str) -> bool:
    return any(full == p or full.startswith(p + ".") for p in _OPENING)


def _stdlib(root: str) -> bool:
    return root in sys.stdlib_module_names or root == "__future__"


def _opens(full: str, imap: ImportMap) -> bool:
    """A name outside the project that may construct a torch layer the inventory cannot name."""
    if _opening(full):
        return True
    root = full.split(".", 1)[0]
    if root in imap.local_roots or full.startswith(".") or imap.is_framework(full):
        return False
    return not (_stdlib(root) or root in _NO_LAYERS)


def _getattr_on_torch(node: ast.Call, imap: ImportMap) -> tuple[bool, str | None]:
    """``getattr(nn, NAME)``: (whether it reads torch's namespace, the layer when NAME is a constant)."""
    if not (isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2):
        return False, None
    owner = imap.resolve(node.args[0])
    if owner is None or not (owner in _TORCH_MODULES or owner.startswith("torch.nn.modules.")):
        return False, None
    arg = node.args[1]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return True, _name(f"{owner}.{arg.value}") if owner != "torch" else f"torch.{arg.value}"
    return True, None


def inventory(
    tree: ast.Module, module: str, roots: frozenset[str], into: dict[str, Any], imap: ImportMap | None = None
) -> None:
    """Add to ``into[INVENTORY]`` the torch.nn layer classes ``tree`` names anywhere (called, passed,
    defaulted, aliased, derived from) and, under ``open``, each place that could build a layer
    the inventory cannot see (``getattr(nn, name)``, ``eval``, a package from outside the project)."""
    inv = into.setdefault(INVENTORY, {"layers": set(), "open": [], "tops": set()})
    imap = imap or ImportMap.from_tree(tree, roots)
    where = module or "<module>"
    inv["tops"].update(module.split("."))  # `import utils` beside a script: that file's own module
    for star in imap.stars:
        if star.split(".", 1)[0] in FRAMEWORK_ROOTS or _opens(star, imap):
            inv["open"].append((star, f"{where}: from {star} import *"))
    checked = _type_checks(tree)
    for node in nodes(tree):
        if id(node) in checked:
            continue
        if isinstance(node, ast.Call):
            reads, layer = _getattr_on_torch(node, imap)
            if reads and layer is None:
                inv["open"].append(("", f"{where}:{node.lineno}: {ast.unparse(node)[:80]}"))
            elif layer is not None:
                inv["layers"].add(layer)
            if _hides(node, imap):
                inv["open"].append(("", f"{where}:{node.lineno}: {ast.unparse(node)[:80]}"))
            continue
        if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
            continue
        full = imap.resolve(node)
        if full is None:
            continue
        full = _name(full) if imap.is_framework(full) else full
        last = full.rsplit(".", 1)[-1]
        if full.startswith("torch.nn.") and full.count(".") == 2 and last[:1].isupper():
            inv["layers"].add(full)
        elif full.endswith(".__dict__") and full.rsplit(".", 1)[0] in _TORCH_MODULES:
            inv["open"].append(("", f"{where}:{node.lineno}: {full}"))
        elif _opens(full, imap) and (isinstance(node, ast.Name) or _opening(full)):
            inv["open"].append((full, f"{where}:{node.lineno}: {full}"))


def _type_checks(tree: ast.Module) -> set[int]:
    """The class references ``isinstance(m, (nn.Linear, nn.LayerNorm))`` checks against: they build
    nothing (an init_weights loop names every layer type it handles)."""
    out: set[int] = set()
    checked: set[int] = set()  # the Name nodes isinstance checks against
    names: set[str] = set()  # their names
    for node in nodes(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2:
            if node.func.id in ("isinstance", "issubclass"):
                checked.add(id(node.args[1]))
                out.update(_class_refs(node.args[1]))
                if isinstance(node.args[1], ast.Name):
                    names.add(node.args[1].id)
    # the lines assigning a name a check reads (only such a local can be read by checks alone)
    lines = sorted(
        n.lineno
        for n in nodes(tree)
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and n.targets[0].id in names
    )
    for fn in nodes(tree) if lines else ():  # `bn_types = (nn.BatchNorm1d, ...)`, a local read only by isinstance
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            i = bisect.bisect_left(lines, fn.lineno)
            if i == len(lines) or fn.end_lineno is not None and lines[i] > fn.end_lineno:
                continue  # (most defs) no such local is assigned here
            loads: dict[str, list[int]] = {}
            for n in ast.walk(fn):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    loads.setdefault(n.id, []).append(id(n))
            for n in ast.walk(fn):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                    uses = loads.get(n.targets[0].id, [])
                    if uses and all(u in checked for u in uses):
                        out.update(_class_refs(n.value))
    return out


def _class_refs(classes: ast.expr) -> set[int]:
    elts = classes.elts if isinstance(classes, ast.Tuple) else [classes]
    return {id(sub) for e in elts if isinstance(e, (ast.Name, ast.Attribute)) for sub in ast.walk(e)}


def _hides(node: ast.Call, imap: ImportMap) -> bool:
    """``eval``/``exec``/``__import__``, or a parameter, buffer or module set under a computed name
    (``setattr(self, name, ...)``, ``self.register_parameter(name, ...)``): the layer map cannot
    tell what it is."""
    func = node.func
    if isinstance(func, ast.Name) and func.id not in imap.names:
        if func.id in ("eval", "exec", "__import__"):
            return True
        named = func.id == "setattr" and len(node.args) >= 2
        return named and not isinstance(node.args[1], ast.Constant)
    registers = ("register_parameter", "register_buffer", "add_module", "register_module")
    if isinstance(func, ast.Attribute) and func.attr in registers and node.args:
        return not isinstance(node.args[0], ast.Constant)
    return False


def prior_classes(src_dir: Path) -> dict[str, Any]:
    """The classes an earlier conversion recorded when SRC_DIR is itself a torch2ms output, else ``{}``:
    they describe the torch layers, which a second pass (reading MindSpore code) can no longer see."""
    try:
        data = json.loads((src_dir / LAYER_MAP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    ok = isinstance(data, dict) and data.get("version") == 1 and isinstance(data.get("classes"), dict)
    if not ok:
        return {}
    # the first pass's inventory too (None: that pass recorded none, so this one records none either)
    return {**data["classes"], INVENTORY: data.get("inventory")}


def write(classes: dict[str, Any], out_dir: Path, prior: dict[str, Any] | None = None) -> str | None:
    """Write the map into the converted tree when it holds any module class; its file name, or None.
    ``prior``: an earlier pass's classes, which win over this pass's record of the same class; with a
    prior, this pass adds only classes that still name torch (the MindSpore classes the first pass wrote,
    such as a training step's Cell, are not torch layouts)."""
    inv = classes.pop(INVENTORY, None)
    recorded = None  # an earlier pass's inventory, already in the file's form: kept as it was written
    if prior:
        prior = dict(prior)
        recorded, inv = prior.pop(INVENTORY, None), None
        classes = {**{k: v for k, v in classes.items() if '"torch.' in json.dumps(v)}, **prior}
    if not any(c["attrs"] or c["bases"] for c in classes.values()):
        return None
    data: dict[str, Any] = {"version": 1, "classes": dict(sorted(classes.items()))}
    if recorded is not None:
        data["inventory"] = recorded
    if inv is not None:
        # what `weights` needs to call a rename certain where no attribute says the layer's type
        # a module of the project itself (a folder without __init__.py, a file beside a script) is seen
        opened = list(dict.fromkeys(t for full, t in inv["open"] if full.split(".", 1)[0] not in inv["tops"]))
        data["inventory"] = {"layers": sorted(inv["layers"]), "open": opened[:20], "open_count": len(opened)}
    (out_dir / LAYER_MAP_FILE).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return LAYER_MAP_FILE
