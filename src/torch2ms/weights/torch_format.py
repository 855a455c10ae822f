"""Read and write PyTorch checkpoint files without torch.

Reading goes through :class:`RestrictedUnpickler`: its ``find_class`` hands out only what rebuilds
tensors and plain containers (``torch._utils._rebuild_tensor_v2`` and friends, the ``torch.*Storage``
classes, ``collections.OrderedDict``, ``torch.Size`` and the dtypes), each replaced by a stand-in
defined here. Any other global (``os.system``, ``builtins.eval``, ``subprocess.Popen`` ...) raises
:class:`UnsafePickleError` naming it, before anything is called: nothing from the file is executed.

Tensors come back as :class:`TensorRef`: dtype, shape, stride and offset over a storage that is a
memory-mapped slice of the file (zip entries are stored uncompressed, so a storage is a plain byte
range). Nothing is read until :meth:`TensorRef.numpy` is called, and then only that tensor's pages.

Formats: the zip format (torch >= 1.6: ``<root>/data.pkl`` + ``<root>/data/<key>`` + ``byteorder``),
the legacy pickle stream (``_use_new_zipfile_serialization=False``: magic, protocol, sys_info, the
object pickle, the storage-key list, then each storage as an int64 element count + raw bytes), and
``.safetensors``.

bfloat16: numpy has no bfloat16, so a bf16 tensor is kept as its raw ``uint16`` bits with
``TensorRef.dtype == "bfloat16"``; the .ckpt writer stores those bits unchanged as MindSpore
``BFloat16`` (lossless), and :func:`bf16_to_float32` widens them when float values are needed.
"""

from __future__ import annotations

import io
import json
import math
import mmap
import pickle
import struct
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..i18n import _

__all__ = [
    "UnsafePickleError",
    "CheckpointFormatError",
    "TensorRef",
    "RestrictedUnpickler",
    "load_torch_file",
    "load_safetensors",
    "load_any",
    "bf16_to_float32",
    "float32_to_bf16",
    "save_torch_zip",
    "NP_DTYPES",
]


class UnsafePickleError(pickle.UnpicklingError):
    """The pickle asked for a global outside the tensor allow-list; nothing was executed."""


class CheckpointFormatError(ValueError):
    """The file is not a checkpoint this reader understands."""


# torch dtype name → (numpy dtype used to hold the bytes, storage class name)
NP_DTYPES: dict[str, tuple[str, str]] = {
    "float32": ("float32", "FloatStorage"),
    "float64": ("float64", "DoubleStorage"),
    "float16": ("float16", "HalfStorage"),
    "bfloat16": ("uint16", "BFloat16Storage"),
    "int64": ("int64", "LongStorage"),
    "int32": ("int32", "IntStorage"),
    "int16": ("int16", "ShortStorage"),
    "int8": ("int8", "CharStorage"),
    "uint8": ("uint8", "ByteStorage"),
    "bool": ("bool", "BoolStorage"),
    "complex64": ("complex64", "ComplexFloatStorage"),
    "complex128": ("complex128", "ComplexDoubleStorage"),
}
_ITEMSIZE = {name: np.dtype(np_name).itemsize for name, (np_name, _) in NP_DTYPES.items()}
_STORAGE_DTYPE = {storage: name for name, (_, storage) in NP_DTYPES.items()}
_TORCH_DTYPE_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "cfloat": "complex64",
    "cdouble": "complex128",
}


def bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    """Raw bfloat16 bits (uint16) → float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16(values: np.ndarray) -> np.ndarray:
    """float32 → bfloat16 bits (uint16), round-to-nearest-even as torch does."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = u + (0x7FFF + ((u >> 16) & 1))
    out = (rounded >> 16).astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():
        out[nan] = 0x7FC0
    return out


# ---------------------------------------------------------------------------------------------
# Stand-ins the unpickler hands out


@dataclass(frozen=True)
class DType:
    name: str  # canonical torch dtype name, e.g. "float32"


@dataclass(frozen=True)
class StorageType:
    name: str  # "FloatStorage", "UntypedStorage", ...

    @property
    def dtype(self) -> str:
        return _STORAGE_DTYPE.get(self.name, "uint8")


@dataclass
class Storage:
    """One serialized storage: ``numel`` elements of ``dtype`` at a byte range of the file."""

    dtype: str
    key: str
    numel: int
    buffer: Callable[[], memoryview] | None = None  # the raw bytes, resolved lazily
    byteorder: str = "little"
    span: tuple[str, int] | None = None  # (file path, byte offset) when stored raw in the file

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self.dtype]


