"""Data pipelines (R14–R16): torch DataLoader / Dataset / torchvision datasets → idiomatic mindspore.dataset.

A cheap ``ast`` scan (only for files that mention ``DataLoader``, ``Dataset`` or ``torchvision``)
learns what one call's text cannot tell: the column names a dataset class returns, which names hold
loaders, and which loader consumes a torchvision dataset (its ``shuffle``/``num_workers`` move into
the MindSpore dataset). The rewrites themselves run inside the main libcst pass (hooks in
``transformer.py``); the source-level rules live in ``kb/handlers/data_pipeline.py``.

- ``class D(Dataset)`` → a plain class (a GeneratorDataset source); ``__getitem__`` gets
  ``idx = int(idx)`` because GeneratorDataset passes numpy.int64 indices, which MindSpore Tensors reject.
- ``for x, y in loader`` → ``for x, y in loader.create_tuple_iterator()``; ``len(loader)`` →
  ``loader.get_dataset_size()``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from ..analysis.astwalk import nodes
from ..kb.handlers.data_pipeline import columns_for
from ..kb.rewrite import bind
from ..kb.transforms import HANDLERS, Unsupported

if TYPE_CHECKING:
    from .transformer import TorchToMindSpore

# Text gate: files without a loader or a Dataset class skip the scan (torchvision datasets and
# transforms alone are converted by their KB handlers, with torch's shuffle=False).
HINTS = ("DataLoader", "Dataset")
LOADER = "torch.utils.data.DataLoader"
TENSOR_DATASET = "torch.utils.data.TensorDataset"
DATASET_BASES = frozenset({"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"})
ITERABLE_BASES = frozenset({"torch.utils.data.IterableDataset"})
TV_DATASETS = {
    "torchvision.datasets.ImageFolder": "data_pipeline.image_folder",
    "torchvision.datasets.MNIST": "data_pipeline.mnist",
    "torchvision.datasets.CIFAR10": "data_pipeline.cifar10",
}
_LOOP_WRAPPERS = frozenset({"enumerate", "tqdm", "zip"})


@dataclass
class DataFacts:
    """What the scan learned about one file's data pipeline."""

    classes: dict[str, list[str] | None] = field(default_factory=dict)  # dataset class → columns
    torch_datasets: set[str] = field(default_factory=set)  # classes whose torch Dataset base is dropped
    kinds: dict[str, str] = field(default_factory=dict)  # name → class:<C> | tensor_dataset | ms_dataset | iterable
    columns: dict[str, list[str]] = field(default_factory=dict)  # name → columns (TensorDataset arity)
    iterable: set[str] = field(default_factory=set)  # IterableDataset subclasses (torch-style loader kept)
    folders: set[str] = field(default_factory=set)  # names holding a converted ImageFolder
    loaders: set[str] = field(default_factory=set)  # names holding a converted (MindSpore) loader
    loader_data: dict[str, str] = field(default_factory=dict)  # loader name → its dataset's name
    consumer: dict[str, ast.Call | None] = field(default_factory=dict)  # dataset name/source → its one loader


def _full(node: ast.AST, imap) -> str | None:
    full = imap.resolve(node)
    return full if full and imap.is_framework(full) else None


def _canon(full: str | None, kb) -> str | None:
    if full is None:
        return None
    entry = kb.get(full)
    return entry.torch if entry is not None else full


def _arg(call: ast.Call, pos: int, name: str) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return call.args[pos] if len(call.args) > pos else None


def _columns_of(cls: ast.ClassDef) -> list[str] | None:
    """Column names from ``__getitem__``'s return: ``return img, label`` → ["img", "label"]."""
    fn = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__getitem__"), None)
    if fn is None:
        return None
    sizes: set[int] = set()
    names: list[str] | None = None
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            if isinstance(node.value, ast.Dict):
                return None  # dict samples: GeneratorDataset wants tuples
            elts = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            sizes.add(len(elts))
            ids = [e.id if isinstance(e, ast.Name) else None for e in elts]
            if names is None and all(ids) and len(set(ids)) == len(ids) and "self" not in ids:
                names = ids  # type: ignore[assignment]
    if len(sizes) != 1:
        return None
    n = sizes.pop()
    return names if names is not None and len(names) == n else columns_for(n)


