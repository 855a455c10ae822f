"""R6–R10, R20: each converter rewrite rule, as source before → after (static: no frameworks imported)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torch2ms.convert import convert_source

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def conv(body: str, head: str = HEAD):
    res = convert_source(head + textwrap.dedent(body), "m.py")
    assert res.error is None, res.error
    ast.parse(res.code)
    return res


def code_of(body: str, head: str = HEAD) -> str:
    return conv(body, head).code


# ---- R6: Module → Cell, forward → construct, containers, Parameter, buffers -----------------------


def test_r6_module_to_cell_forward_to_construct():
    code = code_of("""
        class Net(nn.Module):
            def __init__(self):
                super(Net, self).__init__()

            def forward(self, x):
                return x

            def twice(self, x):
                return self.forward(self.forward(x)), self.forward
        """)
    assert "class Net(nn.Cell):" in code
    assert "super(Net, self).__init__()" in code
    assert "def construct(self, x):" in code and "def forward" not in code
    assert "return self.construct(self.construct(x)), self.construct" in code


def test_r6_subclassed_containers_get_runtime_bases():
    code = code_of("""
        class Seq(nn.Sequential):
            def __init__(self, c):
                super().__init__(nn.ReLU(), nn.ReLU())

        class Lst(nn.ModuleList):
            pass

        class Dct(nn.ModuleDict):
            pass
        """)
    assert "class Seq(Sequential):" in code
    assert "from torch2ms.runtime import" in code
    for cls in ("Lst", "Dct"):
        assert f"class {cls}(" in code
    assert "nn.ModuleList" not in code and "nn.ModuleDict" not in code


def test_r6_container_constructors():
    code = code_of("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.seq = nn.Sequential(nn.ReLU(), nn.Tanh())
                self.lst = nn.ModuleList([nn.ReLU() for _ in range(2)])
                self.dct = nn.ModuleDict({"a": nn.ReLU()})
        """)
    assert "self.seq = nn.SequentialCell(nn.ReLU(), nn.Tanh())" in code
    assert "self.lst = nn.CellList([nn.ReLU() for _ in range(2)])" in code
    # CellDict refuses CellList/SequentialCell values: ModuleDict is torch2ms.runtime's Cell
    assert 'self.dct = ModuleDict({"a": nn.ReLU()})' in code


