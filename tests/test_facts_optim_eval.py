"""The facts the optimizer and evaluation rules added: module-level names for fixes, and grad
modes only known at run time."""

from __future__ import annotations

from pathlib import PurePath

import libcst as cst
import pytest

from torchperf_lint.facts import FileFacts


def facts_of(source: str) -> FileFacts:
    return FileFacts(cst.parse_module(source), PurePath("train.py"))


def call_named(facts: FileFacts, callee: str) -> cst.Call:
    return next(c for c in facts.index.calls if facts.code(c.func) == callee)


@pytest.mark.parametrize(
    ("source", "qualified", "expected"),
    [
        ("import torch\n", "torch", "torch"),
        ("import torch as T\n", "torch", "T"),
        ("import torch as T\nimport torch\n", "torch", "torch"),
        ("import torch.nn as nn\n", "torch", None),
        ("import torch.optim\n", "torch", "torch"),
        ("def f():\n    import torch\n", "torch", None),
        ("import torch\ntorch = None\n", "torch", None),
        ("import torch\ndef torch():\n    pass\n", "torch", None),
        ("from torch.optim import AdamW\n", "torch.optim.AdamW", "AdamW"),
        ("from torch import no_grad\n", "torch.no_grad", "no_grad"),
        ("from transformers import AdamW\n", "torch.optim.AdamW", None),
    ],
)
def test_module_level_name(source: str, qualified: str, expected: str | None) -> None:
    assert facts_of(source).names.module_level_name(qualified) == expected


@pytest.mark.parametrize(
    ("source", "certainly", "maybe"),
    [
        ("with torch.no_grad():\n    model(x)\n", True, True),
        ("with torch.set_grad_enabled(False):\n    model(x)\n", True, True),
        ("with torch.set_grad_enabled(is_train):\n    model(x)\n", False, True),
        ("with torch.set_grad_enabled(True):\n    model(x)\n", False, False),
        ("with nullcontext() if train else torch.no_grad():\n    model(x)\n", False, True),
        ("ctx = torch.inference_mode()\nwith ctx:\n    model(x)\n", False, True),
        ("with autocast():\n    model(x)\n", False, False),
        ("@torch.no_grad()\ndef f():\n    model(x)\n", True, True),
        ("def f(train):\n    with torch.set_grad_enabled(train):\n        model(x)\n", False, True),
    ],
)
def test_grad_maybe_disabled(source: str, certainly: bool, maybe: bool) -> None:
    facts = facts_of("import torch\n" + source)
    run = call_named(facts, "model")
    assert facts.guards.grad_disabled(run) is certainly
    assert facts.guards.grad_maybe_disabled(run) is maybe
