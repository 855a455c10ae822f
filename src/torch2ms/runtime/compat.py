"""torch layers and functions whose arguments are only known at run time, built by the KB's argument rules.

``TorchCompat("torch.nn.Conv2d")`` stands for a torch class used as a value (``conv_layer=nn.Conv2d``,
``partial(nn.LayerNorm, eps=1e-6)``, a call with ``*args``); ``compat_base("torch.nn.Linear")`` is the
base of a user class that subclasses a torch layer and calls ``super().__init__`` with torch's
arguments. Both hand the actual arguments to the rule engine the converter uses (as source text:
literals as written, anything else by name) and evaluate the MindSpore call it writes.
"""

from __future__ import annotations

import ast
import importlib
import types
from functools import cache
from typing import Any

import mindspore

from ._kb import kb_entry, rewrite_call

__all__ = ["TorchCompat", "compat_base"]

_LITERALS = (int, float, str, bool, type(None))
_RUNTIME_PREFIX = "torch2ms.runtime."


def _source(value: Any, ns: dict[str, Any]) -> str:
    """Source text for a run-time value: a literal when it round-trips, else a bound name."""
    if isinstance(value, _LITERALS) or (
        isinstance(value, (tuple, list)) and all(isinstance(v, _LITERALS) for v in value)
    ):
        src = repr(value)
        try:
            if ast.literal_eval(src) == value:
                return src
        except (ValueError, SyntaxError):
            pass
    name = f"_t2m_{len(ns)}"
    ns[name] = value
    return name


def _namespace() -> dict[str, Any]:
    """What the rules' MindSpore source names: ``mindspore``, and ``torch2ms.runtime.<helper>`` (this package,
    wherever it lives: torch2ms's, or the converted project's ``torch2ms_runtime``)."""
    package = importlib.import_module(__package__ or "torch2ms.runtime")
    return {"mindspore": mindspore, "torch2ms": types.SimpleNamespace(runtime=package)}


def _entry(torch_name: str) -> Any:
    entry = kb_entry(torch_name)
    if entry is None:
        raise TypeError(f"torch2ms: {torch_name} is not known here; convert the project again with torch2ms")
    if entry.status == "no-equivalent":
        raise TypeError(f"torch2ms: {torch_name} has no MindSpore equivalent")
    return entry


class TorchCompat:
    """A torch layer or function used as a value (``conv_layer=nn.Conv2d``, ``partial(nn.LayerNorm, eps=1e-6)``).

    Calling it applies the knowledge base's argument rules to the actual arguments, exactly as the
    converter does for a written-out call, and builds the MindSpore object.
    """

    def __init__(self, torch_name: str) -> None:
        self._entry = _entry(torch_name)
        self.torch_name = self._entry.torch

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ns = _namespace()
        res = rewrite_call(
            self._entry, [_source(a, ns) for a in args], [(k, _source(v, ns)) for k, v in kwargs.items()]
        )
        if not res.ok:
            raise TypeError(f"torch2ms: cannot convert this call of {self.torch_name}: {'; '.join(res.notes)}")
        return eval(res.source, ns)

    def __repr__(self) -> str:
        return f"TorchCompat({self.torch_name!r})"

    def _ms_class(self) -> type | None:
        """The MindSpore class the knowledge base maps this torch class to (None for a function)."""
        try:
            value = eval(self._entry.ms, _namespace()) if self._entry.ms else None
        except (AttributeError, NameError, SyntaxError):
            return None
        return value if isinstance(value, type) else None

    # ``isinstance(m, (nn.Linear,))`` with the class kept as a value (minGPT's configure_optimizers):
    # Python asks the object itself when it is not a type, so the check runs on the MindSpore class.
    def __instancecheck__(self, obj: Any) -> bool:
        cls = self._ms_class()
        return cls is not None and isinstance(obj, cls)

    def __subclasscheck__(self, sub: Any) -> bool:
        cls = self._ms_class()
        return cls is not None and isinstance(sub, type) and issubclass(sub, cls)


@cache
def compat_base(torch_name: str) -> type:
    """A base class for user classes that subclass a torch layer whose arguments differ.

    ``class LayerNorm2d(nn.LayerNorm)`` calls ``super().__init__(C, eps=1e-6)`` with torch's
    arguments; this base translates them by the KB rules before MindSpore's __init__ sees them.
    """
    entry = kb_entry(torch_name)
    if entry is None or not entry.ms.startswith(("mindspore.", _RUNTIME_PREFIX)):
        raise TypeError(f"torch2ms: {torch_name} cannot be subclassed in MindSpore")
    ms_cls = eval(entry.ms, _namespace())  # a MindSpore class, or a helper of this package
    for rule in entry.args.values():
        # An argument that builds a subclass (LayerNorm(bias=False), Embedding(padding_idx=...)): the base must
        # take it, and the subclass behaves as the class itself with the argument at its default.
        target = eval(rule.target, _namespace()) if rule.target else None
        if isinstance(target, type) and issubclass(target, ms_cls):
            ms_cls = target

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        ns = _namespace()
        res = rewrite_call(entry, [_source(a, ns) for a in args], [(k, _source(v, ns)) for k, v in kwargs.items()])
        if not res.ok or res.args is None:
            raise TypeError(f"torch2ms: cannot convert {torch_name}(...) here: {'; '.join(res.notes)}")
        ms_cls.__init__(
            self,
            *[eval(a, ns) for a in res.args],
            **{k: eval(v, ns) for k, v in res.kwargs or []},
        )

    return type(ms_cls.__name__, (ms_cls,), {"__init__": __init__, "__module__": __name__})
