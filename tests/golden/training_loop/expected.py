"""A small classifier trained with SGD and a step schedule (golden input: written for torch2ms)."""

import mindspore as ms
from mindspore import nn, ops
import mindspore.dataset as ds
from mindspore.experimental import optim
from torch2ms.runtime import CrossEntropyLoss, ckpt_path, load_checkpoint, load_param_into_net_strict


class Classifier(nn.Cell):
    def __init__(self, n_in: int = 16, n_hidden: int = 32, n_classes: int = 4):
        super().__init__()
        self.fc1 = nn.Dense(n_in, n_hidden)
        self.bn = nn.BatchNorm1d(n_hidden, momentum=0.95)
        self.drop = nn.Dropout(p=0.2)
        self.fc2 = nn.Dense(n_hidden, n_classes)

    def construct(self, x):
        x = ops.relu(self.bn(self.fc1(x)))  # 隐藏层
        return self.fc2(self.drop(x))


def train(epochs: int = 2, device: str = "cpu"):
    ms.set_seed(0)
    x = ops.randn(64, 16)
    y = ops.randint(0, 4, (64,))
    loader = ds.NumpySlicesDataset((x.asnumpy(), y.asnumpy()), column_names=['data', 'label'], shuffle=True).batch(16, drop_remainder=True)
    model = Classifier()
    criterion = CrossEntropyLoss(label_smoothing=0.1)
    optimizer = optim.SGD(model.trainable_params(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    def forward_fn(inputs, targets):
        """Forward pass and loss of the torch training loop (value_and_grad differentiates it)."""
        logits = model(inputs)
        loss = criterion(logits, targets)
        return loss, logits

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)

    class TrainStep(nn.Cell):
        """Forward, loss.backward() and optimizer.step() of the torch loop as one Cell."""

        # One compiled graph per step in PyNative too (MS_JIT=0 runs it op by op for debugging).
        @ms.jit
        def construct(self, inputs, targets):
            (loss, logits), grads = grad_fn(inputs, targets)
            grads = ops.clip_by_norm(grads, 1.0)  # torch2ms: torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer(grads)
            return loss, logits

    train_step = TrainStep()
    for epoch in range(epochs):
        model.set_train()
        total = 0.0
        for inputs, targets in loader.create_tuple_iterator():
            loss, logits = train_step(inputs, targets)  # torch2ms: forward, loss.backward(), optimizer.step()
            total += loss.item()
        scheduler.step()
        print(f"epoch {epoch}: loss {float(total / loader.get_dataset_size()):.4f}, lr {[float(lr) for lr in scheduler.get_last_lr()][0]:.4f}")
    model.set_train(False)
    accuracy = (model(x).argmax(axis=1, keepdims=False) == y).float().mean().item()
    ms.save_checkpoint(model, ckpt_path("classifier.pt"))
    load_param_into_net_strict(model, load_checkpoint("classifier.pt"))
    return accuracy


if __name__ == "__main__":
    print(train())