def test_r6_parameter_and_buffer():
    code = code_of("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.zeros(3, 4))
                self.register_buffer("mean", torch.ones(3))
        """)
    assert "self.w = ms.Parameter(ops.zeros((3, 4)))" in code
    assert 'self.register_buffer("mean", ops.ones(3))' in code


# ---- R7: layer constructors with the silent defaults fixed ------------------------------------------


@pytest.mark.parametrize(
    "torch_src, ms_src",
    [
        ("nn.Conv2d(3, 8, 3)", "nn.Conv2d(3, 8, 3, pad_mode='valid', has_bias=True)"),
        (
            "nn.Conv2d(3, 8, 3, padding=(1, 2), groups=1, bias=False)",
            "nn.Conv2d(3, 8, 3, pad_mode='pad', padding=(1, 1, 2, 2), group=1, has_bias=False)",
        ),
        ("nn.BatchNorm2d(8, momentum=0.1)", "nn.BatchNorm2d(8, momentum=0.9)"),
        ("nn.BatchNorm2d(8)", "nn.BatchNorm2d(8, momentum=0.9)"),
        ("nn.LayerNorm(16)", "nn.LayerNorm((16,), epsilon=1e-05)"),
        ("nn.GELU()", "nn.GELU(approximate=False)"),
        ("nn.Linear(4, 5)", "nn.Dense(4, 5)"),
        ("nn.MaxPool2d(2)", "nn.MaxPool2d(2, stride=2, pad_mode='pad', padding=0)"),
        ("nn.ReLU(inplace=True)", "nn.ReLU()"),
        ("nn.Dropout(p=0.2)", "nn.Dropout(p=0.2)"),
    ],
)
def test_r7_layer_constructor_rules(torch_src, ms_src):
    assert f"layer = {ms_src}" in code_of(f"layer = {torch_src}\n")


def test_r7_multiline_call_keeps_comments_and_trailing_comma():
    code = code_of("""
        layer = nn.Conv2d(
            3,  # in
            8,  # out
            kernel_size=3,
        )
        """)
    assert "# in" in code and "# out" in code
    assert "kernel_size=3," in code and "has_bias=True" in code


# ---- R8: functional ops, Tensor methods, dtypes, creation ops, devices -----------------------------


@pytest.mark.parametrize(
    "torch_src, ms_src",
    [
        ("torch.cat([a, b], dim=1)", "cat([a, b], axis=1)"),
        ("F.relu(a)", "ops.relu(a)"),
        ("torch.flatten(a, 1)", "ops.flatten(a, start_dim=1)"),
        ("torch.zeros(2, 3, dtype=torch.float32)", "ops.zeros((2, 3), dtype=ms.float32)"),
        ("torch.ones(2, device='cuda')", "ops.ones(2)"),
        ("torch.long", "ms.int64"),
    ],
)
def test_r8_functions_dtypes_creation(torch_src, ms_src):
    assert f"y = {ms_src}" in code_of(f"def f(a, b):\n    y = {torch_src}\n    return y\n")


def test_r8_tensor_methods_in_forward():
    code = code_of("""
        class Net(nn.Module):
            def forward(self, x):
                n = x.size(0)
                c = x.size()
                x = x.view(n, -1).contiguous()
                return x
        """)
    assert "n = x.shape[0]" in code
    assert "c = x.shape" in code
    assert "x = x.view(n, -1).contiguous()" in code


def test_r8_inplace_methods_become_assignments_including_chains():
    code = code_of("""
        class Net(nn.Module):
            def forward(self, x):
                x.add_(1)
                x.sub_(1).mul_(2)
                x[0].add_(3)
                y = x.clamp_(min=0)
                return y
        """)
    assert "x = x.add(1)" in code
    assert "x = x.sub(1).mul(2)" in code
    assert "x[0] = x[0].add(3)" in code
    assert "y = x.clamp(min=0)" in code


def test_r8_device_calls_dropped():
    code = code_of("""
        class Net(nn.Module):
            def forward(self, x):
                x = x.to(x.device)
                x = x.cuda()
                y = x.cpu()
                return y

        def run(model, x):
            model = model.cuda()
            model.to("cuda")
            return model(x.to(torch.float16))
        """)
    assert "x.device" not in code and "cuda" not in code
    assert "y = x\n" in code
    assert "model = model\n" not in code  # a no-op assignment left by the rewrite is removed
    assert "model(x.to(ms.float16))" in code or "model(x.astype(ms.float16))" in code


# ---- R9: init calls and isinstance-narrowed init loops ----------------------------------------------


def test_r9_init_loop_renames_bn_weight_via_isinstance():
    code = code_of("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm2d(4)
                for m in self.modules():
                    if isinstance(m, nn.BatchNorm2d):
                        nn.init.constant_(m.weight, 1)
                        nn.init.constant_(m.bias, 0)
                    elif isinstance(m, nn.Conv2d):
                        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.zeros_(self.bn.bias)
        """)
    assert "for _, m in self.cells_and_names():" in code
    assert "m.gamma.set_data(init.initializer(init.Constant(1), m.gamma.shape, m.gamma.dtype))" in code
    assert "m.beta.set_data(" in code
    assert "m.weight.set_data(init.initializer(init.HeNormal(" in code  # conv keeps `weight`
    assert "self.bn.beta.set_data(" in code


# ---- R10: losses ----------------------------------------------------------------------------------


def test_r10_cross_entropy():
    res = conv("loss_fn = nn.CrossEntropyLoss()\n")
    # MindSpore's own loss, taking int64 labels (tests/test_convert_cross_entropy_idiom.py runs it against torch)
    assert "loss_fn = CrossEntropyLoss()" in res.code and "from torch2ms.runtime import CrossEntropyLoss" in res.code
    assert any(c.api == "torch.nn.CrossEntropyLoss" and c.action != "not-converted" for c in res.changes)


# ---- isinstance, no_grad, decorators, classes as values, *args ----------------------------------------


def test_isinstance_against_torch_classes():
    code = code_of("def f(x, m):\n    return isinstance(x, torch.Tensor), isinstance(m, (nn.Conv2d, nn.Linear))\n")
    assert "isinstance(x, ms.Tensor)" in code
    assert "isinstance(m, (nn.Conv2d, nn.Dense))" in code


def test_no_grad_block_unwrapped_and_decorators_dropped():
    code = code_of("""
        @torch.no_grad()
        def evaluate(model, x):
            with torch.no_grad():
                # keep me
                y = model(x)
            return y

        @torch.jit.script
        def f(x):
            return x

        @torch.fx.wrap
        def g(x):
            return x
        """)
    assert "no_grad" not in code and "torch.jit" not in code and "torch.fx" not in code
    assert "    # keep me\n    y = model(x)\n" in code
    assert "def f(x):" in code and "def g(x):" in code


