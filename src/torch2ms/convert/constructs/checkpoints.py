"""Checkpoint statements (R18), a construct stage on the libcst tree.

``torch.save(m.state_dict(), p)`` → ``mindspore.save_checkpoint(m, torch2ms.runtime.ckpt_path(p))``;
``m.load_state_dict(sd)`` → ``torch2ms.runtime.load_param_into_net_strict(m, sd)``, which raises when
anything is left unloaded (torch's strict load raises too), never a silent partial load; ``strict=False``
→ ``mindspore.load_param_into_net(m, sd)``. The
arguments stay the user's torch code: the rewrite stage converts them (``torch.load(p)`` →
``mindspore.load_checkpoint(...)``). Only statements that own their line are rewritten
(``a; m.load_state_dict(sd)`` is left to the per-call rules). A whole model saved and loaded
(``torch.save(model, f)`` … ``model = torch.load(f)``) is loaded into the model the script built,
or marked where the script builds none (``whole_model.py``).

The stage visits statements only, never expressions: most model-zoo files hold one or two
checkpoint calls (torchvision's builders call ``load_state_dict``).
"""

from __future__ import annotations

import ast
from bisect import bisect_left

import libcst as cst

from ...analysis.astwalk import is_method_call, nodes
from ...analysis.imports import ImportMap
from ...i18n import N_, _
from .. import generated
from ..changes import review_mark
from ..construct import Construct
from ..cstutil import Statement, code
from ..state import FileState
from .whole_model import BUILT, whole_model_loads

CALLS = frozenset({"save", "load_state_dict"})
NAME = "checkpoints"

SAVE = "mindspore.save_checkpoint({model}, torch2ms.runtime.ckpt_path({path}))\n"
LOAD = "mindspore.load_param_into_net({model}, {state})\n"
LOAD_STRICT = "torch2ms.runtime.load_param_into_net_strict({model}, {state})\n"
NO_MODEL_NOTE = N_(
    "{name} is a whole model pickled by torch.save, but a MindSpore checkpoint holds parameters only: "
    "build the model class first ({name} = MyModel(...)), then "
    "mindspore.load_param_into_net({name}, mindspore.load_checkpoint(...))"
)


def applies(state: FileState) -> bool:
    """Any ``torch.save(...)`` or ``x.load_state_dict(...)`` statement (a text check first: cheap)."""
    if "save" not in state.source and "load" not in state.source:
        return False
    assert state.tree is not None
    return any(
        (_call_name(n) in CALLS and isinstance(n, ast.Expr)) or (_call_name(n) == "load" and isinstance(n, ast.Assign))
        for n in nodes(state.tree)
    )


def run(state: FileState) -> None:
    if not applies(state):
        return
    assert state.module is not None and state.tree is not None and state.imap is not None
    stage = _Checkpoints(state)
    module = state.module.visit(stage)
    if stage.rewritten:
        state.module = module


CONSTRUCT = Construct("checkpoints", order=210, stage=run)


# What lies between a compound statement and the statements of its body.
_CONTAINERS = (
    cst.Module,
    cst.IndentedBlock,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)


