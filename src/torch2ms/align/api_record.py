"""``compare --api``: record every torch / MindSpore op call a model's forward makes from the user's code.

A call is attributed to the user's source line that made it: on the torch side through a
``TorchFunctionMode`` (outermost calls only) and the nearest stack frame in a user file; on the
MindSpore side through ``sys.setprofile`` (calls whose caller frame is in a user file), with the
C-level ``Tensor`` methods wrapped in plain Python functions for the time of the recording so the
profiler sees their arguments and results. Consecutive calls from one line form a *group*; its
output is the last call's output, its input the first call's tensor arguments. Only those tensors
are kept, within a byte budget; beyond it a group keeps summary statistics only.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Summary = dict[str, Any]


@dataclass
class Group:
    file: str
    line: int
    calls: list[str] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)  # summaries of the first call's arguments
    inputs: list[np.ndarray | Summary] = field(default_factory=list)
    output: np.ndarray | Summary | None = None
    out_summary: Summary | None = None
    seen: set[int] = field(default_factory=set)  # ids of tensors produced or taken already in this group
    names: dict[str, int] = field(default_factory=dict)  # the user's name of an input ("att", "self.bias") → index
    scalars: dict[str, Any] = field(default_factory=dict)  # plain values in scope when the group began


_PLAIN = (int, float, bool, str, type(None))


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return len(value) <= 16 and all(isinstance(v, _PLAIN) for v in value)
    return isinstance(value, _PLAIN)


def _scope(frame: Any) -> list[tuple[str, dict[str, Any]]]:
    """The places a statement's names come from: its locals, and the attributes of its ``self``."""
    if frame is None:
        return []
    local = frame.f_locals
    places = [("", local)]
    obj = local.get("self")
    if obj is not None:
        for attr in ("__dict__", "_parameters", "_buffers", "_params"):
            found = getattr(obj, attr, None)
            if isinstance(found, dict):
                places.append(("self.", found))
    return places


def scope_scalars(frame: Any) -> dict[str, Any]:
    """The plain values (numbers, strings, tuples of them) a statement of ``frame`` can read."""
    return {
        prefix + k: (list(v) if isinstance(v, tuple) else v)
        for prefix, place in _scope(frame)
        for k, v in place.items()
        if not k.startswith("__") and _plain(v)
    }


def _name_in_scope(value: Any, frame: Any) -> str | None:
    for prefix, place in _scope(frame):
        for k, v in place.items():
            if v is value:
                return prefix + k
    return None


@functools.lru_cache(maxsize=256)
def _statement_starts(file: str) -> dict[int, int]:
    """Each line of a file → the first line of the innermost statement holding it (a statement that
    spans lines — a chained call over several lines — is one place to both sides)."""
    try:
        tree = ast.parse(Path(file).read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return {}
    starts: dict[int, int] = {}
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.stmt)), key=lambda n: n.lineno):
        body = getattr(node, "body", None)
        end = body[0].lineno - 1 if isinstance(body, list) and body else (node.end_lineno or node.lineno)
        for line in range(node.lineno, end + 1):
            starts[line] = node.lineno
    return starts


def statement_text(file: str, line: int, limit: int = 300) -> str:
    """The text of the statement starting at ``line`` of ``file``, its lines joined (one line if unknown)."""
    try:
        lines = Path(file).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    starts = _statement_starts(file)
    span = [n for n, start in starts.items() if start == line] or [line]
    text = " ".join(lines[n - 1].strip() for n in sorted(span) if 0 < n <= len(lines))
    return text[:limit]


def statement_line(file: str, line: int) -> int:
    """The first line of the statement that holds ``line`` of ``file`` (``line`` itself if unknown)."""
    return _statement_starts(file).get(line, line)


def stats(a: np.ndarray) -> Summary:
    f = a.astype(np.float64) if a.size else np.zeros(1)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "mean": float(f.mean()), "absmax": float(np.abs(f).max())}


