"""Does importing the user's file finish? A training script without an ``if __name__ == "__main__":`` guard
trains as soon as it is imported, and the tool would sit silent for as long as the training takes.

Cheap first: the file (and the local files it imports) is read with ``ast`` for module-level code that
does work (loops, ``with`` blocks, calls such as ``train()`` or ``parser.parse_args()``). Only such a
file is imported once in a child process with a time limit; a child that does not finish in time is
killed with everything it started, and the caller gets a message saying what to do.

Standard library only (see ``factory.py``).
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import signal
import subprocess
import sys
import sysconfig
import traceback
from pathlib import Path

from .i18n import _

DEFAULT_IMPORT_TIMEOUT = 60.0
MAX_FILES = 30  # local files followed through imports

_BENIGN_CALL = re.compile(
    r"(^|\.)(print|filterwarnings|simplefilter|basicConfig|getLogger|manual_seed|seed|set_printoptions|"
    r"insert|append|extend|update|setdefault|set_context|set_device|set_seed|register\w*|warn|namedtuple|"
    r"TypeVar|dataclass|use|setLevel|addHandler)$"
)
_WORK_CALL = re.compile(r"(^|\.)(parse_args|fit|train\w*|main|run\w*|download\w*|evaluate|test)$", re.I)
_PROBED: set[str] = set()

_CHILD = """
import importlib, importlib.util, sys
kind, target, root = sys.argv[1:4]
sys.argv = [target]
if root:
    sys.path.insert(0, root)
if kind == "module":
    importlib.import_module(target)
else:
    spec = importlib.util.spec_from_file_location("_t2m_import_probe", target)
    module = importlib.util.module_from_spec(spec)
    sys.modules["_t2m_import_probe"] = module
    spec.loader.exec_module(module)
"""


def package_root(path: Path) -> tuple[Path, str]:
    """For a file inside packages (dirs with __init__.py, or namespace packages its relative imports
    climb: ``from .modeling import X`` in a folder without __init__.py): (dir to put on sys.path,
    dotted name)."""
    parts = [path.stem]
    folder = path.parent
    levels = _relative_levels(path)
    while (folder / "__init__.py").exists() or len(parts) <= levels:
        if folder.parent == folder:
            break
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, ".".join(parts)


def _relative_levels(path: Path) -> int:
    """How many package levels the file's relative imports climb (0: none, or the file does not parse)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return 0
    return max((n.level for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)), default=0)


def _is_main_guard(test: ast.expr) -> bool:
    return "__name__" in ast.unparse(test) and "__main__" in ast.unparse(test)


def _work_done_by(stmt: ast.stmt) -> tuple[str, int] | None:
    """What a module-level statement runs at import and on which line, or None for definitions and
    cheap set-up."""
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        return _("a loop"), stmt.lineno
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return _("a with block"), stmt.lineno
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
    if isinstance(value, ast.Call):
        callee = ast.unparse(value.func)
        pattern_hit = _WORK_CALL.search(callee) if not isinstance(stmt, ast.Expr) else not _BENIGN_CALL.search(callee)
        if pattern_hit:
            return _("a call to {callee}()").format(callee=callee), stmt.lineno
    if isinstance(stmt, ast.If) and not _is_main_guard(stmt.test):
        return _first_work_at(stmt.body + stmt.orelse)
    if isinstance(stmt, ast.Try):
        handlers = [s for h in stmt.handlers for s in h.body]
        return _first_work_at(stmt.body + handlers + stmt.orelse + stmt.finalbody)
    return None


def _first_work_at(body: list[ast.stmt]) -> tuple[str, int] | None:
    return next((work for stmt in body if (work := _work_done_by(stmt))), None)


def _first_work(body: list[ast.stmt]) -> str | None:
    work = _first_work_at(body)
    return _("{what} on line {line}").format(what=work[0], line=work[1]) if work else None