@dataclass
class TensorRef:
    """A tensor in a checkpoint, not yet read."""

    storage: Storage
    offset: int  # in elements of the storage dtype
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str = ""  # torch dtype name ("bfloat16" arrays hold uint16 bits)

    def __post_init__(self) -> None:
        if not self.dtype:
            self.dtype = self.storage.dtype
        check_layout(self)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * _ITEMSIZE[self.dtype]

    def file_range(self) -> tuple[str, int, int] | None:
        """(path, byte offset, byte count) of this tensor in the file, when its bytes there are
        exactly its C-order little-endian contents (the writer then copies file → file in the kernel)."""
        st = self.storage
        if st.span is None or st.byteorder != "little" or self.dtype != st.dtype:
            return None
        expect = 1
        for dim, stride in zip(reversed(self.shape), reversed(self.stride)):
            if dim != 1 and stride != expect:
                return None
            expect *= dim
        if (self.offset + expect) > st.numel:
            return None
        return st.span[0], st.span[1] + self.offset * st.itemsize, self.nbytes

    def numpy(self) -> np.ndarray:
        """A read-only view of the file's bytes (no copy) when the layout allows; bf16 as uint16 bits."""
        np_dtype = np.dtype(NP_DTYPES[self.dtype][0])
        if self.storage.byteorder == "big":
            np_dtype = np_dtype.newbyteorder(">")
        if self.storage.buffer is None:
            raise CheckpointFormatError(_("storage {key} has no data in the file").format(key=self.storage.key))
        buf = self.storage.buffer()
        item = np_dtype.itemsize
        if any(s == 0 for s in self.shape):
            return np.zeros(self.shape, dtype=np_dtype.newbyteorder("="))
        arr = np.ndarray(
            self.shape,
            dtype=np_dtype,
            buffer=buf,
            offset=self.offset * self.storage.itemsize,
            strides=tuple(s * item for s in self.stride),
        )
        if self.storage.byteorder == "big":
            arr = arr.astype(np_dtype.newbyteorder("="))
        return arr

    def __repr__(self) -> str:
        return f"TensorRef({self.dtype}, shape={self.shape})"


# A tensor may span more bytes than its storage only through zero strides (an expanded view); beyond
# this many bytes more than the file holds, a declared shape is taken for a corrupt or hostile one.
MAX_EXPANSION_BYTES = 256 << 20
MAX_RANK = 64


def check_layout(t: TensorRef) -> None:
    """Refuse a tensor whose shape, strides or offset reach outside its storage, before anything is read."""
    shape, stride = t.shape, t.stride
    if t.dtype not in _ITEMSIZE:
        raise CheckpointFormatError(_("unsupported tensor dtype {dtype!r}").format(dtype=t.dtype))
    if len(shape) > MAX_RANK or len(stride) != len(shape):
        raise CheckpointFormatError(
            _("tensor of shape {shape!r:.80} has strides {stride!r:.80} (rank mismatch)").format(
                shape=shape, stride=stride
            )
        )
    if any(d < 0 for d in shape) or any(s < 0 for s in stride) or t.offset < 0 or t.storage.numel < 0:
        raise CheckpointFormatError(
            _(
                "tensor with a negative size, stride or offset (shape {shape!r:.80}, stride "
                "{stride!r:.80}, offset {offset}, storage of {numel} elements)"
            ).format(shape=shape, stride=stride, offset=t.offset, numel=t.storage.numel)
        )
    if 0 in shape:
        return
    item = _ITEMSIZE[t.dtype]
    last = t.offset * t.storage.itemsize + (1 + sum((d - 1) * s for d, s in zip(shape, stride))) * item
    if last > t.storage.numel * t.storage.itemsize:
        raise CheckpointFormatError(
            _(
                "tensor of shape {shape!r:.80} (stride {stride!r:.80}, offset {offset}) reaches byte "
                "{last} of a {storage_bytes}-byte storage"
            ).format(
                shape=shape,
                stride=stride,
                offset=t.offset,
                last=last,
                storage_bytes=t.storage.numel * t.storage.itemsize,
            )
        )
    if math.prod(shape) * item > t.storage.numel * t.storage.itemsize + MAX_EXPANSION_BYTES:
        raise CheckpointFormatError(
            _(
                "tensor of shape {shape!r:.80} would be {nbytes} bytes, expanded from a "
                "{storage_bytes}-byte storage; refusing a likely corrupt shape"
            ).format(shape=shape, nbytes=math.prod(shape) * item, storage_bytes=t.storage.numel * t.storage.itemsize)
        )


