"""Data pipelines (R14–R16), what the ``ast`` pass learns before any rewriting.

A cheap scan (only for files that mention ``DataLoader`` or ``Dataset``) learns what one call's text
cannot tell: the column names a dataset class returns, which names hold loaders, and which loader
consumes a torchvision dataset (its ``shuffle``/``num_workers`` move into the MindSpore dataset).
The rewrites that use these facts are in ``data_pipeline.py``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ...analysis.astwalk import nodes
from ...kb.handlers.data_pipeline import columns_for
from ..plan import header_nodes
from .data_wrappers import kwargs_dicts, wrapped_kinds

# Text gate: files without a loader or a Dataset class skip the scan (torchvision datasets and
# transforms alone are converted by their KB handlers, with torch's shuffle=False).
# ("datasets": a torchvision dataset whose whole-set .data / .targets the file may read, see array_reads)
HINTS = ("DataLoader", "Dataset", "datasets")
LOADER = "torch.utils.data.DataLoader"
TENSOR_DATASET = "torch.utils.data.TensorDataset"
DATASET_BASES = frozenset({"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"})
ITERABLE_BASES = frozenset({"torch.utils.data.IterableDataset"})
TV_DATASETS = {
    "torchvision.datasets.ImageFolder": "data_pipeline.image_folder",
    "torchvision.datasets.MNIST": "data_pipeline.mnist",
    "torchvision.datasets.CIFAR10": "data_pipeline.cifar10",
    "torchvision.datasets.CIFAR100": "torchvision_datasets.cifar100",
    "torchvision.datasets.FashionMNIST": "torchvision_datasets.fashion_mnist",
    "torchvision.datasets.KMNIST": "torchvision_datasets.kmnist",
    "torchvision.datasets.SVHN": "torchvision_datasets.svhn",
    "torchvision.datasets.Flowers102": "torchvision_datasets.flowers102",
    "torchvision.datasets.FakeData": "torchvision_datasets.fake_data",
    "torchvision.datasets.VOCSegmentation": "torchvision_datasets.voc_segmentation",
    "torchvision.datasets.VOCDetection": "torchvision_datasets.voc_detection",
    "torchvision.datasets.CocoDetection": "torchvision_datasets.coco_detection",
    "torchvision.datasets.CocoCaptions": "torchvision_datasets.coco_captions",
}
# torchvision datasets that keep the whole set in memory as .data / .targets (runtime/dataset_arrays.py)
ARRAY_DATASETS = frozenset(
    "torchvision.datasets." + n for n in ("MNIST", "FashionMNIST", "KMNIST", "CIFAR10", "CIFAR100")
)
# their whole-set attributes: torchvision's names and the MNIST family's old ones (kept by its datasets)
ARRAY_ATTRS = ("data", "targets", "train_data", "test_data", "train_labels", "test_labels")
# download=True converts for these: torch2ms.runtime.fetch_dataset fetches the files first (runtime/dataset_files.py)
FETCHED_DATASETS = frozenset(
    f"torchvision.datasets.{n}"
    for n in ("MNIST", "FashionMNIST", "KMNIST", "CIFAR10", "CIFAR100", "SVHN", "Flowers102")
)


@dataclass
class DataFacts:
    """What the scan learned about one file's data pipeline."""

    classes: dict[str, list[str] | None] = field(default_factory=dict)  # dataset class → columns
    dict_classes: set[str] = field(default_factory=set)  # classes whose samples are dicts (columns = keys)
    dict_loaders: set[str] = field(default_factory=set)  # loaders over them: iterated as dicts
    torch_datasets: set[str] = field(default_factory=set)  # classes whose torch Dataset base is dropped
    kinds: dict[str, str] = field(
        default_factory=dict
    )  # name → class:<C> | tensor_dataset | ms_dataset | kept_dataset | mixed | iterable
    columns: dict[str, list[str]] = field(default_factory=dict)  # name → columns (TensorDataset arity)
    iterable: set[str] = field(default_factory=set)  # IterableDataset subclasses (torch-style loader kept)
    folders: set[str] = field(default_factory=set)  # names holding a converted ImageFolder
    loaders: set[str] = field(default_factory=set)  # names holding a converted (MindSpore) loader
    loader_data: dict[str, str] = field(default_factory=dict)  # loader name → its dataset's name
    consumer: dict[str, ast.Call | None] = field(default_factory=dict)  # dataset name/source → its one loader
    arrays: set[str] = field(default_factory=set)  # datasets (target or inline source) whose .data/.targets are read
    kwargs_dicts: dict[str, list[tuple[str, ast.expr]]] = field(default_factory=dict)  # DataLoader(**name)


