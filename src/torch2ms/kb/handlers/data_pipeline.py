"""Handlers for data pipelines (R14–R16): DataLoader, torchvision datasets and transforms.

Every handler works on source text, so the converter and the KB's differential cases share it.
The converter (``convert/data_pipeline.py``) knows more than one call's text (the dataset's class,
the loader that consumes a dataset) and passes it in through ``bound`` keys that start with ``__``:
``__columns__`` (column-name list source), ``__shuffle__``/``__workers__`` (taken from the loader
into the dataset), ``__kind__`` (what the loader's dataset is).
"""

from __future__ import annotations

import ast

from ...i18n import _
from ..schema import Entry
from ..source import NOT_LITERAL, literal
from ..transforms import Unsupported, handler

INT32 = "mindspore.int32"
DECODE = "mindspore.dataset.vision.Decode(to_pil=True)"
TO_PIL = "mindspore.dataset.vision.ToPIL()"
_BORDERS = {"constant": "CONSTANT", "edge": "EDGE", "reflect": "REFLECT", "symmetric": "SYMMETRIC"}
# torch ints for PIL filters (Image.NEAREST = 0 ...) and InterpolationMode names → vision.Inter.
_INTER_INTS = {0: "NEAREST", 2: "BILINEAR", 3: "BICUBIC"}


def columns_for(n: int) -> list[str]:
    """Column names for an n-item sample when nothing better is known."""
    if n == 1:
        return ["data"]
    if n == 2:
        return ["data", "label"]
    return [f"column_{i}" for i in range(n)]


def _call_args(src: str) -> tuple[str, list[ast.expr]] | None:
    """``mindspore.dataset.dataloader.TensorDataset(x, y)`` → (callee name, positional args)."""
    try:
        node = ast.parse(src.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call):
        return None
    return ast.unparse(node.func), list(node.args)


def is_tensor_dataset_src(src: str) -> bool:
    got = _call_args(src)
    return got is not None and got[0].rsplit(".", 1)[-1] == "TensorDataset"


def _atom(src: str) -> str:
    try:
        node = ast.parse(src, mode="eval").body
    except SyntaxError:
        return f"({src})"
    return src if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else f"({src})"


def _workers(src: str | None) -> str | None:
    """torch num_workers (0 = main process) → MindSpore num_parallel_workers (at least 1), or None."""
    if src is None:
        return None
    v = literal(src)
    if v is NOT_LITERAL:
        return f"max(1, {src})"
    if isinstance(v, int) and v > 1:
        return str(v)
    return None


def _flag(src: str | None) -> str:
    return "False" if src is None or literal(src) is None else src


def _given(bound: dict[str, str], key: str) -> bool:
    return bound.get(key) not in (None, "None")


def shuffles_with_generator(bound: dict[str, str]) -> bool:
    """``DataLoader(ds, shuffle=..., generator=g)`` over a Python dataset with no sampler: torch shuffles with
    ``RandomSampler(ds, generator=g)``; torch2ms.runtime.sampled_dataset draws the same way from the converted
    generator. Unshuffled, ``generator=`` orders nothing (only worker seeds) and goes."""
    shuffle = bound.get("shuffle")
    return (
        _given(bound, "generator")
        and shuffle is not None
        and literal(shuffle) not in (None, False)
        and not any(_given(bound, k) for k in ("sampler", "batch_sampler", "collate_fn"))
        and bound.get("__kind__") in (None, "class")
        and not is_tensor_dataset_src(bound.get("dataset") or "")
    )


def generator_kept(bound: dict[str, str]) -> bool:
    """``generator=`` needs no mark: it shuffles (shuffles_with_generator), or it orders nothing (no shuffle,
    or a sampler of the user's own, which torch then draws from instead)."""
    shuffle = bound.get("shuffle")
    unshuffled = shuffle is None or literal(shuffle) in (None, False)
    return shuffles_with_generator(bound) or unshuffled or _given(bound, "sampler") or _given(bound, "batch_sampler")


