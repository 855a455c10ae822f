"""The training-idiom generator (issue 22 §2): small PyTorch training scripts that vary ONE idiom at a time
over a working base.

A case is a base (a tiny MLP, CNN or LSTM classifier on synthetic data drawn inside the script with a
fixed seed, or a tiny GAN), plus one idiom: an axis of :data:`AXES` set to one of its non-base values.
Every other axis keeps its base value (the first of its list), so a failure names the idiom that broke
it. The scripts run for a few epochs of four batches each and take seconds; fuzz_train.py converts each
with ``convert_tree`` and runs ``compare_train`` on the pair; the property is SAME.

:data:`KNOWN` lists the idioms whose failure class is not fixed yet, each with its class name: the
fixed-seed slice in ``make test`` checks that they still fail (a known case that passes fails the test,
so the list shrinks), and the campaign reports them apart from new failures.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

# ---- the axes: name -> values, the first value being the base ------------------------------------------
AXES: dict[str, list[str]] = {
    "loop": ["module", "function", "main", "trainer", "while", "enumerate1", "iter_next", "batch"],
    "mode": ["before", "never", "epoch", "eval_after", "train_eval_after", "in_body"],
    "zero_grad": [
        "optimizer",
        "model",
        "set_to_none",
        "helper",
        "after_step",
        "several",
        "grad_none",
        "helper_after_step",
        "before_loop",
    ],
    "hidden": ["none", "tuple", "list", "helper", "reinit", "module", "gru", "list_reinit"],
    "loss": [
        "module",
        "functional",
        "sum_reduction",
        "nll",
        "two_losses",
        "py_scalar",
        "np_scalar",
        "item",
        "data",
        "format_spec",
        "label_smoothing",
        "bce",
        "np_scalar_right",
    ],
    "optim": ["sgd_momentum", "sgd", "adam", "adamw", "rmsprop", "param_groups", "weight_decay", "nesterov"],
    "sched": [
        "none",
        "step_epoch",
        "step_batch",
        "lambda",
        "warmup",
        "exponential",
        "multistep",
        "cosine",
        "lambda_np",
        "groups_np",
    ],
    "legacy": [
        "none",
        "variable",
        "tensor_type",
        "type_float",
        "tensor_fill",
        "data_clamp",
        "device",
        "long_type",
        "alias_long",
    ],
    "gan": ["none", "detach", "twice", "retain", "gp", "clip_weights", "legacy_fill", "reset_grad"],
    "manual": ["none", "data_add", "no_grad_sub", "data_sub"],
    "clip": ["none", "norm", "value", "accum", "accum_clip"],
    "amp": ["none", "scaler", "amp_scaler", "unscale_clip"],
    "ckpt": ["none", "state_dict", "full", "best", "every_steps"],
}
BASE = {axis: values[0] for axis, values in AXES.items()}
MODELS = ["mlp", "cnn", "rnn"]
# Axes whose idioms only exist on one base: recurrent state needs the LSTM.
ONLY_MODEL = {"hidden": "rnn"}

# Idioms (``axis=value``, or ``axis=value@model`` for one base only) whose failure class is not fixed
# yet, with the class name. The fixed-seed slice asserts that each still fails.
KNOWN: dict[str, str] = {
    # (mode=eval_after, eval-only-after-training; loop=trainer, mode-switch-on-attribute-model; loop=iter_next,
    # next-batch-inside-step: fixed, tests/test_train_model_places.py)
    # (hidden=module, self.hidden on the module: fixed, the step runs uncompiled; tests/test_train_rnn_state_on_module.py)
    # (zero_grad=several, two optimizers over one loss: fixed, tests/test_train_two_optimizers_one_loss.py)
    # (gan=gp, a WGAN-GP's torch.autograd.grad(..., create_graph=True): fixed, a nested mindspore.grad;
    # tests/test_train_gradient_penalty.py. gan=detach, the generator's forward twice per step and the models'
    # shared parameter names in GRAPH_MODE: fixed; tests/test_train_gan_step_matrix.py)
    # (manual=*: manual updates without an optimizer, issue 22 class 7: fixed, tests/test_train_manual_updates.py;
    # legacy=data_clamp, gan=clip_weights: p.data.clamp_ after step(), and zero_grad=grad_none: `p.grad = None`
    # loops: fixed, tests/test_train_param_updates.py)
    # (loss=two_losses, model.parameters() in the compiled step's loss: fixed, tests/test_train_parameters_in_loss.py)
    # (ckpt=full, nested state dicts in one checkpoint: fixed, tests/test_train_checkpoint_nested.py)
    # torch's CUDA autocast and GradScaler switch themselves off on a CPU torch (float32) while the
    # conversion runs MindSpore's float16 O1: the losses part beyond 1e-4 (tests/test_compare_train_shapes.py
    # compares it at 2e-3).
    "amp=unscale_clip@rnn": "amp-o1-on-lstm",  # ms.amp O1 on an LSTM: LSTMOpt.__init__() TypeError
    "amp=scaler": "amp-float16-against-cpu-float32",
    "amp=unscale_clip": "amp-float16-against-cpu-float32",
    # `torch.amp.GradScaler('cuda', enabled=flag)` is left unconverted (no DynamicLossScaler form for
    # `enabled=`) while the step calls MindSpore's scaler methods on it (AttributeError: no `unscale`).
    "amp=amp_scaler": "gradscaler-enabled-flag",
}


@dataclass
class TrainCase:
    name: str
    axis: str
    value: str
    model: str
    seed: int
    batch: int
    lr: float
    graph: bool = False
    text: str = ""
    extra: dict[str, str] = field(default_factory=dict)  # other axes set too (a test's matrix of two axes)

    @property
    def idiom(self) -> str:
        return f"{self.axis}={self.value}"

    def known(self) -> str | None:
        return known_class(self.idiom, self.model)


def known_class(idiom: str, model: str) -> str | None:
    """The class name when this idiom (on this base) is in KNOWN."""
    return KNOWN.get(f"{idiom}@{model}") or KNOWN.get(idiom)


# ---- the pieces of a classifier script --------------------------------------------------------------------

EPOCHS = 3
BATCHES = 4  # per epoch


def _net(model: str, hidden: str, width: int) -> list[str]:
    if model == "mlp":
        return [
            "class Net(nn.Module):",
            f"    def __init__(self, d_in=8, width={width}, classes=3):",
            "        super().__init__()",
            "        self.features = nn.Sequential(nn.Linear(d_in, width), nn.BatchNorm1d(width), nn.ReLU())",
            "        self.head = nn.Linear(width, classes)",
            "",
            "    def forward(self, x):",
            "        return self.head(self.features(x))",
        ]
    if model == "cnn":
        return [
            "class Net(nn.Module):",
            "    def __init__(self, channels=4, classes=3):",
            "        super().__init__()",
            "        self.features = nn.Sequential(",
            "            nn.Conv2d(1, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(), nn.MaxPool2d(2)",
            "        )",
            "        self.head = nn.Linear(channels * 4 * 4, classes)",
            "",
            "    def forward(self, x):",
            "        x = self.features(x)",
            "        return self.head(x.view(x.size(0), -1))",
        ]
    return _rnn_net(hidden, width)


def _rnn_net(hidden: str, width: int) -> list[str]:
    cell = "GRU" if hidden == "gru" else "LSTM"
    head = [
        "class Net(nn.Module):",
        f"    def __init__(self, d_in=5, width={width}, classes=3):",
        "        super().__init__()",
        "        self.width = width",
        f"        self.features = nn.{cell}(d_in, width, batch_first=True)",
        "        self.head = nn.Linear(width, classes)",
        "",
    ]
    init = [
        "",
        "    def init_hidden(self, batch):",
        "        return (torch.zeros(1, batch, self.width), torch.zeros(1, batch, self.width))",
    ]
    if hidden == "none":
        return head + [
            "    def forward(self, x):",
            "        out, _ = self.features(x)",
            "        return self.head(out[:, -1])",
        ]
    if hidden == "module":
        return head + [
            "        self.hidden = self.init_hidden(1)",
            "",
            "    def forward(self, x):",
            "        out, self.hidden = self.features(x, self.hidden)",
            "        return self.head(out[:, -1])",
            *init,
        ]
    if hidden == "gru":
        init = ["", "    def init_hidden(self, batch):", "        return torch.zeros(1, batch, self.width)"]
    return head + [
        "    def forward(self, x, hidden):",
        "        out, hidden = self.features(x, hidden)",
        "        return self.head(out[:, -1]), hidden",
        *init,
    ]


def _data(model: str, seed: int, batch: int) -> list[str]:
    shape = {"mlp": "8", "cnn": "1, 8, 8", "rnn": "6, 5"}[model]
    n = batch * BATCHES
    return [
        f"torch.manual_seed({seed})",
        f"rng = np.random.RandomState({seed})",
        f"X = torch.from_numpy(rng.randn({n}, {shape}).astype(np.float32))",
        f"Y = torch.from_numpy(rng.randint(0, 3, {n}).astype(np.int64))",
        "dataset = torch.utils.data.TensorDataset(X, Y)",
        f"loader = torch.utils.data.DataLoader(dataset, batch_size={batch}, shuffle=False)",
    ]


def _criterion(loss: str) -> str:
    return {
        "sum_reduction": "nn.CrossEntropyLoss(reduction='sum')",
        "nll": "nn.NLLLoss()",
        "label_smoothing": "nn.CrossEntropyLoss(label_smoothing=0.1)",
        "bce": "nn.BCEWithLogitsLoss()",
    }.get(loss, "nn.CrossEntropyLoss()")


def _optimizer(optim: str, lr: float, params: str = "model.parameters()") -> str:
    return {
        "sgd_momentum": f"torch.optim.SGD({params}, lr={lr}, momentum=0.9)",
        "sgd": f"torch.optim.SGD({params}, lr={lr})",
        "adam": f"torch.optim.Adam({params}, lr={lr / 10:g})",
        "adamw": f"torch.optim.AdamW({params}, lr={lr / 10:g}, weight_decay=0.01)",
        "rmsprop": f"torch.optim.RMSprop({params}, lr={lr / 100:g})",
        "param_groups": (
            "torch.optim.SGD([{'params': model.features.parameters()}, "
            f"{{'params': model.head.parameters(), 'lr': {lr / 2:g}}}], lr={lr}, momentum=0.9)"
        ),
        "weight_decay": f"torch.optim.SGD({params}, lr={lr}, momentum=0.9, weight_decay=1e-3)",
        "nesterov": f"torch.optim.SGD({params}, lr={lr}, momentum=0.9, nesterov=True)",
    }[optim]


SCHEDULERS = {  # value -> (constructor, per "batch" or "epoch")
    "step_epoch": ("torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)", "epoch"),
    "step_batch": ("torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.7)", "batch"),
    "lambda": ("torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lambda e: 0.8**e)", "epoch"),
    "warmup": ("torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 3))", "batch"),
    "exponential": ("torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)", "epoch"),
    "multistep": ("torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 4], gamma=0.5)", "batch"),
    "cosine": (f"torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max={EPOCHS * BATCHES})", "batch"),
    # issue 22 class 4: numpy float64 factors (np.float64 ** e, np.cos) reaching the learning rate
    "lambda_np": ("torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lambda e: np.float64(0.8) ** e)", "epoch"),
    "groups_np": ("", "batch"),  # param_groups' 'lr' set by hand from np.cos each batch (_step)
}


def _setup(c: TrainCase, s: dict[str, str]) -> list[str]:
    """Model, criterion, optimizer(s), scheduler, scaler: made once, where the loop's scope can see them."""
    lines = ["model = Net()"]
    if s["legacy"] == "device":
        lines.append("model = model.to(device)")
    lines.append(f"criterion = {_criterion(s['loss'])}")
    if s["zero_grad"] == "several":
        lines.append(f"optimizer = {_optimizer(s['optim'], c.lr, 'model.features.parameters()')}")
        lines.append(f"optimizer2 = {_optimizer(s['optim'], c.lr, 'model.head.parameters()')}")
    elif s["manual"] == "none":
        lines.append(f"optimizer = {_optimizer(s['optim'], c.lr)}")
    else:
        lines.append(f"lr = {c.lr}")
    if s["sched"] == "groups_np":
        lines.append(f"base_lr = {c.lr}")
    elif s["sched"] != "none":
        lines.append(f"scheduler = {SCHEDULERS[s['sched']][0]}")
    if s["amp"] == "scaler" or s["amp"] == "unscale_clip":
        lines.append("scaler = torch.cuda.amp.GradScaler()")
    elif s["amp"] == "amp_scaler":
        lines += ["use_amp = torch.cuda.is_available()", "scaler = torch.amp.GradScaler('cuda', enabled=use_amp)"]
    return lines


