"""The converter's fast paths change nothing but speed: statements with nothing to convert kept out
of libcst (convert/quiet.py) and checkpoint statements rewritten by a statement-only stage
(convert/constructs/checkpoints.py) give exact output and exact report lines."""

from __future__ import annotations

import ast
import textwrap

import numpy as np
import pytest
from requires_support import require_package_dir

from torch2ms.convert import convert_source, quiet

CHECKPOINTS = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    def load(net, path, arrays):
        net.load_state_dict(torch.load(path))
        net.load_state_dict({k: torch.tensor(v) for k, v in arrays.items()}, strict=False)
        sd = torch.load(path)  # keep
        net.load_state_dict(sd)  # the same weights
        torch.save(net.state_dict(), path); print("saved")
        torch.save(
            net.state_dict(),
            path,
        )
""")


def test_r18_checkpoint_statements_and_report_lines_are_exact():
    res = convert_source(CHECKPOINTS, "ck.py")
    code = res.code
    assert "    load_param_into_net_strict(net, load_checkpoint(path))\n" in code
    # Plain tensors are wrapped: load_param_into_net takes Parameters only.
    assert "ms.load_param_into_net(net, as_parameters({k: ms.tensor(v) for k, v in arrays.items()}))" in code
    assert "from torch2ms.runtime import as_parameters, ckpt_path, load_checkpoint, load_param_into_net_strict" in code
    # strict=False: MindSpore's own load; strict loads go through the helper that raises.
    assert code.count("load_param_into_net_strict(") == 2 and "raise" not in code
    # The trailing comment stays on the statement.
    assert "load_param_into_net_strict(net, as_parameters(sd))  # the same weights" in code
    # A statement sharing its line (`; print(...)`) is not spliced: the per-call KB rule converts it,
    # with the same path rule; the multi-line one is spliced.
    assert 'save_checkpoint(net.state_dict(), path); print("saved")' in code
    assert "    ms.save_checkpoint(net, ckpt_path(path))\n" in code
    ast.parse(code)
    lines = {(c.api, c.line) for c in res.changes}
    assert ("torch.nn.Module.load_state_dict", 6) in lines
    assert ("torch.tensor", 7) in lines and ("torch.nn.Module.load_state_dict", 7) in lines
    assert ("torch.load", 8) in lines
    assert ("torch.nn.Module.load_state_dict", 9) in lines
    assert ("torch.save", 11) in lines
    assert convert_source(code, "ck.py").code == code


@pytest.mark.differential
def test_r18_as_parameters_loads_plain_tensors_into_a_cell():
    import mindspore as ms
    import torch

    from torch2ms.runtime import as_parameters

    t = torch.nn.Linear(3, 2)
    net = ms.nn.Dense(3, 2)
    state = {"weight": ms.Tensor(t.weight.detach().numpy()), "bias": t.bias.detach().numpy()}
    not_loaded, unexpected = ms.load_param_into_net(net, as_parameters(state))
    assert not not_loaded and not unexpected
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(net(ms.Tensor(x)).asnumpy(), t(torch.from_numpy(x)).detach().numpy(), atol=1e-6)


QUIET = textwrap.dedent('''\
    """Docstring."""
    import torch
    import torch.nn as nn

    # a comment that belongs to the table
    _META = {
        "categories": ["a", "b"],   # odd   spacing kept
        "recipe": "https://example.org",
        "min_size": (1, 1),
        "extra": [
            1,
            2,
        ],
    }


    def helper(a, b):
        return a + b  # no torch here


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x).view(x.size(0), -1)


    __all__ = ["Net", "helper"]
''')


def test_r6_quiet_statements_come_back_byte_for_byte_and_lines_are_exact():
    res = convert_source(QUIET, "q.py")
    for text in (
        '_META = {\n    "categories": ["a", "b"],   # odd   spacing kept',
        "def helper(a, b):\n    return a + b  # no torch here",
        '__all__ = ["Net", "helper"]',
        "# a comment that belongs to the table",
    ):
        assert text in res.code
    assert quiet.PREFIX not in res.code
    assert "nn.Dense(4, 2)" in res.code and "x.shape[0]" in res.code
    lines = {c.api: c.line for c in res.changes}
    assert lines["torch.nn.Linear"] == 24 and lines["torch.Tensor.size"] == 27
    assert convert_source(res.code, "q.py").code == res.code
    # The same output as with the fast path switched off.
    from torch2ms.convert import pipeline

    saved = pipeline.hide_quiet_statements
    pipeline.hide_quiet_statements = lambda *a: None
    try:
        slow = convert_source(QUIET, "q.py")
    finally:
        pipeline.hide_quiet_statements = saved
    assert slow.code == res.code
    assert [(c.api, c.line) for c in slow.changes] == [(c.api, c.line) for c in res.changes]


@pytest.mark.slow
def test_r6_fast_path_changes_nothing_on_torchvision(monkeypatch):
    """The installed torchvision models/ + ops/ (real code nobody here wrote): the same output and
    the same report, line for line, with the fast paths on and off (quiet statements, inert
    expressions)."""

    from torch2ms.analysis.infer import project_module_classes
    from torch2ms.convert import pipeline, rewriter
    from torch2ms.convert.project import local_packages
    from torch2ms.kb import load_kb

    root = require_package_dir("torchvision")
    sources = {
        p: p.read_text(encoding="utf-8") for sub in ("models", "ops") for p in sorted((root / sub).rglob("*.py"))
    }
    kb, roots = load_kb(), local_packages(root)
    modules = project_module_classes([ast.parse(s) for s in sources.values()], roots)

    def run() -> dict:
        out = {}
        for p, s in sources.items():
            r = convert_source(s, str(p), kb=kb, local_roots=roots, project_modules=modules)
            out[p] = (r.code, r.error, [(c.api, c.action, c.line) for c in r.changes])
        return out

    fast = run()
    hidden = []
    real = pipeline.hide_quiet_statements
    monkeypatch.setattr(pipeline, "hide_quiet_statements", lambda *a: hidden.append(real(*a)) or None)
    monkeypatch.setattr(rewriter, "InertExpressions", _EveryExpression)
    slow = run()
    assert sum(len(q.segments) for q in hidden if q) > 100  # the fast path really was taken
    assert [p for p in sources if fast[p] != slow[p]] == []
    assert all(err is None for _, err, _ in fast.values())


WALK_SAMPLE = textwrap.dedent("""\
    import torch.nn as nn
    from a import b as c, d
    x: int = 1
    def f(a, /, b: "T" = 2, *args, k=3, **kw) -> list[int]:
        global g
        y = lambda q, *r: q + sum(r)
        z = [i * j for i in range(3) if i for j in range(i)]
        w = {k: v async for k, v in it()} if a else {*s}
        s = f"{a!r:>{b}} {y(1)=}"
        try:
            pass
        except* ValueError as e:
            raise RuntimeError from e
        match a:
            case [1, *rest] | {"k": _, **more}:
                pass
            case Point(x=0, y=yy) as p if yy > 0:
                pass
        with open(p) as fh, ctx():
            del x[1:2, ::3]
        return (yield from g)
    class C(nn.Module, metaclass=M):
        @dec(1)
        async def m(self):
            await self.x
            async with a as b:
                async for i in b:
                    nonlocal_ = not i
