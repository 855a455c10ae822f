"""MindSpore .ckpt files: a streaming writer and a reader, numpy only.

A .ckpt is one protobuf ``Checkpoint`` message (mindspore/train/checkpoint.proto)::

    message Checkpoint { message Value { required string tag = 1; oneof value { TensorProto tensor = 2; ... } }
                         repeated Value value = 1; }
    message TensorProto { repeated int64 dims = 1; required string tensor_type = 2; required bytes tensor_content = 3; }

A repeated field serializes as the concatenation of its elements, so the file can be written one
parameter at a time, each tensor's bytes going straight from the (memory-mapped) source into the
file: memory stays at one tensor at most. ``mindspore.save_checkpoint`` writes exactly these bytes
(one ``Value`` per parameter, split into several with the same tag above 512 MiB); the tests check
that both writers give byte-identical files and that ``mindspore.load_checkpoint`` reads ours.
:func:`save_with_mindspore` is the reference path through ``mindspore.save_checkpoint`` itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

__all__ = ["MS_TYPES", "write_ckpt", "read_ckpt", "save_with_mindspore"]

# numpy / torch dtype name → MindSpore tensor_type string
MS_TYPES = {
    "float32": "Float32", "float16": "Float16", "float64": "Float64", "bfloat16": "BFloat16",
    "int64": "Int64", "int32": "Int32", "int16": "Int16", "int8": "Int8", "uint8": "UInt8",
    "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "bool": "Bool",
    "complex64": "Complex64", "complex128": "Complex128",
}
_NP_OF_MS = {v: k for k, v in MS_TYPES.items()}
SLICE_BYTES = 512 * 1024 * 1024  # mindspore.train.serialization.SLICE_SIZE (KiB) * 1024


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _len_field(field: int, payload_len: int) -> bytes:
    return _varint((field << 3) | 2) + _varint(payload_len)


def _value_prefix(name: str, dims: tuple[int, ...], tensor_type: str, content_len: int) -> bytes:
    """Everything of one ``Value`` message up to (not including) its tensor_content bytes."""
    tp = b"".join(_varint(1 << 3) + _varint(d & 0xFFFFFFFFFFFFFFFF) for d in dims)
    tt = tensor_type.encode()
    tp += _len_field(2, len(tt)) + tt + _len_field(3, content_len)
    tensor_len = len(tp) + content_len
    tag = name.encode("utf-8")
    value = _len_field(1, len(tag)) + tag + _len_field(2, tensor_len) + tp
    return _len_field(1, len(value) + content_len) + value


def _slices(arr: np.ndarray) -> list[np.ndarray]:
    # The same split mindspore.save_checkpoint does (np.array_split along axis 0).
    size_kib = arr.nbytes / 1024
    if size_kib > SLICE_BYTES // 1024:
        return np.array_split(arr, int(np.ceil(size_kib / (SLICE_BYTES // 1024))))
    return [arr]


def _copy_range(src_fd: int, dst_fd: int, offset: int, count: int) -> int:
    """Copy ``count`` bytes at ``offset`` of src to dst's position, in the kernel when possible."""
    done = 0
    try:
        while done < count:
            n = os.copy_file_range(src_fd, dst_fd, count - done, offset + done)
            if n == 0:
                break
            done += n
    except OSError:
        pass  # EXDEV / ENOSYS / EINVAL on some filesystems: fall back below
    while done < count:
        chunk = os.pread(src_fd, min(1 << 24, count - done), offset + done)
        if not chunk:
            raise OSError(f"unexpected end of source file at byte {offset + done}")
        done += os.write(dst_fd, chunk)
    return done