def _is_idiomatic_loader(call: ast.Call) -> bool:
    """collate_fn / batch_sampler keep MindSpore's torch-style DataLoader (no create_tuple_iterator)."""
    for name, pos in (("collate_fn", 6), ("batch_sampler", 4)):
        v = _arg(call, pos, name)
        if v is not None and not (isinstance(v, ast.Constant) and v.value is None):
            return False
    return True


def scan(source: str, tree: ast.Module, imap, kb, plan=None) -> DataFacts | None:
    """The file's data-pipeline facts, or None when it has no pipeline (a text check first: cheap)."""
    if not any(h in source for h in HINTS):
        return None
    facts = DataFacts()
    calls: list[ast.Call] = []
    funcs: dict[str, ast.FunctionDef] = {}
    assigned: dict[int, str] = {}  # id(call) → the name it is assigned to
    for node in nodes(tree):
        if isinstance(node, ast.ClassDef):
            bases = {_canon(_full(b, imap), kb) for b in node.bases}
            getitem = any(isinstance(n, ast.FunctionDef) and n.name == "__getitem__" for n in node.body)
            if bases & ITERABLE_BASES:
                facts.iterable.add(node.name)
            elif bases & DATASET_BASES or (getitem and not node.bases):
                facts.classes[node.name] = _columns_of(node)
                if bases & DATASET_BASES:
                    facts.torch_datasets.add(node.name)
        elif isinstance(node, ast.FunctionDef):
            funcs[node.name] = node
        elif isinstance(node, ast.Call):
            calls.append(node)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        ):
            assigned[id(node.value)] = node.targets[0].id
    loaders: list[ast.Call] = []
    for call in calls:
        full = _canon(_full(call.func, imap), kb)
        name = assigned.get(id(call))
        if full == LOADER:
            loaders.append(call)
        elif name is None:
            continue
        elif full == TENSOR_DATASET:
            facts.kinds[name] = "tensor_dataset"
            facts.columns[name] = columns_for(len(call.args))
        elif full in TV_DATASETS:
            facts.kinds[name] = "ms_dataset"
            if full == "torchvision.datasets.ImageFolder":
                facts.folders.add(name)
        elif isinstance(call.func, ast.Name) and call.func.id in facts.classes:
            facts.kinds[name] = f"class:{call.func.id}"
        elif isinstance(call.func, ast.Name) and call.func.id in facts.iterable:
            facts.kinds[name] = "iterable"
    for call in loaders:
        data = _arg(call, 0, "dataset")
        key = data.id if isinstance(data, ast.Name) else (ast.unparse(data) if data is not None else None)
        if key is not None:
            facts.consumer[key] = None if key in facts.consumer else call  # only a single consumer
        iterable = facts.kinds.get(key or "") == "iterable" or (
            isinstance(data, ast.Call) and isinstance(data.func, ast.Name) and data.func.id in facts.iterable
        )
        name = assigned.get(id(call))
        if name and _is_idiomatic_loader(call) and not iterable:
            facts.loaders.add(name)
            if isinstance(data, ast.Name):
                facts.loader_data[name] = data.id
    _loader_parameters(facts, calls, funcs)
    if plan is not None and (facts.loaders or facts.folders):
        mark_plan(plan, facts.loaders | facts.folders)
    return facts


