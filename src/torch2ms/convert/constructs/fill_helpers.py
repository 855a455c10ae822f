"""A function of the file that fills a tensor it is given item by item (``def fill(buf, out): buf[i] = out[i]``),
called as a statement of its own (``fill(buf, out)``): issue 22, a stage after the training stage (which reads the
call as filling ``buf``, training/stores.py, and moves it into ``forward_fn`` with the statement making ``buf``).

torch changes the caller's tensor in place. A MindSpore graph (GRAPH_MODE, and the ``@mindspore.jit`` step
PyNative runs too) compiles an item assignment as a new value of the callee's local name: the caller's tensor
keeps what it held, with no error (measured on 2.10: ``buf`` stays zeros, and the gradient of what the fill
brought is zero). So the function returns what it filled, and each call takes it back:

    def fill(buf, out):                       def fill(buf, out):
        for i in range(4):                        for i in range(4):
            buf[i] = out[i]              →            buf[i] = out[i]
                                                  return buf
    fill(buf, out)                            buf = fill(buf, out)

Python runs it as before (the same tensor comes back). Only where it is sure: a module-level function with no
decorator that returns no value and never yields, every use of its name a call on a line of its own, each filled
argument a plain name, no ``*args``/``**kwargs`` at the call. A function that calls ``backward()`` is a training
loop, run on the host (``train(model, loader, norms)`` filling a dict of gradient norms): it stays as it is.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.astwalk import nodes
from ...i18n import N_, _
from ..construct import Construct
from ..state import FileState
from .training.stores import filling_functions

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def helpers(tree: ast.Module) -> dict[str, list[str]]:
    """The functions to rewrite: name → the names of the parameters it fills, in order."""
    found = filling_functions(tree)
    out: dict[str, list[str]] = {}
    defs = {fn.name: fn for fn in tree.body if isinstance(fn, ast.FunctionDef)}
    for name, positions in found.items():
        fn = defs[name]
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
        if fn.decorator_list or _returns_value(fn) or _trains(fn) or sum(1 for d in tree.body if _binds(d, name)) != 1:
            continue
        filled = [params[k] for k in sorted(positions)]
        if _calls_are_statements(tree, name, params, filled):
            out[name] = filled
    return out


def _binds(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name == name
    return any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(stmt))


def _returns_value(fn: ast.FunctionDef) -> bool:
    for n in _own(fn):
        if isinstance(n, (ast.Yield, ast.YieldFrom)) or isinstance(n, ast.Return) and n.value is not None:
            return True
    return False


def _trains(fn: ast.FunctionDef) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward" for n in _own(fn)
    )


def _own(fn: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, not those of the functions, lambdas and classes defined in it."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        n = todo.pop()
        out.append(n)
        if not isinstance(n, _FUNCTIONS):
            todo += ast.iter_child_nodes(n)
    return out


def _calls_are_statements(tree: ast.Module, name: str, params: list[str], filled: list[str]) -> bool:
    """Every read of ``name`` calls it on a line of its own, each filled argument assignable."""
    calls = {
        id(s.value.func)
        for s in nodes(tree)
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and _arguments(s.value, params, filled)
    }
    reads = [n for n in nodes(tree) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    return bool(reads) and all(id(n) in calls for n in reads)


def _arguments(call: ast.Call, params: list[str], filled: list[str]) -> list[ast.expr] | None:
    """The arguments a call passes for the filled parameters (None: one of them cannot be told or assigned)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    by_name = {k.arg: k.value for k in call.keywords}
    out: list[ast.expr] = []
    for p in filled:
        k = params.index(p)
        value = call.args[k] if k < len(call.args) else by_name.get(p)
        if value is None or not _assignable(value):
            return None
        out.append(value)
    return out


def _assignable(node: ast.expr) -> bool:
    return isinstance(node, ast.Name)  # (``self.buf = ...`` in a compiled construct is a question of its own)


def applies(state: FileState) -> bool:
    """A function of the file fills an argument item by item (a text check first: cheap)."""
    if "def " not in state.source or "]" not in state.source or state.tree is None:
        return False
    return bool(helpers(state.tree))


def run(state: FileState) -> None:
    if state.tree is None or state.module is None:
        return
    found = helpers(state.tree)
    if not found:
        return
    stage = _Returned(state, found)
    module = state.module.visit(stage)
    if stage.rewritten:
        state.module = module
        state.restructured = True