class _Checkpoints(cst.CSTTransformer):
    def __init__(self, state: FileState) -> None:
        super().__init__()
        assert state.tree is not None and state.imap is not None and state.index is not None
        self.state, self.imap, self.index = state, state.imap, state.index
        self.schedulers = _scheduler_names(state.tree, state.imap)
        classes = state.facts.module_classes if state.facts is not None else {}
        self.model_loads = whole_model_loads(state.tree, state.imap, classes, state.kb)
        self.rewritten = 0
        # The loads rewritten: statements that own their line (a scheduler's load_state_dict is not a model's).
        self.loads: set[int] = set()
        self.current: ast.Expr | None = None
        lines = state.source.splitlines()
        # Lines of the candidate statements: a compound statement around none of them is not entered.
        self.target_lines = sorted(
            n.lineno
            for n in nodes(state.tree)
            if isinstance(n, ast.stmt)
            and ((isinstance(n, ast.Expr) and _call_name(n) in CALLS) or id(n) in self.model_loads)
        )
        for n in nodes(state.tree):
            if isinstance(n, ast.Assign) and self.model_loads.get(id(n)) == BUILT and _owns_line(n, lines):
                self.loads.add(id(n))
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and is_method_call(n.value, "load_state_dict"):
                owner = ast.unparse(n.value.func.value)  # type: ignore[attr-defined]
                if n.value.args and owner not in self.schedulers and _owns_line(n, lines):
                    self.loads.add(id(n))

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Only the way down to statements: blocks and the compound statements that hold a candidate.
        if isinstance(node, cst.BaseCompoundStatement):
            origin = self.index.ast_of(node)
            return origin is None or self._holds_target(origin)
        return isinstance(node, _CONTAINERS)

    def _holds_target(self, node: ast.stmt) -> bool:
        at = bisect_left(self.target_lines, node.lineno)
        return at < len(self.target_lines) and self.target_lines[at] <= (node.end_lineno or node.lineno)

    def on_leave(self, original, updated):  # type: ignore[override]
        result = super().on_leave(original, updated)
        if isinstance(original, cst.BaseCompoundStatement) and result is not original:
            self.index.derive(result, original, exact=True)  # its body changed, its own lines did not
        return result

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        node = self.index.ast_of(original)
        if len(original.body) == 1 and isinstance(node, ast.Assign) and id(node) in self.model_loads:
            return self._whole_model(node, original)
        if len(original.body) != 1 or not isinstance(node, ast.Expr) or _call_name(node) not in CALLS:
            return updated
        expr = original.body[0]
        assert isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call) and isinstance(node.value, ast.Call)
        call = expr.value
        self.current = node
        new = self._save(node.value, call) or self._load(node.value, call)
        if new is None:
            return updated
        new[0] = new[0].with_changes(leading_lines=original.leading_lines)
        if original.trailing_whitespace.comment is not None:
            first = new[0]
            assert isinstance(first, cst.SimpleStatementLine)
            new[0] = first.with_changes(trailing_whitespace=original.trailing_whitespace)
        for stmt in new:
            self.index.derive_tree(stmt, original)
        self.rewritten += 1
        return cst.FlattenSentinel(new)

    def _whole_model(self, node: ast.Assign, original: cst.SimpleStatementLine):
        """``model = torch.load(f)``: loaded into the model built here, else marked for a person."""
        assign = original.body[0]
        assert isinstance(assign, cst.Assign) and isinstance(node.targets[0], ast.Name)
        name = node.targets[0].id
        if id(node) not in self.loads:  # used as a model, never built here: a person builds the class
            note = _(NO_MODEL_NOTE).format(name=name)
            self.state.record("torch.load", "review", note, node.lineno)
            mark = cst.EmptyLine(comment=cst.Comment(review_mark("torch.load", note)))
            self.rewritten += 1
            return original.with_changes(leading_lines=[*original.leading_lines, mark])
        stmts = generated.statements(LOAD_STRICT, self.state.generated, model=cst.Name(name), state=assign.value)
        note = _("whole model loaded into the {name} this script builds (load_param_into_net)").format(name=name)
        self.state.record("torch.load", "converted", note, node.lineno)
        stmts[0] = stmts[0].with_changes(leading_lines=original.leading_lines)
        for stmt in stmts:
            self.index.derive_tree(stmt, original)
        self.rewritten += 1
        return cst.FlattenSentinel(stmts)

    def _resolve(self, node: ast.AST) -> str | None:
        full = self.imap.resolve(node)
        return full if full and self.imap.is_framework(full) else None

    def _save(self, node: ast.Call, call: cst.Call) -> list[Statement] | None:
        if self._resolve(node.func) != "torch.save" or len(node.args) != 2 or node.keywords:
            return None
        if not (is_method_call(node.args[0], "state_dict") and not node.args[0].args):  # type: ignore[attr-defined]
            return None
        obj = call.args[0].value
        assert isinstance(obj, cst.Call) and isinstance(obj.func, cst.Attribute)
        # The same name rule as torch.load's rewrite (runtime.ckpt_path), so save and load meet.
        stmts = generated.statements(SAVE, self.state.generated, model=obj.func.value, path=call.args[1].value)
        note = _("state_dict() saved with mindspore.save_checkpoint")
        self.state.record("torch.save", "converted", note, node.lineno)
        return stmts

    def _load(self, node: ast.Call, call: cst.Call) -> list[Statement] | None:
        if not (is_method_call(node, "load_state_dict") and node.args):
            return None
        assert isinstance(call.func, cst.Attribute)
        owner = call.func.value
        if code(owner).strip() in self.schedulers:
            return None
        strict = next((ast.unparse(k.value) for k in node.keywords if k.arg == "strict"), "True")
        if id(self.current) not in self.loads:
            return None
        state_dict: cst.BaseExpression = call.args[0].value
        if not (isinstance(node.args[0], ast.Call) and self._resolve(node.args[0].func) == "torch.load"):
            # load_param_into_net takes Parameters only; torch also takes plain tensors.
            state_dict = generated.expression(
                "torch2ms.runtime.as_parameters({sd})", self.state.generated, sd=state_dict
            )
        template = LOAD if strict == "False" else LOAD_STRICT
        stmts = generated.statements(template, self.state.generated, model=owner, state=state_dict)
        self.state.record(
            "torch.nn.Module.load_state_dict",
            "converted",
            _("mindspore.load_param_into_net, raising when anything is not loaded"),
            node.lineno,
        )
        return stmts


def _owns_line(node: ast.stmt, lines: list[str]) -> bool:
    """Nothing but the statement on its first and last line (``a; b`` and ``if x: y`` are not rewritten)."""
    end = node.end_lineno or node.lineno
    if node.end_col_offset is None or end > len(lines):
        return False
    if lines[node.lineno - 1].encode()[: node.col_offset].strip():
        return False
    rest = lines[end - 1].encode()[node.end_col_offset :].decode(errors="replace").strip()
    return not rest or rest.startswith("#")


def _call_name(stmt: ast.AST) -> str:
    value = getattr(stmt, "value", None)
    if not isinstance(value, ast.Call):
        return ""
    func = value.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _scheduler_names(tree: ast.Module, imap: ImportMap) -> set[str]:
    out = set()
    for n in nodes(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            full = imap.resolve(n.value.func)
            # (a MindSpore scheduler: code converted before, whose load_state_dict was marked, not rewritten)
            if full and full.startswith(("torch.optim.lr_scheduler.", "mindspore.experimental.optim.lr_scheduler.")):
                out |= {ast.unparse(t) for t in n.targets}
    return out
