"""A small training script for `torchperf-lint verify examples/verify_demo.py`.

Its DataLoader builds every batch in the training process (TPL101), so the model waits for
the data; its loss is read with `.item()` every step (TPL201). The unsafe fix for TPL101 moves
loading into worker processes, which pays off wherever cores are idle, even on a 2-core CPU
machine: `torchperf-lint verify examples/verify_demo.py --steps 100 --warmup 20 --repeats 5`
(see the README for the numbers it printed).
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader
from verify_demo_data import FEATURES, SyntheticSignals

device = "cuda" if torch.cuda.is_available() else "cpu"


def train(epochs: int, batch_size: int) -> None:
    torch.manual_seed(0)
    # A model this small runs fastest on one thread, and one thread keeps the numbers steady
    # on a shared machine.
    torch.set_num_threads(1)
    loader = DataLoader(SyntheticSignals(4096), batch_size=batch_size, shuffle=True)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    criterion = nn.BCEWithLogitsLoss()
    for epoch in range(epochs):
        running = 0.0
        for features, labels in loader:
            features, labels = features.to(device), labels.to(device)
            loss = criterion(model(features).squeeze(1), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.item()
        print(f"epoch {epoch}: mean loss {running / len(loader):.4f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    arguments = parser.parse_args()
    train(arguments.epochs, arguments.batch_size)
