"""Layer types from the converted project: the layer map ``torch2ms convert`` writes into OUT.

``convert`` records, per module class, which attribute holds which layer (convert/layer_map.py). Here a
checkpoint's keys are walked through it from the model's class (the one class whose attributes explain
the most keys): ``blocks.0.ln_2.weight`` → ``Net.blocks`` is a ModuleList of ``Block`` → ``Block.ln_2``
is the project's own ``LayerNorm`` → ``weight`` is its own parameter, kept. A key whose walk ends in a
torch layer gets that layer's rename; a key the map does not explain is left to the guesser, and
``weights`` lists that rename as a guess. JSON only: no torch, no MindSpore.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LAYER_MAP_FILE = "torch2ms_layers.json"  # the name convert/layer_map.py writes
_PARAMLESS = frozenset({"torch.nn.Identity"})
BUFFER = "<buffer>"


@dataclass
class Resolved:
    """What the map says about a state dict."""

    types: dict[str, str] = field(default_factory=dict)  # module prefix → torch layer class
    certain: set[str] = field(default_factory=set)  # keys whose owner the map explains
    along: set[str] = field(default_factory=set)  # module prefixes on the way to those owners
    root: str = ""  # the model's class (``pkg.mod.Net``)
    buffers: set[str] = field(default_factory=set)  # keys of a project class's register_buffer
    borrowed: set[str] = field(default_factory=set)  # tied keys whose Parameter another layer owns


def find_map(project: str | None, net: str | None, start: str | Path | None = None) -> tuple[Path | None, str]:
    """The layer map and the model's class if the spec names one (``""``: the map finds it).

    ``--project`` is the converted folder (or its layer map), a converted file in it
    (``OUT/model.py``: the model is one of that file's classes) or ``OUT/model.py:GPT``; the map is
    looked for there and in the folders above. Without ``--project``: beside ``--net``'s file (or
    above it), else in the current folder."""
    places: list[Path] = []
    root, py, cls = "", None, ""
    if project:
        path, _, cls = project.rpartition(":") if ".py:" in project else (project, "", "")
        p = Path(path)
        if p.suffix == ".py":
            py, p = p, p.parent
        elif p.is_file():
            return p, root
        places += [p, *p.resolve().parents[:3]]
    elif net and ".py:" in net:
        p = Path(net.rsplit(":", 1)[0]).parent
        places += [p, *p.resolve().parents[:3]]
    places.append(Path(start) if start else Path.cwd())
    for d in places:
        if (d / LAYER_MAP_FILE).is_file():
            if py is not None:  # OUT/pkg/model.py → the classes of module pkg.model
                try:
                    parts = list(py.resolve().relative_to(d.resolve()).with_suffix("").parts)
                except ValueError:
                    parts = [py.stem]
                if parts[-1] == "__init__":
                    parts.pop()
                root = ".".join(parts) + "." + cls if cls else ".".join(parts) + "."
            return d / LAYER_MAP_FILE, root
    return None, root


def load_map(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    classes = data.get("classes") if isinstance(data, dict) else None
    if not isinstance(classes, dict):
        raise ValueError(f"{path}: not a torch2ms layer map")
    return classes


def load_inventory(path: Path) -> dict[str, Any] | None:
    """The layer map's inventory, or None (a map written before there was one, or a broken one)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    inv = data.get("inventory") if isinstance(data, dict) else None
    if not isinstance(inv, dict) or not isinstance(inv.get("layers"), list):
        return None
    return inv