class Recorder:
    """Groups of calls, tensors kept within ``max_bytes``."""

    def __init__(self, to_numpy: Callable[[Any], np.ndarray | None], max_bytes: int) -> None:
        self.to_numpy, self.budget = to_numpy, max_bytes
        self.groups: list[Group] = []
        self.kept = 0
        self._frame: Any = None
        self._lasti: int | None = None

    def _keep(self, value: Any) -> np.ndarray | Summary | None:
        arr = self.to_numpy(value)
        if arr is None:
            return None
        if self.kept + arr.nbytes > self.budget:
            return stats(arr)
        self.kept += arr.nbytes
        return arr

    def _tensors(self, value: Any) -> list[Any]:
        if isinstance(value, (list, tuple)):
            return [t for v in value for t in self._tensors(v)]
        if isinstance(value, dict):
            return [t for v in value.values() for t in self._tensors(v)]
        return [value] if self.to_numpy(value) is not None else []

    def _describe(self, value: Any) -> Any:
        arr = self.to_numpy(value)
        if arr is not None:
            return f"{arr.dtype}{list(arr.shape)}"
        if isinstance(value, (int, float, bool, str)) or value is None:
            return value
        if isinstance(value, (list, tuple)):
            return [self._describe(v) for v in value]
        return type(value).__name__

    def add(self, file: str, line: int, api: str, args: list[Any], out: Any, frame: Any = None) -> None:
        """One call made by ``line`` of ``file`` in the running ``frame`` of the user's function: it
        joins the group of the statement's previous call unless the statement or the frame changed
        (the same line run again by a new call of its function is a new group) or the frame's
        instruction went back (a loop ran the statement again; the calls of one library layer are
        made from one instruction and stay one group, and so does a loop body of a single call)."""
        outs = self._tensors(out)
        if not outs or api.endswith(("__getattr__", "__getattribute__")):
            return
        line = statement_line(file, line)
        lasti = getattr(frame, "f_lasti", None)
        last = self.groups[-1] if self.groups else None
        if (
            last is None
            or (last.file, last.line) != (file, line)
            or (frame is not None and frame is not self._frame)
            or (lasti is not None and self._lasti is not None and lasti < self._lasti)  # a loop ran it again
        ):
            last = Group(file, line, args=[self._describe(a) for a in args])
            self.groups.append(last)
            self._frame = frame  # held until the next group: a frame id alone could be reused
            last.scalars = scope_scalars(frame)
        elif isinstance(last.output, np.ndarray):
            self.kept -= last.output.nbytes
        self._lasti = lasti
        for t in self._tensors(args):
            if id(t) not in last.seen and (kept := self._keep(t)) is not None:
                last.inputs.append(kept)
                if (name := _name_in_scope(t, frame)) is not None:
                    last.names.setdefault(name, len(last.inputs) - 1)
            last.seen.add(id(t))
        last.seen |= {id(t) for t in outs}
        last.calls.append(api)
        last.output = self._keep(outs[0])
        arr = self.to_numpy(outs[0])
        last.out_summary = stats(arr) if arr is not None else None


def user_files(objects: list[Any], framework_dir: str) -> set[str]:
    """The source files of the model's own classes (not the framework's), as code objects name them."""
    files: set[str] = set()
    for cls in {type(obj) for obj in objects}:
        for value in vars(cls).values():
            name = getattr(getattr(value, "__code__", None), "co_filename", None)
            real = os.path.realpath(name) if name is not None else framework_dir
            if name is not None and not real.startswith(framework_dir) and not _is_helper(real):
                files |= {name, real}
    return files


# Helpers torch2ms writes or ships (vendored runtime, generated torchvision): library code, not the user's.
HELPER_PACKAGES = ("torch2ms_runtime", "torchvision_ms", "torch2ms/runtime")


def _is_helper(path: str) -> bool:
    text = "/" + Path(path).as_posix()
    return any(f"/{name}/" in text for name in HELPER_PACKAGES)


def _user_cell_call(frame: Any, files: set[str]) -> bool:
    """A Cell.__call__ of a cell whose construct is the user's: its calls are recorded line by line."""
    if frame.f_code.co_name != "__call__":
        return False
    construct = getattr(type(frame.f_locals.get("self")), "construct", None)
    return getattr(getattr(construct, "__code__", None), "co_filename", None) in files


def raised_at(exc: BaseException, files: set[str]) -> tuple[str, int] | None:
    """The last user-file frame of the exception's traceback."""
    where, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in files:
            where = (os.path.realpath(tb.tb_frame.f_code.co_filename), tb.tb_lineno)
        tb = tb.tb_next
    return where


def _user_frame(files: set[str]) -> tuple[str, int, Any] | None:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename in files:
            return os.path.realpath(frame.f_code.co_filename), frame.f_lineno, frame
        frame = frame.f_back  # type: ignore[assignment]
    return None


def torch_mode(rec: Recorder, files: set[str]) -> Any:
    """A TorchFunctionMode that adds to ``rec`` each outermost torch call made from a line of ``files``
    (entered and left by the caller: one forward, or a training step's forward and loss)."""
    from torch.overrides import TorchFunctionMode, resolve_name

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            where = _user_frame(files)
            if where is not None:
                api = resolve_name(func) or getattr(func, "__name__", str(func))
                rec.add(where[0], where[1], api, [*args, *(kwargs or {}).values()], out, where[2])
            return out

    return Mode()