def _rebuild_tensor(storage: Storage, storage_offset: int, size, stride) -> TensorRef:
    if not isinstance(storage, Storage):
        raise CheckpointFormatError(
            _("tensor rebuilt from {type}, expected a storage").format(type=type(storage).__name__)
        )
    return TensorRef(storage, int(storage_offset), tuple(map(int, size)), tuple(map(int, stride)))


def _rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None
) -> TensorRef:
    if not isinstance(storage, Storage):  # _rebuild_tensor inlined: this runs once per tensor
        raise CheckpointFormatError(
            _("tensor rebuilt from {type}, expected a storage").format(type=type(storage).__name__)
        )
    return TensorRef(storage, int(storage_offset), tuple(map(int, size)), tuple(map(int, stride)), storage.dtype)


def _rebuild_tensor_v3(
    storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None
) -> TensorRef:
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    if isinstance(dtype, DType) and dtype.name in NP_DTYPES:
        t.dtype = dtype.name
        check_layout(t)
    return t


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None) -> Any:
    return data


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state) -> Any:
    return data


class _Size(tuple):
    """torch.Size stand-in: a plain tuple."""


_TORCH_UTILS = {
    "_rebuild_tensor": _rebuild_tensor,
    "_rebuild_tensor_v2": _rebuild_tensor_v2,
    "_rebuild_tensor_v3": _rebuild_tensor_v3,
    "_rebuild_parameter": _rebuild_parameter,
    "_rebuild_parameter_with_state": _rebuild_parameter_with_state,
}


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles torch checkpoints; refuses every global that is not on the tensor allow-list."""

    def __init__(self, file, persistent_load: Callable[[Any], Any]):
        super().__init__(file)
        self.persistent_load = persistent_load  # called directly by the C unpickler: no extra frame

    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils" and name in _TORCH_UTILS:
            return _TORCH_UTILS[name]
        if module in ("torch", "torch.storage") and (
            name.endswith("Storage") and (name in _STORAGE_DTYPE or name in ("UntypedStorage", "TypedStorage"))
        ):
            return StorageType(name)
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        if module == "torch" and name == "Size":
            return _Size
        if module == "torch":
            canon = _TORCH_DTYPE_ALIASES.get(name, name)
            if canon in NP_DTYPES:
                return DType(canon)
        # Protocol-2 pickles name Python 2 modules (__builtin__.eval); report the Python 3 name.
        import _compat_pickle

        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        raise UnsafePickleError(
            _(
                "refused to load global '{module}.{name}': only tensor data is allowed in a checkpoint "
                "(this file would run code when unpickled; nothing was executed)"
            ).format(module=module, name=name)
        )


# ---------------------------------------------------------------------------------------------
# Readers

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def _mmap(path: Path) -> mmap.mmap:
    with open(path, "rb") as fh:
        if Path(path).stat().st_size == 0:
            raise CheckpointFormatError(_("{path}: empty file").format(path=path))
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


_CDIR = struct.Struct("<IHHHHHHIIIHHHHHII")  # a zip central-directory file header (46 bytes)
_EOCD = struct.Struct("<IHHHHIIH")  # end of central directory (22 bytes)


def _zip_index(mm: mmap.mmap) -> dict[str, tuple[int, int, int, int]] | None:
    """name → (local header offset, size, compression method, crc32), straight from the central
    directory: ~10x faster than ``zipfile.ZipFile`` on a checkpoint's hundreds of entries.
    None (``zipfile`` then reads it) for zip64, multi-disk, prepended data or anything unusual."""
    eocd = mm.rfind(b"PK\x05\x06", max(0, len(mm) - 65557))
    if eocd < 0 or eocd + _EOCD.size > len(mm):
        return None
    _sig, disk, cd_disk, _entries, count, cd_size, cd_off, _comment = _EOCD.unpack_from(mm, eocd)
    cd_end = eocd
    if eocd >= 20 and mm[eocd - 20 : eocd - 16] == b"PK\x06\x07":  # zip64 locator (torch always writes one)
        (z64,) = struct.unpack_from("<Q", mm, eocd - 12)
        if z64 + 56 > eocd or mm[z64 : z64 + 4] != b"PK\x06\x06":
            return None
        disk, cd_disk, _, count, cd_size, cd_off = struct.unpack_from("<IIQQQQ", mm, z64 + 16)
        cd_end = z64
    if disk or cd_disk or cd_off + cd_size != cd_end:
        return None
    out: dict[str, tuple[int, int, int, int]] = {}
    pos = cd_off
    for _ in range(count):
        if pos + _CDIR.size > cd_end:
            return None
        (sig, _, _, flags, method, _, _, crc, _, size, name_len, extra_len, comment_len, _, _, _, offset) = (
            _CDIR.unpack_from(mm, pos)
        )
        if sig != 0x02014B50 or 0xFFFFFFFF in (size, offset):
            return None
        name = mm[pos + 46 : pos + 46 + name_len].decode("utf-8" if flags & 0x800 else "cp437")
        out[name] = (offset, size, method, crc)
        pos += 46 + name_len + extra_len + comment_len
    return out


def _zip_data_start(mm: mmap.mmap, name: str, header_offset: int, size: int) -> int:
    """Where a stored entry's bytes begin (after its local header, whose extra field may differ
    from the central directory's)."""
    if header_offset + 30 > len(mm) or struct.unpack_from("<I", mm, header_offset)[0] != 0x04034B50:
        raise CheckpointFormatError(_("zip entry {name}: bad local header").format(name=name))
    name_len, extra_len = struct.unpack_from("<HH", mm, header_offset + 26)
    data = header_offset + 30 + name_len + extra_len
    if data + size > len(mm):
        raise CheckpointFormatError(
            _("zip entry {name}: truncated ({end} > {size} bytes)").format(name=name, end=data + size, size=len(mm))
        )
    return data


