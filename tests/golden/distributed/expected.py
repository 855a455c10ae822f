# torch2ms: distributed data parallel: launch every worker with `msrun --worker_num=2 --local_worker_num=2 --master_addr=127.0.0.1 --master_port=8118 --join=True --log_dir=msrun_log <this file>`
"""Data-parallel training launched with torch.multiprocessing (golden input: written for torch2ms)."""

import os

import mindspore as ms
from mindspore import nn, ops
import mindspore.dataset as ds
from mindspore.experimental import optim
from torch2ms.runtime import CrossEntropyLoss, averaged, data_parallel


def worker(rank: int, world_size: int):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    ms.set_device("CPU")  # torch2ms: gloo is torch's CPU backend
    ms.communication.init()  # torch2ms: init_process_group(backend="gloo"): MindSpore picks HCCL/NCCL/its CPU collectives by device; rank and world size come from msrun
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    ms.set_seed(0)
    data = ds.dataloader.TensorDataset(ops.randn(32, 8), ops.randint(0, 2, (32,)))
    sampler = ds.dataloader.DistributedSampler(data, num_replicas=world_size, rank=rank, shuffle=False)
    loader = ds.NumpySlicesDataset(tuple(t.asnumpy() for t in data.tensors), column_names=['data', 'label'], sampler=sampler).batch(4, drop_remainder=False)
    model = data_parallel(nn.Dense(8, 2))
    optimizer = optim.SGD(model.trainable_params(), lr=0.1)
    loss_fn = CrossEntropyLoss()

    model.set_train(True)  # torch2ms: a torch module starts in training mode, a MindSpore cell does not

    def forward_fn(xb, yb):
        """Forward pass and loss of the torch training loop (value_and_grad differentiates it)."""
        loss = loss_fn(model(xb), yb)
        return loss

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)
    # torch2ms: DDP averaged the gradients across workers: only for the models torch wrapped, and under msrun
    grad_reducer = nn.DistributedGradReducer(optimizer.parameters, mean=True) if averaged(optimizer.parameters) else nn.Identity()

    class TrainStep(nn.Cell):
        """Forward, loss.backward() and optimizer.step() of the torch loop as one Cell."""

        # One compiled graph per step in PyNative too (MS_JIT=0 runs it op by op for debugging).
        @ms.jit
        def construct(self, xb, yb):
            loss, grads = grad_fn(xb, yb)
            grads = grad_reducer(grads)
            optimizer(grads)
            return loss

    train_step = TrainStep()
    for xb, yb in loader.create_tuple_iterator():
        loss = train_step(xb, yb)  # torch2ms: forward, loss.backward(), optimizer.step()
    if ms.communication.get_rank() == 0:
        print("trained", sum(p.numel() for p in model.get_parameters()))
    ops.AllReduce()(ops.zeros(1)).asnumpy()  # torch2ms: torch barrier(): every worker must contribute before any returns
    ms.communication.release()


if __name__ == "__main__":
    worker(int(os.environ["RANK_ID"]), 2)  # torch2ms: mp.spawn → one process per worker: msrun --worker_num=2 exports RANK_ID