""")


def test_r6_fast_ast_walk_is_ast_walk():
    """analysis.astwalk.walk (used by every analysis pass) gives ast.walk's nodes in ast.walk's order."""
    import importlib.util
    from pathlib import Path

    from torch2ms.analysis.astwalk import walk

    sources = [WALK_SAMPLE]
    spec = importlib.util.find_spec("torchvision")
    if spec is not None:
        root = Path(list(spec.submodule_search_locations)[0])
        sources += [p.read_text(encoding="utf-8") for p in sorted((root / "models").rglob("*.py"))[:40]]
    for src in sources:
        tree = ast.parse(src)
        assert [id(n) for n in walk(tree)] == [id(n) for n in ast.walk(tree)]


def test_r6_fast_dispatch_calls_the_same_hooks_as_libcst():
    """cstutil.FastDispatch: per-node, per-field and leave hooks, a False visit skipping children and
    replacements in leave hooks behave as in libcst's own dispatch."""
    import libcst as cst

    from torch2ms.convert.cstutil import FastDispatch

    class Rename(cst.CSTTransformer):
        def __init__(self):
            super().__init__()
            self.log = []

        def visit_Call(self, node):
            self.log.append("call")
            return not (isinstance(node.func, cst.Name) and node.func.value == "keep")

        def visit_Call_args(self, node):
            self.log.append("args")

        def leave_Call_args(self, node):
            self.log.append("/args")

        def leave_Name(self, original, updated):
            self.log.append(original.value)
            return updated.with_changes(value=updated.value.upper()) if updated.value.startswith("t") else updated

    class FastRename(FastDispatch, Rename):
        pass

    src = "t = f(t1, keep(t2), g(t3=t4))\nkeep(t5)\n"
    slow, fast = Rename(), FastRename()
    out_slow, out_fast = cst.parse_module(src).visit(slow).code, cst.parse_module(src).visit(fast).code
    assert out_fast == out_slow == "T = f(T1, keep(t2), g(T3=T4))\nkeep(t5)\n"
    assert fast.log == slow.log