class _Map:
    def __init__(self, classes: Mapping[str, Any]) -> None:
        self.classes = classes
        self.by_name: dict[str, list[str]] = {}
        for full in classes:
            self.by_name.setdefault(full.rsplit(".", 1)[-1], []).append(full)
        self._attrs: dict[str, dict[str, Any]] = {}

    def find(self, ref: str, near: str) -> str | None:
        """A class named in the map (``Block``, ``.model.Block``, ``pkg.model.Block``) → its full name."""
        if ref in self.classes:
            return ref
        cands = self.by_name.get(ref.rsplit(".", 1)[-1], [])
        if len(cands) > 1:
            here = near.rpartition(".")[0]
            tail = ref.lstrip(".")
            cands = [c for c in cands if c.rpartition(".")[0] == here and "." not in ref] or [
                c for c in cands if c.endswith("." + tail) or c == tail
            ]
        return cands[0] if len(cands) == 1 else None

    def attrs(self, cls: str, depth: int = 0) -> dict[str, Any]:
        """The class's attributes and those of the project classes it derives from."""
        if cls in self._attrs:
            return self._attrs[cls]
        out: dict[str, Any] = {}
        for base in self.classes[cls].get("bases", []) if depth < 20 else []:
            found = self.find(base, cls)
            if found is not None and found != cls:
                out.update(self.attrs(found, depth + 1))
        out.update(self.classes[cls].get("attrs", {}))
        self._attrs[cls] = out
        return out

    def torch_base(self, cls: str) -> str | None:
        """The torch.nn layer a project class derives from (``class LayerNorm2d(nn.LayerNorm)``)."""
        for base in self.classes[cls].get("bases", []):
            if base.startswith("torch.nn.") and base not in ("torch.nn.Module",):
                return base
            found = self.find(base, cls)
            if found is not None and found != cls:
                deeper = self.torch_base(found)
                if deeper:
                    return deeper
        return None


def _pick(spec: Any) -> Any:
    """One spec of several (``a if c else nn.Identity()``): the ones that hold parameters, if they agree;
    Sequentials built two ways (``nn.Sequential()``, then ``nn.Sequential(conv, bn)`` if downsampling)
    by position, where the ways that have a position agree on it."""
    if isinstance(spec, dict) and "any" in spec:
        live = [s for s in spec["any"] if not (isinstance(s, dict) and (s.get("layer") in _PARAMLESS or "none" in s))]
        if live and all(isinstance(s, dict) and "list" in s for s in live):
            width = max(len(s["list"]) for s in live)
            at = [[s["list"][k] for s in live if k < len(s["list"])] for k in range(width)]
            return {"list": [c[0] if all(x == c[0] for x in c) else None for c in at]}
        return live[0] if live and all(s == live[0] for s in live) else None
    return spec


def _walk(m: _Map, root: str, parts: list[str], visits: dict[int, str] | None = None) -> tuple[int, str | None] | None:
    """Walk one key from the root class: (length of the owner's module path, its torch layer or None
    for a project class or a parameter), or None when the map does not say. ``visits``: the class
    entered at each depth."""
    spec: Any = {"class": root}
    cls, i, n = root, 0, len(parts)
    visits = {} if visits is None else visits
    while True:
        spec = _pick(spec)
        if not isinstance(spec, dict):
            return None
        if "layer" in spec:
            if n - i > 1 and spec["layer"].rsplit(".", 1)[-1] in _WEIGHT_RANK:
                return None  # a Linear has no submodule: this is not the class the checkpoint came from
            return i, spec["layer"]
        if "param" in spec:
            return (i - 1, None) if i == n else None
        if "class" in spec:
            found = m.find(spec["class"], cls)
            if found is None:
                return None
            cls, base = found, m.torch_base(found)
            visits[i] = cls
            if i == n - 1 and (base is None or parts[i] not in m.attrs(cls)):
                if m.attrs(cls).get(parts[i]) == {"buffer": True}:
                    return i, BUFFER
                return i, base  # a parameter of the class itself
            attrs = m.attrs(cls)
            if parts[i] not in attrs:
                return (i, base) if base else None
            spec, i = attrs[parts[i]], i + 1
            continue
        if i >= n:
            return None
        part = parts[i]
        if "dict" in spec:
            spec = spec["dict"].get(part)
        elif "each" in spec and part.isdigit():
            spec = spec["each"]
        elif "list" in spec and part.isdigit() and int(part) < len(spec["list"]):
            spec = spec["list"][int(part)]
        else:
            return None
        i += 1


def _score(m: _Map, cls: str, firsts: set[str]) -> int:
    return len(firsts & set(m.attrs(cls)))


# the rank of a torch layer's ``weight``: a root class whose walk gives a layer the tensor cannot be
# (a 1-D weight at a Linear) is not the model's class
_WEIGHT_RANK = {
    "Linear": 2,
    "Embedding": 2,
    "Conv1d": 3,
    "Conv2d": 4,
    "Conv3d": 5,
    "ConvTranspose1d": 3,
    "ConvTranspose2d": 4,
    "ConvTranspose3d": 5,
    "LayerNorm": 1,
    "BatchNorm1d": 1,
    "BatchNorm2d": 1,
    "BatchNorm3d": 1,
    "GroupNorm": 1,
    "PReLU": 1,
}


