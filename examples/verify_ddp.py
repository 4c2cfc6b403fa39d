"""A data-parallel training script with gradient accumulation, for `torchperf-lint verify
--nproc-per-node 2` (run it yourself with `torchrun --nproc-per-node 2 examples/verify_ddp.py`).

Two ranks train one model with DistributedDataParallel on the CPU (`gloo`), accumulating the
gradients of 4 micro-batches per optimizer step. Without `no_sync()` every micro-batch's
backward all-reduces all 0.8 M gradients (TPL604); the unsafe fix makes only the last one of
each step do it. Each sample is read from slow storage (a 3 ms wait per sample, as from a
network file system) in the training process (TPL101); the unsafe fix reads them in worker
processes. `torchperf-lint verify examples/verify_ddp.py --nproc-per-node 2 --per-fix
--select TPL101,TPL604` measures both (see the README for the numbers it printed).
"""

import argparse
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

FEATURES = 512
READ_LATENCY_S = 0.003


class SlowStorage(Dataset):
    """Samples behind a read latency; each is made from its index, so every run sees the same."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(READ_LATENCY_S)
        features = torch.randn(FEATURES, generator=torch.Generator().manual_seed(index))
        return features, features[:8].sum().sin().reshape(1)


def train(epochs: int, accumulation_steps: int, batch_size: int) -> None:
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    # One thread per rank: two ranks share this machine's cores.
    torch.set_num_threads(1)
    dataset = SlowStorage(2048)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    model = nn.Sequential(
        nn.Linear(FEATURES, 1024), nn.ReLU(), nn.Linear(1024, 256), nn.ReLU(), nn.Linear(256, 1)
    )
    ddp_model = DDP(model)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for i, (features, target) in enumerate(loader):
            loss = criterion(ddp_model(features), target) / accumulation_steps
            loss.backward()
            if (i + 1) % accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: last loss {loss.detach() * accumulation_steps}")
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--accumulation-steps", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=4)
    arguments = parser.parse_args()
    train(arguments.epochs, arguments.accumulation_steps, arguments.batch_size)