# torch stores every entry uncompressed. A compressed entry is inflated in memory, so its declared size
# must be plausible: deflate rarely beats 10:1 on tensor data, and zip bombs reach 1000:1.
MAX_INFLATE_RATIO = 50
MAX_INFLATED_BYTES = 1 << 30


def _inflate(zf: zipfile.ZipFile, name: str) -> bytes:
    info = zf.getinfo(name)
    if info.file_size > max(MAX_INFLATE_RATIO * info.compress_size, 1 << 20) or info.file_size > MAX_INFLATED_BYTES:
        raise CheckpointFormatError(
            _(
                "zip entry {name} declares {file_size} bytes compressed into {compress_size}: refusing a "
                "likely zip bomb (torch never compresses a checkpoint; re-save it with torch.save)"
            ).format(name=name, file_size=info.file_size, compress_size=info.compress_size)
        )
    return zf.read(name)  # zipfile stops at the declared size and checks the CRC


def _load_zip(path: Path, mm: mmap.mmap) -> Any:
    index = _zip_index(mm)
    zf = None
    if index is None:
        zf = zipfile.ZipFile(path)
        index = {i.filename: (i.header_offset, i.file_size, i.compress_type, i.CRC) for i in zf.infolist()}

    def read(name: str) -> memoryview:
        nonlocal zf
        offset, size, method, _crc = index[name]
        if method == zipfile.ZIP_STORED:
            lo = _zip_data_start(mm, name, offset, size)
            return memoryview(mm)[lo : lo + size]
        zf = zf or zipfile.ZipFile(path)
        return memoryview(_inflate(zf, name))  # compressed (rare): read this entry only

    pkl = next((n for n in index if n.endswith("data.pkl") and n.count("/") <= 1), None)
    if pkl is None:
        raise CheckpointFormatError(_("{path}: zip file without data.pkl — not a torch checkpoint").format(path=path))
    root = pkl[: -len("data.pkl")]
    byteorder = "little"
    if root + "byteorder" in index:
        byteorder = bytes(read(root + "byteorder")).decode().strip() or "little"
    data = bytes(read(pkl))
    if zlib.crc32(data) != index[pkl][3]:
        raise CheckpointFormatError(_("{path}: {pkl} is corrupt (CRC mismatch)").format(path=path, pkl=pkl))
    storages: dict[str, Storage] = {}
    spath = str(path)

    def persistent_load(pid: Any) -> Storage:
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise UnsafePickleError(_("unsupported persistent id {pid!r:.80}").format(pid=pid))
        _kind, stype, key, _location, numel = pid[:5]
        numel = int(numel)
        st = storages.get(key)
        if st is None:
            dtype = (
                stype.dtype if isinstance(stype, StorageType) else (stype.name if isinstance(stype, DType) else "uint8")
            )
            name = f"{root}data/{key}"
            entry = index.get(name)
            if entry is None:
                raise CheckpointFormatError(_("{path}: storage data/{key} missing").format(path=path, key=key))
            if numel < 0:
                raise CheckpointFormatError(
                    _("{path}: storage data/{key} declares {numel} elements").format(path=path, key=key, numel=numel)
                )
            if entry[1] < numel * _ITEMSIZE[dtype]:
                raise CheckpointFormatError(
                    _("{path}: storage data/{key} holds {nbytes} bytes, short of {numel} {dtype} elements").format(
                        path=path, key=key, nbytes=entry[1], numel=numel, dtype=dtype
                    )
                )
            if entry[2] == zipfile.ZIP_STORED:
                lo = _zip_data_start(mm, name, entry[0], entry[1])
                hi = lo + entry[1]
                buf, span = (lambda: memoryview(mm)[lo:hi]), (spath, lo)
            else:
                buf, span = (lambda: read(name)), None
            st = storages[key] = Storage(dtype, str(key), int(numel), buf, byteorder, span)
        return st

    return RestrictedUnpickler(io.BytesIO(data), persistent_load).load()