def _local_imports(tree: ast.Module, folder: Path) -> list[Path]:
    names = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            names += [a.name for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and stmt.module:
            names.append(stmt.module)
    found = []
    for name in names:
        base = folder.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                found.append(candidate)
    return found


def code_run_at_import(path: Path) -> str | None:
    """``file: a loop on line 40`` for the first module-level work in the file or the local files it
    imports (what a training script without a ``__main__`` guard has), else None."""
    todo, seen = [path], set[Path]()
    while todo and len(seen) < MAX_FILES:
        file = todo.pop(0)
        if file in seen:
            continue
        seen.add(file)
        try:
            tree = ast.parse(file.read_bytes())
        except (OSError, SyntaxError, ValueError):
            continue  # the real import reports it
        what = _first_work(tree.body)
        if what:
            return f"{file.name}: {what}"
        todo += _local_imports(tree, file.parent)
    return None


def _find_module_file(dotted: str) -> Path | None:
    """The file of a dotted module on sys.path, without importing anything; installed packages are skipped."""
    installed = {sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib")}
    for entry in sys.path:
        folder = Path(entry or ".")
        if str(folder) in installed:
            continue
        base = folder.joinpath(*dotted.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _finishes_in_child(module: str, path: Path | None, timeout: float) -> bool:
    if path is not None:
        root, dotted = package_root(path)
        args = ["module", dotted, str(root)] if "." in dotted else ["file", str(path), str(path.parent)]
    else:
        args = ["module", module, os.getcwd()]
    env = dict(os.environ, GLOG_v=os.environ.get("GLOG_v", "3"))
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # its own process group: DataLoader workers it starts die with it
    )
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return False


def import_hang_reason(module: str, path: Path | None, timeout: float | None) -> str | None:
    """None when importing ``module`` (or the file ``path``) is known to finish; else what to tell the user.

    ``timeout``: seconds the child import may take (None: the default; 0 or less: no check).
    """
    limit = DEFAULT_IMPORT_TIMEOUT if timeout is None else timeout
    file = path if path is not None else _find_module_file(module)
    if limit <= 0 or file is None:
        return None
    work = code_run_at_import(file)
    key = str(file)
    if work is None or key in _PROBED:
        return None
    if _finishes_in_child(module, path, limit):
        _PROBED.add(key)
        return None
    return _(
        "{file}: importing it did not finish within {limit:g} s: it runs code at import ({work}), probably "
        "training without an `if __name__ == '__main__':` guard; put the script part under that guard or move "
        "the model into its own file (if the import is only slow, pass --import-timeout SECONDS)"
    ).format(file=file, limit=limit, work=work)


def located(exc: BaseException, fallback: str) -> str:
    """``file:line`` of the innermost frame of the user's own code in the exception's traceback."""
    installed = tuple(sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib"))
    here = str(Path(__file__).resolve().parent)
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(installed) and not f.filename.startswith(here) and not f.filename.startswith("<")
    ]
    if not frames:
        return fallback
    name = frames[-1].filename
    try:
        name = os.path.relpath(name) if not os.path.relpath(name).startswith("..") else name
    except ValueError:
        pass
    return f"{name}:{frames[-1].lineno}"


# -- the library slice of a script that trains at import ------------------------------------------------
# compare needs only the model's definition: imports, the classes and functions the factory reaches and
# the module-level assignments they read; the loop, the prints and the rest of the script are left out.

_SETUP_CALL = re.compile(
    r"^(sys\.path\.\w+|os\.environ\.\w+|warnings\.\w+|\w+(\.\w+)*\.(manual_seed|set_seed|set_default_dtype)|"
    r"(np\.|numpy\.)?random\.seed)$"
)


def _stores(node: ast.AST) -> set[str]:
    """Names a statement binds at module level (a def's or class's own name, assignment targets, imports)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            out.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in sub.names}
    return out


def _reads(node: ast.AST) -> set[str]:
    """Module-level names a statement may read: every name loaded, less a function's own arguments and locals."""
    loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
        local = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        declared = {name for n in ast.walk(node) if isinstance(n, ast.Global) for name in n.names}
        loads -= params | (local - declared)
    return loads


def _slice_role(stmt: ast.stmt) -> str:
    """'keep' (always), 'drop' (never), 'def' (kept when something kept needs a name it binds), or
    'work' (dropped; a slice that needs a name only it binds is no slice)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return "keep"
    if isinstance(stmt, ast.Expr):
        if isinstance(stmt.value, ast.Constant):
            return "keep"  # a docstring
        call = stmt.value
        if isinstance(call, ast.Call) and _SETUP_CALL.match(ast.unparse(call.func)):
            return "keep"
        return "work"
    if isinstance(stmt, ast.If) and _is_main_guard(stmt.test):
        return "drop"
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return "def"
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return "work" if _work_done_by(stmt) else "def"
    if isinstance(stmt, (ast.If, ast.Try)) and _work_done_by(stmt) is None:
        return "def"
    if isinstance(stmt, ast.With) and _first_work_at(stmt.body) is None:
        return "def"  # `with open(path) as f: text = f.read()`
    return "work"


def library_slice(source: bytes | str, path: str, target: str) -> tuple[ast.Module, str] | None:
    """For a file that does work at import: the module holding only what evaluating ``target`` needs, and
    what the left-out part ran first ("a loop on line 40"); None when the file does no such work, or
    when the target needs a name that only left-out code binds (the file is then imported whole)."""
    try:
        tree = ast.parse(source, path)
        wanted = {n.id for n in ast.walk(ast.parse(target.strip(), mode="eval")) if isinstance(n, ast.Name)}
    except (SyntaxError, ValueError):
        return None
    work = _first_work(tree.body)
    if work is None:
        return None
    roles = [_slice_role(s) for s in tree.body]
    kept = {i for i, role in enumerate(roles) if role == "keep"}
    needed = set(wanted).union(*(_reads(tree.body[i]) for i in kept))
    while True:
        more = {i for i, s in enumerate(tree.body) if roles[i] == "def" and i not in kept and _stores(s) & needed}
        if not more:
            break
        kept |= more
        needed |= set().union(*(_reads(tree.body[i]) for i in more))
    defined = set().union(*(_stores(tree.body[i]) for i in kept))
    left_out = set().union(*(_stores(s) for i, s in enumerate(tree.body) if roles[i] == "work"))
    if (needed - defined) & left_out:
        return None
    if "*" not in defined and wanted - defined - set(dir(builtins)):
        return None  # the factory's name is not defined by the file's own code: let the import say so
    return ast.Module(body=[s for i, s in enumerate(tree.body) if i in kept], type_ignores=[]), work
