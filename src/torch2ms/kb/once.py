"""Each argument of a rewritten call evaluated once, as torch evaluates it.

A template or handler may write an argument more than once (``torch.full(shape, v)`` →
``ops.full(shape, v, dtype=(... isinstance(v, bool) ... v.dtype ...))``): harmless for a name, but an
argument with a side effect (``random.random()``, ``next(it)``, ``f()``) then runs several times, each
time with another value. :func:`evaluate_once` binds such arguments to a lambda's parameters, in the
order the call wrote them: ``(lambda fill_value: ops.full(shape, fill_value, ...))(random.random())``.
"""

from __future__ import annotations

import ast
import keyword
from collections import Counter
from collections.abc import Iterable

__all__ = ["evaluate_once"]

# expressions without side effects: written twice, they give the same value twice
_PURE_LEAVES = (ast.Constant, ast.Name, ast.Lambda)
_PURE_NODES = (
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.Tuple,
    ast.List,
    ast.UnaryOp,
    ast.BinOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Starred,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)


# builtins that read their arguments and change nothing (isinstance(m, nn.BatchNorm3d) in a choice)
_PURE_CALLS = frozenset(
    "isinstance issubclass len type hasattr getattr int float bool str tuple abs min max round divmod".split()
)


# calls that draw, consume or mutate: written twice they give two values (or act twice); an in-place
# method (a name ending in "_") is one too. Other framework/tensor calls compute the same value again.
_EFFECTS = frozenset(
    "rand randn randint randperm rand_like randn_like randint_like normal bernoulli multinomial poisson "
    "uniform random choice choices shuffle sample permutation standard_normal dropout next send pop append "
    "extend insert remove clear update popitem setdefault read readline readlines write input print".split()
)


# module names of converted code whose functions compute a value (their draws are in _EFFECTS)
_FRAMEWORKS = frozenset("ops ms mindspore nn math torch F".split())
# tensor methods that compute a value from their receiver
_VALUE_METHODS = frozenset(
    "float double half int long bool reshape view transpose permute contiguous detach clone t squeeze "
    "unsqueeze flatten astype sum mean abs size dim numel expand repeat swapaxes expand_dims asnumpy".split()
)


def _pure_callee(func: ast.AST) -> bool:
    if isinstance(func, ast.Name):
        return func.id in _PURE_CALLS
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            return False  # self.bn(x): a layer of the model runs (BatchNorm's statistics move)
        root = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        framework = isinstance(root, ast.Name) and root.id in _FRAMEWORKS
        known = framework or func.attr in _VALUE_METHODS  # a user object's method may draw or consume
        return known and func.attr not in _EFFECTS and not func.attr.endswith("_") and _pure(func.value)
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "TorchCompat":
        # TorchCompat("torch.zeros")(...): the torch API it stands for, by its name
        arg = func.args[0] if len(func.args) == 1 and not func.keywords else None
        name = arg.value.rpartition(".")[2] if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""
        return bool(name) and name not in _EFFECTS and not name.endswith("_")
    return False


def _pure(node: ast.AST) -> bool:
    if isinstance(node, _PURE_LEAVES):
        return True
    if isinstance(node, ast.Call) and _pure_callee(node.func):
        return all(_pure(a) for a in node.args) and all(_pure(k.value) for k in node.keywords)
    if not isinstance(node, _PURE_NODES):
        return False
    return all(_pure(child) for child in ast.iter_child_nodes(node))


def _expr(src: str) -> ast.expr | None:
    try:
        return ast.parse(src.strip(), mode="eval").body
    except SyntaxError:
        return None


class _Bind(ast.NodeTransformer):
    def __init__(self, params: dict[str, str]) -> None:
        self.params = params  # ast.dump of an argument → the lambda parameter standing for it

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and (name := self.params.get(ast.dump(node))) is not None:
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        return super().visit(node)


def _fresh(hint: str, taken: set[str]) -> str:
    base = hint if hint.isidentifier() and not keyword.iskeyword(hint) else "arg"
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def _skipped(node: ast.expr, src: str) -> bool:
    """Not one expression: a ``*args`` source joined with commas."""
    return isinstance(node, ast.Tuple) and "," in src and not src.strip().startswith("(")


def evaluate_once(out: str, arguments: Iterable[tuple[str, str | None]]) -> str:
    """``out`` (a rewritten call) with every argument that it writes more than once and that may have a
    side effect bound once by a lambda; ``arguments``: (parameter name, source) as the call wrote them."""
    nodes = [(hint, src, _expr(src)) for hint, src in arguments if src]
    if all(node is None or _skipped(node, src) or _pure(node) for _, src, node in nodes):
        return out  # (most calls) nothing that could be bound: ``out`` is not parsed
    tree = _expr(out)
    if tree is None:
        return out
    seen = Counter(ast.dump(n) for n in ast.walk(tree) if isinstance(n, ast.expr))
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    params: dict[str, str] = {}
    bound: list[tuple[str, str]] = []
    # how often the call itself wrote each expression (``Normalize([0.5] * c, [0.5] * c)``: twice, and torch
    # evaluates it twice): only what the rewrite wrote more often than that is bound
    written = Counter(ast.dump(n) for _, _, node in nodes if node is not None for n in ast.walk(node))
    for hint, src, node in nodes:
        if node is None or _skipped(node, src):
            continue  # not one expression (a *args source joined with commas)
        key = ast.dump(node)
        if seen[key] <= written[key] or written[key] > 1 or _pure(node) or key in params:
            continue
        params[key] = _fresh(hint, taken)
        bound.append((params[key], src.strip()))
    if not bound:
        return out
    body = _Bind(params).visit(tree)
    names = ", ".join(p for p, _ in bound)
    return f"(lambda {names}: {ast.unparse(body)})({', '.join(s for _, s in bound)})"
