"""Handlers for torch.Tensor methods whose MindSpore form is not a plain rename (tensor_methods.toml)."""

from __future__ import annotations

import re

from ...i18n import _
from ..schema import Entry
from ..source import NOT_LITERAL, literal, paren
from ..transforms import Unsupported, handler

_DTYPES = (
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "half",
    "float",
    "double",
    "int8",
    "int16",
    "int32",
    "int64",
    "int",
    "long",
    "short",
    "uint8",
    "bool",
    "complex64",
    "complex128",
)
_DTYPE_ALIAS = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "int": "int32",
    "long": "int64",
    "short": "int16",
    "bool": "bool_",
}


def _ms_dtype(src: str) -> str:
    """``torch.float16`` → ``mindspore.float16`` (fallback when dtypes.toml did not rewrite it)."""
    m = re.fullmatch(r"\s*torch\.(\w+)\s*", src)
    if m and m.group(1) in _DTYPES:
        return "mindspore." + _DTYPE_ALIAS.get(m.group(1), m.group(1))
    return src


def _is_dtype_src(src: str) -> bool:
    s = src.strip()
    if re.fullmatch(r"(torch|mindspore|ms)\.(\w+)", s) and s.rsplit(".", 1)[1] in _DTYPES + ("bool_",):
        return True
    return s.endswith(".dtype") or "dtype" in s.rsplit(".", 1)[-1]


def _is_device_src(src: str) -> bool:
    s = src.strip()
    if isinstance(literal(s), (str, int)) and not isinstance(literal(s), bool):
        return True  # 'cpu', 'cuda:0', 0
    low = s.lower()  # DEVICE = torch.device(...) is a common module-level spelling
    return "device" in low or "dev" in low.rsplit(".", 1)[-1] or "cuda" in low or "cpu" in low


def _is_false(src: str | None) -> bool:
    return src is None or literal(src) in (False, None)


def _plain_call(bound: dict[str, str], receiver: str, entry: Entry, method: str) -> str:
    """``receiver.method(...)``: bound arguments positional in sig order (gaps filled from the torch
    defaults), then keywords. Honors ``unsupported`` and drop (``= false``) argument rules."""
    names = entry.sig_names()
    defaults = entry.sig_defaults()
    for name, rule in entry.args.items():
        src = bound.get(name)
        if rule.unsupported and src is not None:
            default = defaults.get(name)
            bad = (
                "*" in rule.unsupported and (default is None or literal(src) != literal(default))
            ) or src in rule.unsupported
            if bad:
                raise Unsupported(
                    entry.arg_note(name)
                    or _("{call} has no MindSpore form").format(call=f"{entry.short}({name}={src})")
                )
    kept = [n for n in names if n in bound and not (n in entry.args and entry.args[n].ms is None)]
    last = max((names.index(n) for n in kept), default=-1)
    parts: list[str] = []
    positional = True
    for idx, name in enumerate(names):
        rule = entry.args.get(name)
        if rule is not None and rule.ms is None:
            continue
        if name not in bound:
            if positional and idx < last and name in defaults:
                parts.append(defaults[name])
                continue
            positional = False
            continue
        key = rule.ms if rule is not None else name
        parts.append(bound[name] if positional else f"{key}={bound[name]}")
    return f"{receiver}.{method}({', '.join(parts)})"


def _receiver(receiver: str | None) -> str:
    """The receiver source (``self`` when called unbound), parenthesised unless atomic: ``(a + b).round()``."""
    return paren(receiver or "self")


def _method_name(entry: Entry) -> str:
    return entry.ms.rsplit(".", 1)[-1]


