"""Training loops, seeds' companions and checkpoints: a statement-level pre-pass on the torch source.

The per-call KB cannot express ``loss.backward(); optimizer.step()``: MindSpore has no ``.grad``, a
gradient is the value of ``mindspore.value_and_grad(forward_fn, ...)``. This pass restructures the
loop while it is still torch code, writing the MindSpore parts with full ``mindspore.`` names (the
module converter shortens them and adds the imports); the statements it moves into ``forward_fn``
are converted by the normal pass afterwards.

Two shapes are generated (bench/train_step_bench.py measured them):
- fused: ``zero_grad`` every iteration, ``step`` right after ``backward`` (clipping in between) →
  a ``TrainStep`` Cell whose ``@mindspore.jit`` ``construct`` is forward + gradients + update: one
  compiled graph per step in PyNative and GRAPH_MODE alike (as fast as a hand-written
  TrainOneStepCell under GRAPH_MODE; the script needs no set_context).
- general (gradient accumulation, ``step`` under an ``if``): the gradients torch keeps in ``.grad``
  become an explicit tuple: ``zero_grad`` → ``None``, ``backward`` → add, ``step`` → ``optimizer(sum)``.
Anything else keeps its torch statements and gets a ``# torch2ms: not converted — training loop: ...``.

Mixed precision (R13): ``with torch.autocast(...)`` blocks in the loop body are inlined into
``forward_fn``, whose model call goes to ``amp_model = mindspore.amp.auto_mixed_precision(model, "O1")``
(shares the model's parameters; bfloat16 falls back to float32 on CPU, which has no bfloat16 kernels).
``scaler.scale(loss).backward() … scaler.step(opt); scaler.update()`` becomes MindSpore's documented
DynamicLossScaler step: scale in forward_fn, unscale, ``all_finite``, optimizer under ``if finite``, ``adjust``.

Checkpoints (R18): ``torch.save(m.state_dict(), p)`` → ``mindspore.save_checkpoint(m, p)``;
``m.load_state_dict(x)`` → ``mindspore.load_param_into_net`` plus a check that raises on anything not
loaded (torch's strict=True), never a silent partial load.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from ..analysis.astwalk import bound_names, fresh_name, is_method_call, line_starting_statements, nodes
from ..analysis.imports import ImportMap
from .checkpoints import CALLS as CHECKPOINT_CALLS
from .checkpoints import rewrite_checkpoints
from .cstutil import code
from .distributed import rewrite_distributed

MARK = "# torch2ms:"
_LOOPS = (cst.For, cst.While)
_CLIP_NORM = frozenset(
    {"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad_norm"}
)
_CLIP_VALUE = frozenset({"torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad.clip_grad_value_"})


@dataclass
class Note:
    api: str
    action: str  # converted | not-converted | review
    note: str
    line: int


@dataclass
class TrainingRewrite:
    source: str
    notes: list[Note] = field(default_factory=list)
    # (class, function, name): names the training loop calls as modules (model, criterion), so the
    # converter treats model.parameters()/model.train() as Module methods even when untyped
    modules: list[tuple[str, str, str]] = field(default_factory=list)
    # The libcst tree of ``source`` when the pass parsed it: saves the main pass a second parse.
    parsed: cst.Module | None = None
    tree: ast.Module | None = None  # the ast of ``source`` when the pass parsed it
    # exact line map rewritten → original when only text edits were made (else module.py diffs)
    line_map: Callable[[int], int] | None = None


class LineMap:
    """Lines of the rewritten source → lines of the original (unchanged lines map exactly)."""

    def __init__(self, original: str, rewritten: str) -> None:
        a, b = original.splitlines(), rewritten.splitlines()
        self.map: dict[int, int] = {}
        for tag, i1, _i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            for k, j in enumerate(range(j1, j2)):
                self.map[j + 1] = (i1 + k + 1) if tag == "equal" else min(i1 + 1, max(len(a), 1))

    def __call__(self, line: int) -> int:
        return self.map.get(line, line)


def _stmt_ast(node: cst.CSTNode) -> ast.stmt | None:
    try:
        body = ast.parse(code(node).strip("\n")).body
    except SyntaxError:
        return None
    return body[0] if len(body) == 1 else None


def _stmts(src: str) -> list[cst.BaseStatement]:
    return list(cst.parse_module(src).body)


def _reads(node: ast.AST) -> list[str]:
    """Names read, in source order."""
    names = sorted(
        (n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    return list(dict.fromkeys(n.id for n in names))


def _writes(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
    return out


def _method_call(s: ast.stmt, attr: str) -> ast.Call | None:
    """``<recv>.<attr>(...)`` as a whole expression statement."""
    if (
        isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Attribute)
        and s.value.func.attr == attr
    ):
        return s.value
    return None


def _first_line(stmt: cst.SimpleStatementLine) -> str:
    return code(stmt.with_changes(leading_lines=[])).strip().splitlines()[0].strip()


class _Collector(cst.CSTVisitor):
    """Statements calling ``.backward()``/checkpoint APIs, with the compound statements around them."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[cst.CSTNode] = []
        self.backwards: list[tuple[cst.SimpleStatementLine, list[cst.CSTNode]]] = []
        self.simple: list[tuple[cst.SimpleStatementLine, list[cst.CSTNode]]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.SimpleStatementLine):
            self.simple.append((node, list(self.stack)))
            if len(node.body) == 1 and isinstance(node.body[0], cst.Expr):
                call = node.body[0].value
                if (
                    isinstance(call, cst.Call)
                    and isinstance(call.func, cst.Attribute)
                    and call.func.attr.value == "backward"
                ):
                    self.backwards.append((node, list(self.stack)))
            return False
        if isinstance(node, cst.BaseCompoundStatement):
            self.stack.append(node)
            return True
        return not isinstance(node, (cst.BaseExpression, cst.BaseSmallStatement))  # statements only

    def on_leave(self, original: cst.CSTNode) -> None:
        if isinstance(original, cst.BaseCompoundStatement):
            self.stack.pop()