def _prelude(s: dict[str, str]) -> list[str]:
    lines = []
    if s["legacy"] == "tensor_type" or s["legacy"] == "tensor_fill":
        lines += ["cuda = torch.cuda.is_available()", "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor"]
    if s["legacy"] == "alias_long":
        lines += [
            "cuda = torch.cuda.is_available()",
            "LongTensor = torch.cuda.LongTensor if cuda else torch.LongTensor",
        ]
    if s["legacy"] == "device":
        lines.append("device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')")
    return lines


def _helpers(s: dict[str, str]) -> list[str]:
    out: list[list[str]] = []
    if s["zero_grad"] in ("helper", "helper_after_step"):
        out.append(["def reset_grad():", "    optimizer.zero_grad()"])
    if s["hidden"] == "helper":
        out.append(
            [
                "def repackage_hidden(h):",
                '    """Detach hidden states from their history."""',
                "    if isinstance(h, torch.Tensor):",
                "        return h.detach()",
                "    return tuple(repackage_hidden(v) for v in h)",
            ]
        )
    return [line for block in out for line in [*block, "", ""]]


# ---- the loop's parts: before the epochs, per epoch, per batch, after -------------------------------------


def _inputs(s: dict[str, str]) -> list[str]:
    return {
        "variable": ["x, y = Variable(x), Variable(y)"],
        "tensor_type": ["x = x.type(Tensor)"],
        "type_float": ["x = x.type(torch.FloatTensor)"],
        "tensor_fill": ["x = x * Tensor(1).fill_(1.0)"],
        "long_type": ["y = y.type(torch.LongTensor)"],
        "alias_long": ["y = y.type(LongTensor)"],
        "device": ["x, y = x.to(device), y.to(device)"],
    }.get(s["legacy"], [])


