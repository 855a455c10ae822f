"""Which ``.step()`` after ``loss.backward()`` is the optimizer's: told by what the file does with each
receiver (built by torch.optim, zero_grad()-ed, built by lr_scheduler or by a call given the
optimizer, asked for its learning rate), never by its name. The name test (``"sched" not in name``)
took a scheduler named ``warmup`` for the optimizer and an optimizer named ``sched_opt`` for none.
"""

from __future__ import annotations

import itertools

import pytest

from torch2ms.convert import convert_source

_LOOP = """import torch
import torch.nn as nn
{helpers}
model = nn.Linear(4, 2)
{opt} = {make_opt}
{sched} = {make_sched}
for x, y in [(torch.randn(3, 4), torch.randn(3, 2))]:
    {opt}.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
{steps}
{lr_read}"""

_HELPERS = """
def make_optimizer(m):
    return torch.optim.SGD(m.parameters(), lr=0.1)


def make_policy(optimizer, steps=10):
    return torch.optim.lr_scheduler.StepLR(optimizer, steps)
"""

OPT_NAMES = ("optimizer", "sched_opt", "opt_schedule_free")
SCHED_NAMES = ("scheduler", "warmup", "lr_policy")
MAKE_OPT = {"torch": "torch.optim.SGD(model.parameters(), lr=0.1)", "helper": "make_optimizer(model)"}
MAKE_SCHED = {
    "torch": "torch.optim.lr_scheduler.StepLR({opt}, 10)",
    "helper positional": "make_policy({opt})",
    "helper keyword": "make_policy(optimizer={opt}, steps=5)",
}
ORDER = ("optimizer first", "scheduler first")


def _source(opt: str, sched: str, make_opt: str, make_sched: str, order: str) -> str:
    steps = [f"    {opt}.step()", f"    {sched}.step()"]
    if order == "scheduler first":
        steps.reverse()
    return _LOOP.format(
        helpers=_HELPERS,
        opt=opt,
        sched=sched,
        make_opt=MAKE_OPT[make_opt],
        make_sched=MAKE_SCHED[make_sched].format(opt=opt),
        steps="\n".join(steps),
        lr_read="",
    )


CASES = [
    c
    for c in itertools.product(OPT_NAMES, SCHED_NAMES, MAKE_OPT, MAKE_SCHED, ORDER)
    # an optimizer from a helper with a scheduler from a helper: nothing says which is which but zero_grad
    if not (c[2] == "helper" and c[3] == "torch" and c[4] == "scheduler first")
]


@pytest.mark.parametrize(("opt", "sched", "make_opt", "make_sched", "order"), CASES)
def test_the_optimizer_step_is_found_by_facts(opt: str, sched: str, make_opt: str, make_sched: str, order: str):
    mod = convert_source(_source(opt, sched, make_opt, make_sched, order))
    assert mod.error is None
    assert [c for c in mod.changes if c.action == "not-converted"] == []
    assert "value_and_grad" in mod.code
    assert f"{opt}(grads)" in mod.code or f"{opt}(grads_sum)" in mod.code  # this optimizer's update
    assert f"    {sched}.step()" in mod.code  # the scheduler still steps, outside the gradient step
    assert f"{sched}(grads" not in mod.code


@pytest.mark.parametrize("sched", SCHED_NAMES)
def test_a_scheduler_known_by_its_learning_rate(sched: str) -> None:
    """A scheduler the file gets from elsewhere (a parameter) but asks for its learning rate."""
    source = f"""import torch
import torch.nn as nn


def train(model, optimizer, {sched}, data):
    for x, y in data:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        {sched}.step()
        optimizer.step()
        print({sched}.get_last_lr())
"""
    mod = convert_source(source)
    assert "optimizer(grads" in mod.code and f"{sched}(grads" not in mod.code
    assert f"{sched}.step()" in mod.code


# ---- an optimizer a call returns: whose parameters it trains -------------------------------------

_OWN_OPTIMIZER = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)

    def {method}(self, lr):
        return torch.optim.SGD(self.parameters(), lr=lr)


class Trainer:
    def {method}(self, lr):
        return torch.optim.SGD(model.parameters(), lr=lr)


def build():
    return Trainer()


model = Net()
{binding}
optimizer = {recv}.{method}(0.1)
for x, y in [(torch.randn(3, 4), torch.randn(3, 2))]:
    optimizer.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
"""
METHODS = ("configure_optimizers", "build_optimizer", "get_optim")
RECEIVERS = {  # receiver → (its binding, whether the file shows it to be a Module)
    "model": ("", True),
    "net": ("net = nn.Sequential(nn.Linear(4, 2))", True),
    "wrapped": ("wrapped = build()\nprint(sum(p.numel() for p in wrapped.parameters()))", True),
    "trainer": ("trainer = Trainer()", False),
    "helper": ("helper = build()", False),
}


@pytest.mark.parametrize(("method", "recv"), list(itertools.product(METHODS, RECEIVERS)))
def test_an_optimizer_a_method_returns_trains_a_module_only_when_the_receiver_is_one(method: str, recv: str):
    binding, is_module = RECEIVERS[recv]
    mod = convert_source(_OWN_OPTIMIZER.format(method=method, recv=recv, binding=binding))
    assert mod.error is None
    trained = recv if is_module else "model"  # the module the loop calls, when the receiver is no Module
    assert f"{trained}.set_train(True)" in mod.code
    if not is_module:
        assert f"{recv}.set_train" not in mod.code  # a Trainer has no set_train: that line would crash
