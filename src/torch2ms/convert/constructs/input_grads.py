"""``torch.autograd.grad(outputs=out, inputs=x, ...)`` in a loss (a WGAN-GP's gradient penalty), a
construct stage on the libcst tree, before the training stage.

torch differentiates a tensor it recorded (``out = D(x)``); MindSpore differentiates a function. The
statements of the same block that compute ``outputs`` from ``inputs`` (after the inputs' last
assignment) become that function's body, ``lambda x: D(x)``, and the call becomes
``torch2ms.runtime.input_grads(lambda x: D(x), (x,))``: ``mindspore.grad`` of it, which the training
stage then moves into the step's forward function, a grad nested in the outer ``value_and_grad`` (the
penalty's own gradient reaches the parameters, PyNative and GRAPH_MODE). ``grad_outputs`` of ones
(``torch.ones_like(out)``, ``Tensor(n, 1).fill_(1.0)``) is MindSpore's default and goes; other
``grad_outputs`` weigh the outputs. A statement whose only use was the call goes too, so ``D`` runs its
forward once, as in torch. Outputs not computed from the inputs in the block are left to the per-call
rule (marked, not converted).
"""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.astwalk import nodes
from ...i18n import _
from .. import generated
from ..construct import Construct
from ..cstutil import Statement, code, resolve
from ..state import FileState

GRAD = "torch.autograd.grad"
ARGS = ("outputs", "inputs", "grad_outputs", "retain_graph", "create_graph")
CALL = "torch2ms.runtime.input_grads({fn}, {inputs}{rest})"
# calls whose result is all ones when what they get is: a ones tensor moved, cast or wrapped
_KEEPS_VALUE = frozenset({"to", "cuda", "cpu", "float", "double", "type", "requires_grad_", "detach", "expand", "view"})


def applies(state: FileState) -> bool:
    """A ``torch.autograd.grad(...)`` call (a text check first: cheap)."""
    if "grad" not in state.source or state.tree is None or state.imap is None:
        return False
    imap = state.imap
    return any(isinstance(n, ast.Call) and imap.resolve(n.func) == GRAD for n in nodes(state.tree))


def run(state: FileState) -> None:
    if not applies(state):
        return
    assert state.module is not None
    stage = _InputGrads(state)
    module = state.module.visit(stage)
    if stage.rewritten:
        state.module = module
        state.restructured = True


CONSTRUCT = Construct("input gradients", order=215, stage=run, whole_file=applies)


def _ast(node: cst.CSTNode) -> ast.AST | None:
    try:
        body = ast.parse(code(node).strip("\n")).body
    except SyntaxError:
        return None
    return body[0] if len(body) == 1 else None


def _expr_ast(node: cst.BaseExpression) -> ast.expr:
    return ast.parse("(" + code(node) + ")", mode="eval").body


def _loads(node: ast.AST | None) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} if node else set()


def _stores(node: ast.AST | None) -> set[str]:
    return (
        {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} if node else set()
    )


