"""Distributed data parallelism (R19): a statement-level pre-pass on the torch source.

torch spreads data parallelism over a process group, a wrapper module and a sampler; MindSpore
sets it once, globally, and launches the workers with ``msrun`` instead of ``torchrun``/``spawn``:

- ``dist.init_process_group(backend)`` → ``mindspore.communication.init()`` (MindSpore picks the
  collective library by device) + ``set_auto_parallel_context(DATA_PARALLEL, gradients_mean=True)``;
  ``gloo`` (torch's CPU backend) also selects ``mindspore.set_device("CPU")``.
- ``DistributedDataParallel(model, ...)`` → ``torch2ms.runtime.data_parallel(model)``: the model itself,
  its parameters marked, where torch wrapped it (``if cond: model = DDP(model)`` keeps its ``if``). The
  gradient all-reduce DDP did inside ``backward()`` becomes ``nn.DistributedGradReducer`` in the training
  step (training.py adds it when this pass found a DDP wrapper), built only for an optimizer over marked
  parameters: a model torch never wrapped trains on its own in every worker, as in torch (a file with
  ``init_process_group`` alone gets no reducer); ``ddp.module`` → ``ddp``.
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

A construct stage on the libcst tree: what it writes uses full ``mindspore.`` names, registered as
generated (generated.py), which the rewrite stage shortens; the user's code around them is converted
there as usual.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.astwalk import walk
from ...analysis.imports import ImportMap
from ...i18n import N_, _
from ...kb import KB
from .. import generated
from ..changes import MARK
from ..construct import Construct
from ..cstutil import Statement, code
from ..cstutil import dotted as _dotted
from ..cstutil import resolve as resolve_cst
from ..index import StatementIndex, TrackedTransformer
from ..state import FileState

NAME = "distributed"
# Cheap text gates: a file without any of these has no distributed code (no parse, no pass).
HINTS = ("istributed", "multiprocessing", "DDP")

INIT = "torch.distributed.init_process_group"
BARRIER = "torch.distributed.barrier"


DDP_NAME = "torch.nn.parallel.DistributedDataParallel"
SPAWN_NAME = "torch.multiprocessing.spawn"


def spellings(kb: KB, name: str) -> frozenset[str]:
    """A torch API's full name and its aliases, from the KB."""
    entry = kb.get(name)
    return frozenset((name, *entry.aliases)) if entry is not None else frozenset({name})


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
HEADER = N_("distributed data parallel: launch every worker with `{command} <this file>`")
GLOO = 'mindspore.set_device("CPU")  ' + MARK + " {note}\n"
GLOO_NOTE = N_("gloo is torch's CPU backend")
DATA_PARALLEL = (
    "mindspore.set_auto_parallel_context(parallel_mode=mindspore.ParallelMode.DATA_PARALLEL, gradients_mean=True)\n"
)
# ops.communication.barrier() returns at once on CPU (measured under msrun: rank 0 did not wait for a
# rank sleeping 4 s); a collective whose result is read blocks everywhere.
BARRIER_STEP = "mindspore.ops.AllReduce()(mindspore.ops.zeros(1)).asnumpy()  " + MARK + " {note}\n"
BARRIER_NOTE = N_("torch barrier(): every worker must contribute before any returns")


def _with_note(template: str, note: str) -> str:
    """A template whose mark reads ``note`` in the current language (the note holds no placeholder)."""
    return template.replace("{note}", _(note))


class _Apis:
    """The torch spellings this stage rewrites (DDP and spawn aliases come from the KB)."""

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self.ddp = spellings(kb, DDP_NAME)
        self.spawn = spellings(kb, SPAWN_NAME)

    def key(self, full: str | None) -> str | None:
        """The note key of a resolved name: DDP and spawn aliases share one."""
        if full in self.ddp:
            return "DDP"
        if full in self.spawn:
            return SPAWN_KEY
        return full if full == INIT or full in CALLS else None