def torch_numpy(v: Any) -> np.ndarray | None:
    import torch

    return v.detach().cpu().numpy().copy() if isinstance(v, torch.Tensor) else None


def record_torch(model: Any, inputs: list[np.ndarray], max_bytes: int) -> tuple[Recorder, dict[str, Any] | None]:
    """One torch forward under a TorchFunctionMode: (the recorder, the error if it raised)."""
    import torch

    files = user_files(list(model.modules()), os.path.dirname(os.path.realpath(torch.__file__)))
    rec = Recorder(torch_numpy, max_bytes)
    error = None
    with torch.no_grad(), torch_mode(rec, files):
        try:
            model(*[torch.from_numpy(np.array(x)) for x in inputs])
        except Exception as exc:  # noqa: BLE001 - reported next to the calls that ran
            error = {"error": f"{type(exc).__name__}: {exc}", "at": raised_at(exc, files)}
    return rec, error


_SKIP_METHODS = {"__init__", "__new__", "__getattribute__", "__setattr__", "__delattr__", "__repr__", "__str__"}
_SKIP_METHODS |= {"__hash__", "__init_subclass__", "__reduce__", "__reduce_ex__", "__sizeof__", "__format__"}
_SKIP_METHODS |= {"__dir__", "__subclasshook__", "__class__", "asnumpy", "asnumpy_of_slice_persistent_data"}


