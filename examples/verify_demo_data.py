"""The dataset `verify_demo.py` trains on: each item costs real CPU time to build, as decoding
and augmenting an image does, so loading batches in worker processes pays off."""

import math

import torch
from torch.utils.data import Dataset

FEATURES = 32


class SyntheticSignals(Dataset):
    """Items computed on access, in pure Python (so only worker *processes* can overlap them)."""

    def __init__(self, size: int, work: int = 1500) -> None:
        self.size = size
        self.work = work

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        phase = index * 0.618
        signal = [
            sum(math.sin(phase + k * j * 1e-3) for j in range(self.work // FEATURES))
            for k in range(FEATURES)
        ]
        features = torch.tensor(signal) / (self.work // FEATURES)
        return features, torch.tensor(float(signal[0] > 0))