def _plain_assign(stmt: Statement) -> tuple[str, cst.BaseExpression] | None:
    """``name = value`` (one target, one statement on the line)."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    a = stmt.body[0]
    if isinstance(a, cst.Assign) and len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
        return a.targets[0].target.value, a.value
    return None


def _single(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """``x`` for ``x``, ``[x]`` and ``(x,)``; None for several values."""
    if isinstance(node, (cst.List, cst.Tuple)):
        values = [e.value for e in node.elements if isinstance(e, cst.Element)]
        return values[0] if len(values) == 1 and len(node.elements) == 1 else None
    return node


def _names(node: cst.BaseExpression) -> list[str] | None:
    """The input names: ``x``, ``[x, y]``, ``(x,)``; None when an input is no plain name."""
    items = [e.value for e in node.elements] if isinstance(node, (cst.List, cst.Tuple)) else [node]
    if not items or not all(isinstance(v, cst.Name) for v in items):
        return None
    return [v.value for v in items]  # type: ignore[attr-defined]


class _Substitute(cst.CSTTransformer):
    """Names read replaced by expressions (attribute names and keywords are no reads)."""

    def __init__(self, values: dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.values = values

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        value = self.values.get(original.value)
        if value is None:
            return updated
        if isinstance(value, (cst.Name, cst.Call, cst.Attribute, cst.Subscript)) or value.lpar:
            return value
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


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


class _Found(cst.CSTVisitor):
    def __init__(self, state: FileState) -> None:
        super().__init__()
        self.imap = state.imap
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        if self.imap is not None and resolve(self.imap, node.func) == GRAD:
            self.calls.append(node)


class _Replace(cst.CSTTransformer):
    def __init__(self, old: cst.Call, new: cst.BaseExpression) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        return self.new if original is self.old else updated


class _InputGrads(cst.CSTTransformer):
    def __init__(self, state: FileState) -> None:
        super().__init__()
        assert state.tree is not None and state.index is not None
        self.state, self.index = state, state.index
        self.rewritten = 0
        self.file_loads: dict[str, list[int]] = {}
        for n in nodes(state.tree):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self.file_loads.setdefault(n.id, []).append(n.lineno)

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Only the way down to statements (a statement left alone keeps its identity: the index knows it by it).
        return isinstance(node, (cst.BaseCompoundStatement, *_CONTAINERS))

    def on_leave(self, original, updated):  # type: ignore[override]
        result = super().on_leave(original, updated)
        if isinstance(original, cst.BaseCompoundStatement) and result is not original:
            self.index.derive(result, original, exact=True)  # its body changed, its own lines did not
        return result

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body = self._block(list(updated.body))  # type: ignore[arg-type]
        return updated if body is None else updated.with_changes(body=body)

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        body = self._block(list(updated.body))  # type: ignore[arg-type]
        return updated if body is None else updated.with_changes(body=body)

    def _block(self, stmts: list[Statement]) -> list[Statement] | None:
        changed, drop = False, set()
        for i, stmt in enumerate(stmts):
            if not isinstance(stmt, cst.SimpleStatementLine) or "grad" not in code(stmt):
                continue
            found = _Found(self.state)
            stmt.visit(found)
            for call in found.calls:
                done = self._rewrite(stmts, i, call)
                if done is not None:
                    stmts[i], gone = done
                    drop |= gone
                    changed = True
                    break  # (one call per statement: the rewritten statement holds new nodes)
        if not changed:
            return None
        out: list[Statement] = []
        carried: list[cst.EmptyLine] = []
        for i, stmt in enumerate(stmts):
            if i in drop:  # its comments stay, above the next statement
                carried += [line for line in stmt.leading_lines if line.comment]
                continue
            if carried:
                stmt = stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines])
                carried = []
            out.append(stmt)
        return out

    def _rewrite(self, stmts: list[Statement], at: int, call: cst.Call) -> tuple[Statement, set[int]] | None:
        args = _arguments(call)
        if args is None or "outputs" not in args or "inputs" not in args:
            return None
        outputs, inputs = _single(args["outputs"]), _names(args["inputs"])
        if outputs is None or inputs is None:
            return None
        defs = _definitions(stmts, at, inputs)
        if defs is None:
            return None
        used: set[int] = set()
        body = _inline(outputs, at, defs, used)
        if not _loads(_expr_ast(body)) & set(inputs):
            return None  # the outputs are not computed from the inputs here: left to the per-call rule
        rest = ""
        fill: dict[str, cst.BaseExpression] = {}
        grad_outputs = args.get("grad_outputs")
        if grad_outputs is not None and not _all_ones(self.state, grad_outputs, stmts[:at]):
            rest, fill["grad_outputs"] = ", {grad_outputs}", _single(grad_outputs) or grad_outputs
        create = args.get("create_graph")
        if create is None or not (isinstance(create, cst.Name) and create.value == "True"):
            rest += ", create_graph={create}"
            fill["create"] = create if create is not None else cst.Name("False")
        params = cst.Parameters(
            [cst.Param(cst.Name(n), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for n in inputs]
        )
        params = params.with_changes(
            params=[*params.params[:-1], params.params[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
        )
        fn = cst.Lambda(params, body)
        items = [cst.Element(cst.Name(n), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for n in inputs]
        items[-1] = items[-1].with_changes(comma=cst.Comma() if len(items) == 1 else cst.MaybeSentinel.DEFAULT)
        new_call = generated.expression(
            CALL.format(fn="{fn}", inputs="{inputs}", rest=rest),
            self.state.generated,
            fn=fn,
            inputs=cst.Tuple(items),
            **fill,
        )
        new = stmts[at].visit(_Replace(call, new_call))
        assert isinstance(new, cst.SimpleStatementLine)
        self.index.derive(new, stmts[at])
        line = self.index.line_of(stmts[at])
        self.state.record(
            "torch.autograd.grad",
            "converted",
            _(
                "the gradient with respect to {inputs}: mindspore.grad of a function of them (torch2ms.runtime.input_grads), "
                "which MindSpore differentiates again inside the training step's gradient"
            ).format(inputs=", ".join(inputs)),
            line,
        )
        self.rewritten += 1
        return new, self._removable(stmts, at, used, new, call) | _requires_grad_marks(stmts, at, inputs)

    def _removable(self, stmts: list[Statement], at: int, used: set[int], new: Statement, call: cst.Call) -> set[int]:
        """The statements inlined into the function whose names nothing else reads."""
        spans = []
        for i in [*used, at]:
            origin = self.index.origin_of(stmts[i])
            if origin is None:
                return set()
            spans.append((origin.lineno, origin.end_lineno or origin.lineno))
        bare = new.visit(_Replace(call, cst.Name("_")))
        still = _loads(_ast(bare)) if isinstance(bare, cst.CSTNode) else set()  # what it reads besides the call
        gone = set()
        for i in used:
            name = _plain_assign(stmts[i])[0]  # type: ignore[index]
            lines = self.file_loads.get(name, [])
            if name not in still and all(any(a <= ln <= b for a, b in spans) for ln in lines):
                gone.add(i)
        return gone


def _requires_grad_marks(stmts: list[Statement], at: int, inputs: list[str]) -> set[int]:
    """``x.requires_grad = True`` / ``x.requires_grad_()`` statements on an input before the call: MindSpore
    chooses what it differentiates by the function's arguments, a tensor has no such flag."""
    marks = {f"{n}.requires_grad = True" for n in inputs} | {
        f"{n}.requires_grad_({t})" for n in inputs for t in ("", "True")
    }
    return {i for i in range(at) if isinstance(stmts[i], cst.SimpleStatementLine) and _bare(stmts[i]) in marks}