def write_ckpt(items: Iterable[tuple], path: str | Path) -> int:
    """Stream ``(name, array or shape, dtype_name[, file_range])`` items into a .ckpt; returns the bytes written.

    ``dtype_name`` is the logical dtype ("bfloat16" for uint16 bit arrays; else the array's own).
    ``file_range`` = ``(source path, byte offset, byte count)`` says the array's C-order bytes lie
    at that place of a file: they are then copied file → file by the kernel (``copy_file_range``)
    without passing through this process's memory. Written to ``path.tmp`` then renamed, so a
    reader never sees half a file.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    total = 0
    sources: dict[str, int] = {}
    try:
        with open(tmp, "wb", buffering=0) as fh:
            for item in items:
                total += _write_one(fh, item, sources)
    finally:
        for fd in sources.values():
            os.close(fd)
    tmp.replace(path)
    return total


def _write_one(fh, item: tuple, sources: dict[str, int]) -> int:
    name, arr, dtype = item[:3]
    file_range = item[3] if len(item) > 3 else None
    total = 0
    tensor_type = MS_TYPES.get(dtype)
    if tensor_type is None:
        raise ValueError(f"{name}: dtype {dtype} has no MindSpore checkpoint type")
    if file_range is not None and file_range[2] <= SLICE_BYTES:
        src, offset, count = file_range
        if src not in sources:
            sources[src] = os.open(src, os.O_RDONLY)
        shape = arr if isinstance(arr, tuple) else arr.shape
        head = _value_prefix(name, tuple(int(d) for d in shape), tensor_type, count)
        total += fh.write(head)
        fh.flush()
        return total + _copy_range(sources[src], fh.fileno(), offset, count)
    if isinstance(arr, tuple):
        raise ValueError(f"{name}: a shape without a file range (or above {SLICE_BYTES} bytes) needs the array")
    for part in _slices(arr):
        part = np.ascontiguousarray(part)  # no copy when already contiguous
        head = _value_prefix(name, tuple(int(d) for d in arr.shape), tensor_type, part.nbytes)
        fh.write(head)
        total += len(head)
        if part.nbytes:
            view = memoryview(part.reshape(-1).view(np.uint8))
            step = 1 << 26
            for lo in range(0, len(view), step):
                total += fh.write(view[lo:lo + step])
    return total


def _read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def read_ckpt(path: str | Path) -> dict[str, tuple[np.ndarray, str]]:
    """A .ckpt → ``{name: (array, dtype_name)}`` (bfloat16 as uint16 bits), without MindSpore.

    Arrays are views of a memory map of the file when a parameter is stored in one slice.
    """
    import mmap

    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    buf = memoryview(mm)
    out: dict[str, list] = {}
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _read_varint(buf, pos)
        if key >> 3 != 1 or key & 7 != 2:
            if buf[pos - 1:pos + 6].tobytes().startswith(b"crc_num"):
                break
            raise ValueError(f"{path}: not a MindSpore checkpoint (field {key >> 3} at byte {pos})")
        ln, pos = _read_varint(buf, pos)
        vend = pos + ln
        tag, dims, ttype, content = "", [], "", memoryview(b"")
        p = pos
        while p < vend:
            k, p = _read_varint(buf, p)
            f, wt = k >> 3, k & 7
            if wt != 2:
                raise ValueError(f"{path}: unexpected wire type {wt}")
            n, p = _read_varint(buf, p)
            if f == 1:
                tag = buf[p:p + n].tobytes().decode("utf-8")
            elif f == 2:
                q, qend = p, p + n
                while q < qend:
                    k2, q = _read_varint(buf, q)
                    f2, wt2 = k2 >> 3, k2 & 7
                    if wt2 == 0:
                        d, q = _read_varint(buf, q)
                        dims.append(d - (1 << 64) if d >= 1 << 63 else d)
                        continue
                    n2, q = _read_varint(buf, q)
                    if f2 == 1:  # packed dims
                        r = q
                        while r < q + n2:
                            d, r = _read_varint(buf, r)
                            dims.append(d)
                    elif f2 == 2:
                        ttype = buf[q:q + n2].tobytes().decode()
                    elif f2 == 3:
                        content = buf[q:q + n2]
                    q += n2
            # field 3 (maptensor) is not supported here and skipped
            p += n
        pos = vend
        out.setdefault(tag, [dims, ttype, []])[2].append(content)
    result: dict[str, tuple[np.ndarray, str]] = {}
    for name, (dims, ttype, parts) in out.items():
        dtype = _NP_OF_MS.get(ttype)
        if dtype is None:
            raise ValueError(f"{path}: {name} has unsupported tensor type {ttype}")
        np_dtype = np.uint16 if dtype == "bfloat16" else np.dtype(dtype)
        if len(parts) == 1:
            arr = np.frombuffer(parts[0], dtype=np_dtype)
        else:
            arr = np.concatenate([np.frombuffer(p, dtype=np_dtype) for p in parts])
        result[name] = (arr.reshape(dims), dtype)
    return result


def save_with_mindspore(arrays: Mapping[str, tuple[np.ndarray, str]], path: str | Path) -> None:
    """The reference writer: ``mindspore.save_checkpoint`` from a dict of numpy arrays.

    (A dict of ``Tensor`` hits a MindSpore bug; numpy is fine. bfloat16 goes in as a Parameter.)
    Holds every converted array at once, so :func:`write_ckpt` is the default.
    """
    import mindspore as ms

    obj = {}
    for name, (arr, dtype) in arrays.items():
        if dtype == "bfloat16":
            from .torch_format import bf16_to_float32

            obj[name] = ms.Parameter(ms.Tensor(bf16_to_float32(arr), dtype=ms.bfloat16), name=name)
        else:
            obj[name] = np.ascontiguousarray(arr)
    ms.save_checkpoint(obj, str(path))