@handler
def dataloader(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``DataLoader(ds, batch_size, shuffle, ...)`` → ``GeneratorDataset(ds, column_names, shuffle).batch(bs, drop_remainder)``.

    GeneratorDataset shuffles by default (torch does not), so ``shuffle`` is always written; torch's
    ``drop_last`` is MindSpore's ``drop_remainder``; ``num_workers`` → ``num_parallel_workers``.
    A ``TensorDataset`` becomes a ``NumpySlicesDataset`` (GeneratorDataset indexes with numpy ints,
    which MindSpore Tensors reject). ``collate_fn`` / ``batch_sampler`` keep MindSpore's torch-style
    ``mindspore.dataset.dataloader.DataLoader``.
    """
    data = bound.get("dataset")
    if data is None:
        raise Unsupported(_("DataLoader() needs a dataset"))
    if bound.get("__kind__") == "ms_dataset" and (
        bound.get("sampler") not in (None, "None") or bound.get("batch_sampler") not in (None, "None")
    ):
        return _sampled_pipeline(bound)
    if bound.get("__kind__") == "iterable" or any(
        bound.get(k) not in (None, "None") for k in ("collate_fn", "batch_sampler")
    ):
        return _torch_style_loader(bound, entry)
    shuffle = _flag(bound.get("shuffle"))
    bs = bound.get("batch_size", "1")
    drop = _flag(bound.get("drop_last"))
    sampler = bound.get("sampler")
    opts = []
    if sampler not in (None, "None"):
        if literal(shuffle) is True:
            raise Unsupported(_("sampler and shuffle=True together: torch rejects it too"))
        opts.append(f"sampler={sampler}")
        if literal(shuffle) is not False:  # shuffle=(sampler is None): decided at run time, as torch does
            opts.append(f"shuffle={_atom(shuffle)} if {_atom(sampler)} is None else None")
    else:
        opts.append(f"shuffle={shuffle}")
    workers = _workers(bound.get("num_workers"))
    if workers:
        opts.append(f"num_parallel_workers={workers}")
    if bound.get("__kind__") == "ms_dataset":
        # Already a MindSpore dataset (a converted torchvision dataset): only batch it.
        pipe = data
        if literal(shuffle) is not False and bound.get("__shuffle_done__") != "1":
            pipe = f"{data}.shuffle({data}.get_dataset_size())"
    elif bound.get("__kind__") == "mixed":
        names = bound.get("__columns__") or repr(columns_for(2))
        done = ", shuffled=True" if bound.get("__shuffle_done__") == "1" else ""
        pipe = f"torch2ms.runtime.dataset_source({data}, {names}, {', '.join(opts)}{done})"
    elif bound.get("__kind__") == "tensor_dataset" or is_tensor_dataset_src(data):
        got = _call_args(data)
        cols = bound.get("__columns__") or (repr(columns_for(len(got[1]))) if got else None)
        col = f", column_names={cols}" if cols else ""
        if got and got[1] and not any(isinstance(a, ast.Starred) for a in got[1]):
            # TensorDataset(x, y) written inline: its tensors, as numpy columns.
            cols_src = ", ".join(f"{_atom(ast.unparse(a))}.asnumpy()" for a in got[1])
            source = f"({cols_src},)" if len(got[1]) == 1 else f"({cols_src})"
        else:
            source = f"tuple(t.asnumpy() for t in {data}.tensors)"
        pipe = f"mindspore.dataset.NumpySlicesDataset({source}{col}, {', '.join(opts)})"
    else:
        cols = bound.get("__columns__") or repr(columns_for(2))
        if bound.get("__dict_source__") == "1":  # dict samples → one numpy column per key
            data = f"torch2ms.runtime.DictSource({data}, {cols})"
        # a Python sampler's indices drawn lazily, as torch does (MindSpore draws a whole epoch first)
        ctor = "mindspore.dataset.GeneratorDataset" if sampler in (None, "None") else "torch2ms.runtime.sampled_dataset"
        if shuffles_with_generator(bound):  # shuffled as torch does: RandomSampler(ds, generator=g), lazily
            ctor = "torch2ms.runtime.sampled_dataset"
            opts.append(f"generator={bound['generator']}")
        pipe = f"{ctor}({data}, column_names={cols}, {', '.join(opts)})"
    if literal(bs) is None:
        return pipe  # batch_size=None: torch yields single samples
    return f"{pipe}.batch({bs}, drop_remainder={drop})"


def _sampled_pipeline(bound: dict[str, str]) -> str:
    """A MindSpore dataset (a converted torchvision one) read through a sampler or a BatchSampler: the
    sampler goes to its source at run time (torch2ms.runtime.sampled_pipeline), then ``.batch()``."""
    if bound.get("collate_fn") not in (None, "None"):
        raise Unsupported(_("collate_fn= on a torchvision dataset: no MindSpore form"))
    args = [bound["dataset"]]
    batch_sampler = bound.get("batch_sampler")
    if batch_sampler not in (None, "None"):
        return f"torch2ms.runtime.sampled_pipeline({args[0]}, batch_sampler={batch_sampler})"
    args.append(f"sampler={bound['sampler']}")
    shuffle = bound.get("shuffle")
    if shuffle is not None and literal(shuffle) is not False and literal(shuffle) is not None:
        args.append(f"shuffle={shuffle}")
    pipe = f"torch2ms.runtime.sampled_pipeline({', '.join(args)})"
    bs = bound.get("batch_size", "1")
    if literal(bs) is None:
        return pipe
    return f"{pipe}.batch({bs}, drop_remainder={_flag(bound.get('drop_last'))})"


def _torch_style_loader(bound: dict[str, str], entry: Entry) -> str:
    keep = [
        n
        for n in entry.sig_names()
        if n in bound and n not in ("pin_memory", "pin_memory_device", "generator") and not n.startswith("__")
    ]
    args = [bound["dataset"]] + [f"{n}={bound[n]}" for n in keep if n != "dataset"]
    return f"mindspore.dataset.dataloader.DataLoader({', '.join(args)})"


# ---- torchvision datasets ---------------------------------------------------------------------


def _operations(first: str, transform: str | None) -> str:
    """The map's operation list: the decode step first, then the torchvision transform (a Compose is spliced)."""
    if transform is None or literal(transform) is None:
        return f"[{first}]"
    t = transform.strip()
    try:
        node = ast.parse(t, mode="eval").body
    except SyntaxError:
        node = None
    if (
        isinstance(node, ast.Call)
        and ast.unparse(node.func).endswith("transforms.Compose")
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.List)
    ):
        t = ast.unparse(node.args[0])
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip().rstrip(",")
        return f"[{first}, {inner}]" if inner else f"[{first}]"
    return f"[{first}, {t}]"  # one transform, or a Compose held in a name (a single op too)


