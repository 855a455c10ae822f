"""Data pipelines (R14–R16): torch DataLoader / Dataset / torchvision datasets → idiomatic mindspore.dataset.

The facts (column names, which names hold loaders, which loader consumes which dataset) come from
the ``ast`` scan in ``data_facts.py``; the source-level rules live in ``kb/handlers/data_pipeline.py``.

- ``class D(Dataset)`` → a plain class (a GeneratorDataset source); ``__getitem__`` gets
  ``idx = int(idx)`` because GeneratorDataset passes numpy.int64 indices, which MindSpore Tensors reject.
- ``for x, y in loader`` → ``for x, y in loader.create_tuple_iterator()``; ``len(loader)`` →
  ``loader.get_dataset_size()``.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...i18n import N_, _
from ...kb import Entry
from ...kb.handlers.data_pipeline import generator_kept
from ...kb.rewrite import bind
from ...kb.transforms import HANDLERS, Unsupported
from .. import generated as gen
from ..construct import Construct, Facts
from ..context import RewriteContext
from ..cstutil import code
from ..facts import ModuleFacts
from ..hooks import attribute, call, leave, reference, torch_call
from .data_facts import DATASET_BASES, LOADER, TENSOR_DATASET, TV_DATASETS, DataFacts, call_arg, scan_data

_LOOP_WRAPPERS = frozenset({"enumerate", "tqdm", "zip"})
INT_INDEX = "{idx} = int({idx})  # {why}\n"
INT_INDEX_WHY = N_("GeneratorDataset passes numpy.int64 indices")


DATA: Facts[DataFacts] = Facts(scan_data)  # loaders, dataset columns (data_facts.py)


def has_data_pipeline(facts: ModuleFacts) -> bool:
    return DATA.of(facts) is not None


# Its hooks act on the project's own names (loaders, dataset classes): the file's expressions are all visited.
CONSTRUCT = Construct("data pipeline", order=20, facts=DATA, whole_expressions=has_data_pipeline)


def _data(ctx: RewriteContext) -> DataFacts:
    data = DATA.of(ctx.facts)
    assert data is not None  # the hooks only run when the file has a data pipeline
    return data


def _canonical(ctx: RewriteContext, full: str | None) -> str | None:
    """The KB's name for a torch name (its entry's canonical spelling), else the name itself."""
    entry = ctx.kb.get(full) if full else None
    return entry.torch if entry is not None else full


@reference(when=has_data_pipeline)
def dataset_base(ctx: RewriteContext, entry: Entry, original: cst.CSTNode, updated: cst.BaseExpression):
    """``class D(Dataset)``: the base is dropped with the class's bases (drop_dataset_base)."""
    return updated if ctx.in_bases and entry.torch in DATASET_BASES else None