class _Splice(cst.CSTTransformer):
    """Replace statements (by identity in the original tree) with lists of statements."""

    def __init__(self, replace: dict[int, list[cst.BaseStatement]], before: dict[int, list[cst.BaseStatement]]) -> None:
        super().__init__()
        self.replace, self.before = replace, before

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Only statements are replaced: never walk into expressions or inside simple statements.
        return not isinstance(node, (cst.SimpleStatementLine, cst.BaseExpression))

    def on_leave(self, original, updated):
        updated = super().on_leave(original, updated)
        key = id(original)
        if key not in self.replace and key not in self.before:
            return updated
        new = self.replace.get(key, [updated])
        new = [*self.before.get(key, []), *new]
        if not new:
            return cst.RemovalSentinel.REMOVE
        if len(new) == 1:
            return new[0]
        return cst.FlattenSentinel(new)

    def leave_IndentedBlock(self, original, updated):
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated


class _Names:
    """Generated names that do not collide with the file's own."""

    def __init__(self, tree: ast.Module) -> None:
        self.used = bound_names(tree)

    def new(self, base: str) -> str:
        return fresh_name(self.used, base)


class _Fail(Exception):
    pass


@dataclass
class _Amp:
    """What the loop's autocast blocks asked for."""

    blocks: list[cst.With] = field(default_factory=list)
    inside: set[int] = field(default_factory=set)  # ids of the statements inside them
    dtype: str = ""  # "" when every block is disabled
    enabled: str | None = None  # a non-literal enabled= expression
    header: str = ""
    model: str | None = None