class _MMFile(io.RawIOBase):
    """A file object over an mmap (io.BytesIO(mm) would copy the whole file)."""

    def __init__(self, mm: mmap.mmap) -> None:
        self.mm, self.pos = mm, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = min(len(b), len(self.mm) - self.pos)
        b[:n] = self.mm[self.pos : self.pos + n]
        self.pos += n
        return n

    def read(self, n: int | None = -1) -> bytes:
        end = len(self.mm) if n is None or n < 0 else min(len(self.mm), self.pos + n)
        out = self.mm[self.pos : end]
        self.pos = end
        return out

    def readline(self, limit: int | None = -1) -> bytes:
        end = self.mm.find(b"\n", self.pos)
        end = len(self.mm) if end < 0 else end + 1
        if limit is not None and limit >= 0:
            end = min(end, self.pos + limit)
        out = self.mm[self.pos : end]
        self.pos = end
        return out


class _LegacyStorages:
    """The storages a legacy pickle refers to (persistent ids), and the views into them."""

    def __init__(self, little: bool) -> None:
        self.little = little
        self.storages: dict[str, Storage] = {}
        self.views: dict[str, tuple[str, int, int]] = {}

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise UnsafePickleError(_("unsupported persistent id {pid!r:.80}").format(pid=pid))
        _kind, stype, root_key, _location, numel = pid[:5]
        view_metadata = pid[5] if len(pid) > 5 else None
        root_key = str(root_key)
        if root_key not in self.storages:
            dtype = stype.dtype if isinstance(stype, StorageType) else "uint8"
            self.storages[root_key] = Storage(dtype, root_key, int(numel), None, "little" if self.little else "big")
        if view_metadata is None:
            return self.storages[root_key]
        view_key, offset, view_size = view_metadata
        root = self.storages[root_key]
        if not 0 <= int(offset) <= int(offset) + int(view_size) <= root.numel:
            raise CheckpointFormatError(
                _("storage view {view_key} reaches outside storage {root_key}").format(
                    view_key=view_key, root_key=root_key
                )
            )
        self.views[str(view_key)] = (root_key, int(offset), int(view_size))
        view = Storage(root.dtype, str(view_key), int(view_size), None, root.byteorder)
        return self.storages.setdefault(str(view_key), view)

    def read_data(self, path: Path, mm: mmap.mmap, pos: int, keys: list[Any]) -> None:
        """Each listed storage's bytes follow the pickles: its element count, then the data."""
        for key in map(str, keys):
            if pos + 8 > len(mm):
                raise CheckpointFormatError(_("{path}: truncated before storage {key}").format(path=path, key=key))
            (numel,) = struct.unpack_from("<q" if self.little else ">q", mm, pos)
            st = self.storages.get(key)
            if st is None:
                raise CheckpointFormatError(_("{path}: storage {key} listed but never used").format(path=path, key=key))
            lo = pos + 8
            hi = lo + numel * st.itemsize
            if numel < st.numel or hi > len(mm):
                raise CheckpointFormatError(
                    _(
                        "{path}: storage {key} holds {numel} elements where {used} are used, ending at byte {hi} "
                        "of {size} (truncated or corrupt)"
                    ).format(path=path, key=key, numel=numel, used=st.numel, hi=hi, size=len(mm))
                )
            st.buffer = lambda lo=lo, hi=hi: memoryview(mm)[lo:hi]
            st.span = (str(path), lo)
            pos = hi
        for view_key, (root_key, offset, size) in self.views.items():
            root = self.storages[root_key]

            def view_buf(root: Storage = root, offset: int = offset, size: int = size) -> memoryview:
                assert root.buffer is not None  # every listed storage got its bytes above
                return root.buffer()[offset * root.itemsize : (offset + size) * root.itemsize]

            self.storages[view_key].buffer = view_buf