def _full(node: ast.AST, imap) -> str | None:
    full = imap.resolve(node)
    return full if full and imap.is_framework(full) else None


def _canon(full: str | None, kb) -> str | None:
    if full is None:
        return None
    entry = kb.get(full)
    return entry.torch if entry is not None else full


def call_arg(call: ast.Call, pos: int, name: str) -> ast.expr | None:
    """Argument ``name`` of a call, by keyword or at position ``pos``."""
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return call.args[pos] if len(call.args) > pos else None


def _dict_keys(cls: ast.ClassDef) -> list[str] | None:
    """``return {'image': img, 'mask': mask}`` in every return of ``__getitem__`` → ["image", "mask"]."""
    fn = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__getitem__"), None)
    found_returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)] if fn is not None else []
    returns = [n.value for n in sorted(found_returns, key=lambda n: n.lineno)]  # the first written names the order
    found: list[list[str]] = []
    for value in returns:
        if not isinstance(value, ast.Dict) or not all(
            isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys
        ):
            return None
        found.append([k.value for k in value.keys])  # type: ignore[union-attr]
    if not found or any(sorted(f) != sorted(found[0]) for f in found):
        return None
    return found[0]


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
                return _dict_keys(cls)  # dict samples: one column per key
            elts = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) else [node.value]
            sizes.add(len(elts))
            ids = [e.id if isinstance(e, ast.Name) else None for e in elts]
            if names is None and all(ids) and len(set(ids)) == len(ids) and "self" not in ids:
                names = ids  # type: ignore[assignment]
    if len(sizes) != 1:
        return None
    n = sizes.pop()
    return names if names is not None and len(names) == n else columns_for(n)


def _is_tv_call(node: ast.expr | None, imap, kb) -> bool:
    return isinstance(node, ast.Call) and _canon(_full(node.func, imap), kb) in TV_DATASETS


def _is_idiomatic_loader(call: ast.Call, ms_dataset: bool = False) -> bool:
    """collate_fn / batch_sampler keep MindSpore's torch-style DataLoader (no create_tuple_iterator); a
    BatchSampler over a MindSpore dataset (a converted torchvision one) batches that dataset."""
    for name, pos in (("collate_fn", 6), ("batch_sampler", 4)):
        if ms_dataset and name == "batch_sampler":
            continue
        v = call_arg(call, pos, name)
        if v is not None and not (isinstance(v, ast.Constant) and v.value is None):
            return False
    return True


def scan_data(source: str, tree: ast.Module, imap, kb, plan=None) -> DataFacts | None:
    """The file's data-pipeline facts, or None when it has no pipeline (a text check first: cheap)."""
    if not any(h in source for h in HINTS):
        return None
    facts = DataFacts()
    calls: list[ast.Call] = []
    funcs: dict[str, ast.FunctionDef] = {}
    assigned: dict[int, str] = {}  # id(call) → the name it is assigned to
    wrapped: list[ast.Assign] = []  # assignments of calls: random_split / Subset / ConcatDataset (data_wrappers.py)
    for node in nodes(tree):
        if isinstance(node, ast.ClassDef):
            bases = {_canon(_full(b, imap), kb) for b in node.bases}
            getitem = any(isinstance(n, ast.FunctionDef) and n.name == "__getitem__" for n in node.body)
            if bases & ITERABLE_BASES:
                facts.iterable.add(node.name)
            elif bases & DATASET_BASES or (getitem and not node.bases):
                facts.classes[node.name] = _columns_of(node)
                if _dict_keys(node) is not None:
                    facts.dict_classes.add(node.name)
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
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Call, ast.Name)):
            wrapped.append(node)
    loaders: list[ast.Call] = []
    facts.kwargs_dicts = kwargs_dicts(tree)
    for call in calls:
        full = _canon(_full(call.func, imap), kb)
        name = assigned.get(id(call))
        if full == LOADER:
            loaders.append(call)
        elif name is None:
            continue
        elif full == TENSOR_DATASET:
            _set_kind(facts, name, "tensor_dataset")
            facts.columns[name] = columns_for(len(call.args))
        elif full in TV_DATASETS and (full in FETCHED_DATASETS or not _downloads(call)):
            _set_kind(facts, name, "ms_dataset")
            if full == "torchvision.datasets.ImageFolder":
                facts.folders.add(name)
        elif full is not None and full.startswith("torchvision.datasets."):
            _set_kind(facts, name, "kept_dataset")  # not converted (download=True, not in the KB): torch-style
        elif isinstance(call.func, ast.Name) and call.func.id in facts.classes:
            _set_kind(facts, name, f"class:{call.func.id}")
        elif isinstance(call.func, ast.Name) and call.func.id in facts.iterable:
            _set_kind(facts, name, "iterable")
    wrapped_kinds(facts, wrapped, lambda f: _canon(_full(f, imap), kb))
    for call in loaders:
        data = call_arg(call, 0, "dataset")
        key = data.id if isinstance(data, ast.Name) else (ast.unparse(data) if data is not None else None)
        if key is not None:
            facts.consumer[key] = None if key in facts.consumer else call  # only a single consumer
        iterable = facts.kinds.get(key or "") == "iterable" or (
            isinstance(data, ast.Call) and isinstance(data.func, ast.Name) and data.func.id in facts.iterable
        )
        name = assigned.get(id(call))
        ms_dataset = facts.kinds.get(key or "") == "ms_dataset" or _is_tv_call(data, imap, kb)
        if name and _is_idiomatic_loader(call, ms_dataset) and not iterable:
            facts.loaders.add(name)
            if isinstance(data, ast.Name):
                facts.loader_data[name] = data.id
            if _source_class(facts, data) in facts.dict_classes:
                facts.dict_loaders.add(name)
    _loader_parameters(facts, calls, funcs)
    if any(f".{attr}" in source for attr in ARRAY_ATTRS):
        facts.arrays = array_reads(tree, imap, kb)
    if plan is not None and (facts.loaders or facts.folders):
        mark_plan(plan, facts.loaders | facts.folders)
    return facts


