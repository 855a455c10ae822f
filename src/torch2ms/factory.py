"""Resolve ``PATH_OR_MODULE:TARGET`` specs and build what they name, with errors a user can act on.

``TARGET`` is a name (``Net``, ``models.resnet18``), called with no arguments when it is a class or a
function, or a Python expression evaluated in the module (``UNet(n_channels=3, n_classes=2)``).

Every failure of the user's code (a syntax error, a missing package, an exception or ``sys.exit`` at
import or while building) becomes a one-line :class:`SpecError` naming the file and line. A file that
runs code at import (a training script without an ``if __name__ == "__main__":`` guard) is imported
first in a child process with a time limit, so that it cannot hang the tool.

Standard library only: ``align/torch_worker.py`` also runs under another interpreter
(``compare --torch-python``) that may not have torch2ms's dependencies.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from .i18n import _
from .import_probe import import_hang_reason, library_slice, located, package_root

_MODULE_SPEC = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):(.+)$", re.S)
_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
EXAMPLE = "model.py:Net, model.py:UNet(n_channels=3, n_classes=2) or pkg.models:resnet18"


class SpecError(ValueError):
    """A PATH_OR_MODULE:TARGET spec that cannot be resolved or built (a usage error: exit 2)."""


@dataclass(frozen=True)
class Spec:
    text: str
    module: str  # a path ending in .py, or a dotted module name
    target: str  # a dotted name or an expression

    @property
    def is_path(self) -> bool:
        return self.module.endswith(".py")

    @property
    def is_name(self) -> bool:
        return bool(_DOTTED_NAME.match(self.target))


def parse_spec(text: str) -> Spec:
    """Split ``model.py:UNet(n_classes=2)`` at the first ``.py:`` (an expression may hold colons)."""
    cut = text.find(".py:")
    if cut >= 0:
        module, target = text[: cut + 3], text[cut + 4 :]
    elif match := _MODULE_SPEC.match(text):
        module, target = match.group(1), match.group(2)
    else:
        raise SpecError(
            _("{text!r}: expected PATH_OR_MODULE:FACTORY, e.g. {EXAMPLE}").format(text=text, EXAMPLE=EXAMPLE)
        )
    target = target.strip()
    if not target:
        raise SpecError(
            _("{text!r}: nothing after the colon; name the factory, e.g. {EXAMPLE}").format(text=text, EXAMPLE=EXAMPLE)
        )
    if not _DOTTED_NAME.match(target):
        try:
            compile(target, "<spec>", "eval")
        except SyntaxError as exc:
            raise SpecError(
                _("{text!r}: {target!r} is neither a name nor a Python expression ({msg})").format(
                    text=text, target=target, msg=exc.msg
                )
            ) from None
    return Spec(text, module, target)


VENDORED_RUNTIME = (
    "torch2ms_runtime"  # what ``convert`` writes at a converted project's root (convert/runtime_vendor.py)
)


def use_vendored_runtime(path: Path) -> None:
    """A converted file imports ``torch2ms_runtime`` from its project's root: put the nearest folder above
    it that holds one on sys.path, and forget one imported earlier from another project (each holds only
    the helpers its own project uses)."""
    home = next((d for d in path.parents if (d / VENDORED_RUNTIME / "__init__.py").is_file()), None)
    if home is None:
        return
    loaded = sys.modules.get(VENDORED_RUNTIME)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").parent.parent != home:
        for name in [n for n in sys.modules if n == VENDORED_RUNTIME or n.startswith(VENDORED_RUNTIME + ".")]:
            del sys.modules[name]
    if str(home) not in sys.path:
        sys.path.insert(0, str(home))


def _installed(file: Path) -> bool:
    """A module of Python itself or of an environment (never the user's project)."""
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return any(file.is_relative_to(p) for p in prefixes)


def forget_shadowed(root: Path) -> None:
    """Forget the user's modules imported earlier from another folder under a name ``root`` also holds.

    compare imports the original and the converted project in one process, and both hold the same
    package (``unet/``, ``pygcn/``): without this the converted side would get the torch side's
    ``unet`` from sys.modules. Modules of Python or an installed environment are never forgotten."""
    names = {p.stem for p in root.glob("*.py")} | {p.name for p in root.iterdir() if p.is_dir()}
    for name in list(sys.modules):
        if name.split(".")[0] not in names:
            continue
        file = getattr(sys.modules[name], "__file__", None)
        if not file:
            continue
        where = Path(file).resolve()
        if not where.is_relative_to(root.resolve()) and not _installed(where):
            del sys.modules[name]


def _exec_file(path: Path, tag: str, sliced: ast.Module | None = None) -> ModuleType:
    """Import the file (``sliced``: run only that library slice of it, under the file's own name and lines)."""
    use_vendored_runtime(path)
    root, dotted = package_root(path)
    if "." in dotted:  # inside a package: import it as such so that relative imports work
        forget_shadowed(root)
        sys.path.insert(0, str(root))
        if sliced is None:
            return importlib.import_module(dotted)
        importlib.import_module(dotted.rpartition(".")[0])
        name = dotted
    else:
        forget_shadowed(path.parent)
        sys.path.insert(0, str(path.parent))  # sibling imports of a standalone file
        name = f"_t2m_{tag}_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise SpecError(_("{path}: cannot be loaded as a Python module").format(path=path))
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        if sliced is None:
            module_spec.loader.exec_module(module)
        else:
            exec(compile(sliced, str(path), "exec"), vars(module))  # the user's own definitions
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _library_slice(spec: Spec, path: Path) -> ast.Module | None:
    """For a file that trains (or does other work) at import: the slice that defines what the spec needs,
    said on stderr before it runs; None to import the file whole."""
    if not spec.is_path:
        return None
    try:
        found = library_slice(path.read_bytes(), str(path), spec.target)
    except OSError:
        return None
    if found is None:
        return None
    sliced, work = found
    note = _(
        "note: {file} runs code at import ({work}): only its imports, definitions and the module-level "
        "values {target} needs are run, not the rest of the script"
    ).format(file=path.name, work=work, target=spec.target)
    sys.stderr.write(note + "\n")
    return sliced


def import_module(spec: Spec, tag: str = "side", import_timeout: float | None = None) -> ModuleType:
    """The module a spec names; every failure of the user's code is a one-line SpecError."""
    path = Path(spec.module)
    if spec.is_path:
        if not path.is_file():
            raise SpecError(_("{module}: no such file (in {text!r})").format(module=spec.module, text=spec.text))
        path = path.resolve()
    sliced = _library_slice(spec, path)
    hang = None if sliced else import_hang_reason(spec.module, path if spec.is_path else None, import_timeout)
    if hang:
        raise SpecError(hang)
    try:
        return _exec_file(path, tag, sliced) if spec.is_path else importlib.import_module(spec.module)
    except SpecError:
        raise
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else spec.module
        raise SpecError(
            _("{where}: syntax error ({msg}); fix the file and run again").format(where=where, msg=exc.msg)
        ) from None
    except ImportError as exc:
        raise SpecError(
            _(
                "{where}: importing {module} failed: {exc}; install the missing package in this "
                "environment, or run this side in another one (--torch-python)"
            ).format(where=located(exc, spec.module), module=spec.module, exc=exc)
        ) from None
    except SystemExit as exc:
        raise SpecError(
            _(
                "{where}: importing {module} called sys.exit({code}): the file runs a script when "
                "imported; put that code under `if __name__ == '__main__':`"
            ).format(where=located(exc, spec.module), module=spec.module, code=exc.code)
        ) from None
    except Exception as exc:  # noqa: BLE001 - the user's code failed at import: say where, no traceback
        raise SpecError(
            _("{where}: importing {module} raised {error}").format(
                where=located(exc, spec.module), module=spec.module, error=_one_line(exc)
            )
        ) from None


def _one_line(exc: BaseException) -> str:
    text = next((ln.strip() for ln in str(exc).splitlines() if ln.strip().strip("-")), "")
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def _resolve_name(module: ModuleType, spec: Spec) -> Any:
    obj: Any = module
    for part in spec.target.split("."):
        if not hasattr(obj, part):
            raise SpecError(
                _("{text}: {module} has no attribute {target!r}").format(
                    text=spec.text, module=spec.module, target=spec.target
                )
            )
        obj = getattr(obj, part)
    return obj


def _evaluator(module: ModuleType, spec: Spec) -> Callable[[], Any]:
    code = compile(spec.target, f"<{spec.text}>", "eval")
    return lambda: eval(code, vars(module))  # the user's own expression, in their module


def load_object(spec: str, tag: str = "side", import_timeout: float | None = None) -> Any:
    """What a spec names, not called: a name's object, or for an expression a no-argument callable."""
    parsed = parse_spec(spec)
    module = import_module(parsed, tag, import_timeout)
    return _resolve_name(module, parsed) if parsed.is_name else _evaluator(module, parsed)


def load_factory(spec: str, tag: str = "side", need_callable: bool = True) -> Callable[[], Any]:
    """A no-argument callable for the spec (kept for callers that build the object themselves)."""
    obj = load_object(spec, tag)
    if need_callable and not callable(obj):
        raise SpecError(_("{spec}: {target} is not callable").format(spec=spec, target=parse_spec(spec).target))
    return obj


def _is_factory(obj: Any) -> bool:
    return inspect.isclass(obj) or inspect.isroutine(obj) or isinstance(obj, partial)


def _check_no_arguments_needed(obj: Any, spec: Spec) -> None:
    try:
        inspect.signature(obj).bind()
    except TypeError as exc:
        raise SpecError(
            _(
                "{text}: {target}() needs arguments ({exc}); write them in the spec, e.g. "
                "'{module}:{target}(...)' with the values your training script uses"
            ).format(text=spec.text, target=spec.target, exc=exc, module=spec.module)
        ) from None
    except ValueError:  # no signature (a builtin): just call it
        pass


def run_user_code(
    action: Callable[[], Any], where: str, what: str, passthrough: tuple[type[BaseException], ...] = ()
) -> Any:
    """Call the user's code; an exception or sys.exit becomes a one-line SpecError naming file:line
    (``passthrough``: exception types the caller reports itself)."""
    try:
        return action()
    except SpecError:
        raise
    except SystemExit as exc:
        raise SpecError(
            _("{where}: {what} called sys.exit({code})").format(where=located(exc, where), what=what, code=exc.code)
        ) from None
    except Exception as exc:  # the user's code failed: say where, no traceback
        if isinstance(exc, passthrough):
            raise
        raise SpecError(
            _("{where}: {what} failed: {error}").format(where=located(exc, where), what=what, error=_one_line(exc))
        ) from None


def build(spec: str, tag: str = "side", import_timeout: float | None = None) -> Any:
    """The object a spec describes: a class or function name is called, an expression evaluated,
    anything else (a model or DataLoader instance) returned as is. Raises SpecError."""
    parsed = parse_spec(spec)
    module = import_module(parsed, tag, import_timeout)
    if not parsed.is_name:
        return run_user_code(_evaluator(module, parsed), parsed.module, f"evaluating {parsed.target}")
    obj = _resolve_name(module, parsed)
    if not _is_factory(obj):
        return obj
    _check_no_arguments_needed(obj, parsed)
    return run_user_code(obj, parsed.module, f"{parsed.target}()")