def _forward(s: dict[str, str]) -> list[str]:
    h = s["hidden"]
    if h in ("none", "module"):
        pre = ["model.hidden = model.init_hidden(x.size(0))"] if h == "module" else []
        return [*pre, "out = model(x)"]
    if h == "tuple":
        return ["hidden = tuple(h.detach() for h in hidden)", "out, hidden = model(x, hidden)"]
    if h == "list":
        return ["states = [s.detach() for s in states]", "out, states = model(x, states)"]
    if h == "helper":
        return ["hidden = repackage_hidden(hidden)", "out, hidden = model(x, hidden)"]
    if h == "reinit":
        return ["hidden = model.init_hidden(x.size(0))", "out, hidden = model(x, hidden)"]
    if h == "list_reinit":  # a fresh state per batch, written as a list
        zeros = "torch.zeros(1, x.size(0), model.width)"
        return [f"states = [{zeros}, {zeros}]", "out, states = model(x, states)"]
    return ["hidden = hidden.detach()", "out, hidden = model(x, hidden)"]  # gru


def _loss(s: dict[str, str]) -> list[str]:
    return {
        "functional": ["loss = F.cross_entropy(out, y)"],
        "sum_reduction": ["loss = criterion(out, y) / x.size(0)"],
        "nll": ["loss = criterion(F.log_softmax(out, dim=1), y)"],
        "two_losses": ["loss = criterion(out, y) + 0.01 * sum(p.pow(2).sum() for p in model.parameters())"],
        "py_scalar": ["loss = 0.5 * criterion(out, y) + 1.0"],
        "np_scalar": ["weight = np.mean([0.5, 1.5])", "loss = weight * criterion(out, y)"],
        "item": ["loss = criterion(out, y)", "running += loss.item()"],
        "data": ["loss = criterion(out, y)", "running += loss.data"],
        "format_spec": ["loss = criterion(out, y)", 'print(f"loss {loss:.4f}")'],
        "bce": ["loss = criterion(out, F.one_hot(y, 3).float())"],
        "np_scalar_right": ["loss = criterion(out, y) * np.float64(0.5) + np.mean([0.25, 0.75])"],
    }.get(s["loss"], ["loss = criterion(out, y)"])