def test_classes_used_as_values_go_through_torchcompat():
    res = conv("""
        from functools import partial

        def build(conv_layer=nn.Conv2d, norm=partial(nn.LayerNorm, eps=1e-6)):
            return conv_layer(3, 8, 3), norm(8)
        """)
    assert 'conv_layer=TorchCompat("torch.nn.Conv2d")' in res.code
    assert 'partial(TorchCompat("torch.nn.LayerNorm"), eps=1e-6)' in res.code
    assert "from torch2ms.runtime import TorchCompat" in res.code
    assert sum(c.action == "review" for c in res.changes) == 2


def test_star_args_call_goes_through_torchcompat():
    code = code_of("def make(*args, **kwargs):\n    return nn.Conv2d(*args, **kwargs)\n")
    assert 'TorchCompat("torch.nn.Conv2d")(*args, **kwargs)' in code


def test_tensor_annotations():
    code = code_of("""
        from typing import Optional, List
        from torch import Tensor

        def f(x: Optional[torch.Tensor], ys: List[Tensor]) -> Tensor:
            x = x.to("cuda:0")
            return x
        """)
    assert "def f(x: Optional[ms.Tensor], ys: List[ms.Tensor]) -> ms.Tensor:" in code
    assert "cuda" not in code  # Optional[Tensor] is a tensor receiver
    assert "torch" not in code


# ---- imports ---------------------------------------------------------------------------------------


def test_import_inside_function_removed():
    code = code_of(
        """
        def h():
            from torch import nn
            import torch.nn.functional as F
            return F.relu(nn.Linear(2, 3)(torch.ones(2, 2)))
        """,
        head="import torch\n\n",
    )
    assert "import torch" not in code and "from torch " not in code and "from torch." not in code
    # a layer built and called at once draws fresh weights each call in torch: the runtime's graph-safe twin
    assert "return ops.relu(fresh_linear(2, 3)(ops.ones((2, 2))))" in code


def test_star_import_resolved_and_dropped():
    code = code_of("layer = Conv2d(3, 8, 3)\nact = ReLU()\n", head="from torch.nn import *\n\n")
    assert "import *" not in code
    assert "layer = nn.Conv2d(3, 8, 3, pad_mode='valid', has_bias=True)" in code
    assert "act = nn.ReLU()" in code


def test_relative_imports_are_project_names():
    code = code_of(
        "from .layers import nn as local_nn\nfrom . import utils\n\nx = local_nn.Thing()\n", head="import torch\n"
    )
    assert "from .layers import nn as local_nn" in code and "from . import utils" in code
    assert "x = local_nn.Thing()" in code


def test_r20_unconverted_torch_nn_is_not_shadowed():
    res = conv("""
        class Net(nn.Module):
            def forward(self, x):
                return nn.NoSuchLayer(3)(x)
        """)
    code = res.code
    # torch's nn is still needed: MindSpore's nn must not take its name.
    assert "import torch.nn as nn" in code
    assert "from mindspore import nn" not in code
    assert "class Net(ms.nn.Cell):" in code
    assert "# torch2ms: not converted — torch.nn.NoSuchLayer" in code
    assert [c.action for c in res.changes].count("not-converted") == 1


def test_r20_marks_counted_with_lines():
    src = HEAD + textwrap.dedent("""
        def f(x):
            a = torch.nope_one(x)
            b = torch.cat([x,
                           torch.nope_two(x)])
            return a, b
        """)
    res = convert_source(src, "m.py")
    lines = src.splitlines()
    bad = [c for c in res.changes if c.action == "not-converted"]
    assert {c.api for c in bad} == {"torch.nope_one", "torch.nope_two"}
    for c in bad:
        assert c.api.split(".")[-1] in lines[c.line - 1]
    assert res.code.count("# torch2ms: not converted") == 2