def _misfits(r: Resolved, shapes: Mapping[str, tuple[int, ...]]) -> int:
    bad = 0
    for prefix, layer in r.types.items():
        rank = _WEIGHT_RANK.get(layer.rsplit(".", 1)[-1])
        shape = shapes.get(f"{prefix}.weight" if prefix else "weight")
        bad += rank is not None and shape is not None and len(shape) != rank
    return bad


def resolve(
    keys: list[str], classes: Mapping[str, Any], root: str = "", shapes: Mapping[str, tuple[int, ...]] | None = None
) -> Resolved:
    """The layer types the map gives a state dict's keys, from the model's class: the one ``root``
    names (``mod.Class``, or ``mod.`` for any class of that module), else the class whose attributes
    explain the most keys. Where several classes explain them equally but differently, a key is
    certain only if they all say the same of it."""
    m = _Map(classes)
    firsts = {k.split(".", 1)[0] for k in keys}
    pool = [c for c in classes if _matches(c, root)] if root else list(classes)
    scores = {c: _score(m, c, firsts) for c in pool}
    best = max(scores.values(), default=0)
    if best == 0:
        return Resolved()
    results = [_resolve_from(m, c, keys) for c in sorted(c for c, s in scores.items() if s == best)]
    rank = {id(r): (_misfits(r, shapes or {}), -len(r.certain)) for r in results}
    first = min(rank.values())
    top = [r for r in results if rank[id(r)] == first]
    out = top[0]
    for other in top[1:]:
        out.certain &= other.certain
        for key in list(out.certain):
            prefix = key.rpartition(".")[0]
            if out.types.get(prefix) != other.types.get(prefix):
                out.certain.discard(key)
        out.root = ""
    return out


def _matches(cls: str, root: str) -> bool:
    if root.endswith("."):
        return cls.startswith(root) and "." not in cls[len(root) :]
    return cls == root or cls.endswith("." + root)


def _resolve_from(m: _Map, root: str, keys: list[str]) -> Resolved:
    out = Resolved(root=root)
    entered: dict[str, str] = {}  # module prefix → the project class there
    unknown = []
    for key in keys:
        parts = key.split(".")
        visits: dict[int, str] = {}
        hit = _walk(m, root, parts, visits)
        entered.update((".".join(parts[:i]), c) for i, c in visits.items())
        if hit is None:
            unknown.append(parts)
        else:
            _record(out, parts, hit)
    by_shape = _Children(m, keys)
    for parts in unknown:
        found = by_shape.walk(parts, entered)
        if found is not None:
            _record(out, parts, found)
    out.borrowed = _borrowed(m, entered, set(keys))
    return out


def _record(out: Resolved, parts: list[str], hit: tuple[int, str | None]) -> None:
    length, layer = hit
    key = ".".join(parts)
    out.certain.add(key)
    out.along.update(".".join(parts[:j]) for j in range(length + 1))
    if layer == BUFFER:
        out.buffers.add(key)
    elif layer is not None:
        out.types[".".join(parts[:length])] = layer


class _Children:
    """A module the map cannot reach (``self.layers = _get_clones(layer, n)``, a ModuleList filled by
    ``append`` in a loop) is told by the attribute names the checkpoint shows under it: the project
    classes that have them all, if they all say the same of the key."""

    def __init__(self, m: _Map, keys: list[str]) -> None:
        self.m = m
        self.children: dict[str, set[str]] = {}
        for key in keys:
            parts = key.split(".")
            for j in range(len(parts) - 1):
                self.children.setdefault(".".join(parts[:j]), set()).add(parts[j])
        self.fits: dict[str, list[str]] = {}

    def classes(self, prefix: str) -> list[str]:
        if prefix not in self.fits:
            names = self.children.get(prefix, set())
            ok = len(names) >= 2 and not any(n.isdigit() for n in names)
            self.fits[prefix] = [c for c in self.m.classes if names <= set(self.m.attrs(c))] if ok else []
        return self.fits[prefix]

    def walk(self, parts: list[str], entered: dict[str, str]) -> tuple[int, str | None] | None:
        for j in range(1, len(parts) - 1):
            prefix = ".".join(parts[:j])
            cands = self.classes(prefix)
            # the classes of the module that holds it first (its own file's Block, not another's)
            owner = next((entered[p] for p in (".".join(parts[:i]) for i in range(j - 1, -1, -1)) if p in entered), "")
            here = [c for c in cands if c.rpartition(".")[0] == owner.rpartition(".")[0]]
            cands = here or cands
            if not cands:
                continue
            hits = {_walk(self.m, c, parts[j:]) for c in cands}
            if len(hits) == 1 and None not in hits:
                length, layer = hits.pop()  # type: ignore[misc]
                entered.setdefault(prefix, cands[0])
                return length + j, layer
        return None