def _load_legacy(path: Path, mm: mmap.mmap) -> Any:
    fh = _MMFile(mm)

    def plain(obj_pid: Any) -> Any:
        raise UnsafePickleError(_("unexpected persistent id in the legacy header"))

    magic = RestrictedUnpickler(fh, plain).load()
    if magic != _LEGACY_MAGIC:
        raise CheckpointFormatError(
            _("{path}: not a torch checkpoint (no zip archive, no legacy magic number)").format(path=path)
        )
    protocol = RestrictedUnpickler(fh, plain).load()
    if protocol != 1001:
        raise CheckpointFormatError(
            _("{path}: legacy protocol {protocol} not supported").format(path=path, protocol=protocol)
        )
    sys_info = RestrictedUnpickler(fh, plain).load()
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    storages = _LegacyStorages(little)
    result = RestrictedUnpickler(fh, storages.persistent_load).load()
    keys = RestrictedUnpickler(fh, plain).load()
    if not isinstance(keys, list):
        raise CheckpointFormatError(
            _("{path}: legacy storage list is a {type}").format(path=path, type=type(keys).__name__)
        )
    storages.read_data(path, mm, fh.pos, keys)
    return result


def load_torch_file(path: str | Path) -> Any:
    """Unpickle a .pth/.pt/.bin checkpoint (zip or legacy) into plain containers of TensorRef."""
    path = Path(path)
    mm = _mmap(path)
    if mm[:4] == b"PK\x03\x04":
        return _load_zip(path, mm)
    if mm[:2] == b"\x80\x02" or mm[:1] == b"\x80":
        return _load_legacy(path, mm)
    if mm[:512].find(b"ustar") >= 0 or len(mm) > 262 and mm[257:262] == b"ustar":
        raise CheckpointFormatError(
            _(
                "{path}: the tar-based torch format (torch < 0.4) is not supported; re-save it with a modern torch"
            ).format(path=path)
        )
    raise CheckpointFormatError(
        _("{path}: not a torch checkpoint (neither a zip archive nor a legacy pickle)").format(path=path)
    )


_SAFETENSORS_DTYPES = {
    "F32": "float32",
    "F64": "float64",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
}


MAX_SAFETENSORS_HEADER = 100 << 20  # the format's own limit


def _safetensors_header(path: Path, mm: mmap.mmap) -> tuple[dict[str, dict], int]:
    """The header's tensor entries and where the data begin, each checked against the file's real size."""
    if len(mm) < 8:
        raise CheckpointFormatError(_("{path}: too short for a safetensors file").format(path=path))
    (header_len,) = struct.unpack_from("<Q", mm, 0)
    if header_len > min(len(mm) - 8, MAX_SAFETENSORS_HEADER):
        raise CheckpointFormatError(
            _("{path}: safetensors header of {header_len} bytes in a {size}-byte file").format(
                path=path, header_len=header_len, size=len(mm)
            )
        )
    try:
        header = json.loads(bytes(mm[8 : 8 + header_len]))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointFormatError(
            _("{path}: safetensors header is not JSON ({exc})").format(path=path, exc=exc)
        ) from exc
    if not isinstance(header, dict):
        raise CheckpointFormatError(_("{path}: safetensors header is not a JSON object").format(path=path))
    base, size = 8 + header_len, len(mm) - 8 - header_len
    entries = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        ok = (
            isinstance(meta, dict)
            and isinstance(meta.get("shape"), list)
            and isinstance(meta.get("data_offsets"), list)
        )
        shape, offsets = (meta.get("shape"), meta.get("data_offsets")) if ok else ([], [])
        ok = ok and all(isinstance(d, int) and d >= 0 for d in shape) and len(shape) <= MAX_RANK
        ok = (
            ok
            and len(offsets) == 2
            and all(isinstance(o, int) for o in offsets)
            and 0 <= offsets[0] <= offsets[1] <= size
        )
        dtype = _SAFETENSORS_DTYPES.get(meta.get("dtype")) if ok else None
        if dtype is None or offsets[1] - offsets[0] != math.prod(shape) * _ITEMSIZE[dtype]:
            raise CheckpointFormatError(
                _(
                    "{path}: safetensors entry {name!r:.80} has a bad dtype, shape or data offsets ({entry}; "
                    "{size} data bytes in the file)"
                ).format(path=path, name=name, entry=json.dumps(meta)[:160], size=size)
            )
        entries[name] = dict(meta, dtype=dtype)
    return entries, base