def _dataset_key(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    try:
        return ast.unparse(ast.parse(code(node).strip(), mode="eval").body)
    except SyntaxError:
        return None


@torch_call(when=has_data_pipeline)
def convert_call(ctx: RewriteContext, full: str, original: cst.Call, updated: cst.Call):
    """DataLoader and torchvision datasets; None lets the KB handle the call."""
    entry = ctx.kb.get(full)
    if entry is None:
        return None
    if entry.torch == LOADER:
        return _loader(ctx, entry, original, updated)
    if entry.torch in TV_DATASETS:
        return _tv_dataset(ctx, entry, original, updated)
    return None


def _run(
    ctx: RewriteContext,
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
        ctx.mark(entry.torch, str(exc), ctx.root_of(original.func))
        return updated
    ctx.record(entry.torch, "review" if note else "converted", note or entry.note_shown)
    return ctx.parse_ms(src)


def _loader(ctx: RewriteContext, entry, original: cst.Call, updated: cst.Call):
    data = _data(ctx)
    updated = _written_out(data, updated)
    split = ctx.split_args(updated)
    if split is None:
        return None  # *args/**kwargs: the KB path reports it
    bound = bind(entry, *split)[0]
    if bound.get("dataset") is None:
        return None
    note = ""
    dnode = next((a.value for a in original.args if a.keyword is not None and a.keyword.value == "dataset"), None)
    if dnode is None and original.args and original.args[0].keyword is None:
        dnode = original.args[0].value
    key = _dataset_key(dnode) if dnode is not None else None
    kind = data.kinds.get(key or "")
    if kind is None and isinstance(dnode, cst.Call):
        callee = _canonical(ctx, ctx.resolve(dnode.func))
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
            ctx,
            entry,
            "data_pipeline.dataloader",
            bound,
            original,
            updated,
            _("IterableDataset source: kept as mindspore.dataset.dataloader.DataLoader (torch-style batches)"),
        )
    if kind == "ms_dataset":
        bound["__kind__"] = "ms_dataset"
        if data.consumer.get(key or "") is not None:
            bound["__shuffle_done__"] = "1"  # shuffle/num_workers went into the dataset itself
            bound.pop("num_workers", None)
    elif kind == "mixed":
        bound["__kind__"] = "mixed"  # a MindSpore dataset in some branches, a Python one in others
        if data.consumer.get(key or "") is not None:
            bound["__shuffle_done__"] = "1"
    elif kind == "tensor_dataset":
        bound["__kind__"] = "tensor_dataset"
        cols = data.columns.get(key or "")
        if cols:
            bound["__columns__"] = repr(cols)
    elif kind and kind.startswith("class:") and data.classes.get(kind[6:]):
        bound["__columns__"] = repr(data.classes[kind[6:]])
        if kind[6:] in data.dict_classes:
            bound["__dict_source__"] = "1"  # samples are dicts: a tuple per sample, in the keys' order
    elif any(b in ("collate_fn", "batch_sampler") and v not in ("None",) for b, v in bound.items()):
        pass  # the torch-style loader needs no columns
    else:
        note = _(
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
        if k in bound and not (k == "generator" and generator_kept(bound))  # it shuffles, or orders nothing
    ]
    if dropped and not note:
        note = _("dropped (no MindSpore form): {names}").format(names=", ".join(dropped))
    return _run(ctx, entry, "data_pipeline.dataloader", bound, original, updated, note)


def _written_out(data: DataFacts, call: cst.Call) -> cst.Call:
    """``DataLoader(ds, **loader_args)`` with ``loader_args = dict(batch_size=4, ...)`` assigned once and
    never changed (data_wrappers.py): the keywords written out, those written in the call winning."""
    args: list[cst.Arg] = []
    written = {a.keyword.value for a in call.args if a.keyword is not None}
    for a in call.args:
        name = a.value.value if a.star == "**" and isinstance(a.value, cst.Name) else None
        if name is None or name not in data.kwargs_dicts:
            args.append(a)
            continue
        for key, value in data.kwargs_dicts[name]:
            if key not in written:
                args.append(cst.Arg(cst.parse_expression(ast.unparse(value)), keyword=cst.Name(key)))
    return call.with_changes(args=args)


def _tv_dataset(ctx: RewriteContext, entry, original: cst.Call, updated: cst.Call):
    data = _data(ctx)
    split = ctx.split_args(updated)
    if split is None:
        return None
    bound = bind(entry, *split)[0]
    # The loader that consumes this dataset (by the name it is assigned to, or inline) sets shuffle/workers.
    loader = None
    stmt = ctx.statement.node if ctx.statement is not None else None
    target = (
        stmt.targets[0].id
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        else None
    )
    holder = ast.unparse(stmt.targets[0]) if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
    if {holder, _dataset_key(original)} & data.arrays:
        bound["__arrays__"] = "1"  # the script reads the whole-set .data / .targets
    for key in (target, _dataset_key(original)):
        if key and data.consumer.get(key) is not None:
            loader = data.consumer[key]
            break
    if loader is not None:
        shuffle, workers, sampler = (
            call_arg(loader, 2, "shuffle"),
            call_arg(loader, 5, "num_workers"),
            call_arg(loader, 3, "sampler"),
        )
        if sampler is None:
            if shuffle is not None:
                bound["__shuffle__"] = ast.unparse(shuffle)
            if workers is not None:
                bound["__workers__"] = ast.unparse(workers)
    return _run(ctx, entry, TV_DATASETS[entry.torch], bound, original, updated)


@call(when=has_data_pipeline)
def builtin_call(ctx: RewriteContext, original: cst.Call, updated: cst.Call):
    """``len(loader)`` → ``loader.get_dataset_size()`` (the number of batches, as torch's len)."""
    if not isinstance(original.func, cst.Name) or original.func.value != "len" or len(original.args) != 1:
        return None
    arg = original.args[0].value
    if isinstance(arg, cst.Name) and arg.value in _data(ctx).loaders:
        ctx.record(
            "torch.utils.data.DataLoader.__len__", "converted", _("len(loader) → get_dataset_size(): batches per epoch")
        )
        return gen.expression("{loader}.get_dataset_size()", ctx.generated, loader=arg)
    return None


@attribute(when=has_data_pipeline)
def loader_dataset(ctx: RewriteContext, original: cst.Attribute, updated: cst.Attribute):
    """``loader.dataset`` → ``torch2ms.runtime.dataset_of(loader)``: a MindSpore dataset has no
    ``.dataset``; the helper finds the dataset the loader reads, in whatever function the loader is."""
    if not (
        original.attr.value == "dataset"
        and isinstance(original.value, cst.Name)
        and original.value.value in _data(ctx).loaders
        and original not in ctx.assign_targets
    ):
        return None
    ctx.record("torch.utils.data.DataLoader.dataset", "converted", _("loader.dataset → the dataset the loader reads"))
    return cst.Call(func=ctx.parse_ms("torch2ms.runtime.dataset_of"), args=[cst.Arg(updated.value)])


def _loop_iter(ctx: RewriteContext, node: cst.BaseExpression) -> cst.BaseExpression | None:
    if isinstance(node, cst.Name) and node.value in _data(ctx).loaders:
        # batches of dict samples are dicts (batch['image']): MindSpore names the columns by the keys
        method = "create_dict_iterator" if node.value in _data(ctx).dict_loaders else "create_tuple_iterator"
        return cst.Call(func=cst.Attribute(value=node, attr=cst.Name(method)))
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value in _LOOP_WRAPPERS
        and node.args
    ):
        inner = _loop_iter(ctx, node.args[0].value)
        if inner is not None:
            args = [node.args[0].with_changes(value=inner), *node.args[1:]]
            return node.with_changes(args=args)
    return None