def _dataset_pipeline(ctor: str, bound: dict[str, str], first: str) -> str:
    opts = [f"shuffle={_flag(bound.get('__shuffle__'))}"]
    workers = _workers(bound.get("__workers__"))
    if workers:
        opts.append(f"num_parallel_workers={workers}")
    ops = _operations(first, bound.get("transform"))
    pipe = f"{ctor[:-1]}{', ' if not ctor.endswith('(') else ''}{', '.join(opts)})"
    pipe += f".map(operations={ops}, input_columns='image')"
    target = bound.get("target_transform")
    if target is not None and literal(target) is not None:
        pipe += f".map(operations=[{target}], input_columns='label')"
    return pipe + f".map(operations=mindspore.dataset.transforms.TypeCast({INT32}), input_columns='label')"


def _no_download(bound: dict[str, str], name: str) -> None:
    if literal(bound.get("download", "False")) not in (False, None):
        raise Unsupported(
            _("download=True: MindSpore's {name} does not download; fetch the files first").format(name=name)
        )


@handler
def image_folder(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """ImageFolder(root, transform) → ImageFolderDataset(root, shuffle=False) + Decode(to_pil=True) first + int32 labels.

    ImageFolderDataset yields the encoded file bytes; decoding to PIL makes Resize/crops take
    torchvision's PIL path (same pixels). Classes are indexed in sorted folder order on both sides.
    """
    for arg in ("loader", "is_valid_file"):
        if bound.get(arg) not in (None, "None"):
            raise Unsupported(_("ImageFolder({arg}=...) has no ImageFolderDataset form").format(arg=arg))
    root = bound.get("root")
    if root is None:
        raise Unsupported(_("ImageFolder() needs a root"))
    return _dataset_pipeline(f"mindspore.dataset.ImageFolderDataset({root})", bound, DECODE)


def _usage(bound: dict[str, str]) -> str:
    train = bound.get("train", "True")
    v = literal(train)
    if v is True:
        return "'train'"
    if v is False:
        return "'test'"
    return f"('train' if {train} else 'test')"


@handler
def mnist(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """MNIST(root, train) → MnistDataset(root + '/MNIST/raw', usage) + ToPIL first + int32 labels."""
    return _binary_dataset(bound, "MNIST", "MnistDataset", "/MNIST/raw")


@handler
def cifar10(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """CIFAR10(root, train) → Cifar10Dataset(root + '/cifar-10-batches-bin', usage) + ToPIL first + int32 labels."""
    return _binary_dataset(bound, "CIFAR10", "Cifar10Dataset", "/cifar-10-batches-bin")


def fetched_root(bound: dict[str, str], release: str) -> str:
    """The dataset's root; with ``download=True`` (or a run-time flag) the runtime helper fetching the files first.

    MindSpore's readers never download: ``torch2ms.runtime.fetch_dataset`` fetches what torchvision fetches
    (CIFAR: the binary release the reader reads), skips files already there and returns the root.
    """
    root = bound["root"]
    flag = bound.get("download", "False")
    value = literal(flag)
    if value is not NOT_LITERAL and not value:
        return root
    extra = "" if value is True else f", download={flag}"
    return f"torch2ms.runtime.fetch_dataset({release!r}, {root}{extra})"


def _binary_dataset(bound: dict[str, str], torch_name: str, ms_name: str, subdir: str) -> str:
    """MindSpore reads the datasets' binary files from the folder torchvision downloads them to."""
    if bound.get("root") is None:
        raise Unsupported(_("{name}() needs a root").format(name=torch_name))
    root = fetched_root(bound, torch_name)
    ctor = f"mindspore.dataset.{ms_name}({root_folder(root, subdir)}, usage={_usage(bound)})"
    return with_arrays(bound, _dataset_pipeline(ctor, bound, TO_PIL))


def root_folder(root: str, subdir: str = "") -> str:
    """The folder below a dataset root: one path literal where the root is a literal
    (``'../data/MNIST/raw'``), else ``str(root) + '/MNIST/raw'`` (a root may be a ``Path``)."""
    value = literal(root)
    if isinstance(value, str):
        return repr(value.rstrip("/") + subdir if subdir else value)
    return f"str({root}) + {subdir!r}" if subdir else f"str({root})"


def with_arrays(bound: dict[str, str], pipeline: str) -> str:
    """Where the script reads torchvision's in-memory ``.data`` / ``.targets`` (the data-pipeline facts
    set ``__arrays__``): the pipeline given them, read from its files on first use."""
    if not bound.get("__arrays__"):
        return pipeline
    return f"torch2ms.runtime.with_torchvision_arrays({pipeline})"


# ---- torchvision transforms --------------------------------------------------------------------


@handler
def normalize(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """Normalize(mean, std) → vision.Normalize(mean, std, is_hwc=False): torchvision normalises CHW tensors."""
    if "mean" not in bound or "std" not in bound:
        raise Unsupported(_("Normalize() needs mean and std"))
    return f"mindspore.dataset.vision.Normalize({bound['mean']}, {bound['std']}, is_hwc=False)"


def _inter(src: str | None) -> str | None:
    if src is None:
        return None
    v = literal(src)
    if isinstance(v, int) and v in _INTER_INTS:
        return f"mindspore.dataset.vision.Inter.{_INTER_INTS[v]}"
    if v is not NOT_LITERAL:
        raise Unsupported(_("interpolation={value} has no vision.Inter form").format(value=src))
    return src  # InterpolationMode.X was converted to vision.Inter.X already


def _antialias(bound: dict[str, str]) -> None:
    if literal(bound.get("antialias", "True")) is False:
        raise Unsupported(
            _(
                "antialias=False only changes torchvision's tensor path; on PIL images (the converted pipeline) "
                "it is always on"
            )
        )


@handler
def resize(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """Resize(size, interpolation) → vision.Resize(size, interpolation) on the PIL image (same filter as torchvision)."""
    if bound.get("max_size") not in (None, "None"):
        raise Unsupported(_("Resize(max_size=...) has no vision.Resize form"))
    _antialias(bound)
    inter = _inter(bound.get("interpolation"))
    extra = f", {inter}" if inter else ""
    return f"mindspore.dataset.vision.Resize({bound['size']}{extra})"


@handler
def random_resized_crop(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """RandomResizedCrop(size, scale, ratio, interpolation) → vision.RandomResizedCrop (same arguments)."""
    _antialias(bound)
    parts = [bound["size"]]
    for k in ("scale", "ratio"):
        if k in bound:
            parts.append(f"{k}={bound[k]}")
    inter = _inter(bound.get("interpolation"))
    if inter:
        parts.append(f"interpolation={inter}")
    return f"mindspore.dataset.vision.RandomResizedCrop({', '.join(parts)})"


def _border(src: str | None) -> str | None:
    if src is None:
        return None
    v = literal(src)
    if isinstance(v, str) and v in _BORDERS:
        return f"mindspore.dataset.vision.Border.{_BORDERS[v]}"
    raise Unsupported(_("padding_mode={value} has no vision.Border form").format(value=src))


@handler
def random_crop(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """RandomCrop(size, padding, pad_if_needed, fill, padding_mode) → vision.RandomCrop (fill → fill_value)."""
    parts = [bound["size"]]
    for k, ms_k in (("padding", "padding"), ("pad_if_needed", "pad_if_needed"), ("fill", "fill_value")):
        if bound.get(k) not in (None, "None"):
            parts.append(f"{ms_k}={bound[k]}")
    border = _border(bound.get("padding_mode"))
    if border:
        parts.append(f"padding_mode={border}")
    return f"mindspore.dataset.vision.RandomCrop({', '.join(parts)})"


@handler
def pad(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """Pad(padding, fill, padding_mode) → vision.Pad(padding, fill_value, padding_mode)."""
    parts = [bound["padding"]]
    if "fill" in bound:
        parts.append(f"fill_value={bound['fill']}")
    border = _border(bound.get("padding_mode"))
    if border:
        parts.append(f"padding_mode={border}")
    return f"mindspore.dataset.vision.Pad({', '.join(parts)})"
