"""A small image classifier trained the way many first scripts are written.

Every performance mistake here is one the seed documents warn about; run `torchperf-lint
examples/train.py`, and `torchperf-lint --fix --unsafe-fixes --diff examples/train.py`.
"""

import time
import zlib

import torch
from torch import nn
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SyntheticImages(Dataset):
    """Images stored compressed and decoded on access, as a dataset of image files is."""

    def __init__(self, size: int) -> None:
        self.blobs = [zlib.compress(bytes((i * j) % 256 for j in range(3 * 32 * 32))) for i in range(size)]

    def __len__(self) -> int:
        return len(self.blobs)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        pixels = bytearray(zlib.decompress(self.blobs[index]))
        return torch.frombuffer(pixels, dtype=torch.uint8).view(3, 32, 32).float() / 255, index % 10


class SmallNet(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Linear(32 * 16 * 16, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def evaluate(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    correct = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        correct += (model(images).argmax(1) == labels).sum().item()
    return correct / len(loader.dataset)


def main() -> None:
    train_loader = DataLoader(SyntheticImages(512), batch_size=64, shuffle=True)
    val_loader = DataLoader(SyntheticImages(128), batch_size=64)

    model = SmallNet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.05)
    criterion = nn.CrossEntropyLoss()
    scaler = GradScaler()

    losses = []
    for epoch in range(2):
        model.train()
        start = time.time()
        for images_batch, labels_batch in train_loader:
            images_batch = images_batch.to(device)
            labels_batch = labels_batch.to(device)
            optimizer.zero_grad(set_to_none=False)
            with autocast():
                loss = criterion(model(images_batch), labels_batch)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss)
            print(f"loss {loss.item():.4f}")
        elapsed = time.time() - start
        accuracy = evaluate(model, val_loader)
        print(f"epoch {epoch}: {elapsed:.1f}s, accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