def test_report_lines_match_each_use_in_order():
    src = HEAD + textwrap.dedent("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.seq = nn.Sequential(
                    nn.Sequential(nn.ReLU()),
                    nn.Sequential(
                        nn.ReLU(),
                    ),
                )

            def forward(self, x):
                return x

            def again(self, x):
                return self.forward(x)
        """)
    res = convert_source(src, "m.py")
    lines = src.splitlines()
    for c in res.changes:
        assert c.line > 0, c
        word = {"torch.nn.Module.forward": "forward", "torch.nn.Module": "nn.Module"}.get(c.api, c.api.split(".")[-1])
        assert word in lines[c.line - 1], (c, lines[c.line - 1])
    seq_lines = [c.line for c in res.changes if c.api == "torch.nn.Sequential"]
    assert sorted(seq_lines) == [9, 10, 11]


# ---- formatting, idempotence ------------------------------------------------------------------------

FORMATTED = '''\
"""Module docstring."""
import torch  # the framework
import torch.nn as nn


# A block.
class Block(nn.Module):

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(
            4,
            4,  # same size
        )


    def forward(self, x):  # entry point
        # double it
        return self.fc(x) * 2
'''


def test_formatting_preserved():
    code = convert_source(FORMATTED, "m.py").code
    expected = (
        # the comment of a removed import stays, on its own line (no comment is ever lost)
        FORMATTED.replace(
            "import torch  # the framework\nimport torch.nn as nn\n", "# the framework\nfrom mindspore import nn\n"
        )
        .replace("nn.Module", "nn.Cell")
        .replace("nn.Linear", "nn.Dense")
        .replace("def forward", "def construct")
    )
    assert code == expected


def test_idempotent_on_converted_output():
    src = HEAD + textwrap.dedent("""
        class Net(nn.Module):
            def forward(self, x):
                y = nn.Unknown()(x)
                x.add_(1)
                return F.relu(x) + y
        """)
    once = convert_source(src, "m.py").code
    assert convert_source(once, "m.py").code == once


def test_r8_module_only_methods_on_an_untyped_parameter_are_converted():
    # `model` is a plain function parameter: eval()/parameters() exist on nn.Module only.
    src = (
        "import torch\n\n\ndef make(model, lr):\n    model.eval()\n"
        "    return torch.optim.SGD(model.parameters(), lr=lr)\n\n\ndef run(trainer):\n    trainer.train()\n"
    )
    code = convert_source(src, "m.py").code
    # An optimizer's parameters are the trainable ones (BatchNorm statistics are Parameters in MindSpore).
    assert "model.set_train(False)" in code and "optim.SGD(model.trainable_params(), lr=lr)" in code
    assert "trainer.train()" in code  # train() is left alone: trainers have it too


def test_r11_train_on_a_receiver_used_as_a_module_becomes_set_train():
    # A trainer class keeps the model in self.model: self.model.parameters() elsewhere in the class
    # (or model.parameters() in the same function) says it is a Module, so train() is Module.train.
    src = textwrap.dedent("""\
        import torch


        class Trainer:
            def __init__(self, model):
                self.model = model
                self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

            def fit(self, x):
                self.model.train()
                self.helper.train()
                return self.model(x)


        def fit(model, data, trainer):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model.train(True)
            trainer.train()
            return opt


        def other(model):
            model.train()
        """)
    res = convert_source(src, "t.py")
    assert "self.model.set_train()" in res.code and "model.set_train(True)" in res.code
    # No evidence: another object's train(), and a model in a function that never uses it as one.
    assert "self.helper.train()" in res.code and "trainer.train()" in res.code
    assert "def other(model):\n    model.train()" in res.code
    notes = [c.note for c in res.changes if c.api == "torch.nn.Module.train"]
    assert len(notes) == 2 and all("receiver assumed to be a Module" in n for n in notes)
    assert convert_source(res.code, "t.py").code == res.code


def test_r11_scheduler_methods_are_typed_and_get_last_lr_gives_floats():
    src = (
        "import torch\n\n\ndef f(opt):\n    sched = torch.optim.lr_scheduler.StepLR(opt, 2)\n"
        '    print(f"lr {sched.get_last_lr()[0]:.4g}")\n    state = sched.state_dict()\n'
    )
    res = convert_source(src, "s.py")
    # MindSpore returns 0-d Tensors, which have no format spec: torch's floats are restored.
    assert 'f"lr {[float(lr) for lr in sched.get_last_lr()][0]:.4g}"' in res.code
    assert "not converted — torch.optim.lr_scheduler.LRScheduler.state_dict" in res.code
    assert convert_source(res.code, "s.py").code == res.code


def test_r8_size_call_on_an_untyped_value_becomes_shape():
    # Outside forward nothing says `logits` is a Tensor, but only torch's size is callable
    # (numpy, PIL and pandas have a size attribute).
    src = (
        "import torch\n\n\ndef loss(model, x, y):\n    logits = model(x)\n"
        "    return torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)), x.size()\n"
    )
    code = convert_source(src, "l.py").code
    assert "logits.view(-1, logits.shape[-1])" in code and "x.shape" in code and ".size(" not in code


def test_r6_to_with_torch_keywords_on_an_untyped_receiver_is_a_tensor_move():
    """``self.mask.to(dtype=x.dtype, device=x.device)`` (an attribute of no known type): torch's keywords say
    it is a Tensor's ``to``; the dtype part is kept, the device part has no meaning in MindSpore."""
    from torch2ms.convert import convert_source

    src = (
        "import torch\n\n\nclass Block(torch.nn.Module):\n"
        "    def __init__(self, mask):\n        super().__init__()\n        self.mask = mask\n\n"
        "    def forward(self, x):\n        m = self.mask.to(dtype=x.dtype, device=x.device)\n        return x + m\n"
    )
    code = convert_source(src, "block.py").code
    assert "m = self.mask.astype(x.dtype)" in code, code