def _bare(stmt: Statement) -> str:
    return code(stmt.with_changes(leading_lines=[], trailing_whitespace=cst.TrailingWhitespace())).strip()


def _arguments(call: cst.Call) -> dict[str, cst.BaseExpression] | None:
    out: dict[str, cst.BaseExpression] = {}
    for k, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        elif k < len(ARGS):
            out[ARGS[k]] = arg.value
    return out


Defs = dict[str, list[tuple[int, cst.BaseExpression]]]


def _definitions(stmts: list[Statement], at: int, inputs: list[str]) -> Defs | None:
    """The plain assignments between the inputs' last assignment and ``at`` that compute from the
    inputs, by name; None when something else there (a loop, a tuple target) changes a value that does."""
    start = 0
    for j in range(at - 1, -1, -1):
        if _stores(_ast(stmts[j])) & set(inputs):
            start = j + 1
            break
    dep = set(inputs)
    defs: Defs = {}
    for j in range(start, at):
        plain = _plain_assign(stmts[j])
        node = _ast(stmts[j])
        if plain is not None and _loads(_expr_ast(plain[1])) & dep:
            dep.add(plain[0])
            defs.setdefault(plain[0], []).append((j, plain[1]))
        elif _stores(node) & dep:
            return None
    return defs


def _inline(expr: cst.BaseExpression, before: int, defs: Defs, used: set[int]) -> cst.BaseExpression:
    """``expr`` with each name computed from the inputs replaced by what computed it (recursively)."""
    values: dict[str, cst.BaseExpression] = {}
    for name in _loads(_expr_ast(expr)) & set(defs):
        earlier = [(j, v) for j, v in defs[name] if j < before]
        if earlier:
            j, value = earlier[-1]
            used.add(j)
            values[name] = _inline(value, j, defs, used)
    return expr.visit(_Substitute(values)) if values else expr  # type: ignore[return-value]


def _all_ones(state: FileState, node: cst.BaseExpression, before: list[Statement]) -> bool:
    """``torch.ones_like(out)``, ``torch.ones(n, 1)``, ``Variable(Tensor(n, 1).fill_(1.0))``, or a name
    assigned one of them in the block: torch's default weights of the outputs, MindSpore's too."""
    node = _single(node) or node
    if isinstance(node, cst.Name):
        for stmt in reversed(before):
            plain = _plain_assign(stmt)
            if plain is not None and plain[0] == node.value:
                return _all_ones(state, plain[1], [])
        return False
    if not isinstance(node, cst.Call):
        return False
    full = resolve(state.imap, node.func) if state.imap is not None else None
    first = node.args[0].value if node.args else None
    if full in ("torch.ones", "torch.ones_like") or full == "torch.autograd.Variable" and first is not None:
        return full != "torch.autograd.Variable" or _all_ones(state, first, [])  # type: ignore[arg-type]
    if full in ("torch.full", "torch.full_like") and len(node.args) > 1:
        return _is_one(node.args[1].value)
    if isinstance(node.func, cst.Attribute):
        attr = node.func.attr.value
        if attr == "new_ones":
            return True
        if attr == "fill_" and node.args:
            return _is_one(node.args[0].value)
        if attr in _KEEPS_VALUE:
            return _all_ones(state, node.func.value, [])
    return False


def _is_one(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) and float(node.value) == 1.0
