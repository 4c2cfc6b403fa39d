"""Facts the TPL8xx/TPL9xx rules rely on: flags around a call, and layer signatures."""

from __future__ import annotations

import textwrap
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


@pytest.mark.parametrize(
    ("reader", "conv_read", "linear_read"),
    [
        ("if isinstance(m, nn.Conv2d):\n        m.bias.data.zero_()", True, False),
        ("if isinstance(m, (nn.Conv2d, nn.Linear)):\n        nn.init.zeros_(m.bias)", True, True),
        ("if isinstance(m, nn.modules.conv._ConvNd):\n        m.bias.data.zero_()", True, False),
        ("if m.__class__.__name__.find('Linear') != -1:\n        m.bias.data.fill_(0)", False, True),
        ("if isinstance(m, nn.Conv2d) and m.bias is not None:\n        m.bias.data.zero_()", False, False),
        ("if hasattr(m, 'bias'):\n        m.bias.data.zero_()", False, False),
        ("m.bias.data.zero_()", True, True),  # a layer of unknown type
        ("m.bias = None", False, False),  # a write, not a read
    ],
)
def test_bias_reads(reader: str, conv_read: bool, linear_read: bool) -> None:
    facts = facts_of(
        "from torch import nn\n"
        "conv = nn.Conv2d(3, 8, 3)\n"
        "fc = nn.Linear(8, 8)\n"
        f"def init(m):\n    {reader}\n"
    )
    conv, fc = facts.index.calls[:2]
    reads = facts.models.bias_reads
    assert (reads.covers(conv, "Conv2d"), reads.covers(fc, "Linear")) == (conv_read, linear_read)


def test_bias_reads_through_a_bound_layer_cover_that_layer_only() -> None:
    facts = facts_of(
        "from torch import nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        self.a = nn.Conv2d(3, 8, 3)\n"
        "        self.b = nn.Conv2d(8, 8, 3)\n"
        "        nn.init.zeros_(self.a.bias)\n"
        "    def forward(self, x):\n"
        "        return x + self.bias\n"  # the module's own parameter
    )
    a, b = (call for call in facts.index.calls if facts.code(call.func) == "nn.Conv2d")
    reads = facts.models.bias_reads
    assert (reads.covers(a, "Conv2d"), reads.covers(b, "Conv2d")) == (True, False)


@pytest.mark.parametrize(
    ("source", "distributed"),
    [
        ("from torch.nn.parallel import DistributedDataParallel as DDP\nm = DDP(m)\n", True),
        ("import torch\nm = torch.nn.parallel.DistributedDataParallel(m)\n", True),
        ("from apex.parallel import DistributedDataParallel\nm = DistributedDataParallel(m)\n", True),
        ("from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nm = FSDP(m)\n", True),
        ("import torch\nm = torch.nn.DataParallel(m)\n", False),
        ("from torch.nn.parallel import DistributedDataParallel\nisinstance(m, DistributedDataParallel)\n", False),
    ],
)
def test_builds_a_distributed_wrapper(source: str, distributed: bool) -> None:
    assert facts_of(source).models.builds_distributed_wrapper is distributed


def test_a_switch_default_is_the_parameter_default_or_what_every_call_passes() -> None:
    facts = facts_of(
        textwrap.dedent("""
        import torch.nn as nn

        class Head(nn.Module):
            def __init__(self, dim, use_bn=False, norm=True, dropout=None, use_ln=None):
                super().__init__()
                self.norm = norm
                if use_bn:
                    pass
                if self.norm:
                    pass
                if use_ln:
                    pass
                use_ln = True

        class MLP(nn.Module):
            def __init__(self, dim, use_batchnorm, residual):
                super().__init__()
                if use_batchnorm:
                    pass
                if residual:
                    pass

            @classmethod
            def from_config(cls, config):
                return cls(config["dim"], config.get("use_batchnorm", False), config["residual"])
        """)
    )
    tests = {
        facts.code(node.test): node.test
        for node in facts.index.parents if isinstance(node, cst.If)
    }
    assert facts.guards.switch_default(tests["use_bn"]) is False
    assert facts.guards.switch_default(tests["self.norm"]) is True
    assert facts.guards.switch_default(tests["use_ln"]) is None  # rebound in the function
    assert facts.guards.switch_default(tests["use_batchnorm"]) is False
    assert facts.guards.switch_default(tests["residual"]) is None