class _RenameCall(cst.CSTTransformer):
    """``model(...)`` / ``self.model(...)`` → ``amp_model(...)``."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if isinstance(updated.func, (cst.Name, cst.Attribute)) and code(updated.func) == self.old:
            return updated.with_changes(func=cst.Name(self.new))
        return updated


class TrainingPass:
    distributed = False  # set by rewrite_training for DDP scripts (distributed.py)

    def __init__(self, source: str, tree: ast.Module, imap: ImportMap) -> None:
        self.source, self.tree, self.imap = source, tree, imap
        self.names = _Names(tree)
        self.notes: list[Note] = []
        self.replace: dict[int, list[cst.BaseStatement]] = {}
        self.before: dict[int, list[cst.BaseStatement]] = {}
        self.optimizers, self.schedulers = self._optimizer_names()
        self.modules: list[tuple[str, str, str]] = []

    def _optimizer_names(self) -> tuple[set[str], set[str]]:
        opts, scheds = set(), set()
        for n in nodes(self.tree):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
                full = self.imap.resolve(n.value.func) or ""
                if not self.imap.is_framework(full):
                    continue
                for t in n.targets:
                    name = ast.unparse(t)
                    if full.startswith("torch.optim.lr_scheduler."):
                        scheds.add(name)
                    elif full.startswith("torch.optim.") and full.count(".") == 2:
                        opts.add(name)
        return opts, scheds

    def _is_optimizer(self, recv: str) -> bool:
        if recv in self.optimizers:
            return True
        return recv not in self.schedulers and "sched" not in recv.lower()

    def resolve(self, node: ast.AST) -> str | None:
        full = self.imap.resolve(node)
        return full if full and self.imap.is_framework(full) else None

    # ---- driver ----------------------------------------------------------------------------

    def run(self) -> TrainingRewrite:
        module = cst.parse_module(self.source)
        col = _Collector()
        module.visit(col)
        self.col = col
        for stmt, stack in col.backwards:
            try:
                self._training_step(stmt, stack)
            except _Fail as exc:
                line = self._line(stmt)
                self.notes.append(Note("training loop", "not-converted", str(exc), line))
                note = cst.EmptyLine(comment=cst.Comment(f"{MARK} not converted — training loop: {exc}"))
                self.replace[id(stmt)] = [stmt.with_changes(leading_lines=[*stmt.leading_lines, note])]
        if not self.replace and not self.before:
            return TrainingRewrite(self.source, self.notes, self.modules, parsed=module)
        new = module.visit(_Splice(self.replace, self.before))
        return TrainingRewrite(new.code, self.notes, self.modules, parsed=new)

    def _line(self, stmt: cst.SimpleStatementLine) -> int:
        """Source line of a collected statement, without libcst's costly position metadata: the
        k-th libcst SimpleStatementLine starts on the line of the k-th ast statement that begins a line."""
        if not hasattr(self, "_index"):
            self._index = {id(s): i for i, (s, _) in enumerate(self.col.simple)}
            self._starts = [n.lineno for n in line_starting_statements(self.tree, self.source)]
        i = self._index.get(id(stmt))
        if i is None or len(self._starts) != len(self.col.simple):
            return self._line_by_text(stmt)
        return self._starts[i]

    def _line_by_text(self, stmt: cst.SimpleStatementLine) -> int:
        """Fallback: the n-th statement with this text is on the n-th source line that holds it."""
        if not hasattr(self, "_lines"):
            self._lines: dict[str, list[int]] = {}
            for i, text in enumerate(self.source.splitlines(), 1):
                self._lines.setdefault(text.strip(), []).append(i)
            self._texts = {id(s): _first_line(s) for s, _ in self.col.simple}
        text = self._texts.get(id(stmt)) or _first_line(stmt)
        same = [s for s, _ in self.col.simple if self._texts[id(s)] == text]
        n = next((i for i, s in enumerate(same) if s is stmt), 0)
        lines = self._lines.get(text, [])
        return lines[n] if n < len(lines) else (lines[-1] if lines else 0)

    # ---- the training step -------------------------------------------------------------------

    def _training_step(self, bstmt: cst.SimpleStatementLine, stack: list[cst.CSTNode]) -> None:
        scope_at = max((i for i, n in enumerate(stack) if isinstance(n, (cst.FunctionDef, cst.ClassDef))), default=-1)
        scope_node = stack[scope_at] if scope_at >= 0 else None
        path = stack[scope_at + 1 :]
        if not path or not isinstance(path[-1], _LOOPS):
            raise _Fail("loss.backward() is not directly inside a for/while loop")
        loops = [n for n in path if isinstance(n, _LOOPS)]
        loop = path[-1]
        body = list(loop.body.body) if isinstance(loop.body, cst.IndentedBlock) else []
        if not body:
            raise _Fail("one-line loop body")
        body, amp = self._autocast(body)  # R13: `with autocast(...)` blocks join the loop body
        asts = [_stmt_ast(s) for s in body]
        if any(a is None for a in asts):
            raise _Fail("cannot analyse the loop body")
        ib = next(i for i, s in enumerate(body) if s is bstmt)
        bcall = _method_call(asts[ib], "backward")
        if bcall is None or bcall.args or bcall.keywords:
            raise _Fail("backward() with arguments (retain_graph/gradient): port by hand")
        target = bcall.func.value  # type: ignore[union-attr]
        scaler = None
        if is_method_call(target, "scale") and len(target.args) == 1 and not target.keywords:  # type: ignore[attr-defined]
            scaler, target = ast.unparse(target.func.value), target.args[0]  # type: ignore[attr-defined]
        if any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "scale"
            for n in ast.walk(target)
        ):
            raise _Fail("loss scaling (GradScaler): use mindspore.amp loss scaling")
        for a in asts:
            for n in ast.walk(a):
                if isinstance(n, ast.Attribute) and n.attr == "grad":
                    raise _Fail("the loop reads .grad: MindSpore gradients are the value_and_grad tuple")
        if sum(1 for a in asts if _method_call(a, "backward")) > 1:
            raise _Fail("several backward() calls in one loop body")

        # roles after the backward: clip, step (directly or under an `if`), zero_grad
        step_at, step_if = None, None
        for i in range(ib + 1, len(body)):
            c = _method_call(asts[i], "step")
            if c is not None and self._is_optimizer(ast.unparse(c.func.value)):  # type: ignore[union-attr]
                step_at = i
                break
            if isinstance(asts[i], ast.If):
                inner = asts[i].body  # type: ignore[attr-defined]
                if any(
                    (c := _method_call(s, "step")) is not None and self._is_optimizer(ast.unparse(c.func.value))
                    for s in inner
                ):
                    step_at, step_if = i, True
                    break
        if step_at is None:
            raise _Fail("no optimizer.step() after loss.backward() in the same loop body")
        step_src = next(
            ast.unparse(c.func.value)
            for s in (asts[step_at].body if step_if else [asts[step_at]])  # type: ignore[attr-defined]
            if (c := _method_call(s, "step")) is not None
        )
        opt = step_src
        zero_at = [i for i, a in enumerate(asts) if _method_call(a, "zero_grad") is not None]
        between = list(range(ib + 1, step_at))
        clips = [i for i in between if self._clip(asts[i]) is not None]
        unscales, scaler_calls = [], []  # scaler.unscale_(opt) between backward and step; scaler.update() after
        if scaler is not None:
            opt, unscales, update_at = self._scaler_roles(asts, ib, step_at, step_if, scaler)
            scaler_calls = [*unscales, update_at]
        fused = (
            not step_if
            and len(clips) + len(unscales) == len(between)
            and len(zero_at) >= 1
            and all(z < ib or z > step_at for z in zero_at)
        )
        if scaler is not None and not fused:
            raise _Fail("GradScaler with gradient accumulation or extra statements before scaler.step(): port by hand")

        # the forward slice: statements before backward that compute the loss
        slice_idx = self._slice(asts, ib, target, set(zero_at))
        outer = self._insertion_loop(loops, opt, [asts[i] for i in slice_idx])
        local = set()
        for n in ast.walk(_stmt_ast(outer)):  # type: ignore[arg-type]
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                local.add(n.id)
        prep = self._prep(asts, slice_idx, local)
        fwd_idx = [i for i in slice_idx if i not in prep]
        if not fwd_idx:
            raise _Fail("the loss does not come from a forward pass in this loop body")
        first_fwd = fwd_idx[0]
        fwd_writes: set[str] = set()
        for i in fwd_idx:
            fwd_writes |= _writes(asts[i])
        params: list[str] = []
        assigned: set[str] = set()
        for i in fwd_idx:
            for r in _reads(asts[i]):
                if r in local and r not in assigned and r not in params:
                    params.append(r)
            assigned |= _writes(asts[i])
        scope_ast = _stmt_ast(scope_node) if scope_node is not None else self.tree
        aux = self._aux(scope_ast, [asts[i] for i in fwd_idx], fwd_writes)
        loss_src = ast.unparse(target)
        loss_name = loss_src if isinstance(target, ast.Name) else None
        if loss_name in aux:
            aux.remove(loss_name)

        # generated names and pieces
        n_fwd, n_grad = self.names.new("forward_fn"), self.names.new("grad_fn")
        gap = "\n\n" if scope_node is None else "\n"  # blank lines: two at module level, one inside a def
        args = ", ".join(params)
        ret = ", ".join([f"{scaler}.scale({loss_src})" if scaler else loss_src, *aux])
        values = ", ".join([loss_name or "_", *aux])
        values_t = f"({values})" if aux else values
        has_aux = ", has_aux=True" if aux else ""
        n_amp = self.names.new(f"amp_{amp.model.split('.')[-1]}") if amp and amp.model and amp.dtype else None
        fwd_body = "".join(
            code(body[i].visit(_RenameCall(amp.model, n_amp)) if n_amp and id(body[i]) in amp.inside else body[i])
            for i in fwd_idx
        )
        fwd_body = "".join("    " + line if line.strip() else line for line in fwd_body.splitlines(True))
        setup = (
            f"def {n_fwd}({args}):\n"
            f'    """Forward pass and loss of the torch training loop (value_and_grad differentiates it)."""\n'
            f"{fwd_body}    return {ret}\n{gap}"
            f"{n_grad} = mindspore.value_and_grad({n_fwd}, None, {opt}.parameters{has_aux})\n"
        )
        reduce = ""
        if self.distributed:  # DDP all-reduced (averaged) the gradients inside backward()
            n_red = self.names.new("grad_reducer")
            # without init() (a run without msrun) the reducer would crash: identity then, as without DDP
            setup += (
                f"{MARK} DDP averaged the gradients across workers (identity when run without msrun)\n"
                f"{n_red} = mindspore.nn.DistributedGradReducer({opt}.parameters, mean=True) "
                "if mindspore.communication.GlobalComm.INITED else mindspore.nn.Identity()\n"
            )
            reduce = f"grads = {n_red}(grads)\n"
        if n_amp:
            setup = self._amp_setup(amp, n_amp) + gap + setup
            self.notes.append(
                Note(
                    "torch.autocast", "converted", "mindspore.amp.auto_mixed_precision(model, 'O1')", self._line(bstmt)
                )
            )
        if not self._sets_mode(scope_ast, fwd_idx, asts):
            model = self._model_name([asts[i] for i in fwd_idx])
            if model:
                setup = (
                    f"{model}.train()  {MARK} a torch module starts in training mode, a MindSpore cell does not\n"
                    + setup
                )
        fn = stack[scope_at].name.value if isinstance(scope_node, cst.FunctionDef) else ""
        cls = next((n.name.value for n in reversed(stack[: max(scope_at, 0)]) if isinstance(n, cst.ClassDef)), "")
        for a in [asts[i] for i in fwd_idx]:
            for n in ast.walk(a):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not self.resolve(n.func):
                    self.modules += [(cls, fn, n.func.id), (cls, n_fwd, n.func.id)]
        line = self._line(bstmt)
        # statements between the first forward statement and backward that are not part of the
        # forward (metrics on its outputs, logging) run after the step call, in their order
        after = [i for i in range(first_fwd + 1, ib) if i not in slice_idx and i not in zero_at]
        for i in [*fwd_idx, *after]:
            self.replace[id(body[i])] = []
        if fused:
            n_cls, n_step = self.names.new("TrainStep"), self.names.new("train_step")
            clip_src, clip_out = "", []
            for i in clips:
                src, outs = self._clip_code(asts[i], "grads", body[i])
                clip_src += src
                clip_out += outs
            first = loss_name or "loss"
            got = f"({', '.join([first, *aux])})" if aux else first
            returns = ", ".join([first, *aux, *clip_out])
            n_opt = opt
            if opt.split(".")[0] == "self":  # inside construct, self is the TrainStep Cell
                n_opt = self.names.new(opt.split(".")[-1])
                setup += f"{n_opt} = {opt}\n"
            update = f"        {n_opt}(grads)\n"
            if scaler is not None:  # R13: torch's GradScaler step as MindSpore's documented loss-scaling step
                n_fin, n_sc = self.names.new("grads_finite"), scaler
                if scaler.split(".")[0] == "self":
                    n_sc = self.names.new(scaler.split(".")[-1])
                    setup += f"{n_sc} = {scaler}\n"
                clip_src = (
                    f"{first} = {n_sc}.unscale({first})\n"
                    f"grads = {n_sc}.unscale(grads)  {MARK} {scaler}.unscale_({opt})\n"
                    f"{n_fin} = mindspore.amp.all_finite(grads)\n" + clip_src
                )
                update = (
                    f"        if {n_fin}:  {MARK} {scaler}.step({opt}) skips the step when a gradient is inf/nan\n"
                    f"            {n_opt}(grads)\n"
                    f"        {n_sc}.adjust({n_fin})  {MARK} {scaler}.update(): halve the scale on overflow\n"
                )
            clip_src = "".join("        " + ln + "\n" for ln in clip_src.splitlines())
            setup += (
                f"{gap}class {n_cls}(mindspore.nn.Cell):\n"
                f'    """Forward, loss.backward() and {opt}.step() of the torch loop as one Cell."""\n\n'
                "    # One compiled graph per step in PyNative too (MS_JIT=0 runs it op by op for debugging).\n"
                "    @mindspore.jit\n"
                f"    def construct({', '.join(['self', *params])}):\n"
                f"        {got}, grads = {n_grad}({args})\n"
                f"{'        ' + reduce if reduce else ''}"
                f"{clip_src}"
                f"{update}"
                f"        return {returns}\n"
                f"{gap}{n_step} = {n_cls}()\n"
            )
            lhs = ", ".join([loss_name or "_", *aux, *clip_out])
            call = _stmts(f"{lhs} = {n_step}({args})  {MARK} forward, loss.backward(), {opt}.step()\n")
            for i in [*clips, step_at, *zero_at, *scaler_calls]:
                self.replace[id(body[i])] = []
            form = "one TrainStep Cell (value_and_grad + optimizer)"
        else:
            n_sum = self.names.new("grads_sum")
            setup += f"{n_sum} = None  {MARK} gradients since the last zero_grad() (torch keeps them in .grad)\n"
            call = _stmts(
                f"{values_t}, grads = {n_grad}({args})  {MARK} forward + loss.backward()\n"
                f"{reduce}"
                f"{n_sum} = grads if {n_sum} is None else tuple(s + g for s, g in zip({n_sum}, grads))\n"
            )
            for i in zero_at:
                self.replace[id(body[i])] = _stmts(f"{n_sum} = None  {MARK} {code(body[i]).strip()}\n")
            for i in clips:
                self.replace[id(body[i])] = _stmts(self._clip_code(asts[i], n_sum, body[i])[0])
            self._general_step(body[step_at], asts[step_at], n_sum, opt)
            form = "gradients accumulated in a tuple between zero_grad() calls"
        call[0] = call[0].with_changes(leading_lines=bstmt.leading_lines)
        self.replace[id(bstmt)] = call + [body[i] for i in after]
        if amp:  # each autocast block: what is left of it, unindented
            for w in amp.blocks:
                left = [n for c in w.body.body for n in self.replace.get(id(c), [c])]
                if left:
                    left[0] = left[0].with_changes(leading_lines=[*w.leading_lines, *left[0].leading_lines])
                self.replace[id(w)] = left
        self.before.setdefault(id(outer), []).extend(_flush_blank_lines(_stmts(setup + "\n")))
        self.notes.append(Note("torch.Tensor.backward", "converted", f"training loop → {form}", line))
        self.notes.append(Note("torch.optim.Optimizer.step", "converted", f"training loop → {opt}(grads)", line))

    # ---- mixed precision (R13) ---------------------------------------------------------------

    def _autocast(self, body: list[cst.BaseStatement]) -> tuple[list[cst.BaseStatement], _Amp | None]:
        """Inline the loop body's ``with torch.autocast(...)`` blocks; what they asked for goes in _Amp."""
        if "autocast" not in "".join(code(s) for s in body if isinstance(s, cst.With)):
            return body, None
        amp, out = _Amp(), []
        for s in body:
            a = _stmt_ast(s) if isinstance(s, cst.With) else None
            if (
                not isinstance(a, ast.With)
                or not isinstance(s.body, cst.IndentedBlock)
                or len(a.items) != 1
                or a.items[0].optional_vars is not None
                or not isinstance(a.items[0].context_expr, ast.Call)
            ):
                out.append(s)
                continue
            call = a.items[0].context_expr
            full = self.resolve(call.func) or ""
            if full.rsplit(".", 1)[-1] != "autocast":
                out.append(s)
                continue
            self._autocast_args(full, call, amp)
            amp.blocks.append(s)
            amp.inside |= {id(c) for c in s.body.body}
            out.extend(s.body.body)
        # the model: the first module called, in evaluation order (criterion(model(x), y) → model)
        inside = [a for c in out if id(c) in amp.inside and (a := _stmt_ast(c)) is not None]
        amp.model = next(
            (
                ast.unparse(n.func)
                for a in inside
                for n in _post_order(a)
                if isinstance(n, ast.Call)
                and not self.resolve(n.func)
                and (
                    isinstance(n.func, ast.Name)
                    and n.func.id[:1].islower()
                    or isinstance(n.func, ast.Attribute)
                    and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == "self"
                )
            ),
            None,
        )
        if amp.dtype and not amp.model:
            raise _Fail("autocast around a forward that calls no module: port by hand")
        return out, amp

    def _autocast_args(self, full: str, call: ast.Call, amp: _Amp) -> None:
        names = (
            ["enabled", "dtype", "cache_enabled"]
            if ".cuda." in full or ".cpu." in full
            else ["device_type", "dtype", "enabled", "cache_enabled"]
        )
        got = {names[i]: v for i, v in enumerate(call.args[: len(names)])}
        got.update({k.arg: k.value for k in call.keywords if k.arg})
        device = got.get("device_type")
        device = device.value if isinstance(device, ast.Constant) else ("cpu" if ".cpu." in full else "cuda")
        dtype = (
            self.resolve(got["dtype"]) if "dtype" in got else ("torch.bfloat16" if device == "cpu" else "torch.float16")
        )
        dtypes = {"torch.float16": "float16", "torch.half": "float16", "torch.bfloat16": "bfloat16"}
        if dtype not in dtypes:
            raise _Fail(f"autocast dtype {ast.unparse(got['dtype'])}: MindSpore amp takes float16 or bfloat16")
        enabled = got.get("enabled")
        if isinstance(enabled, ast.Constant) and enabled.value is False:
            return  # a disabled autocast changes nothing
        flag = (
            None
            if enabled is None or isinstance(enabled, ast.Constant) and enabled.value is True
            else ast.unparse(enabled)
        )
        if amp.dtype and (amp.dtype, amp.enabled) != (dtypes[dtype], flag):
            raise _Fail("several autocast blocks with different settings in one training step")
        amp.dtype, amp.enabled = dtypes[dtype], flag
        amp.header = ast.unparse(call)

    def _amp_setup(self, amp: _Amp, name: str) -> str:
        """The model with MindSpore's O1 mixed precision (torch autocast's op lists: fp16 for conv/matmul-type
        ops, fp32 for reductions and losses). It shares the model's parameters."""
        if not amp.dtype:
            return ""
        cast = f'mindspore.amp.auto_mixed_precision({amp.model}, "O1", dtype=mindspore.{amp.dtype})'
        note = f"{MARK} {amp.header} → O1 mixed precision"
        if amp.dtype == "bfloat16":  # measured: no bfloat16 CPU kernels (AdaptiveAvgPool2D, ...) in MindSpore 2.10
            cast = f'{amp.model} if mindspore.get_context("device_target") == "CPU" else {cast}'
            note += "; float32 on CPU (MindSpore 2.10 has no bfloat16 CPU kernels for most layers)"
        if amp.enabled:
            cast = f"{f'({cast})' if amp.dtype == 'bfloat16' else cast} if {amp.enabled} else {amp.model}"
        return f"{name} = {cast}  {note}\n"

    def _scaler_roles(
        self, asts: list[ast.stmt], ib: int, step_at: int, step_if: bool | None, scaler: str
    ) -> tuple[str, list[int], int]:
        """``scaler.step(opt)`` → the optimizer; ``scaler.unscale_(opt)`` before it; ``scaler.update()`` after."""
        c = None if step_if else _method_call(asts[step_at], "step")
        if c is None or ast.unparse(c.func.value) != scaler or len(c.args) != 1:  # type: ignore[attr-defined]
            raise _Fail(f"{scaler}.scale(loss).backward() without {scaler}.step(optimizer) right after: port by hand")
        opt = ast.unparse(c.args[0])
        unscales = [
            i
            for i in range(ib + 1, step_at)
            if (u := _method_call(asts[i], "unscale_")) is not None and ast.unparse(u.func.value) == scaler
        ]  # type: ignore[attr-defined]
        update_at = next(
            (
                i
                for i in range(step_at + 1, len(asts))
                if (u := _method_call(asts[i], "update")) is not None
                and ast.unparse(u.func.value) == scaler
                and not u.args
            ),
            None,
        )  # type: ignore[attr-defined]
        if update_at is None:
            raise _Fail(f"{scaler}.step() without {scaler}.update(): port the loss scaling by hand")
        return opt, unscales, update_at

    def _general_step(self, node: cst.BaseStatement, a: ast.stmt, n_sum: str, opt: str) -> None:
        """``optimizer.step()`` (directly or inside the accumulation ``if``) → ``optimizer(grads_sum)``."""
        if isinstance(node, cst.If):
            body = list(node.body.body)
            for s in body:
                sa = _stmt_ast(s)
                if sa is None:
                    continue
                if (c := _method_call(sa, "step")) is not None and ast.unparse(c.func.value) == opt:  # type: ignore[union-attr]
                    self.replace[id(s)] = _stmts(f"{opt}({n_sum})  {MARK} {opt}.step()\n")
                elif _method_call(sa, "zero_grad") is not None:
                    self.replace[id(s)] = _stmts(f"{n_sum} = None  {MARK} {code(s).strip()}\n")
                elif self._clip(sa) is not None:
                    self.replace[id(s)] = _stmts(self._clip_code(sa, n_sum, s)[0])
            return
        self.replace[id(node)] = _stmts(f"{opt}({n_sum})  {MARK} {opt}.step()\n")

    def _clip(self, a: ast.stmt) -> str | None:
        value = a.value if isinstance(a, (ast.Expr, ast.Assign)) else None
        if isinstance(value, ast.Call):
            full = self.resolve(value.func)
            if full in _CLIP_NORM or full in _CLIP_VALUE:
                return full
        return None

    def _clip_code(self, a: ast.stmt, grads: str, node: cst.CSTNode) -> tuple[str, list[str]]:
        """clip_grad_norm_/clip_grad_value_ on the gradient tuple (torch's formula: max_norm/(total+1e-6))."""
        full = self._clip(a)
        call = a.value  # type: ignore[attr-defined]
        names = (
            ["parameters", "max_norm", "norm_type", "error_if_nonfinite", "foreach"]
            if full in _CLIP_NORM
            else ["parameters", "clip_value", "foreach"]
        )
        got = {names[i]: ast.unparse(v) for i, v in enumerate(call.args)}
        got.update({k.arg: ast.unparse(k.value) for k in call.keywords if k.arg})
        orig = code(node).strip().splitlines()[-1]
        if full in _CLIP_VALUE:
            v = got["clip_value"]
            return f"{grads} = mindspore.ops.clip_by_value({grads}, -({v}), {v})  {MARK} {orig}\n", []
        p = got.get("norm_type", "2.0")
        lines, outs = "", []
        if isinstance(a, ast.Assign):  # total = clip_grad_norm_(...): the norm before clipping
            tgt = ast.unparse(a.targets[0])
            lines += (
                f"{tgt} = mindspore.ops.vector_norm(mindspore.ops.stack("
                f"[mindspore.ops.vector_norm(g, {p}) for g in {grads}]), {p})\n"
            )
            outs.append(tgt)
        extra = f", norm_type={p}" if "norm_type" in got else ""
        lines += f"{grads} = mindspore.ops.clip_by_norm({grads}, {got['max_norm']}{extra})  {MARK} {orig}\n"
        return lines, outs

    def _slice(self, asts: list[ast.stmt], ib: int, target: ast.expr, skip: set[int]) -> list[int]:
        needed = set(_reads(target))
        out = []
        for i in range(ib - 1, -1, -1):
            if i in skip:
                continue
            w = _writes(asts[i])
            if w & needed:
                if not isinstance(asts[i], (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    raise _Fail(f"the loss depends on a compound statement (line {asts[i].lineno} of the loop body)")
                out.append(i)
                needed |= set(_reads(asts[i]))
        return sorted(out)

    def _prep(self, asts: list[ast.stmt], slice_idx: list[int], local: set[str]) -> set[int]:
        """Leading slice statements that only reshape/move the batch (no module or user call):
        they stay in the loop instead of moving into forward_fn."""
        prep: set[int] = set()
        for i in slice_idx:
            a = asts[i]
            ok = True
            for n in ast.walk(a):
                if isinstance(n, ast.Call):
                    if self.resolve(n.func):
                        continue
                    root = n.func
                    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                        root = root.func if isinstance(root, ast.Call) else root.value
                    if not (isinstance(n.func, ast.Attribute) and isinstance(root, ast.Name) and root.id in local):
                        ok = False
            if not ok:
                break
            prep.add(i)
        return prep

    def _insertion_loop(self, loops: list[cst.CSTNode], opt: str, fwd: list[ast.stmt]) -> cst.CSTNode:
        """The outermost loop that neither builds the optimizer nor the modules the forward calls."""
        needed = {opt.split(".")[0]}
        for a in fwd:
            for n in ast.walk(a):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                    needed.add(n.func.id)
        for lp in loops:
            la = _stmt_ast(lp)
            if la is not None and not (_writes(la) & needed):
                return lp
        raise _Fail(f"{opt} or the model is created inside the loop")

    def _aux(self, scope: ast.AST | None, fwd: list[ast.stmt], writes: set[str]) -> list[str]:
        """Names the forward computes that code outside it reads (returned next to the loss)."""
        inside = {id(n) for a in fwd for n in ast.walk(a)}
        read = (
            {
                n.id
                for n in ast.walk(scope)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in inside
            }
            if scope is not None
            else set()
        )
        order: list[str] = []
        for a in fwd:
            for n in ast.walk(a):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in read and n.id not in order:
                    order.append(n.id)
        return [n for n in order if n in writes]

    def _sets_mode(self, scope: ast.AST | None, fwd_idx, asts) -> bool:
        if scope is None:
            return True
        return any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("train", "eval")
            and not n.args[1:]
            for n in ast.walk(scope)
        )

    def _model_name(self, fwd: list[ast.stmt]) -> str | None:
        for a in fwd:
            for n in ast.walk(a):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id[:1].islower():
                    return n.func.id
        return None


def _flush_blank_lines(stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """Blank lines of generated statements carry no indentation (no trailing spaces in nested blocks)."""
    out = []
    if stmts:  # one blank line before the generated block
        stmts[0] = stmts[0].with_changes(leading_lines=[cst.EmptyLine(indent=False), *stmts[0].leading_lines])
    for st in stmts:
        lines = [ln.with_changes(indent=False) if ln.comment is None else ln for ln in st.leading_lines]
        out.append(st.with_changes(leading_lines=lines))
    return out


def _post_order(node: ast.AST):
    """Nodes children first: the order in which calls are evaluated."""
    for child in ast.iter_child_nodes(node):
        yield from _post_order(child)
    yield node


def _has_candidates(tree: ast.Module) -> bool:
    """Any ``x.backward()``, ``torch.save(...)`` or ``load_state_dict(...)`` statement (cheap, no libcst)."""
    for node in nodes(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name == "backward" or name in CHECKPOINT_CALLS:
                return True
    return False


def rewrite_training(source: str, tree: ast.Module, imap: ImportMap) -> TrainingRewrite:
    """The pre-pass: torch source → torch source with training steps/checkpoints restructured."""
    dist = rewrite_distributed(source, tree, imap)  # R19: DDP/process group first (None: not distributed)
    if dist is not None:
        result = _rewrite_training(dist.source, dist.tree, imap, distributed=dist.data_parallel)
        back = LineMap(source, dist.source)
        for n in result.notes:
            n.line = back(n.line)
        result.notes[:0] = [Note(n.api, n.action, n.note, n.line) for n in dist.notes]
        if result.source == dist.source:  # nothing else changed: reuse the distributed pass's trees
            result.tree, result.parsed = result.tree or dist.tree, result.parsed or dist.parsed
        return result
    return _rewrite_training(source, tree, imap)


def _rewrite_training(source: str, tree: ast.Module, imap: ImportMap, distributed: bool = False) -> TrainingRewrite:
    if ("backward" not in source and "state_dict" not in source) or not _has_candidates(tree):
        return TrainingRewrite(source)
    # Checkpoint statements first, on the text (checkpoints.py): no libcst work for model files.
    ck = rewrite_checkpoints(source, tree, imap)
    notes = [Note(*n) for n in ck.notes]
    work = ck.source
    if work != source:
        tree = ck.tree  # the input tree, spliced to match the new text
    if "backward" not in work or not _has_backward(tree):
        return TrainingRewrite(work, notes, tree=tree, line_map=ck.to_original if work != source else None)
    p = TrainingPass(work, tree, imap)
    p.distributed = distributed  # DDP averaged gradients in backward(): the step all-reduces them
    result = p.run()
    if work != source:
        for n in result.notes:
            n.line = ck.to_original(n.line)
    result.notes = sorted([*notes, *result.notes], key=lambda n: n.line)
    return result


def _has_backward(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Attribute)
        and n.value.func.attr == "backward"
        for n in nodes(tree)
    )