def _zero(s: dict[str, str]) -> list[str]:
    if s["manual"] != "none":
        return ["model.zero_grad()"]
    return {
        "optimizer": ["optimizer.zero_grad()"],
        "model": ["model.zero_grad()"],
        "set_to_none": ["optimizer.zero_grad(set_to_none=True)"],
        "helper": ["reset_grad()"],
        "after_step": [],
        "helper_after_step": [],
        "before_loop": ["optimizer.zero_grad()"],
        "several": ["optimizer.zero_grad()", "optimizer2.zero_grad()"],
        "grad_none": ["for p in model.parameters():", "    p.grad = None"],
    }[s["zero_grad"]]


def _manual_step(s: dict[str, str]) -> list[str]:
    return {
        "data_add": ["for p in model.parameters():", "    p.data.add_(-lr * p.grad)"],
        "no_grad_sub": ["with torch.no_grad():", "    for p in model.parameters():", "        p -= lr * p.grad"],
        "data_sub": ["for p in model.parameters():", "    p.data.sub_(lr * p.grad.data)"],
    }[s["manual"]]


def _step(s: dict[str, str]) -> list[str]:
    """backward, clipping, the optimizer step(s), zero_grad after the step, a per-batch scheduler."""
    clip = {
        "norm": ["torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"],
        "value": ["nn.utils.clip_grad_value_(model.parameters(), 0.5)"],
        "accum_clip": ["torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)"],
    }.get(s["clip"], [])
    if s["manual"] != "none":
        return ["loss.backward()", *_manual_step(s)]
    if s["amp"] != "none":
        unscale = ["scaler.unscale_(optimizer)", "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"]
        steps = ["scaler.scale(loss).backward()", *(unscale if s["amp"] == "unscale_clip" else [])]
        steps += ["scaler.step(optimizer)", "scaler.update()"]
    else:
        steps = ["loss.backward()", *clip, "optimizer.step()"]
        if s["zero_grad"] == "several":
            steps.append("optimizer2.step()")
    if s["zero_grad"] == "after_step":
        steps.append("optimizer.zero_grad()")
    if s["zero_grad"] == "helper_after_step":
        steps.append("reset_grad()")
    if s["legacy"] == "data_clamp":
        steps += ["for p in model.parameters():", "    p.data.clamp_(-1.0, 1.0)"]
    if s["sched"] == "groups_np":
        steps += [
            "for g in optimizer.param_groups:",
            f"    g['lr'] = base_lr * 0.5 * (1 + np.cos(np.pi * (epoch * {BATCHES} + i) / {EPOCHS * BATCHES}))",
        ]
    elif s["sched"] != "none" and SCHEDULERS[s["sched"]][1] == "batch":
        steps.append("scheduler.step()")
    if s["ckpt"] == "every_steps":
        steps += ["if i % 2 == 0:", "    torch.save(model.state_dict(), 'checkpoint.pt')"]
    return steps