def _wrap(name: str, orig: Any) -> Callable[..., Any]:
    def method(*args: Any, _t2m_api: str = name, **kwargs: Any) -> Any:
        return orig(*args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


def _wrap_tensor_methods(tensor_cls: type) -> list[str]:
    """Give every C-level method of Tensor a Python wrapper; return the names to delete afterwards."""
    added = []
    for base in tensor_cls.__mro__[1:-1]:
        for name, value in vars(base).items():
            if name in _SKIP_METHODS or name in vars(tensor_cls) or type(value).__name__ != "method_descriptor":
                continue
            setattr(tensor_cls, name, _wrap(name, value))
            added.append(name)
    return added


class MsProfile:
    """Records into ``rec`` the MindSpore calls made from lines of ``files`` between ``start()`` and
    ``stop()`` (PyNative only: a profiler on Python frames, the C-level Tensor methods wrapped)."""

    def __init__(self, rec: Recorder, files: set[str]) -> None:
        import mindspore as ms

        self.rec, self.files, self.ms = rec, files, ms
        self.open_calls: dict[int, tuple[str, int, str, list[Any], Any]] = {}
        self.through = _Containers(files, ms.nn.Cell)
        self.wrapper_code = _wrap("x", None).__code__
        self.added: list[str] = []

    def profile(self, frame: Any, event: str, arg: Any) -> None:
        files, through = self.files, self.through
        if event == "call":
            back = frame.f_back
            if back is None or frame.f_code.co_filename in files:
                return
            site = back if back.f_code.co_filename in files else through.user_frame(back)
            if site is None or _user_cell_call(frame, files) or through.enter(frame, back):
                return
            code = frame.f_code
            if code is self.wrapper_code:
                api, args = "Tensor." + frame.f_locals["_t2m_api"], list(frame.f_locals["args"])
            else:
                api = f"{frame.f_globals.get('__name__', '')}.{code.co_qualname}"
                args = list(frame.f_locals.values())
            self.open_calls[id(frame)] = (site.f_code.co_filename, site.f_lineno, api, args, site)
        elif event == "return":
            through.leave(frame)
            if id(frame) in self.open_calls:
                file, line, api, args, caller = self.open_calls.pop(id(frame))
                self.rec.add(os.path.realpath(file), line, api, args, arg, caller)

    def start(self) -> None:
        self.added = _wrap_tensor_methods(self.ms.Tensor)
        sys.setprofile(self.profile)

    def stop(self) -> None:
        sys.setprofile(None)
        for name in self.added:
            delattr(self.ms.Tensor, name)
        self.added = []


def ms_numpy(v: Any) -> np.ndarray | None:
    import mindspore as ms

    return v.asnumpy().copy() if isinstance(v, ms.Tensor) else None


def record_ms(net: Any, inputs: list[np.ndarray], max_bytes: int) -> tuple[Recorder, dict[str, Any] | None, bool]:
    """One PyNative MindSpore forward under a profiler: (recorder, error, switched from GRAPH_MODE)."""
    import mindspore as ms

    switched = ms.get_context("mode") != ms.PYNATIVE_MODE
    ms.set_context(mode=ms.PYNATIVE_MODE)
    files = user_files([c for _n, c in net.cells_and_names()], ms_dir())
    rec = Recorder(ms_numpy, max_bytes)
    prof = MsProfile(rec, files)
    net.set_train(False)
    error = None
    prof.start()
    try:
        net(*[ms.Tensor(np.array(x)) for x in inputs])
    except Exception as exc:  # noqa: BLE001 - reported with the line that raised
        error = {"error": f"{type(exc).__name__}: {exc}", "at": raised_at(exc, files)}
    finally:
        prof.stop()
    return rec, error, switched


class _Containers:
    """Library cells that hold the user's cells (a SequentialCell of the user's Linear and a GELU):
    seen through like torch's nn.Sequential, which no TorchFunctionMode sees. Their own frames are
    not calls; the calls they make are attributed to the user's line that called the container."""

    def __init__(self, files: set[str], cell_cls: type) -> None:
        self.files, self.cell_cls = files, cell_cls
        self.open: set[int] = set()  # ids of the running frames of such containers
        self.holds: dict[int, bool] = {}

    def _holds_user_cells(self, cell: Any) -> bool:
        if id(cell) not in self.holds:
            codes = (getattr(getattr(type(c), "construct", None), "__code__", None) for _n, c in cell.cells_and_names())
            self.holds[id(cell)] = any(getattr(code, "co_filename", None) in self.files for code in codes)
        return self.holds[id(cell)]

    def user_frame(self, frame: Any) -> Any:
        """The nearest user frame above a running container frame (None when ``frame`` is no container's)."""
        if id(frame) not in self.open:
            return None
        while frame is not None and frame.f_code.co_filename not in self.files:
            frame = frame.f_back
        return frame

    def enter(self, frame: Any, back: Any) -> bool:
        """Whether ``frame`` is a container's own frame (then it is seen through, not recorded)."""
        obj = frame.f_locals.get("self")
        if id(back) in self.open and obj is not None and obj is back.f_locals.get("self"):
            self.open.add(id(frame))
            return True
        if frame.f_code.co_name == "__call__" and isinstance(obj, self.cell_cls) and self._holds_user_cells(obj):
            self.open.add(id(frame))
            return True
        return False

    def leave(self, frame: Any) -> None:
        self.open.discard(id(frame))


def ms_dir() -> str:
    import mindspore as ms

    return os.path.dirname(os.path.realpath(ms.__file__))


# -- a recording kept on disk: compare-train's two processes hand their groups to the parent ----------
GROUPS_JSON, GROUPS_NPZ = "api_groups.json", "api_tensors.npz"


def _stored(value: Any, key: str, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, np.ndarray):
        arrays[key] = value
        return {"array": key}
    return value


def save_groups(rec: Recorder, folder: Path, error: dict[str, Any] | None = None) -> None:
    """Write the recorder's groups (``api_groups.json``) and kept tensors (``api_tensors.npz``) into ``folder``."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    groups = []
    for i, g in enumerate(rec.groups):
        groups.append(
            {
                "file": g.file,
                "line": g.line,
                "calls": g.calls,
                "args": g.args,
                "inputs": [_stored(x, f"g{i}_in{j}", arrays) for j, x in enumerate(g.inputs)],
                "output": _stored(g.output, f"g{i}_out", arrays),
                "out_summary": g.out_summary,
                "names": g.names,
                "scalars": g.scalars,
            }
        )
    np.savez(folder / GROUPS_NPZ, **arrays)
    data = {"kept": rec.kept, "groups": groups, "error": error}
    (folder / GROUPS_JSON).write_text(json.dumps(data, default=str), encoding="utf-8")


def load_groups(folder: Path) -> tuple[Recorder, dict[str, Any] | None] | None:
    """The recording ``save_groups`` left in ``folder`` (None when there is none): (recorder, error)."""
    import json

    if not (folder / GROUPS_JSON).is_file():
        return None
    data = json.loads((folder / GROUPS_JSON).read_text(encoding="utf-8"))
    with np.load(folder / GROUPS_NPZ) as npz:
        arrays = {k: npz[k] for k in npz.files}

    def back(value: Any) -> Any:
        return arrays[value["array"]] if isinstance(value, dict) and set(value) == {"array"} else value

    rec = Recorder(lambda v: v if isinstance(v, np.ndarray) else None, 0)
    rec.kept = int(data["kept"])
    for g in data["groups"]:
        group = Group(g["file"], g["line"], calls=g["calls"], args=g["args"], out_summary=g["out_summary"])
        group.inputs, group.output = [back(x) for x in g["inputs"]], back(g["output"])
        group.names, group.scalars = g["names"], g["scalars"]
        rec.groups.append(group)
    return rec, data.get("error")