def _borrowed(m: _Map, entered: dict[str, str], keys: set[str]) -> set[str]:
    """Keys whose Parameter belongs to another layer (``self.lut.weight = self.lm_head.weight``): the
    converted network holds it once, under the owner's name."""
    out = set()
    for prefix, cls in entered.items():
        for borrow, own in m.classes[cls].get("ties", {}).items():
            b, o = (f"{prefix}.{borrow}", f"{prefix}.{own}") if prefix else (borrow, own)
            if b in keys and o in keys:
                out.add(b)
    return out


@dataclass
class Found:
    """The converted project (among those ``torch2ms convert`` recorded) whose layer map explains every
    key of a checkpoint."""

    path: Path  # its layer map
    classes: Mapping[str, Any]
    root: str  # the model's class in it ("": several classes, all saying the same)
    agreeing: list[Path] = field(default_factory=list)  # other projects that explain it the same way
    conflicting: list[Path] = field(default_factory=list)  # projects that explain every key differently
    inventory: Any = None  # the chosen project's inventory of layer types (inventory.py), if recorded


def explains(classes: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]) -> Resolved | None:
    """What the map says of the checkpoint if one root class of it holds every top-level name of the
    checkpoint as a recorded attribute and every layer it names has a ``weight`` of that layer's
    rank; else None. Keys the map does not reach (a layer a factory function builds) are left to the
    guesser, as with ``--project``."""
    keys = list(shapes)
    if not keys:
        return None
    firsts = {k.split(".", 1)[0] for k in keys}
    m = _Map(classes)
    if not any(_holds(m, c, firsts) for c in classes):
        return None
    r = resolve(keys, classes, "", shapes)
    if not r.certain or _misfits(r, shapes):
        return None
    return r


def _holds(m: _Map, cls: str, firsts: set[str]) -> bool:
    """The class records every one of these attributes (a class deriving from a torch layer, such as
    ``class TransformerModel(nn.Transformer)``, has the layer's own ones too)."""
    attrs = set(m.attrs(cls))
    return firsts <= attrs or (bool(firsts & attrs) and m.torch_base(cls) is not None)


def _agree(a: Resolved, b: Resolved) -> bool:
    """Two maps say the same of every key both explain: its owner's layer type, buffer or not, borrowed
    or not."""
    for key in a.certain & b.certain:
        prefix = key.rpartition(".")[0]
        if a.types.get(prefix) != b.types.get(prefix):
            return False
        if (key in a.buffers) != (key in b.buffers) or (key in a.borrowed) != (key in b.borrowed):
            return False
    return True


def pick(shapes: Mapping[str, tuple[int, ...]], folders: list[Path]) -> Found | None:
    """The project (``folders``: converted trees, newest first) whose layer map explains the checkpoint
    (:func:`explains`), the one that explains the most keys. Where several explain it and say the
    same of the keys they share, that one; where any two disagree, none is picked (``conflicting``
    says which), so no rename rests on a project chosen by chance."""
    hits: list[tuple[Path, Mapping[str, Any], Resolved]] = []
    for folder in folders:
        path = folder / LAYER_MAP_FILE
        try:
            if path.stat().st_size > 64 << 20:
                continue
            classes = load_map(path)
        except (OSError, ValueError):
            continue
        r = explains(classes, shapes)
        if r is not None:
            hits.append((path, classes, r))
    if not hits:
        return None
    if not all(_agree(a[2], b[2]) for i, a in enumerate(hits) for b in hits[i + 1 :]):
        return Found(hits[0][0], {}, "", conflicting=[p for p, _c, _r in hits])
    best = max(range(len(hits)), key=lambda i: (len(hits[i][2].certain), -i))
    chosen, its_classes, r = hits[best]
    found = Found(chosen, its_classes, r.root, agreeing=[p for p, _c, _r in hits if p != chosen])
    found.inventory = load_inventory(chosen)
    return found
