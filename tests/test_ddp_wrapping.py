"""The converted training step averages gradients for exactly the models torch wraps in DDP, under the
same condition.

torch all-reduces gradients inside ``backward()`` only for a module wrapped in DistributedDataParallel;
``init_process_group`` alone averages nothing (the kit's imagenet/main.py wraps only under a GPU
condition, so on CPU its ranks train apart). The conversion keeps the wrap where torch has it
(``torch2ms.runtime.data_parallel(model)``, under the same ``if``, ternary or ``else``), which marks the
model's parameters; the step's ``nn.DistributedGradReducer`` is built only when ``averaged`` finds its
optimizer's parameters marked (and msrun initialised the communication); a file with no wrap gets no
reducer at all.

A generated matrix of static conversions (where and how the wrap is spelt, DDP's spelling, a second
model never wrapped, init_process_group present or not) checks the converted code with neither torch
nor MindSpore; the runtime helpers are checked with MindSpore. The end-to-end runs under torchrun and
msrun are in tests/test_compare_train_nproc.py.
"""

from __future__ import annotations

import ast
import itertools
import re

import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

DDP = {
    "alias": ("from torch.nn.parallel import DistributedDataParallel as DDP\n", "DDP(net)"),
    "attribute": ("", "torch.nn.parallel.DistributedDataParallel(net)"),
    "keyword": ("", "nn.parallel.DistributedDataParallel(module=net)"),
}
# how the model is wrapped → the guards the converted wrap must sit under: (node, branch, test)
WRAP = {
    "unconditional": ("model = {ddp}\n", []),
    "if_gpu": ("model = net\nif torch.cuda.is_available():\n    model = {ddp}\n", [("If", "body", "cuda_available()")]),
    "else": ("if not distributed:\n    model = net\nelse:\n    model = {ddp}\n", [("If", "orelse", "not distributed")]),
    "ternary": ("model = {ddp} if distributed else net\n", [("IfExp", "body", "distributed")]),
    "absent": ("model = net\n", None),
}
INIT = {"init": 'dist.init_process_group("gloo")\n', "no_init": ""}
SECOND = {"one_model": False, "second_never_wrapped": True}

LOOP = """{opt} = torch.optim.SGD({model}.parameters(), lr=0.1)
for xb, yb in batches:
    {opt}.zero_grad()
    loss = criterion({model}(xb), yb)
    loss.backward()
    {opt}.step()
"""


def script(wrap: str, ddp: str, init: str, second: bool) -> str:
    d_import, d_call = DDP[ddp]
    if WRAP[wrap][1] is None:
        d_import = ""  # an import nothing reads is the import stage's business, not this one's
    body = INIT[init] + "distributed = dist.is_initialized()\ntorch.manual_seed(0)\nnet = nn.Linear(4, 3)\n"
    body += WRAP[wrap][0].format(ddp=d_call)
    body += "criterion = nn.CrossEntropyLoss()\nbatches = [(torch.randn(8, 4), torch.randint(0, 3, (8,)))]\n"
    body += LOOP.format(opt="optimizer", model="model")
    if second:
        body += "aux = nn.Linear(4, 3)\n" + LOOP.format(opt="aux_optimizer", model="aux")
    return "import torch\nimport torch.distributed as dist\nimport torch.nn as nn\n" + d_import + "\n" + body


def _guards(tree: ast.Module, target: ast.AST) -> list[tuple[str, str, str]]:
    """The ifs and conditional expressions around ``target``, outermost first."""
    out: list[tuple[str, str, str]] = []

    def visit(node: ast.AST, path: list[tuple[str, str, str]]) -> bool:
        if node is target:
            out.extend(path)
            return True
        for field, value in ast.iter_fields(node):
            for child in value if isinstance(value, list) else [value]:
                if not isinstance(child, ast.AST):
                    continue
                step = path
                if isinstance(node, (ast.If, ast.IfExp)) and field in ("body", "orelse"):
                    step = [*path, (type(node).__name__, field, ast.unparse(node.test))]
                if visit(child, step):
                    return True
        return False

    visit(tree, [])
    return out


def _calls(tree: ast.Module, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] == name]


COMBOS = list(itertools.product(WRAP, DDP, INIT, SECOND))
TORCH_LEFT = re.compile(r"(?<![\w.])(torch|dist|DDP)\.|(?<![\w.])DDP\(|^\s*(import|from) torch\b(?!2ms)", re.M)


@pytest.mark.parametrize("wrap,ddp,init,second", COMBOS, ids=["-".join(c) for c in COMBOS])
def test_gradients_are_averaged_for_the_wrapped_models_under_torchs_condition(wrap, ddp, init, second):
    res = convert_source(script(wrap, ddp, init, SECOND[second]), "train.py")
    assert res.error is None, res.error
    code = res.code
    tree = ast.parse(code)
    code_only = "\n".join(line.split("#")[0] for line in code.splitlines())
    assert not TORCH_LEFT.search(code_only), code
    assert ("ms.communication.init()" in code) == (init == "init")
    wraps = _calls(tree, "data_parallel")
    guards = WRAP[wrap][1]
    if guards is None:  # never wrapped: every worker trains its own model, as in torch
        assert not wraps and "DistributedGradReducer" not in code and "averaged" not in code, code
        assert "grad_reducer" not in code, code
        return
    assert len(wraps) == 1 and [ast.unparse(a) for a in wraps[0].args] == ["net"], code
    assert _guards(tree, wraps[0]) == guards, code
    steps = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "construct"]
    assert len(steps) == (2 if SECOND[second] else 1), code
    for opt in ("optimizer", "aux_optimizer") if SECOND[second] else ("optimizer",):
        # built where it runs: the reducer averages only parameters data_parallel marked (aux's never are)
        want = (
            f"nn.DistributedGradReducer({opt}.parameters, mean=True) if averaged({opt}.parameters) else nn.Identity()"
        )
        assert want in code, code
    for step in steps:
        assert any(re.fullmatch(r"grads = grad_reducer\w*\(grads\)", ast.unparse(s)) for s in step.body), code
    changes = [c for c in res.changes if c.api == "torch.nn.parallel.DistributedDataParallel"]
    assert len(changes) == 1 and changes[0].action == "converted"


def test_averaged_needs_the_communication_and_every_parameter_wrapped(monkeypatch):
    ms = require_module("mindspore")
    from mindspore.communication import GlobalComm

    from torch2ms.runtime import averaged, data_parallel

    wrapped, bare = ms.nn.Dense(4, 3), ms.nn.Dense(4, 3)
    assert data_parallel(wrapped) is wrapped  # the model itself: forward, parameters, state unchanged
    monkeypatch.setattr(GlobalComm, "INITED", False)
    assert not averaged(wrapped.trainable_params())  # a run without msrun: nothing to average with
    monkeypatch.setattr(GlobalComm, "INITED", True)
    assert averaged(wrapped.trainable_params())
    assert not averaged(bare.trainable_params())  # never wrapped: torch averages nothing either
    assert not averaged(wrapped.trainable_params() + bare.trainable_params())
    assert not averaged([])
    optimizer = ms.experimental.optim.SGD(wrapped.trainable_params(), lr=0.1)
    assert averaged(optimizer.parameters)  # what the converted step passes