CONSTRUCT = Construct("functions filling an argument", order=230, stage=run, whole_file=applies)


def _value(names: list[str]) -> cst.BaseExpression:
    exprs = [cst.parse_expression(n) for n in names]
    return exprs[0] if len(exprs) == 1 else cst.Tuple([cst.Element(e) for e in exprs], lpar=[], rpar=[])


class _Returned(cst.CSTTransformer):
    """The helpers return what they fill; their calls take it back."""

    def __init__(self, state: FileState, found: dict[str, list[str]]) -> None:
        super().__init__()
        assert state.index is not None and state.tree is not None
        self.state, self.index, self.found = state, state.index, found
        self.defs = {f.name: f for f in state.tree.body if isinstance(f, ast.FunctionDef) and f.name in found}
        self.depth = 0  # functions entered
        self.filling: list[str] | None = None  # the parameters of the helper being left, at its own depth
        self.rewritten = 0

    def on_leave(self, original, updated):  # type: ignore[override]
        result = super().on_leave(original, updated)
        # libcst rebuilds every node it visits: an unchanged subtree keeps its original nodes, whose ids name
        # what the training stage generated (GeneratedRefs: ``ms.value_and_grad`` in the step it wrote)
        before, after = original.children, updated.children
        if result is updated and len(before) == len(after) and all(a is b for a, b in zip(before, after)):
            return original
        if (
            isinstance(original, cst.BaseCompoundStatement)
            and result is not original
            and isinstance(result, cst.CSTNode)
        ):
            self.index.derive(result, original, exact=True)  # its body changed, its own lines did not
        return result

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1
        if self.depth == 1 and node.name.value in self.found:
            self.filling = self.found[node.name.value]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.depth += 1  # its methods are no module-level helper

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        self.depth -= 1
        return updated

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.depth += 1

    def leave_Lambda(self, original: cst.Lambda, updated: cst.Lambda) -> cst.BaseExpression:
        self.depth -= 1
        return updated

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        if self.filling is None or self.depth != 1 or updated.value is not None:
            return updated
        return updated.with_changes(value=_value(self.filling), whitespace_after_return=cst.SimpleWhitespace(" "))

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self.depth -= 1
        if self.depth or self.filling is None or original.name.value not in self.found:
            return updated
        filled, self.filling = self.filling, None
        body = list(updated.body.body)
        last = body[-1] if body else None
        if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)):
            ret = cst.SimpleStatementLine([cst.Return(_value(filled))])
            self.index.derive(ret, original)
            body.append(ret)
        line = self.index.line_of(original)
        self.state.record(
            N_("function filling its argument"),
            "converted",
            _(
                "{name}() returns {args}, and each call takes it back: a compiled MindSpore graph sees no item "
                "assignment a called function makes to its argument"
            ).format(name=original.name.value, args=", ".join(filled)),
            line,
        )
        self.rewritten += 1
        return updated.with_changes(body=updated.body.with_changes(body=body))

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Expr):
            return updated
        call = updated.body[0].value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in self.found):
            return updated
        taken = self._taken(original)
        if taken is None:
            return updated
        target: cst.BaseAssignTargetExpression = (
            taken[0] if len(taken) == 1 else cst.Tuple([cst.Element(t) for t in taken], lpar=[], rpar=[])
        )
        new = updated.with_changes(body=[cst.Assign([cst.AssignTarget(target)], call)])
        self.index.derive(new, original)
        self.rewritten += 1
        return new

    def _taken(self, stmt: cst.SimpleStatementLine) -> list[cst.Name] | None:
        """The arguments a call passes for the filled parameters, as assignment targets."""
        a = self.index.ast_of(stmt)
        if a is None:
            try:
                a = ast.parse(cst.Module([stmt]).code).body[0]
            except SyntaxError:
                return None
        if not (isinstance(a, ast.Expr) and isinstance(a.value, ast.Call) and isinstance(a.value.func, ast.Name)):
            return None
        fn = self.defs[a.value.func.id]
        params = [p.arg for p in [*fn.args.posonlyargs, *fn.args.args]]
        args = _arguments(a.value, params, self.found[fn.name])
        return None if args is None else [cst.Name(v.id) for v in args if isinstance(v, ast.Name)]