@handler
def to(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.to(dtype)`` → ``x.to(dtype)``; ``x.to(device)`` → ``x``; ``x.to(other)`` → ``x.astype(other.dtype)``.

    MindSpore places tensors globally (``ms.set_device``), so device arguments are dropped.
    """
    receiver = _receiver(receiver)
    dtype = bound.get("dtype")
    for key in ("arg0", "arg1"):
        src = bound.get(key)
        if src is None:
            continue
        if key == "arg1" and isinstance(literal(src), bool):
            continue  # to(dtype, non_blocking)
        if _is_dtype_src(src):
            dtype = src
        elif _is_device_src(src):
            continue
        elif key == "arg0" and re.fullmatch(r"[A-Za-z_][\w.]*", src.strip()):
            # x.to(other_tensor): match the other tensor's dtype (and device, which MS ignores).
            return f"{receiver}.astype({src}.dtype)"
        else:
            raise Unsupported(
                _("Tensor.to({src}): cannot tell whether this is a dtype, a device or a tensor").format(src=src)
            )
    if dtype is None:
        return receiver or "self"
    return f"{receiver}.astype({_ms_dtype(dtype)})"


@handler
def type_cast(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.type(torch.float16)`` → ``x.astype(mindspore.float16)``; ``x.type()`` → torch-style type string."""
    receiver = _receiver(receiver)
    dtype = bound.get("dtype")
    if dtype is None:
        return (
            f"('torch.' + {{'Float32': 'FloatTensor', 'Float64': 'DoubleTensor', 'Float16': 'HalfTensor', "
            f"'BFloat16': 'BFloat16Tensor', 'Int64': 'LongTensor', 'Int32': 'IntTensor', 'Int16': 'ShortTensor', "
            f"'Int8': 'CharTensor', 'UInt8': 'ByteTensor', 'Bool': 'BoolTensor'}}[str({receiver}.dtype)])"
        )
    v = literal(dtype)
    if isinstance(v, str):
        names = {
            "torch.FloatTensor": "float32",
            "torch.DoubleTensor": "float64",
            "torch.HalfTensor": "float16",
            "torch.LongTensor": "int64",
            "torch.IntTensor": "int32",
            "torch.BoolTensor": "bool_",
            "torch.ByteTensor": "uint8",
            "torch.ShortTensor": "int16",
            "torch.CharTensor": "int8",
        }
        if v.replace("torch.cuda.", "torch.") not in names:
            raise Unsupported(_("Tensor.type({dtype}) has no MindSpore dtype").format(dtype=dtype))
        return f"{receiver}.astype(mindspore.{names[v.replace('torch.cuda.', 'torch.')]})"
    return f"{receiver}.astype({_ms_dtype(dtype)})"


@handler
def max_min(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.max()`` / ``x.max(dim, keepdim)`` keep the method; ``x.max(other)`` → ``ops.maximum``."""
    receiver = _receiver(receiver)
    which = entry.torch.rsplit(".", 1)[-1]
    dim, other = bound.get("dim"), bound.get("other")
    if dim is not None and not isinstance(literal(dim), (int, tuple, list)):
        # Positional non-int: torch's max(other) overload, unless the name says it is a dim.
        if not re.search(r"dim|axis", dim):
            other, dim = dim, None
    if other is not None:
        return f"mindspore.ops.{'maximum' if which == 'max' else 'minimum'}({receiver}, {other})"
    if dim is None:
        return f"{receiver}.{which}()"
    keep = bound.get("keepdim")
    # dim by keyword: GRAPH_MODE gives the values alone for x.max(1) (the (values, indices) pair in PyNative)
    return f"{receiver}.{which}(dim={dim}" + (f", keepdim={keep})" if keep is not None else ")")


@handler
def reduce_positional(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.amax(dim, keepdim)`` with both by position: GRAPH_MODE's Tensor.amax/amin take no keepdims=
    keyword (PyNative does); a list of dims becomes a tuple."""
    receiver = _receiver(receiver)
    which = _method_name(entry)
    dim, keep = bound.get("dim"), bound.get("keepdim")
    if dim is None:
        dim = "()"
    elif isinstance(literal(dim), list):
        dim = repr(tuple(literal(dim)))
    if keep is None:
        return f"{receiver}.{which}({dim})" if dim != "()" else f"{receiver}.{which}()"
    return f"{receiver}.{which}({dim}, {keep})"


@handler
def int64(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """An index-returning method whose MindSpore result is int32: cast to torch's int64."""
    receiver = _receiver(receiver)
    return f"{_plain_call(bound, receiver or 'self', entry, _method_name(entry))}.astype(mindspore.int64)"


@handler
def indices_int64(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """A (values, indices) method whose MindSpore indices are int32: cast them to torch's int64."""
    receiver = _receiver(receiver)
    call = _plain_call(bound, receiver or "self", entry, _method_name(entry))
    return f"torch2ms.runtime.with_int64_indices({call})"


@handler
def std_var(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch std/var are unbiased by default (correction=1); MindSpore's default ddof is 0."""
    receiver = _receiver(receiver)
    which = entry.torch.rsplit(".", 1)[-1]
    dim = bound.get("dim")
    unbiased = bound.get("unbiased")
    correction = bound.get("correction")
    if dim is not None and isinstance(literal(dim), bool):
        unbiased, dim = dim, None  # x.std(False): the old (unbiased) overload
    if correction is None:
        if unbiased is None:
            correction = "1"
        elif isinstance(literal(unbiased), bool):
            correction = "1" if literal(unbiased) else "0"
        else:
            correction = f"int({unbiased})"
    keep = bound.get("keepdim", "False")
    axis = "None" if dim is None else (repr(tuple(literal(dim))) if isinstance(literal(dim), list) else dim)
    return f"{receiver}.{which}(axis={axis}, ddof={correction}, keepdims={keep})"


def _ints(src: str) -> str:
    """Varargs or one sequence of ints → a tuple source."""
    v = literal(src if src.strip().startswith(("(", "[")) else f"({src},)")
    if isinstance(v, (tuple, list)) and len(v) == 1 and isinstance(v[0], (tuple, list)):
        v = v[0]
    if isinstance(v, (tuple, list)) and all(isinstance(i, int) for i in v):
        return repr(tuple(v))
    if "," in src:
        return f"({src},)" if not src.strip().startswith(("(", "[")) else f"tuple({src})"
    return f"(tuple({src}) if isinstance({src}, (list, tuple)) else ({src},))"


@handler
def flip(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.flip(0)`` / ``x.flip(0, 1)`` / ``x.flip([0, 1])`` → ``x.flip((0, 1))`` (MindSpore takes only a tuple)."""
    receiver = _receiver(receiver)
    return f"{receiver}.flip({_ints(bound['dims'])})"


@handler
def repeat(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.repeat(2, 1)`` → ``ops.tile(x, (2, 1))``: Tensor.repeat is not supported on CPU."""
    receiver = _receiver(receiver)
    return f"mindspore.ops.tile({receiver}, {_ints(bound['sizes'])})"


@handler
def new_filled(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.new_zeros(2, 3)`` / ``((2, 3))`` / ``(size=...)`` with x's dtype unless ``dtype=`` is given."""
    receiver = _receiver(receiver)
    which = entry.torch.rsplit(".", 1)[-1]
    size = _ints(bound["size"])
    dtype = _ms_dtype(bound["dtype"]) if bound.get("dtype") not in (None, "None") else f"{receiver}.dtype"
    if which == "new_full":
        return f"mindspore.ops.full({size}, {bound['fill_value']}, dtype={dtype})"
    fn = {"new_zeros": "zeros", "new_ones": "ones", "new_empty": "zeros"}[which]
    return f"mindspore.ops.{fn}({size}, {dtype})"


@handler
def new_tensor(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.new_tensor(data)`` → ``Tensor(data, dtype=x.dtype)`` (torch keeps x's dtype)."""
    receiver = _receiver(receiver)
    dtype = _ms_dtype(bound["dtype"]) if bound.get("dtype") not in (None, "None") else f"{receiver}.dtype"
    return f"mindspore.Tensor({bound['data']}, dtype={dtype})"


@handler
def random_int(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.random_(to)`` / ``x.random_(from, to)`` → uniform integers cast to x's dtype (out of place)."""
    receiver = _receiver(receiver)
    lo, hi = bound.get("from"), bound.get("to")
    if hi is None or literal(hi) is None:
        if lo is None:
            raise Unsupported(_("Tensor.random_() without bounds (dtype-dependent range) has no MindSpore form"))
        lo, hi = "0", lo
    return f"mindspore.ops.randint({lo}, {hi}, {receiver}.shape).astype({receiver}.dtype)"


@handler
def unflatten(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.unflatten(dim, sizes)`` → a reshape that splits one dimension."""
    receiver = _receiver(receiver)
    dim, sizes = bound["dim"], _ints(bound["sizes"])
    d = literal(dim)
    if isinstance(d, int) and d >= 0:
        return f"{receiver}.reshape({receiver}.shape[:{d}] + {sizes} + {receiver}.shape[{d + 1}:])"
    if isinstance(d, int) and d == -1:
        return f"{receiver}.reshape({receiver}.shape[:-1] + {sizes})"
    if isinstance(d, int):
        return f"{receiver}.reshape({receiver}.shape[:{d}] + {sizes} + {receiver}.shape[{d + 1}:])"
    return (
        f"{receiver}.reshape({receiver}.shape[:({dim}) % {receiver}.ndim] + {sizes} + "
        f"{receiver}.shape[({dim}) % {receiver}.ndim + 1:])"
    )


@handler
def stride(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """MindSpore's stride() returns a list; torch a tuple (or one int with ``dim``)."""
    receiver = _receiver(receiver)
    dim = bound.get("dim")
    if dim is None or literal(dim) is None:
        return f"tuple({receiver}.stride())"
    return f"{receiver}.stride()[{dim}]"


@handler
def median(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.median()`` is one value (torch's lower median); ``x.median(dim)`` → (values, indices)."""
    receiver = _receiver(receiver)
    dim = bound.get("dim")
    if dim is None:
        return f"{receiver}.flatten().median(0)[0]"
    keep = bound.get("keepdim", "False")
    return f"{receiver}.median({dim}, {keep})"


@handler
def kthvalue(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.kthvalue(k, dim)`` → the k-th entry of a stable ascending sort (values, int64 indices).

    No lambda: GRAPH_MODE cannot compile one built inside an expression.
    """
    receiver = _receiver(receiver)
    k, dim = bound["k"], bound.get("dim", "-1")
    keep = literal(bound.get("keepdim", "False"))
    if keep is NOT_LITERAL:
        raise Unsupported(_("Tensor.kthvalue with a non-literal keepdim"))
    srt = f"{receiver}.sort(axis={dim})"  # stable=True selects SortExt, which GRAPH_MODE on CPU lacks
    if keep:
        return f"({srt}[0].narrow({dim}, ({k}) - 1, 1), {srt}[1].narrow({dim}, ({k}) - 1, 1).astype(mindspore.int64))"
    return f"({srt}[0].select({dim}, ({k}) - 1), {srt}[1].select({dim}, ({k}) - 1).astype(mindspore.int64))"


@handler
def expand(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.expand(3, -1)`` / ``x.expand((3, -1))`` → ``x.broadcast_to((3, -1))``."""
    sizes = bound.get("sizes", "")
    parts = [p for p in sizes.split(",") if p.strip()] if sizes else []
    if len(parts) == 1 and not isinstance(literal(sizes), int):
        return f"{_receiver(receiver)}.broadcast_to({sizes})"  # already a tuple / torch.Size / name
    return (
        f"{_receiver(receiver)}.broadcast_to(({sizes},))"
        if len(parts) == 1
        else f"{_receiver(receiver)}.broadcast_to(({sizes}))"
    )


@handler
def argmax(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.argmax()`` over all elements; with dim, MindSpore's axis/keepdims."""
    dim = bound.get("dim")
    if dim is None or literal(dim) is None:
        return f"{_receiver(receiver)}.flatten().argmax()"
    keep = bound.get("keepdim", "False")
    return f"{_receiver(receiver)}.argmax(axis={dim}, keepdims={keep})"


@handler
def index_add(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.index_add(dim, index, source, alpha=a)`` → ops.index_add on a copy (it writes into its input) with int32 indices."""
    src = bound["source"] if "alpha" not in bound else f"({bound['source']}) * ({bound['alpha']})"
    return (
        f"mindspore.ops.index_add({_receiver(receiver)}.copy(), {bound['index']}.astype(mindspore.int32), "
        f"{src}, {bound['dim']})"
    )


@handler
def index_int32(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """index_fill / index_add: MindSpore's kernels take only int32 indices."""
    receiver = _receiver(receiver)
    method = _method_name(entry)
    b = dict(bound)
    b["index"] = f"{bound['index']}.astype(mindspore.int32)"
    return _plain_call(b, receiver or "self", entry, method)


@handler
def positional_args(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """Same method, every argument passed positionally (MindSpore's keyword names differ from torch's)."""
    receiver = _receiver(receiver)
    return _plain_call(bound, receiver or "self", entry, _method_name(entry))


@handler
def norm(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.norm(p, dim, keepdim)`` → a vector norm over ``dim``, or over all elements when dim is None.

    torch's p='fro' means the 2-norm over ``dim`` (all elements when dim is None); a numeric p with
    dim=None is a vector norm of the flattened tensor (MindSpore would take a matrix norm of a 2-D tensor)."""
    receiver = _receiver(receiver)
    p, dim, keep = bound.get("p"), bound.get("dim"), bound.get("keepdim")
    if bound.get("dtype") not in (None, "None"):  # torch computes (and returns) in that dtype
        receiver = f"{paren(receiver)}.astype({bound['dtype']})"
    if p is not None and literal(p) in ("fro", None):
        p = None
    if dim is not None and literal(dim) is None:
        dim = None
    if p is None and isinstance(literal(dim), (tuple, list)) and len(literal(dim)) == 2:
        p = "'fro'"
    if dim is None:
        if keep is not None and literal(keep) is not False:
            raise Unsupported(_("Tensor.norm(dim=None, keepdim=True) has no MindSpore form"))
        flat = receiver if receiver.endswith(".flatten()") else f"{receiver}.flatten()"  # (idempotent)
        return f"{flat}.norm({p or 'None'})"
    d = literal(dim)
    dim_src = repr(tuple(d)) if isinstance(d, list) else dim
    return f"{receiver}.norm({p or 'None'}, {dim_src}" + (f", {keep})" if keep is not None else ")")


@handler
def roll(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.roll(shifts, dims)`` as an index_select per dim (the Roll kernel is unregistered on CPU)."""
    receiver = _receiver(receiver)
    shifts, dims = bound["shifts"], bound.get("dims")
    r = receiver or "self"
    if dims is None or literal(dims) is None:
        return f"{roll({'shifts': shifts, 'dims': '0'}, f'{r}.flatten()', entry)}.reshape({r}.shape)"
    s, d = literal(shifts), literal(dims)
    if isinstance(s, (tuple, list)) and isinstance(d, (tuple, list)) and len(s) == len(d):
        out = r
        for si, di in zip(s, d):
            out = roll({"shifts": repr(si), "dims": repr(di)}, out, entry)
        return out
    if isinstance(d, (tuple, list)) and len(d) == 1:
        d = d[0]
        s = s[0] if isinstance(s, (tuple, list)) else s
        shifts, dims = repr(s), repr(d)
    return f"{r}.index_select({dims}, (mindspore.ops.arange({r}.shape[{dims}]) - ({shifts})) % {r}.shape[{dims}])"


@handler
def unique(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.unique()`` → ``ops.unique`` then a sort (MindSpore's x.unique has no CPU kernel).

    ops.unique keeps first-appearance order; torch's unique is sorted by default."""
    receiver = _receiver(receiver)
    for key in ("return_inverse", "return_counts"):
        if not _is_false(bound.get(key)):
            raise Unsupported(
                _("Tensor.unique({key}=True) has no sorted MindSpore form; use ops.unique and sort yourself").format(
                    key=key
                )
            )
    if bound.get("dim") not in (None, "None"):
        raise Unsupported(_("Tensor.unique(dim=...) has no MindSpore form"))
    return f"mindspore.ops.sort(mindspore.ops.unique({receiver})[0])[0]"


@handler
def round_decimals(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.round(decimals=d)``: MindSpore's Round kernel only takes decimals=0 on CPU; scale instead."""
    receiver = _receiver(receiver)
    d = bound.get("decimals")
    if d is None or literal(d) == 0:
        return f"{receiver}.round()"
    d = paren(d)
    return f"({receiver} * 10.0 ** {d}).round() / 10.0 ** {d}"