def _uses_distributed(tree: ast.Module, imap: ImportMap, apis: _Apis) -> bool:
    names = apis.ddp | apis.spawn | {INIT, *CALLS}
    for n in ast.walk(tree):
        if isinstance(n, (ast.Name, ast.Attribute)):
            full = imap.resolve(n)
            if full and imap.is_framework(full) and (full in names or full.startswith("torch.distributed.")):
                return True
    return False


SPAWN_KEY = "spawn"


def _call_lines(tree: ast.Module, imap: ImportMap, apis: _Apis) -> dict[str, list[int]]:
    """Lines of the uses the pass rewrites, per note key, in source order."""
    found: list[tuple[int, int, str]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            key = apis.key(imap.resolve(n.func))
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
    for line, _col, key in sorted(found):
        out.setdefault(key, []).append(line)
    return out


def _ddp_names(tree: ast.Module, imap: ImportMap, apis: _Apis) -> set[str]:
    """Targets assigned a DDP wrapper (``model = DDP(net)``, ``self.model = DDP(net)``)."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and imap.resolve(n.value.func) in apis.ddp:
            out |= {ast.unparse(t) for t in n.targets}
    return out


def _rewritable(n: ast.AST, imap: ImportMap, ddp: set[str], apis: _Apis) -> bool:
    if isinstance(n, ast.Attribute):
        if n.attr == "environ":
            return True
        if n.attr == "module" and ast.unparse(n.value) in ddp:
            return True
        full = imap.resolve(n)
        return full is not None and (apis.key(full) is not None or full.startswith("torch.distributed."))
    if isinstance(n, ast.Name):
        return apis.key(imap.names.get(n.id)) is not None or n.id == "os"
    return False


class _Pass(TrackedTransformer):
    def __init__(self, state: FileState, apis: _Apis) -> None:
        assert state.tree is not None and state.imap is not None and state.index is not None
        super().__init__(state.index)
        self.state, self.apis, self.imap = state, apis, state.imap
        self.ddp = _ddp_names(state.tree, self.imap, apis)
        self.consumed: dict[str, int] = {}
        self.lines = _call_lines(state.tree, self.imap, apis)
        self.seen: dict[str, int] = {}
        self.needs_os = False
        self.workers = "N"  # spawn's nprocs when it is a literal
        self.data_parallel = self.launched = False
        self.wrapped = False  # a DDP wrapper: the training steps get a gradient reducer
        self.stmt_call: cst.Call | None = None

    # ---- helpers ---------------------------------------------------------------------------

    def torch_name(self, node: cst.BaseExpression) -> str | None:
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
        self.state.record(api, action, text, got[min(n, len(got) - 1)] if got else 0)

    def ms(self, template: str, **user_code: cst.BaseExpression) -> cst.BaseExpression:
        """MindSpore code this stage writes (full names, registered as generated)."""
        return generated.expression(template, self.state.generated, **user_code)

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
        full = self.torch_name(original.func)
        if full in self.apis.ddp:
            bound = self._bind(updated, ("module",))
            model = (bound or {}).get("module") or (updated.args[0].value if updated.args else None)
            if model is None:
                return updated
            self.note(
                full,
                _(
                    "wrapper dropped: the bare network trains, its parameters marked; their gradients are "
                    "averaged by nn.DistributedGradReducer in the training step where torch wrapped it"
                ),
                key="DDP",
            )
            self.data_parallel = self.wrapped = True
            self._consume(original.func)
            return self.ms("torch2ms.runtime.data_parallel({model})", model=model)
        if full == INIT and original is not self.stmt_call:  # as a value: statements get the context too
            self.note(full, _("mindspore.communication.init(); set the data-parallel context too"), "review")
            self.data_parallel = True
            self._consume(original.func)
            return self.ms("mindspore.communication.init()")
        if full == BARRIER and original is self.stmt_call and not original.args:
            return updated  # a statement: leave_SimpleStatementLine writes a blocking barrier
        if full in CALLS:
            return self._call(full, original, updated)
        env = self._env_call(updated)
        return env if env is not None else updated

    def _call(self, full: str, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        target, names = self.apis.kb.get(full).ms, CALLS[full]  # type: ignore[union-attr]
        bound = self._bind(updated, names)
        if bound is None:
            self.note(full, _("*args or extra arguments: convert by hand"), "not-converted")
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
                    op = code(v).strip()
                    self.note(
                        full, _("reduce op {op}: use 'sum', 'max', 'min' or 'prod'").format(op=op), "not-converted"
                    )
                    return updated
                if v.value not in ("'sum'", "'max'"):
                    review = _("op={op}: measured on CPU for 'sum' and 'max' only").format(op=v.value)
            eq = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
            args.append(cst.Arg(v) if n == names[0] and n != "group" else cst.Arg(v, keyword=cst.Name(n), equal=eq))
        if "group" in bound and code(bound["group"]).strip() != "None":
            review = _("torch group objects are MindSpore group names (strings): check the group")
        if review:
            self.note(full, f"→ {target}; {review}", "review")
        else:
            in_place = _(" (in place, as torch)") if "all_reduce" in target or "broadcast" in target else ""
            self.note(full, f"→ {target}{in_place}")
        self._consume(original.func)
        return updated.with_changes(func=self.ms(target), args=_commas(args))

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if original.attr.value == "module" and code(original.value).strip() in self.ddp:
            return updated.value  # ddp_model.module: the model itself once the wrapper is gone
        full = self.torch_name(original)
        if full and full.startswith("torch.distributed.ReduceOp.") and full.rsplit(".", 1)[-1] in REDUCE_OPS:
            return cst.SimpleString(REDUCE_OPS[full.rsplit(".", 1)[-1]])
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
                self.note("os.environ", _("torchrun variable → msrun's (RANK_ID/DEVICE_ID/RANK_SIZE)"))
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
                self.note("os.environ", _("torchrun variable → msrun's (RANK_ID/DEVICE_ID/RANK_SIZE)"))
                return updated.with_changes(left=new)
        return updated

    def _env_call(self, updated: cst.Call) -> cst.Call | None:
        if _dotted(updated.func) in _ENV_CALLS and updated.args:
            new = self._env_key(updated.args[0].value)
            if new is not None:
                self.note("os.environ", _("torchrun variable → msrun's (RANK_ID/DEVICE_ID/RANK_SIZE)"))
                return updated.with_changes(args=[updated.args[0].with_changes(value=new), *updated.args[1:]])
        return None

    # ---- statements ----------------------------------------------------------------------------

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        first = node.body[0] if len(node.body) == 1 else None
        self.stmt_call = first.value if isinstance(first, cst.Expr) and isinstance(first.value, cst.Call) else None
        # Statements with nothing to rewrite are not walked.
        stmt = self.index.ast_of(node)
        return stmt is None or any(_rewritable(n, self.imap, self.ddp, self.apis) for n in walk(stmt))

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
        full = self.torch_name(call.func)
        if full == INIT:
            return self._init(call, original)
        if full in self.apis.spawn:
            return self._spawn(call, original, updated)
        if full == BARRIER and not call.args:
            # ops.communication.barrier() returns at once on CPU (measured under msrun: rank 0 did
            # not wait for a rank sleeping 4 s); a collective whose result is read blocks everywhere.
            self.note(BARRIER, _("→ a blocking all-reduce of zeros (ops.communication.barrier does not wait on CPU)"))
            new = generated.statement(_with_note(BARRIER_STEP, BARRIER_NOTE), self.state.generated)
            self._consume(call.func)
            return new.with_changes(leading_lines=original.leading_lines)
        return updated

    def _init(self, call: cst.Call, stmt: cst.SimpleStatementLine):
        bound = self._bind(call, ("backend", "init_method", "timeout", "world_size", "rank")) or {}
        backend = bound.get("backend")
        btext = code(backend).strip() if backend is not None else "default"
        refs = self.state.generated
        new: list[cst.BaseStatement] = []
        if isinstance(backend, cst.SimpleString) and backend.evaluated_value == "gloo":
            new.append(generated.statement(_with_note(GLOO, GLOO_NOTE), refs))
        init = generated.statement("mindspore.communication.init()\n", refs)
        new.append(
            generated.with_comment(
                init,
                f"{MARK} "
                + _(
                    "init_process_group(backend={backend}): MindSpore picks HCCL/NCCL/its CPU collectives by "
                    "device; rank and world size come from msrun"
                ).format(backend=btext),
            )
        )
        new.append(generated.statement(DATA_PARALLEL, refs))
        new[0] = new[0].with_changes(leading_lines=stmt.leading_lines)
        text = _("→ mindspore.communication.init() + data-parallel context (backend {backend}); msrun launch")
        self.note(INIT, text.format(backend=btext))
        self.data_parallel = True
        self._consume(call.func)
        return cst.FlattenSentinel(new)

    def _spawn(self, call: cst.Call, stmt: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        bound = self._bind(call, ("fn", "args", "nprocs", "join", "daemon", "start_method"))
        fn = (bound or {}).get("fn")
        if fn is None:
            return updated  # *args: the KB entry marks it in place
        args = (bound or {}).get("args")
        rest: list[cst.Arg] = []
        if isinstance(args, cst.Tuple):
            rest = [cst.Arg(e.value) for e in args.elements]
        elif args is not None:
            rest = [cst.Arg(args, star="*")]
        nprocs = code(bound["nprocs"]).strip() if bound and "nprocs" in bound else "N"
        if nprocs.isdigit():
            self.workers = nprocs
        self.launched = True
        self.needs_os = True
        rank = generated.expression('int(os.environ["RANK_ID"])', self.state.generated)
        launch = cst.SimpleStatementLine([cst.Expr(cst.Call(fn, _commas([cst.Arg(rank), *rest])))])
        new = generated.with_comment(
            launch,
            f"{MARK} "
            + _("mp.spawn → one process per worker: msrun --worker_num={n} exports RANK_ID").format(n=nprocs),
        )
        self.note("torch.multiprocessing.spawn", _("fn(RANK_ID, *args): msrun starts the processes"), key=SPAWN_KEY)
        self._consume(call.func)
        return new.with_changes(leading_lines=stmt.leading_lines)

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        header = list(updated.header)
        if self.data_parallel or self.launched:
            launch = _(HEADER).format(command=MSRUN.format(n=self.workers))
            header.append(cst.EmptyLine(comment=cst.Comment(f"{MARK} {launch}")))
        body = list(updated.body)
        if self.needs_os and "os" not in self.imap.names:
            at = _after_imports(body)
            body.insert(at, cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.Name("os"))])]))
        return updated.with_changes(header=header, body=body)


def _after_imports(body: list[Statement]) -> int:
    i = 0
    for j, s in enumerate(body):
        if isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], (cst.Import, cst.ImportFrom)):
            i = j + 1
    return i


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [a.with_changes(comma=comma) for a in args[:-1]] + args[-1:]


def applies(state: FileState) -> bool:
    """torch distributed code in the file (a text check first: cheap)."""
    if not any(h in state.source for h in HINTS):
        return False
    assert state.tree is not None and state.imap is not None
    return _uses_distributed(state.tree, state.imap, _Apis(state.kb))


def run(state: FileState) -> None:
    """torch distributed data parallelism → MindSpore's (R19)."""
    if not applies(state):
        return
    assert state.module is not None and state.tree is not None and state.imap is not None
    stage = _Pass(state, _Apis(state.kb))
    module = state.module.visit(stage)
    reads = _reads(state.tree)
    dropped = {
        local
        for local, full in state.imap.names.items()
        if stage.apis.key(full) is not None and 0 < reads.get(local, 0) <= stage.consumed.get(local, 0)
    }
    if dropped:  # `from torch.nn.parallel import DistributedDataParallel`: nothing reads it any more
        module = module.visit(_DropImports(dropped, state.index))  # type: ignore[arg-type]
    state.data_parallel = stage.wrapped
    if stage.edits or dropped or stage.data_parallel or stage.launched:
        state.module = module
        state.restructured = True


CONSTRUCT = Construct("distributed", order=200, stage=run, whole_file=applies)


def _reads(tree: ast.Module) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out[n.id] = out.get(n.id, 0) + 1
    return out


class _DropImports(TrackedTransformer):
    def __init__(self, names: set[str], index: StatementIndex) -> None:
        super().__init__(index)
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
