"""Mixed-precision training with autocast and a gradient scaler (golden input: written for torch2ms)."""

import mindspore as ms
from mindspore import nn, ops
from mindspore.experimental import optim
from torch2ms.runtime import CrossEntropyLoss, scaler_finite


def train(steps: int = 3):
    model = nn.SequentialCell(nn.Conv2d(3, 8, 3, pad_mode='pad', padding=1, has_bias=True), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dense(8, 2))
    optimizer = optim.AdamW(model.trainable_params(), lr=1e-3, weight_decay=0.01)
    scaler = ms.amp.DynamicLossScaler(scale_value=65536.0, scale_factor=2, scale_window=2000)
    criterion = CrossEntropyLoss()

    model.set_train(True)  # torch2ms: a torch module starts in training mode, a MindSpore cell does not

    amp_model = model if ms.get_context("device_target") == "CPU" else ms.amp.auto_mixed_precision(model, "O1", dtype=ms.float16)  # torch2ms: torch.autocast(device_type='cuda', dtype=torch.float16) → O1 mixed precision; dropped on CPU: float32 there, as torch's CUDA autocast does nothing on a CPU

    def forward_fn(images, labels):
        """Forward pass and loss of the torch training loop (value_and_grad differentiates it)."""
        loss = criterion(amp_model(images), labels)
        return scaler.scale(loss)

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

    class TrainStep(nn.Cell):
        """Forward, loss.backward() and optimizer.step() of the torch loop as one Cell."""

        # One compiled graph per step in PyNative too (MS_JIT=0 runs it op by op for debugging).
        @ms.jit
        def construct(self, images, labels):
            loss, grads = grad_fn(images, labels)
            loss = scaler.unscale(loss)
            grads = scaler.unscale(grads)  # torch2ms: scaler.unscale_(optimizer)
            grads_finite = scaler_finite(scaler, grads)
            grads = ops.clip_by_norm(grads, 1.0)  # torch2ms: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if grads_finite:  # torch2ms: scaler.step(optimizer) skips the step when a gradient is inf/nan
                optimizer(grads)
            scaler.adjust(grads_finite)  # torch2ms: scaler.update(): halve the scale on overflow
            return loss

    train_step = TrainStep()
    for step in range(steps):
        images, labels = ops.randn(4, 3, 8, 8), ops.randint(0, 2, (4,))
        loss = train_step(images, labels)  # torch2ms: forward, loss.backward(), optimizer.step()
    return loss.item()
