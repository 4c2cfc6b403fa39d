"""Facts the TPL8xx/TPL9xx rules rely on: flags around a call, and layer signatures."""

from __future__ import annotations

from pathlib import PurePath

import libcst as cst
import pytest

from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.arguments import SIGNATURES, argument_value


def facts_of(source: str) -> FileFacts:
    return FileFacts(cst.parse_module(source), PurePath("train.py"))


def call_named(facts: FileFacts, name: str) -> cst.Call:
    return next(call for call in facts.index.calls if facts.code(call.func).endswith(name))


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ("target()\n", False),
        ("if args.debug:\n    target()\n", True),
        ("if args.debug:\n    pass\nelse:\n    target()\n", True),
        ("x = target() if flag else None\n", True),
        ("if target():\n    pass\n", False),
        ('if __name__ == "__main__":\n    target()\n', False),
        ('if __name__ == "__main__":\n    if args.debug:\n        target()\n', True),
        ("def f():\n    target()\nif flag:\n    f()\n", False),
        ("if flag:\n    def f():\n        target()\n", False),
        ("for x in xs:\n    target()\n", False),
    ],
)
def test_under_flag(source: str, flagged: bool) -> None:
    facts = facts_of(source)
    assert facts.guards.under_flag(call_named(facts, "target")) is flagged


@pytest.mark.parametrize(
    ("source", "bias"),
    [
        ("nn.ConvTranspose2d(8, 8, 2, 2, 0, 0, 1, False)", False),
        ("nn.LazyConv2d(8, 3, 1, 0, 1, 1, False)", False),
        ("nn.LazyConvTranspose1d(8, 3, 1, 0, 0, 1, True)", True),
        ("nn.LazyLinear(8, False)", False),
    ],
)
def test_layer_signatures_find_a_positional_bias(source: str, bias: bool) -> None:
    facts = facts_of(f"from torch import nn\nlayer = {source}\n")
    call = facts.index.calls[0]
    assert argument_value(call, "bias", SIGNATURES[facts.names.call_name(call)]) is bias
