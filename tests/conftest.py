"""Tests marked `torch` need PyTorch installed; without it they skip and say why (PyTorch 2.13
has no wheel for Python 3.9, and CI runs them on a Python that has the CPU wheel)."""

from __future__ import annotations

import importlib.util

import pytest

TORCH_MISSING = importlib.util.find_spec("torch") is None
SKIP_WITHOUT_TORCH = pytest.mark.skip(
    reason="needs PyTorch, which is not installed for this Python "
    "(pip install 'torch>=2.1'; CI runs these with `-m torch`)"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not TORCH_MISSING:
        return
    for item in items:
        if item.get_closest_marker("torch") is not None:
            item.add_marker(SKIP_WITHOUT_TORCH)