def test_r18_checkpoint_changes_sit_on_their_torch_lines():
    """The checkpoint stage edits the libcst tree; every change it reports (and every change the
    rewrite stage finds inside the statements it wrote) is on the line of the torch call, in nested
    blocks and in torchvision's own model files too."""
    import importlib.util
    from pathlib import Path

    nested = textwrap.dedent("""\
        import torch


        class Loader:
            def load(self, net, path):
                if path:
                    net.load_state_dict(torch.load(path))  # first
                    torch.save(net.state_dict(), path)
                else:
                    net.load_state_dict(
                        torch.load(path), strict=False)
                return net

            def last(self, net, sd):
                net.load_state_dict(sd)


        def tail(net, sd): net.load_state_dict(sd)
        x = [1,
             2]
    """)
    sources = [CHECKPOINTS, nested]
    spec = importlib.util.find_spec("torchvision")
    if spec is not None:
        root = Path(list(spec.submodule_search_locations)[0])
        sources += [p.read_text(encoding="utf-8") for p in sorted((root / "models").rglob("*.py"))]
    checked = 0
    for src in sources:
        res = convert_source(src)
        lines = src.splitlines()
        for c in res.changes:
            word = {"torch.save": "torch.save", "torch.nn.Module.load_state_dict": "load_state_dict"}.get(c.api)
            if word is not None:
                assert word in lines[c.line - 1], (c, lines[c.line - 1])
                checked += 1
        ast.parse(res.code)
    assert checked >= 10


INERT = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    def make_optimizer(params, lr):
        return torch.optim.SGD(params, lr=lr)


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k=2.0):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * 2.0, None


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
            self.bn = nn.BatchNorm1d(2)

        def forward(self, x, scale: int):
            y = self.helper(x, [a + 1 for a in range(scale)]) + torch.flatten(self.fc(x), 1)
            z = (self.helper(x, {"k": (1, 2)}),  # the helper
                 F.relu(y))
            return Scale.apply(y, 3.0) + self.bn.weight.sum() + z[1]

        def helper(self, x, extra):
            return x


    def report(net):
        loss = torch.ones(1) * 2
        opt = make_optimizer(net.get_parameters(), 0.1), torch.zeros(1)
        print("loss {:.4f}".format(loss), torch.ones(1), f"{loss:.2f}")
        return opt