def _autocast(s: dict[str, str], lines: list[str]) -> list[str]:
    if s["amp"] == "none":
        return lines
    head = "with torch.autocast(device_type='cuda', dtype=torch.float16):"
    if s["amp"] == "amp_scaler":
        head = "with torch.autocast(device_type='cuda', enabled=use_amp):"
    return [head, *("    " + line for line in lines)]


def _body(s: dict[str, str]) -> list[str]:
    if s["mode"] == "in_body":
        first = ["model.train()"]
    else:
        first = []
    first += _inputs(s)
    fwd = _autocast(s, [*_forward(s), *_loss(s)])
    if s["clip"] in ("accum", "accum_clip"):
        steps = _step(s)
        return [
            *first,
            *fwd,
            "loss = loss / 2",
            "loss.backward()",
            "if (i + 1) % 2 == 0:",
            *("    " + line for line in steps[1:] + _zero(s)),
        ]
    return [*first, *_zero(s), *fwd, *_step(s)]


def _pre(s: dict[str, str]) -> list[str]:
    """In the loop's scope, before the epochs."""
    lines = {"before": ["model.train()"], "train_eval_after": ["model.train()"]}.get(s["mode"], [])
    if s["zero_grad"] in ("after_step", "before_loop"):
        lines.append(
            "optimizer.zero_grad(set_to_none=True)" if s["zero_grad"] == "before_loop" else "optimizer.zero_grad()"
        )
    if s["zero_grad"] == "helper_after_step":
        lines.append("reset_grad()")
    if s["ckpt"] == "best":
        lines.append("best = float('inf')")
    if s["clip"] in ("accum", "accum_clip"):
        lines.append("optimizer.zero_grad()")
    return lines


