"""torchperf-lint: find, explain, fix and measure performance mistakes in PyTorch training code."""

__version__ = "0.1.0"