def load_safetensors(path: str | Path) -> dict[str, TensorRef]:
    """A .safetensors file → {name: TensorRef} over a memory map.

    The header (names, dtypes, shapes, offsets) is checked against the file's size here, then by the
    ``safetensors`` package when it is installed; the data are memory-mapped byte ranges, so bf16
    (which ``safetensors.numpy`` cannot return) is handled like every other dtype.
    """
    path = Path(path)
    mm = _mmap(path)
    entries, base = _safetensors_header(path, mm)
    names = list(entries)
    try:
        from safetensors import safe_open
    except ImportError:
        pass
    else:
        with safe_open(str(path), framework="numpy") as sf:  # validates the file; gives the key order
            names = list(sf.keys())
    out: dict[str, TensorRef] = {}
    for name in names:
        meta = entries[name]
        dtype = meta["dtype"]
        lo, hi = meta["data_offsets"]
        shape = tuple(meta["shape"])
        st = Storage(
            dtype,
            name,
            (hi - lo) // _ITEMSIZE[dtype],
            (lambda lo=lo, hi=hi: memoryview(mm)[base + lo : base + hi]),
            span=(str(path), base + lo),
        )
        stride = tuple(math.prod(shape[i + 1 :]) for i in range(len(shape)))
        out[name] = TensorRef(st, 0, shape, stride)
    return out


# What a malformed file can make the readers raise (the unpickler calls our stand-ins with whatever
# arguments the file holds). UnsafePickleError is not among them: it says what was refused.
_MALFORMED = (
    pickle.UnpicklingError,
    EOFError,
    struct.error,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    OverflowError,
    RecursionError,
    MemoryError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
)


def sniff_format(path: str | Path) -> str:
    """What the file's first bytes say it is: "zip", "pickle", "safetensors" or "unknown"."""
    with open(path, "rb") as fh:
        head = fh.read(16)
    if head[:4] == b"PK\x03\x04":
        return "zip"
    if head[:1] == b"\x80":
        return "pickle"
    if len(head) >= 9 and head[8:9] == b"{":
        return "safetensors"
    return "unknown"


def load_any(path: str | Path) -> Any:
    """Any supported checkpoint file → its object tree (dicts/lists of TensorRef).

    The format is told by the file's content, not its name (a pickle renamed .safetensors is still
    read by the restricted unpickler). Whatever a malformed file makes the readers raise becomes one
    :class:`CheckpointFormatError` naming the file; :class:`UnsafePickleError` passes through.
    """
    path = Path(path)
    try:
        kind = sniff_format(path)
        if kind == "safetensors" or (kind == "unknown" and path.suffix == ".safetensors"):
            return load_safetensors(path)
        return load_torch_file(path)
    except UnsafePickleError:
        raise
    except CheckpointFormatError as exc:
        if str(path) in str(exc):
            raise
        raise CheckpointFormatError(_("{path}: {exc}").format(path=path, exc=exc)) from exc
    except _MALFORMED as exc:
        raise CheckpointFormatError(
            _("{path}: malformed checkpoint ({type}: {error})").format(
                path=path, type=type(exc).__name__, error=str(exc)[:200]
            )
        ) from exc
    except Exception as exc:
        if type(exc).__name__ == "SafetensorError":
            raise CheckpointFormatError(
                _("{path}: malformed safetensors file ({error})").format(path=path, error=str(exc)[:200])
            ) from exc
        raise


# ---------------------------------------------------------------------------------------------
# Writer: a state dict in torch's zip format, readable by torch.load(weights_only=True)