def _epoch_head(s: dict[str, str], batch: int) -> list[str]:
    lines = ["model.train()"] if s["mode"] == "epoch" else []
    if s["loss"] in ("item", "data") or s["ckpt"] == "best":
        lines.append("running = 0.0")
    if s["hidden"] in ("tuple", "helper", "gru"):
        lines.append(f"hidden = model.init_hidden({batch})")
    if s["hidden"] == "list":
        lines.append(f"states = list(model.init_hidden({batch}))")
    return lines


def _epoch_tail(s: dict[str, str]) -> list[str]:
    lines = []
    if s["mode"] == "epoch":
        lines += ["model.eval()", "with torch.no_grad():", "    val = model(X[:4])"]
        if s["hidden"] == "module":
            lines.insert(1, "model.hidden = model.init_hidden(4)")
        if s["hidden"] not in ("none", "module"):
            lines[-1] = "    val, _ = model(X[:4], model.init_hidden(4))"
    if s["sched"] != "none" and SCHEDULERS[s["sched"]][1] == "epoch":
        lines.append("scheduler.step()")
    if s["loss"] in ("item", "data"):
        lines.append(f"print('epoch', epoch, 'loss', running / {BATCHES})")
    if s["ckpt"] == "state_dict":
        lines.append("torch.save(model.state_dict(), 'checkpoint.pt')")
    if s["ckpt"] == "full":
        lines.append(
            "torch.save({'epoch': epoch, 'model': model.state_dict(), "
            "'optimizer': optimizer.state_dict()}, 'checkpoint.pt')"
        )
    return lines


def _body_with_best(s: dict[str, str]) -> list[str]:
    body = _body(s)
    if s["ckpt"] == "best":
        body.append("running += loss.item()")
    return body


def _tail_with_best(s: dict[str, str]) -> list[str]:
    tail = _epoch_tail(s)
    if s["ckpt"] == "best":
        tail += ["if running < best:", "    best = running", "    torch.save(model.state_dict(), 'best.pt')"]
    return tail


def _post(s: dict[str, str]) -> list[str]:
    """After training, at module level."""
    if s["mode"] not in ("eval_after", "train_eval_after"):
        return []
    if s["hidden"] == "module":
        return [
            "model.eval()",
            "model.hidden = model.init_hidden(4)",
            "with torch.no_grad():",
            "    print(model(X[:4]))",
        ]
    if s["hidden"] == "none":
        return ["model.eval()", "with torch.no_grad():", "    print(model(X[:4]).argmax(1))"]
    return ["model.eval()", "with torch.no_grad():", "    print(model(X[:4], model.init_hidden(4))[0].argmax(1))"]


def _ind(lines: list[str], n: int) -> list[str]:
    return [(" " * n + line) if line else line for line in lines]


def _batch_loop(loop: str, body: list[str]) -> list[str]:
    """The loop over one epoch's batches, with `i` counting from 0 where the body needs it."""
    if loop == "enumerate1":
        return ["for i, (x, y) in enumerate(loader, 1):", *_ind([line.replace("(i + 1)", "i") for line in body], 4)]
    if loop == "iter_next":
        return ["it = iter(loader)", "for i in range(len(loader)):", "    x, y = next(it)", *_ind(body, 4)]
    if loop == "batch":
        return ["for i, batch in enumerate(loader):", "    x, y = batch", *_ind(body, 4)]
    if any(re.search(r"\bi\b", line) for line in body):
        return ["for i, (x, y) in enumerate(loader):", *_ind(body, 4)]
    return ["for x, y in loader:", *_ind(body, 4)]


def _loop(c: TrainCase, s: dict[str, str]) -> list[str]:
    """pre + the epochs; at the indentation of the scope that holds them."""
    inner = _batch_loop(s["loop"], _body_with_best(s))
    epoch = [*_epoch_head(s, c.batch), *inner, *_tail_with_best(s)]
    if s["loop"] == "while":
        inner = _batch_loop("module", [*_body_with_best(s), "step += 1", f"if step >= {EPOCHS * BATCHES}:"])
        inner.append("        break")
        epoch = [*_epoch_head(s, c.batch), *inner, *_tail_with_best(s), "epoch += 1"]
        return [*_pre(s), "step = 0", "epoch = 0", f"while step < {EPOCHS * BATCHES}:", *_ind(epoch, 4)]
    return [*_pre(s), f"for epoch in range({EPOCHS}):", *_ind(epoch, 4)]