def _loader_parameters(facts: DataFacts, calls: list[ast.Call], funcs: dict[str, ast.FunctionDef]) -> None:
    """``train(model, train_loader)`` → the parameter ``loader`` of ``def train(model, loader)`` holds a loader too."""
    for call in calls:
        if not (isinstance(call.func, ast.Name) and call.func.id in funcs):
            continue
        params = [a.arg for a in funcs[call.func.id].args.args]
        for i, a in enumerate(call.args):
            if isinstance(a, ast.Name) and a.id in facts.loaders and i < len(params):
                facts.loaders.add(params[i])
        for k in call.keywords:
            if isinstance(k.value, ast.Name) and k.value.id in facts.loaders and k.arg in params:
                facts.loaders.add(k.arg)


def mark_plan(plan, names: set[str]) -> None:
    """Statements (and their enclosing ones) that iterate or measure a loader must be visited."""
    from .plan import header_nodes

    ends: list[tuple[int, int]] = []  # open compound statements: (index, last nested index)
    for i, info in enumerate(plan):
        while ends and ends[-1][1] < i:
            ends.pop()
        if not info.interesting and any(
            isinstance(n, ast.Name) and n.id in names for root in header_nodes(info.node) for n in ast.walk(root)
        ):
            info.interesting = True
            info.header = True
            for j, _ in ends:
                plan[j].interesting = True
        if info.size:
            ends.append((i, i + info.size))


# ---- hooks called by the transformer -------------------------------------------------------------


def _ast_src(node: ast.AST | None) -> str | None:
    return None if node is None else ast.unparse(node)


def _dataset_key(node: cst.BaseExpression) -> str | None:
    from .transformer import code

    if isinstance(node, cst.Name):
        return node.value
    try:
        return ast.unparse(ast.parse(code(node).strip(), mode="eval").body)
    except SyntaxError:
        return None


def convert_call(t: TorchToMindSpore, full: str, original: cst.Call, updated: cst.Call):
    """DataLoader and torchvision datasets; None lets the KB handle the call."""
    entry = t.kb.get(full)
    if entry is None:
        return None
    if entry.torch == LOADER:
        return _loader(t, entry, original, updated)
    if entry.torch in TV_DATASETS:
        return _tv_dataset(t, entry, original, updated)
    return None


def _run(
    t: TorchToMindSpore,
    entry,
    handler: str,
    bound: dict[str, str],
    original: cst.Call,
    updated: cst.Call,
    note: str = "",
):
    try:
        src = HANDLERS[handler](bound, None, entry)
    except Unsupported as exc:
        t.mark(entry.torch, str(exc), t._root_of(original.func))
        return updated
    t.record(entry.torch, "review" if note else "converted", note or entry.note)
    return t.parse_ms(src)