def _pk_str(s: str) -> bytes:
    b = s.encode("utf-8")
    return b"X" + struct.pack("<I", len(b)) + b


def _pk_int(i: int) -> bytes:
    if 0 <= i < 256:
        return b"K" + bytes([i])
    if 0 <= i < 65536:
        return b"M" + struct.pack("<H", i)
    if -(2**31) <= i < 2**31:
        return b"J" + struct.pack("<i", i)
    raw = i.to_bytes((i.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def _pk_tuple(items: Iterable[bytes]) -> bytes:
    return b"(" + b"".join(items) + b"t"


def _global(module: str, name: str) -> bytes:
    return b"c" + f"{module}\n{name}\n".encode()


def save_torch_zip(
    state: Mapping[str, np.ndarray | tuple[str, np.ndarray]], path: str | Path, root: str = "archive"
) -> None:
    """Write ``{name: array}`` as a torch zip checkpoint (an OrderedDict of tensors), without torch.

    A value may be ``("bfloat16", uint16_bits)`` to write a bfloat16 tensor. Each array is written
    straight into its own stored (uncompressed, 64-byte aligned) zip entry, one at a time.
    """
    path = Path(path)
    entries: list[tuple[str, str, np.ndarray]] = []
    pkl = [b"\x80\x02", _global("collections", "OrderedDict"), b")R", b"("]
    for i, (name, value) in enumerate(state.items()):
        dtype, arr = value if isinstance(value, tuple) else (None, value)
        arr = np.asarray(arr)
        if dtype is None:
            dtype = str(arr.dtype)
        if dtype not in NP_DTYPES:
            raise CheckpointFormatError(
                _("{name}: dtype {dtype} cannot be written to a torch checkpoint").format(name=name, dtype=dtype)
            )
        entries.append((str(i), dtype, arr))
        pkl.append(_pk_str(name) + _tensor_pickle(str(i), NP_DTYPES[dtype][1], arr))
    pkl.append(b"u.")
    tmp = path.with_name(path.name + ".tmp")
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            _add_stored(zf, f"{root}/data.pkl", b"".join(pkl))
            _add_stored(zf, f"{root}/byteorder", b"little")
            for key, dtype, arr in entries:
                np_dtype = np.dtype(NP_DTYPES[dtype][0]).newbyteorder("<")
                _add_stored(zf, f"{root}/data/{key}", np.asarray(arr, dtype=np_dtype))
            _add_stored(zf, f"{root}/version", b"3\n")
    except BaseException:
        tmp.unlink(missing_ok=True)  # never a half-written file left behind
        raise
    tmp.replace(path)


def _tensor_pickle(key: str, storage_cls: str, arr: np.ndarray) -> bytes:
    """The pickle of one tensor as torch writes it: ``_rebuild_tensor_v2(storage, 0, shape, stride, ...)``."""
    shape = arr.shape
    stride = tuple(int(np.prod(shape[j + 1 :], dtype=np.int64)) for j in range(len(shape)))
    storage = [_pk_str("storage"), _global("torch", storage_cls), _pk_str(key), _pk_str("cpu"), _pk_int(int(arr.size))]
    pid = _pk_tuple(storage) + b"Q"
    fields = [
        pid,
        _pk_int(0),
        _pk_tuple(_pk_int(int(s)) for s in shape),
        _pk_tuple(_pk_int(s) for s in stride),
        b"\x89",
        _global("collections", "OrderedDict") + b")R",
    ]
    return _global("torch._utils", "_rebuild_tensor_v2") + _pk_tuple(fields) + b"R"


def _add_stored(zf: zipfile.ZipFile, name: str, data: bytes | np.ndarray) -> None:
    """One uncompressed zip entry whose data starts 64-byte aligned (as torch writes them)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    nbytes = data.nbytes if isinstance(data, np.ndarray) else len(data)
    info.file_size = nbytes
    assert zf.fp is not None
    fixed = zf.fp.tell() + 30 + len(info.filename.encode())
    pad = (-(fixed + 4)) % 64
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    with zf.open(info, "w", force_zip64=nbytes > 0x7FFFFFFF) as out:
        if isinstance(data, np.ndarray):
            flat = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
            chunk = 1 << 24
            for lo in range(0, flat.size, chunk):
                out.write(flat[lo : lo + chunk].data)
        else:
            out.write(data)