def _scoped(c: TrainCase, s: dict[str, str]) -> list[str]:
    """Setup, the loop and what follows it, in the scope the `loop` axis names."""
    setup, loop, post = _setup(c, s), _loop(c, s), _post(s)
    if s["loop"] == "main":
        return ["def main():", *_ind([*setup, *loop, *post], 4), "", "", 'if __name__ == "__main__":', "    main()"]
    if s["loop"] == "function":
        fn = ["def train(model, loader, optimizer, criterion):", *_ind(loop, 4)]
        return [*fn, "", "", *setup, "train(model, loader, optimizer, criterion)", *post]
    if s["loop"] == "trainer":
        own = [re.sub(r"(?<![\w.])(model|optimizer|criterion|loader)\b", r"self.\1", line) for line in loop]
        cls = [
            "class Trainer:",
            "    def __init__(self, model, loader, optimizer, criterion):",
            "        self.model, self.loader = model, loader",
            "        self.optimizer, self.criterion = optimizer, criterion",
            "",
            "    def fit(self):",
            *_ind(own, 8),
        ]
        return [*cls, "", "", *setup, "Trainer(model, loader, optimizer, criterion).fit()", *post]
    return [*setup, *loop, *post]


def classifier_script(c: TrainCase) -> str:
    s = dict(BASE, **c.extra, **{c.axis: c.value})
    head = [f'"""Generated by tests/fuzz/train_idioms.py: {c.idiom} on the {c.model} base."""', ""]
    imports = ["import numpy as np", "import torch", "import torch.nn as nn", "import torch.nn.functional as F"]
    if s["legacy"] == "variable":
        imports.append("from torch.autograd import Variable")
    parts = [*head, *imports, "", *_prelude(s), "", *_net(c.model, s["hidden"], 16), "", ""]
    parts += [*_helpers(s), *_data(c.model, c.seed, c.batch), *_scoped(c, s)]
    return "\n".join(parts).replace("\n\n\n\n", "\n\n\n") + "\n"


# ---- the GAN base -------------------------------------------------------------------------------------------

GAN_NETS = [
    "class Generator(nn.Module):",
    "    def __init__(self, z=4, width=16, d_out=6):",
    "        super().__init__()",
    "        self.net = nn.Sequential(nn.Linear(z, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Linear(width, d_out))",
    "",
    "    def forward(self, z):",
    "        return self.net(z)",
    "",
    "",
    "class Discriminator(nn.Module):",
    "    def __init__(self, d_in=6, width=16):",
    "        super().__init__()",
    "        self.net = nn.Sequential(nn.Linear(d_in, width), nn.LeakyReLU(0.2), nn.Linear(width, 1))",
    "",
    "    def forward(self, x):",
    "        return self.net(x)",
]


RESET_GRAD = ["def reset_grad():", "    opt_D.zero_grad()", "    opt_G.zero_grad()", "", ""]


def _gan_step(value: str) -> list[str]:
    ones, zeros = "torch.ones(x.size(0), 1)", "torch.zeros(x.size(0), 1)"
    if value == "legacy_fill":
        ones = "Variable(Tensor(x.size(0), 1).fill_(1.0), requires_grad=False)"
        zeros = "Variable(Tensor(x.size(0), 1).fill_(0.0), requires_grad=False)"
    d_real, d_fake = f"criterion(D(x), {ones})", f"criterion(D(fake.detach()), {zeros})"
    g_loss = f"g_loss = criterion(D(fake), {ones})"
    if value in ("gp", "clip_weights"):
        d_real, d_fake, g_loss = "-D(x).mean()", "D(fake.detach()).mean()", "g_loss = -D(fake).mean()"
    lines = ["z = torch.randn(x.size(0), 4)", "fake = G(z)", "opt_D.zero_grad()", f"d_loss = {d_real} + {d_fake}"]
    if value == "twice":
        lines[-1] = f"d_loss = {d_real} + criterion(D(fake), {zeros})"
    if value == "gp":
        lines += [
            "alpha = torch.rand(x.size(0), 1)",
            "mixed = (alpha * x + (1 - alpha) * fake.detach()).requires_grad_(True)",
            "out = D(mixed)",
            "grad = torch.autograd.grad(outputs=out, inputs=mixed, grad_outputs=torch.ones_like(out),",
            "                           create_graph=True, retain_graph=True)[0]",
            "d_loss = d_loss + 10.0 * ((grad.norm(2, dim=1) - 1) ** 2).mean()",
        ]
    lines += ["d_loss.backward(retain_graph=True)" if value == "retain" else "d_loss.backward()", "opt_D.step()"]
    if value == "clip_weights":
        lines += ["for p in D.parameters():", "    p.data.clamp_(-0.1, 0.1)"]
    if value == "twice":
        lines.append("fake = G(z)")
    g_zero = "opt_G.zero_grad()"
    if value == "reset_grad":  # yunjey's style: one helper clears both networks' gradients, before each backward
        lines[2] = g_zero = "reset_grad()"
    return [*lines, g_zero, g_loss, "g_loss.backward()", "opt_G.step()"]