def _loader(t: TorchToMindSpore, entry, original: cst.Call, updated: cst.Call):
    data: DataFacts = t.data
    split = t._split_args(updated)
    if split is None:
        return None  # *args/**kwargs: the KB path reports it
    bound, _, _ = bind(entry, *split)
    if bound.get("dataset") is None:
        return None
    note = ""
    dnode = next((a.value for a in original.args if a.keyword is not None and a.keyword.value == "dataset"), None)
    if dnode is None and original.args and original.args[0].keyword is None:
        dnode = original.args[0].value
    key = _dataset_key(dnode) if dnode is not None else None
    kind = data.kinds.get(key or "")
    if kind is None and isinstance(dnode, cst.Call):
        callee = t.resolve(dnode.func)
        callee = t.kb.get(callee).torch if callee and t.kb.get(callee) else callee
        if callee in TV_DATASETS:
            kind = "ms_dataset"
        elif callee == TENSOR_DATASET:
            kind = "tensor_dataset"
        elif isinstance(dnode.func, cst.Name) and dnode.func.value in data.classes:
            kind = f"class:{dnode.func.value}"
        elif isinstance(dnode.func, cst.Name) and dnode.func.value in data.iterable:
            kind = "iterable"
    if kind == "iterable":
        bound["__kind__"] = "iterable"  # MindSpore's torch-style DataLoader iterates it as torch does
        return _run(
            t,
            entry,
            "data_pipeline.dataloader",
            bound,
            original,
            updated,
            "IterableDataset source: kept as mindspore.dataset.dataloader.DataLoader (torch-style batches)",
        )
    if kind == "ms_dataset":
        bound["__kind__"] = "ms_dataset"
        if data.consumer.get(key or "") is not None:
            bound["__shuffle_done__"] = "1"  # shuffle/num_workers went into the dataset itself
            bound.pop("num_workers", None)
    elif kind == "tensor_dataset":
        bound["__kind__"] = "tensor_dataset"
        cols = data.columns.get(key or "")
        if cols:
            bound["__columns__"] = repr(cols)
    elif kind and kind.startswith("class:") and data.classes.get(kind[6:]):
        bound["__columns__"] = repr(data.classes[kind[6:]])
    elif any(b in ("collate_fn", "batch_sampler") and v not in ("None",) for b, v in bound.items()):
        pass  # the torch-style loader needs no columns
    else:
        note = (
            "column names assumed ['data', 'label']: set them to what the dataset's __getitem__ returns "
            "(GeneratorDataset needs one name per returned item)"
        )
    dropped = [
        k
        for k in (
            "pin_memory",
            "timeout",
            "worker_init_fn",
            "prefetch_factor",
            "persistent_workers",
            "generator",
            "multiprocessing_context",
            "pin_memory_device",
            "in_order",
        )
        if k in bound
    ]
    if dropped and not note:
        note = f"dropped (no MindSpore form): {', '.join(dropped)}"
    return _run(t, entry, "data_pipeline.dataloader", bound, original, updated, note)


def _tv_dataset(t: TorchToMindSpore, entry, original: cst.Call, updated: cst.Call):
    data: DataFacts = t.data
    split = t._split_args(updated)
    if split is None:
        return None
    bound, _, _ = bind(entry, *split)
    # The loader that consumes this dataset (by the name it is assigned to, or inline) sets shuffle/workers.
    loader = None
    stmt = t._stmt()
    target = (
        stmt.targets[0].id
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        else None
    )
    for key in (target, _dataset_key(original)):
        if key and data.consumer.get(key) is not None:
            loader = data.consumer[key]
            break
    if loader is not None:
        shuffle, workers, sampler = (
            _arg(loader, 2, "shuffle"),
            _arg(loader, 5, "num_workers"),
            _arg(loader, 3, "sampler"),
        )
        if sampler is None:
            if shuffle is not None:
                bound["__shuffle__"] = _ast_src(shuffle)
            if workers is not None:
                bound["__workers__"] = _ast_src(workers)
    return _run(t, entry, TV_DATASETS[entry.torch], bound, original, updated)


def builtin_call(t: TorchToMindSpore, original: cst.Call, updated: cst.Call):
    """``len(loader)`` → ``loader.get_dataset_size()`` (the number of batches, as torch's len)."""
    if original.func.value != "len" or len(original.args) != 1:  # type: ignore[union-attr]
        return updated
    arg = original.args[0].value
    if isinstance(arg, cst.Name) and arg.value in t.data.loaders:
        t.record(
            "torch.utils.data.DataLoader.__len__", "converted", "len(loader) → get_dataset_size(): batches per epoch"
        )
        return cst.parse_expression(f"{arg.value}.get_dataset_size()")
    if (
        isinstance(arg, cst.Attribute)
        and arg.attr.value == "dataset"
        and isinstance(arg.value, cst.Name)
        and arg.value.value in t.data.loaders
    ):
        ds = t.data.loader_data.get(arg.value.value)
        if ds is None:
            t.mark(
                "torch.utils.data.DataLoader.dataset",
                "a MindSpore dataset has no .dataset: count the samples "
                "with the source dataset's len() (or get_dataset_size() before .batch)",
            )
            return updated
        kind = t.data.kinds.get(ds, "")
        t.record(
            "torch.utils.data.DataLoader.dataset",
            "review",
            f"len(loader.dataset) → the size of '{ds}' (check it is in scope)",
        )
        if kind == "ms_dataset":
            return cst.parse_expression(f"{ds}.get_dataset_size()")
        return cst.parse_expression(f"len({ds})")
    return updated


