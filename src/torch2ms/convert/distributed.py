"""Distributed data parallelism (R19): a statement-level pre-pass on the torch source.

torch spreads data parallelism over a process group, a wrapper module and a sampler; MindSpore
sets it once, globally, and launches the workers with ``msrun`` instead of ``torchrun``/``spawn``:

- ``dist.init_process_group(backend)`` → ``mindspore.communication.init()`` (MindSpore picks the
  collective library by device) + ``set_auto_parallel_context(DATA_PARALLEL, gradients_mean=True)``;
  ``gloo`` (torch's CPU backend) also selects ``mindspore.set_device("CPU")``.
- ``DistributedDataParallel(model, ...)`` → ``model``: the gradient all-reduce DDP did inside
  ``backward()`` becomes ``nn.DistributedGradReducer`` in the training step (training.py adds it
  when this pass reports the file as distributed); ``ddp.module`` → ``ddp``.
- ``get_rank``/``get_world_size``/``destroy_process_group`` → ``mindspore.communication``;
  ``all_reduce``/``broadcast`` → ``mindspore.ops.communication``, which keeps torch's in-place
  signatures (``all_reduce(t)`` sums into ``t``: measured on CPU under msrun); ``barrier()`` → a
  blocking all-reduce (``ops.communication.barrier`` returns at once on CPU).
- ``torch.multiprocessing.spawn(fn, args, nprocs)`` → ``fn(rank, *args)``: msrun starts one process
  per worker and exports its rank as ``RANK_ID``; torchrun's ``RANK``/``LOCAL_RANK``/``WORLD_SIZE``
  environment reads become msrun's ``RANK_ID``/``DEVICE_ID``/``RANK_SIZE``.
- ``DistributedSampler`` keeps its KB mapping (``mindspore.dataset.dataloader.DistributedSampler``,
  torch's indices for the same num_replicas/rank/shuffle=False); the converted DataLoader passes it
  on as ``sampler=``, so each worker reads torch's shard (tests/test_distributed.py checks the labels).

The output is still torch code with full ``mindspore.`` names in the rewritten places; the module
converter shortens them and adds the imports, as it does for training.py's generated code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst

from ..analysis.astwalk import line_starting_statements
from ..analysis.imports import ImportMap
from ..kb import load_kb
from .cstutil import code
from .cstutil import dotted as _dotted
from .cstutil import resolve as resolve_cst

MARK = "# torch2ms:"
# Cheap text gates: a file without any of these has no distributed code (no parse, no pass).
HINTS = ("istributed", "multiprocessing", "DDP")

INIT = "torch.distributed.init_process_group"
BARRIER = "torch.distributed.barrier"


def _spellings(name: str) -> frozenset[str]:
    """A torch API's full name and its aliases, from the KB."""
    entry = load_kb().get(name)
    return frozenset((name, *entry.aliases)) if entry is not None else frozenset({name})


DDP = _spellings("torch.nn.parallel.DistributedDataParallel")
SPAWN = _spellings("torch.multiprocessing.spawn")
# torch.distributed function → the torch arguments this pass forwards, in order (the MindSpore target
# is the KB entry's ``ms``)
CALLS: dict[str, tuple[str, ...]] = {
    "torch.distributed.get_rank": ("group",),
    "torch.distributed.get_world_size": ("group",),
    "torch.distributed.destroy_process_group": (),
    "torch.distributed.all_reduce": ("tensor", "op", "group", "async_op"),
    "torch.distributed.barrier": ("group", "async_op", "device_ids"),
    "torch.distributed.broadcast": ("tensor", "src", "group", "async_op"),
}
REDUCE_OPS = {"SUM": "'sum'", "PRODUCT": "'prod'", "MIN": "'min'", "MAX": "'max'", "AVG": "'avg'"}
# torchrun's environment → msrun's (single node: RANK_ID is the global rank, DEVICE_ID the local one)
ENV = {"RANK": "RANK_ID", "LOCAL_RANK": "DEVICE_ID", "WORLD_SIZE": "RANK_SIZE"}
_ENV_CALLS = ("os.environ.get", "os.getenv")
MSRUN = (
    "msrun --worker_num={n} --local_worker_num={n} --master_addr=127.0.0.1 --master_port=8118 "
    "--join=True --log_dir=msrun_log"
)
HEADER = MARK + " distributed data parallel: launch every worker with `" + MSRUN + " <this file>`"


@dataclass
class Note:
    api: str
    action: str  # converted | review | not-converted
    note: str
    line: int