def gan_script(c: TrainCase) -> str:
    imports = ["import numpy as np", "import torch", "import torch.nn as nn"]
    prelude = []
    if c.value == "legacy_fill":
        imports.append("from torch.autograd import Variable")
        prelude = ["cuda = torch.cuda.is_available()", "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor"]
    opt = "torch.optim.Adam({}.parameters(), lr=%g, betas=(0.5, 0.999))" % (c.lr / 10)
    if c.value == "clip_weights":
        opt = "torch.optim.RMSprop({}.parameters(), lr=%g)" % (c.lr / 20)
    n = c.batch * BATCHES
    lines = [
        f'"""Generated by tests/fuzz/train_idioms.py: {c.idiom} on the gan base."""',
        "",
        *imports,
        "",
        *prelude,
        "",
        *GAN_NETS,
        "",
        "",
        *(RESET_GRAD if c.value == "reset_grad" else []),
        f"torch.manual_seed({c.seed})",
        f"rng = np.random.RandomState({c.seed})",
        f"X = torch.from_numpy((rng.randn({n}, 6) * 0.5 + 1.0).astype(np.float32))",
        f"loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X), batch_size={c.batch})",
        "G, D = Generator(), Discriminator()",
        "criterion = nn.BCEWithLogitsLoss()",
        "opt_G = " + opt.format("G"),
        "opt_D = " + opt.format("D"),
        f"for epoch in range({EPOCHS}):",
        "    for (x,) in loader:",
        *_ind(_gan_step(c.value), 8),
    ]
    return "\n".join(lines).replace("\n\n\n\n", "\n\n\n") + "\n"


# ---- cases ----------------------------------------------------------------------------------------------------


def idioms() -> list[tuple[str, str]]:
    """Every (axis, non-base value): the idioms a campaign varies, one at a time; the axes interleaved
    (each axis's first idiom, then each one's second, ...), so that a campaign cut short covers every axis."""
    longest = max(len(values) for values in AXES.values())
    return [(axis, values[k]) for k in range(1, longest) for axis, values in AXES.items() if k < len(values)]


def make_case(
    axis: str, value: str, model: str, seed: int, batch: int = 8, lr: float = 0.1, extra: dict[str, str] | None = None
) -> TrainCase:
    """One case: `axis` set to `value` (and the axes of `extra`, for a matrix of two), the rest at the base."""
    if axis == "gan":
        model = "gan"
    model = ONLY_MODEL.get(axis, model)
    more = "".join(f"-{k}-{v}" for k, v in (extra or {}).items())
    name = f"{axis}-{value}{more}-{model}-s{seed}-b{batch}"
    c = TrainCase(name, axis, value, model, seed, batch, lr, extra=dict(extra or {}))
    c.text = gan_script(c) if axis == "gan" else classifier_script(c)
    return c


def make_cases(seed: int, count: int, graph_share: float = 0.0) -> list[TrainCase]:
    """`count` cases: the idioms in turn (each over a random base: model, data seed, batch, learning rate),
    the base itself among them; `graph_share` of them run MindSpore in GRAPH_MODE."""
    rng = random.Random(seed)
    pool = [("loop", "module"), *idioms()]
    cases, names = [], set()
    for k in range(count):
        axis, value = pool[k % len(pool)]
        model = rng.choice(MODELS)
        c = make_case(axis, value, model, rng.randrange(1000), rng.choice([4, 8]), rng.choice([0.05, 0.1, 0.2]))
        c.graph = rng.random() < graph_share
        base, n = c.name + ("-graph" if c.graph else ""), 1
        c.name = base
        while c.name in names:
            n += 1
            c.name = f"{base}-{n}"
        names.add(c.name)
        cases.append(c)
    return cases