def _loop_iter(t: TorchToMindSpore, node: cst.BaseExpression) -> cst.BaseExpression | None:
    if isinstance(node, cst.Name) and node.value in t.data.loaders:
        return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("create_tuple_iterator")))
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value in _LOOP_WRAPPERS
        and node.args
    ):
        inner = _loop_iter(t, node.args[0].value)
        if inner is not None:
            args = [node.args[0].with_changes(value=inner), *node.args[1:]]
            return node.with_changes(args=args)
    return None


def leave_for(t: TorchToMindSpore, original: cst.For, updated: cst.For) -> cst.For:
    """``for x, y in loader`` → ``for x, y in loader.create_tuple_iterator()``: the body stays as written."""
    new = _loop_iter(t, updated.iter)
    if new is None:
        return updated
    t.record("torch.utils.data.DataLoader.__iter__", "converted", "iterated with create_tuple_iterator()")
    return updated.with_changes(iter=new)


def drop_dataset_base(t: TorchToMindSpore, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
    """``class D(Dataset)`` → ``class D:``; ``__getitem__(self, idx)`` starts with ``idx = int(idx)``."""
    keep = [
        b
        for b, ob in zip(updated.bases, original.bases)
        if t.kb.get(t.resolve(ob.value) or "") is None or t.kb.get(t.resolve(ob.value)).torch not in DATASET_BASES
    ]
    if len(keep) == len(updated.bases):
        return updated
    t.record(
        "torch.utils.data.Dataset",
        "converted",
        "base class dropped: a plain class with __getitem__/__len__ is a GeneratorDataset source",
    )
    if keep:
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        updated = updated.with_changes(bases=keep)
    else:
        updated = updated.with_changes(bases=[], lpar=cst.MaybeSentinel.DEFAULT, rpar=cst.MaybeSentinel.DEFAULT)
    body = list(updated.body.body)
    for i, stmt in enumerate(body):
        if (
            isinstance(stmt, cst.FunctionDef)
            and stmt.name.value == "__getitem__"
            and len(stmt.params.params) >= 2
            and isinstance(stmt.body, cst.IndentedBlock)
        ):
            idx = stmt.params.params[1].name.value
            line = cst.parse_statement(f"{idx} = int({idx})  # GeneratorDataset passes numpy.int64 indices\n")
            inner = list(stmt.body.body)
            at = 1 if inner and _is_docstring(inner[0]) else 0
            inner.insert(at, line)
            body[i] = stmt.with_changes(body=stmt.body.with_changes(body=inner))
    return updated.with_changes(body=updated.body.with_changes(body=body))


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def attribute(t: TorchToMindSpore, original: cst.Attribute, updated: cst.Attribute):
    """ImageFolder's ``classes`` / ``class_to_idx`` (also through ``loader.dataset``) → ``get_class_indexing()``.

    Both index classes by sorted folder name, so the lists agree. None: not such an attribute.
    """
    attr = original.attr.value
    if attr not in ("classes", "class_to_idx"):
        return None
    base = original.value
    holder = None
    if isinstance(base, cst.Name) and base.value in t.data.folders:
        holder = base.value
    elif (
        isinstance(base, cst.Attribute)
        and base.attr.value == "dataset"
        and isinstance(base.value, cst.Name)
        and t.data.loader_data.get(base.value.value) in t.data.folders
    ):
        holder = base.value.value  # the batched dataset answers for its source
    if holder is None:
        return None
    t.record(
        f"torchvision.datasets.ImageFolder.{attr}", "converted", "get_class_indexing(): classes by sorted folder name"
    )
    if attr == "class_to_idx":
        return cst.parse_expression(f"{holder}.get_class_indexing()")
    return cst.parse_expression(f"list({holder}.get_class_indexing())")