""")


class _EveryExpression:
    """The inert-expression fast path switched off: every expression is entered."""

    def __init__(self, *args) -> None:
        pass

    def live(self, node) -> bool:
        return True

    def known_inert(self, node) -> bool:
        return False


def test_r6_inert_expressions_change_nothing(monkeypatch):
    """Expressions with nothing to convert inside rewritten statements are not entered
    (convert/inert.py): the same code and report as with every expression visited, hooks that act
    without a torch name in sight (``"{:.4f}".format``, ``F.apply``, ``get_parameters``) included."""
    from torch2ms.convert import inert, rewriter

    asked: list[bool] = []

    class Counting(inert.InertExpressions):
        def live(self, node):
            asked.append(super().live(node))
            return asked[-1]

    monkeypatch.setattr(rewriter, "InertExpressions", Counting)
    fast = convert_source(INERT, "inert.py")
    assert asked.count(False) > 10  # the fast path really was taken

    monkeypatch.setattr(rewriter, "InertExpressions", _EveryExpression)
    slow = convert_source(INERT, "inert.py")
    assert fast.error is None and fast.code == slow.code
    assert [(c.api, c.action, c.line, c.note) for c in fast.changes] == [
        (c.api, c.action, c.line, c.note) for c in slow.changes
    ]
    for api in ("torch.Tensor.__format__", "torch.autograd.Function.apply", "torch.flatten", "torch.nn.Module.forward"):
        assert api in {c.api for c in fast.changes}
    assert "make_optimizer(net.trainable_params(), 0.1)" in fast.code
    assert "# the helper" in fast.code


def test_r6_inert_walk_marks_what_the_rewrite_acts_on():
    import libcst as cst

    from torch2ms.analysis.imports import ImportMap
    from torch2ms.convert.inert import InertExpressions
    from torch2ms.kb import load_kb

    imap = ImportMap.from_tree(ast.parse("import torch\nimport torch.nn.functional as F\n"), frozenset())
    marks = InertExpressions(imap, load_kb(), None)
    expr = cst.parse_expression("self.head(x, [i for i in y]) + F.relu(self.body(x).view(n, -1))")
    assert marks.live(expr)
    left, right = expr.left, expr.right
    assert not marks.live(left) and not marks.live(left.func) and not marks.live(left.args[1].value)
    assert marks.live(right) and marks.live(right.func)
    view_call = right.args[0].value
    assert marks.live(view_call) and not marks.live(view_call.args[0].value)
    assert marks.live(cst.parse_expression('"{:.3f}".format(v)'))


def test_r6_comment_counts_are_comments_in():
    """cstutil.comment_counts (a plain walk) finds the comments the ordered visitor finds."""
    import importlib.util
    from collections import Counter
    from pathlib import Path

    import libcst as cst

    from torch2ms.convert.cstutil import comment_counts, comments_in, has_comment

    sources = [INERT, CHECKPOINTS]
    spec = importlib.util.find_spec("torchvision")
    if spec is not None:
        root = Path(list(spec.submodule_search_locations)[0])
        sources += [p.read_text(encoding="utf-8") for p in sorted((root / "models" / "detection").glob("*.py"))]
    with_comments = 0
    for src in sources:
        for stmt in cst.parse_module(src).body:
            ordered = comments_in(stmt)
            assert comment_counts(stmt) == Counter(ordered) and has_comment(stmt) == bool(ordered)
            with_comments += bool(ordered)
    assert with_comments > 5


def test_r6_known_ints_are_found_only_when_a_rule_asks():
    from torch2ms.kb.source import is_int, known_ints

    calls = []

    def names():
        calls.append(1)
        return frozenset({"n"})

    with known_ints(names):
        assert is_int("3") and not is_int("3.0") and not calls  # literals: no need to ask
        assert is_int("n") and not is_int("m")
    assert len(calls) == 2 and not is_int("n")
    with known_ints(frozenset({"k"})):
        assert is_int(" k ")


def test_r6_collector_paused_only_while_a_file_converts(monkeypatch):
    """convert_source turns the cyclic collector off while it works and leaves it as it found it
    (also when a stage fails, or when the caller had turned it off)."""
    import gc

    from torch2ms.convert import pipeline

    seen = []
    real = pipeline.STAGES
    assert gc.isenabled()
    try:
        monkeypatch.setattr(pipeline, "STAGES", (pipeline.Stage("parse", lambda s: seen.append(gc.isenabled())),))
        convert_source("import torch\nx = torch.ones(2)\n", "a.py")
        assert seen == [False] and gc.isenabled()
        monkeypatch.setattr(pipeline, "STAGES", (pipeline.Stage("parse", lambda s: 1 / 0),))
        assert "ZeroDivisionError" in (convert_source("x = 1\n", "b.py").error or "") and gc.isenabled()
        gc.disable()
        convert_source("import torch\n", "c.py")
        assert not gc.isenabled()
    finally:
        gc.enable()
    monkeypatch.setattr(pipeline, "STAGES", real)
    assert "ops.ones(2)" in convert_source("import torch\nx = torch.ones(2)\n", "d.py").code


def test_r20_multiline_statements_keep_every_comment():
    """Statements spanning lines without a ``#`` are known comment-free from the text (no walk); a
    comment inside, after, above, or in a second statement after a ``;`` is still never lost."""
    src = textwrap.dedent(
        """\
        import torch

        x = torch.zeros(
            3,
            4,
            device="cuda",  # on the gpu
        )
        y = torch.ones(
            2,
            2,
        ); z = torch.zeros(
            1,
            device="cuda",  # also gpu
        )
        # above
        w = torch.ones(
            5,
            device="cuda",
        )
        s = torch.ones(
            5,
            device="cuda",
        )  # after
        """
    )
    code = convert_source(src).code
    for comment in ("# on the gpu", "# also gpu", "# above", "# after"):
        assert code.count(comment) == 1, (comment, code)
    assert "cuda" not in code and "z = ops.zeros(1)" in code