def array_reads(tree: ast.Module, imap, kb) -> set[str]:
    """The torchvision datasets whose whole-set ``.data`` / ``.targets`` the file reads: the target a
    dataset is assigned to (``train``, ``self.dataset``) or an inline call's source."""
    holders: set[str] = set()
    reads: set[str] = set()
    inline: set[str] = set()

    def is_array_dataset(node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and _canon(_full(node.func, imap), kb) in ARRAY_DATASETS

    for node in nodes(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and is_array_dataset(node.value):
            holders.add(ast.unparse(node.targets[0]))
        elif isinstance(node, ast.Attribute) and node.attr in ARRAY_ATTRS:
            (inline if is_array_dataset(node.value) else reads).add(ast.unparse(node.value))
    return (holders & reads) | inline


def _set_kind(facts: DataFacts, name: str, kind: str) -> None:
    """A name assigned datasets of different kinds (branches on a --dataset flag) is "mixed": its loader
    decides at run time whether it holds a MindSpore dataset."""
    old = facts.kinds.get(name)
    facts.kinds[name] = kind if old in (None, kind) else "mixed"


def _downloads(call: ast.Call) -> bool:
    """``download=True`` (any literal true): a dataset the runtime cannot fetch stays torchvision's."""
    flag = next((k.value for k in call.keywords if k.arg == "download"), None)
    return isinstance(flag, ast.Constant) and bool(flag.value)


def _source_class(facts: DataFacts, data: ast.expr | None) -> str | None:
    """The dataset class a loader reads: ``DataLoader(ds)`` with ``ds = Seg(...)``, or ``DataLoader(Seg(...))``."""
    if isinstance(data, ast.Name):
        kind = facts.kinds.get(data.id, "")
        return kind[6:] if kind.startswith("class:") else None
    if isinstance(data, ast.Call) and isinstance(data.func, ast.Name):
        return data.func.id
    return None


def _loader_parameters(facts: DataFacts, calls: list[ast.Call], funcs: dict[str, ast.FunctionDef]) -> None:
    """``train(model, train_loader)`` → the parameter ``loader`` of ``def train(model, loader)`` holds a loader too."""
    for call in calls:
        if not (isinstance(call.func, ast.Name) and call.func.id in funcs):
            continue
        params = [a.arg for a in funcs[call.func.id].args.args]
        for i, a in enumerate(call.args):
            if isinstance(a, ast.Name) and a.id in facts.loaders and i < len(params):
                facts.loaders.add(params[i])
                if a.id in facts.dict_loaders:
                    facts.dict_loaders.add(params[i])
        for k in call.keywords:
            if isinstance(k.value, ast.Name) and k.value.id in facts.loaders and k.arg in params:
                facts.loaders.add(k.arg)
                if k.value.id in facts.dict_loaders:
                    facts.dict_loaders.add(k.arg)


def mark_plan(plan, names: set[str]) -> None:
    """Statements (and their enclosing ones) that iterate or measure a loader must be visited."""

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