@dataclass
class DistributedRewrite:
    source: str
    tree: ast.Module
    notes: list[Note] = field(default_factory=list)
    # DDP or init_process_group: the training step must average gradients (not a file that only
    # asks get_rank() / is_initialized())
    data_parallel: bool = False
    parsed: cst.Module | None = None  # the libcst tree of ``source`` (saves the main pass a parse)


def _uses_distributed(tree: ast.Module, imap: ImportMap) -> bool:
    names = DDP | SPAWN | {INIT, *CALLS}
    for n in ast.walk(tree):
        if isinstance(n, (ast.Name, ast.Attribute)):
            full = imap.resolve(n)
            if full and imap.is_framework(full) and (full in names or full.startswith("torch.distributed.")):
                return True
    return False


SPAWN_KEY = "spawn"


def _key(full: str | None) -> str | None:
    """The note key of a resolved name: DDP and spawn aliases share one."""
    if full in DDP:
        return "DDP"
    if full in SPAWN:
        return SPAWN_KEY
    return full if full == INIT or full in CALLS else None


def _call_lines(tree: ast.Module, imap: ImportMap) -> dict[str, list[int]]:
    """Lines of the uses the pass rewrites, per note key, in source order."""
    found: list[tuple[int, int, str]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            key = _key(imap.resolve(n.func))
            if (
                key is None
                and isinstance(n.func, ast.Attribute)
                and ast.unparse(n.func) in _ENV_CALLS
                and n.args
                and isinstance(n.args[0], ast.Constant)
                and n.args[0].value in ENV
            ):
                key = "os.environ"
            if key:
                found.append((n.lineno, n.col_offset, key))
        elif (
            isinstance(n, ast.Subscript)
            and ast.unparse(n.value) == "os.environ"
            and isinstance(n.slice, ast.Constant)
            and n.slice.value in ENV
        ):
            found.append((n.lineno, n.col_offset, "os.environ"))
        elif (
            isinstance(n, ast.Compare)
            and isinstance(n.left, ast.Constant)
            and n.left.value in ENV
            and len(n.ops) == 1
            and isinstance(n.ops[0], (ast.In, ast.NotIn))
            and ast.unparse(n.comparators[0]) == "os.environ"
        ):
            found.append((n.lineno, n.col_offset, "os.environ"))
    out: dict[str, list[int]] = {}
    for line, _, key in sorted(found):
        out.setdefault(key, []).append(line)
    return out


def _ddp_names(tree: ast.Module, imap: ImportMap) -> set[str]:
    """Targets assigned a DDP wrapper (``model = DDP(net)``, ``self.model = DDP(net)``)."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and imap.resolve(n.value.func) in DDP:
            out |= {ast.unparse(t) for t in n.targets}
    return out


def _statement_lines(tree: ast.Module, source: str, imap: ImportMap, ddp: set[str]) -> tuple[list[int], set[int]]:
    """Lines of the simple statements that begin a line (libcst's SimpleStatementLines, in order),
    and those of the statements with something to rewrite: the pass skips all others."""
    stmts = line_starting_statements(tree, source)
    relevant = {s.lineno for s in stmts if any(_rewritable(n, imap, ddp) for n in ast.walk(s))}
    return [s.lineno for s in stmts], relevant


def _rewritable(n: ast.AST, imap: ImportMap, ddp: set[str]) -> bool:
    if isinstance(n, ast.Attribute):
        if n.attr == "environ":
            return True
        if n.attr == "module" and ast.unparse(n.value) in ddp:
            return True
        full = imap.resolve(n)
        return bool(full) and (_key(full) is not None or full.startswith("torch.distributed."))
    if isinstance(n, ast.Name):
        return _key(imap.names.get(n.id)) is not None or n.id == "os"
    return False


class _Pass(cst.CSTTransformer):
    def __init__(self, source: str, tree: ast.Module, imap: ImportMap, every_line: bool = False) -> None:
        super().__init__()
        self.imap = imap
        self.ddp = _ddp_names(tree, imap)
        self.starts, self.relevant = _statement_lines(tree, source, imap, self.ddp)
        self.every_line, self.k = every_line, 0
        self.consumed: dict[str, int] = {}
        self.notes: list[Note] = []
        self.lines = _call_lines(tree, imap)
        self.seen: dict[str, int] = {}
        self.needs_os = False
        self.workers = "N"  # spawn's nprocs when it is a literal
        self.data_parallel = self.launched = False
        self.stmt_call: cst.Call | None = None

    # ---- helpers ---------------------------------------------------------------------------

    def resolve(self, node: cst.BaseExpression) -> str | None:
        return resolve_cst(self.imap, node)

    def _consume(self, func: cst.BaseExpression) -> None:
        """A use of an imported name (``DDP(...)``, ``get_rank()``) rewritten away."""
        if isinstance(func, cst.Name):
            self.consumed[func.value] = self.consumed.get(func.value, 0) + 1

    def note(self, api: str, text: str, action: str = "converted", key: str = "") -> None:
        """The n-th note about ``key`` (default: the API) is on the line of its n-th use (libcst
        leaves calls in source order; no position metadata)."""
        key = key or api
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        got = self.lines.get(key, [])
        self.notes.append(Note(api, action, text, got[min(n, len(got) - 1)] if got else 0))

    @staticmethod
    def _bind(call: cst.Call, names: tuple[str, ...]) -> dict[str, cst.BaseExpression] | None:
        bound: dict[str, cst.BaseExpression] = {}
        for i, a in enumerate(call.args):
            if a.star:
                return None
            if a.keyword is not None:
                bound[a.keyword.value] = a.value
            elif i < len(names):
                bound[names[i]] = a.value
            else:
                return None
        return bound

    # ---- calls -------------------------------------------------------------------------------

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        full = self.resolve(original.func)
        if full in DDP:
            bound = self._bind(updated, ("module",))
            model = (bound or {}).get("module") or (updated.args[0].value if updated.args else None)
            if model is None:
                return updated
            self.note(
                full,
                "wrapper dropped: the bare network trains; gradients are averaged by "
                "nn.DistributedGradReducer in the training step (data-parallel context)",
                key="DDP",
            )
            self.data_parallel = True
            self._consume(original.func)
            return model
        if full == INIT and original is not self.stmt_call:  # as a value: statements get the context too
            self.note(full, "mindspore.communication.init(); set the data-parallel context too", "review")
            self.data_parallel = True
            self._consume(original.func)
            return cst.parse_expression("mindspore.communication.init()")
        if full == BARRIER and original is self.stmt_call and not original.args:
            return updated  # a statement: leave_SimpleStatementLine writes a blocking barrier
        if full in CALLS:
            return self._call(full, original, updated)
        env = self._env_call(updated)
        return env if env is not None else updated

    def _call(self, full: str, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        target, names = load_kb().get(full).ms, CALLS[full]  # type: ignore[union-attr]
        bound = self._bind(updated, names)
        if bound is None:
            self.note(full, "*args or extra arguments: convert by hand", "not-converted")
            return updated
        args, review = [], ""
        for n in names:
            v = bound.get(n)
            if v is None or (n in ("group", "device_ids") and code(v).strip() == "None"):
                continue
            if n == "device_ids":
                continue  # NCCL device hint; MindSpore's barrier has none
            if n == "op":  # leave_Attribute already turned ReduceOp.X into its string
                if not isinstance(v, cst.SimpleString) or v.value not in REDUCE_OPS.values():
                    self.note(full, f"reduce op {code(v).strip()}: use 'sum', 'max', 'min' or 'prod'", "not-converted")
                    return updated
                if v.value not in ("'sum'", "'max'"):
                    review = f"op={v.value}: measured on CPU for 'sum' and 'max' only"
            eq = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
            args.append(cst.Arg(v) if n == names[0] and n != "group" else cst.Arg(v, keyword=cst.Name(n), equal=eq))
        if "group" in bound and code(bound["group"]).strip() != "None":
            review = "torch group objects are MindSpore group names (strings): check the group"
        if review:
            self.note(full, f"→ {target}; {review}", "review")
        else:
            in_place = " (in place, as torch)" if "all_reduce" in target or "broadcast" in target else ""
            self.note(full, f"→ {target}{in_place}")
        self._consume(original.func)
        return updated.with_changes(func=cst.parse_expression(target), args=_commas(args))

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if original.attr.value == "module" and code(original.value).strip() in self.ddp:
            return updated.value  # ddp_model.module: the model itself once the wrapper is gone
        full = self.resolve(original)
        if full and full.startswith("torch.distributed.ReduceOp.") and full.rsplit(".", 1)[-1] in REDUCE_OPS:
            return cst.parse_expression(REDUCE_OPS[full.rsplit(".", 1)[-1]])
        return updated

    # ---- torchrun environment ------------------------------------------------------------------

    def _env_key(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        if isinstance(node, cst.SimpleString) and node.evaluated_value in ENV:
            q = node.value[-1]
            return node.with_changes(value=f"{q}{ENV[node.evaluated_value]}{q}")
        return None

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        if (
            _dotted(original.value) == "os.environ"
            and len(updated.slice) == 1
            and isinstance(updated.slice[0].slice, cst.Index)
        ):
            new = self._env_key(updated.slice[0].slice.value)
            if new is not None:
                self.note("os.environ", "torchrun variable → msrun's (RANK_ID/DEVICE_ID/RANK_SIZE)")
                idx = updated.slice[0].slice.with_changes(value=new)
                return updated.with_changes(slice=[updated.slice[0].with_changes(slice=idx)])
        return updated

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison) -> cst.BaseExpression:
        """``"RANK" in os.environ`` → ``"RANK_ID" in os.environ``."""
        if (
            len(updated.comparisons) == 1
            and isinstance(updated.comparisons[0].operator, (cst.In, cst.NotIn))
            and _dotted(updated.comparisons[0].comparator) == "os.environ"
        ):
            new = self._env_key(updated.left)
            if new is not None:
                self.note("os.environ", "torchrun variable → msrun's (RANK_ID/DEVICE_ID/RANK_SIZE)")
                return updated.with_changes(left=new)
        return updated

    def _env_call(self, updated: cst.Call) -> cst.Call | None:
        if _dotted(updated.func) in _ENV_CALLS and updated.args:
            new = self._env_key(updated.args[0].value)
            if new is not None:
                self.note("os.environ", "torchrun variable → msrun's (RANK_ID/DEVICE_ID/RANK_SIZE)")
                return updated.with_changes(args=[updated.args[0].with_changes(value=new), *updated.args[1:]])
        return None

    # ---- statements ----------------------------------------------------------------------------

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        first = node.body[0] if len(node.body) == 1 else None
        self.stmt_call = first.value if isinstance(first, cst.Expr) and isinstance(first.value, cst.Call) else None
        line = self.starts[self.k] if self.k < len(self.starts) else None
        self.k += 1
        return self.every_line or line in self.relevant  # lines with nothing to rewrite are not walked

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        if not updated.body:  # a removed self-assignment (its comments stay, on a pass)
            if any(line.comment for line in updated.leading_lines):
                return updated.with_changes(body=[cst.Pass()])
            return cst.RemovalSentinel.REMOVE
        if (
            len(original.body) != 1
            or not isinstance(original.body[0], cst.Expr)
            or not isinstance(original.body[0].value, cst.Call)
        ):
            return updated
        call = original.body[0].value
        full = self.resolve(call.func)
        if full == INIT:
            return self._init(call, original)
        if full in SPAWN:
            return self._spawn(call, original, updated)
        if full == BARRIER and not call.args:
            # ops.communication.barrier() returns at once on CPU (measured under msrun: rank 0 did
            # not wait for a rank sleeping 4 s); a collective whose result is read blocks everywhere.
            self.note(BARRIER, "→ a blocking all-reduce of zeros (ops.communication.barrier does not wait on CPU)")
            new = cst.parse_statement(
                f"mindspore.ops.AllReduce()(mindspore.ops.zeros(1)).asnumpy()  {MARK} "
                "torch barrier(): every worker must contribute before any returns\n"
            )
            self._consume(call.func)
            return new.with_changes(leading_lines=original.leading_lines)
        return updated

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        # model = DDP(model) became model = model: nothing left to do
        value = original.value
        if (
            isinstance(value, cst.Call)
            and self.resolve(value.func) in DDP
            and len(updated.targets) == 1
            and code(updated.targets[0].target).strip() == code(updated.value).strip()
        ):
            return cst.RemovalSentinel.REMOVE
        return updated

    def _init(self, call: cst.Call, stmt: cst.SimpleStatementLine):
        bound = self._bind(call, ("backend", "init_method", "timeout", "world_size", "rank")) or {}
        backend = bound.get("backend")
        btext = code(backend).strip() if backend is not None else "default"
        lines = []
        if isinstance(backend, cst.SimpleString) and backend.evaluated_value == "gloo":
            lines.append(f'mindspore.set_device("CPU")  {MARK} gloo is torch\'s CPU backend\n')
        lines.append(
            f"mindspore.communication.init()  {MARK} init_process_group(backend={btext}): MindSpore picks "
            "HCCL/NCCL/its CPU collectives by device; rank and world size come from msrun\n"
        )
        lines.append(
            "mindspore.set_auto_parallel_context(parallel_mode=mindspore.ParallelMode.DATA_PARALLEL, "
            "gradients_mean=True)\n"
        )
        new = [cst.parse_statement(s) for s in lines]
        new[0] = new[0].with_changes(leading_lines=stmt.leading_lines)
        self.note(INIT, f"→ mindspore.communication.init() + data-parallel context (backend {btext}); msrun launch")
        self.data_parallel = True
        self._consume(call.func)
        return cst.FlattenSentinel(new)

    def _spawn(self, call: cst.Call, stmt: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        bound = self._bind(call, ("fn", "args", "nprocs", "join", "daemon", "start_method"))
        fn = (bound or {}).get("fn")
        if fn is None:
            return updated  # *args: the KB entry marks it in place
        args = (bound or {}).get("args")
        rest = ""
        if isinstance(args, cst.Tuple):
            rest = "".join(", " + code(e.value).strip() for e in args.elements)
        elif args is not None:
            rest = f", *{code(args).strip()}"
        nprocs = code(bound["nprocs"]).strip() if "nprocs" in (bound or {}) else "N"
        if nprocs.isdigit():
            self.workers = nprocs
        self.launched = True
        self.needs_os = True
        new = cst.parse_statement(
            f'{code(fn).strip()}(int(os.environ["RANK_ID"]){rest})  {MARK} mp.spawn → '
            f"one process per worker: msrun --worker_num={nprocs} exports RANK_ID\n"
        )
        self.note("torch.multiprocessing.spawn", "fn(RANK_ID, *args): msrun starts the processes", key=SPAWN_KEY)
        self._consume(call.func)
        return new.with_changes(leading_lines=stmt.leading_lines)

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        header = list(updated.header)
        if self.data_parallel or self.launched:
            header.append(cst.EmptyLine(comment=cst.Comment(HEADER.format(n=self.workers))))
        body = list(updated.body)
        if self.needs_os and "os" not in self.imap.names:
            at = _after_imports(body)
            body.insert(at, cst.parse_statement("import os\n"))
        return updated.with_changes(header=header, body=body)


def _after_imports(body: list[cst.BaseStatement]) -> int:
    i = 0
    for j, s in enumerate(body):
        if isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], (cst.Import, cst.ImportFrom)):
            i = j + 1
    return i


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [a.with_changes(comma=comma) for a in args[:-1]] + args[-1:]


def rewrite_distributed(source: str, tree: ast.Module, imap: ImportMap) -> DistributedRewrite | None:
    """torch distributed data parallelism → MindSpore's; None when the file has none (cheap gate)."""
    if not any(h in source for h in HINTS) or not _uses_distributed(tree, imap):
        return None
    p = _Pass(source, tree, imap)
    try:
        parsed = cst.parse_module(source)
        module = parsed.visit(p)
        if p.k != len(p.starts):  # the line table does not fit this file: walk every line
            p = _Pass(source, tree, imap, every_line=True)
            module = parsed.visit(p)
        reads = _reads(tree)
        dropped = {
            local
            for local, full in imap.names.items()
            if _key(full) is not None and 0 < reads.get(local, 0) <= p.consumed.get(local, 0)
        }
        if dropped:  # `from torch.nn.parallel import DistributedDataParallel`: nothing reads it any more
            module = module.visit(_DropImports(dropped))
        code_ = module.code
        new_tree = ast.parse(code_)
    except Exception:  # noqa: BLE001 - the per-call KB rules still mark every distributed call in place
        return None
    return DistributedRewrite(code_, new_tree, p.notes, p.data_parallel, module)


def _reads(tree: ast.Module) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out[n.id] = out.get(n.id, 0) + 1
    return out


class _DropImports(cst.CSTTransformer):
    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not isinstance(node, (cst.BaseExpression, cst.SimpleStatementLine)) and super().on_visit(node)

    def leave_SimpleStatementLine(self, original, updated):
        imp = updated.body[0] if len(updated.body) == 1 else None
        if not isinstance(imp, cst.ImportFrom) or isinstance(imp.names, cst.ImportStar):
            return updated
        keep = [a for a in imp.names if (_dotted(a.asname.name) if a.asname else _dotted(a.name)) not in self.names]
        if len(keep) == len(imp.names):
            return updated
        if not keep:
            return cst.RemovalSentinel.REMOVE
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(body=[imp.with_changes(names=keep)])