@leave(cst.For, when=has_data_pipeline)
def leave_for(ctx: RewriteContext, original: cst.For, updated: cst.For) -> cst.For:
    """``for x, y in loader`` → ``for x, y in loader.create_tuple_iterator()``: the body stays as written."""
    new = _loop_iter(ctx, updated.iter)
    if new is None:
        return updated
    how = (
        _("create_dict_iterator() (dict samples)") if "create_dict_iterator" in code(new) else "create_tuple_iterator()"
    )
    ctx.record("torch.utils.data.DataLoader.__iter__", "converted", _("iterated with {how}").format(how=how))
    return updated.with_changes(iter=new)


@leave(cst.ClassDef, when=has_data_pipeline)
def drop_dataset_base(ctx: RewriteContext, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
    """``class D(Dataset)`` → ``class D:``; ``__getitem__(self, idx)`` starts with ``idx = int(idx)``."""
    if original.name.value not in _data(ctx).torch_datasets:  # type: ignore[union-attr]
        return updated
    keep = [
        b for b, ob in zip(updated.bases, original.bases) if _canonical(ctx, ctx.resolve(ob.value)) not in DATASET_BASES
    ]
    if len(keep) == len(updated.bases):
        return updated
    ctx.record(
        "torch.utils.data.Dataset",
        "converted",
        _("base class dropped: a plain class with __getitem__/__len__ is a GeneratorDataset source"),
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
            line = gen.statement(INT_INDEX.replace("{why}", _(INT_INDEX_WHY)), ctx.generated, idx=cst.Name(idx))
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


@attribute(when=has_data_pipeline)
def folder_classes(ctx: RewriteContext, original: cst.Attribute, updated: cst.Attribute):
    """ImageFolder's ``classes`` / ``class_to_idx`` (also through ``loader.dataset``) → ``get_class_indexing()``.

    Both index classes by sorted folder name, so the lists agree. None: not such an attribute.
    """
    attr = original.attr.value
    if attr not in ("classes", "class_to_idx"):
        return None
    base = original.value
    holder = None
    if isinstance(base, cst.Name) and base.value in _data(ctx).folders:
        holder = base.value
    elif (
        isinstance(base, cst.Attribute)
        and base.attr.value == "dataset"
        and isinstance(base.value, cst.Name)
        and _data(ctx).loader_data.get(base.value.value) in _data(ctx).folders
    ):
        holder = base.value.value  # the batched dataset answers for its source
    if holder is None:
        return None
    ctx.record(
        f"torchvision.datasets.ImageFolder.{attr}",
        "converted",
        _("get_class_indexing(): classes by sorted folder name"),
    )
    if attr == "class_to_idx":
        return gen.expression("{folder}.get_class_indexing()", ctx.generated, folder=cst.Name(holder))
    return gen.expression("list({folder}.get_class_indexing())", ctx.generated, folder=cst.Name(holder))
