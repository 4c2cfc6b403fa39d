"""`facts.autocast`: autocast calls with their device, precision and regions; GradScalers."""

from __future__ import annotations

from pathlib import PurePath

import libcst as cst
import pytest

from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.amp import Precision


def facts_of(source: str) -> FileFacts:
    return FileFacts(cst.parse_module(source), PurePath("train.py"))


def described(source: str) -> list[tuple[str, str | None, Precision, bool | None]]:
    return [
        (call.qualified_name, call.device_type, call.precision, call.enabled)
        for call in facts_of(source).autocast.calls
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "import torch\ntorch.autocast(device_type='cuda')\n",
            ("torch.amp.autocast", "cuda", Precision.FLOAT16, True),
        ),
        (
            "import torch\ntorch.amp.autocast('cpu')\n",
            ("torch.amp.autocast", "cpu", Precision.BFLOAT16, True),
        ),
        (
            "import torch\ntorch.cuda.amp.autocast()\n",
            ("torch.cuda.amp.autocast", "cuda", Precision.FLOAT16, True),
        ),
        (
            "import torch\ntorch.cpu.amp.autocast()\n",
            ("torch.cpu.amp.autocast", "cpu", Precision.BFLOAT16, True),
        ),
        (
            "import torch as T\nfrom torch.cuda.amp import autocast\nautocast(dtype=T.bfloat16)\n",
            ("torch.cuda.amp.autocast", "cuda", Precision.BFLOAT16, True),
        ),
        (
            "from torch.cuda import amp\namp.autocast(False)\n",
            ("torch.cuda.amp.autocast", "cuda", Precision.FLOAT16, False),
        ),
        (
            "import torch\ntorch.autocast('cuda', torch.half, enabled=args.amp)\n",
            ("torch.amp.autocast", "cuda", Precision.FLOAT16, None),
        ),
        (
            "import torch\ntorch.autocast(device_type=device.type)\n",
            ("torch.amp.autocast", None, Precision.UNKNOWN, True),
        ),
        (
            "import torch\ntorch.autocast('cuda', **amp_kwargs)\n",
            ("torch.amp.autocast", "cuda", Precision.UNKNOWN, None),
        ),
        (
            ("import torch\nd = torch.bfloat16 if bf16 else torch.float16\n"
            "torch.autocast('cuda', dtype=d)\n"),
            ("torch.amp.autocast", "cuda", Precision.UNKNOWN, True),
        ),
        (
            ("import torch\nd = torch.bfloat16\ndevice_type = 'cuda'\n"
            "torch.autocast(device_type, dtype=d)\n"),
            ("torch.amp.autocast", "cuda", Precision.BFLOAT16, True),
        ),
        (
            ("import torch\nfrom functools import partial\n"
            "amp_autocast = partial(torch.autocast, device_type='cuda', dtype=torch.bfloat16)\n"),
            ("torch.amp.autocast", "cuda", Precision.BFLOAT16, True),
        ),
    ],
)
def test_autocast_calls_are_classified(source: str, expected: tuple) -> None:
    assert described(source) == [expected]


def test_a_local_class_named_autocast_is_not_autocast() -> None:
    source = "class autocast:\n    pass\n\nwith autocast():\n    pass\n"
    facts = facts_of(source)
    assert facts.autocast.calls == []
    assert not facts.autocast.mentions_autocast


def test_regions_cover_with_statements_names_partials_and_decorators() -> None:
    source = (
        "import torch\n"
        "from functools import partial\n"
        "ctx = torch.autocast('cuda') if use_amp else nullcontext()\n"
        "amp_autocast = partial(torch.autocast, device_type='cuda')\n"
        "def train(model, x):\n"
        "    with ctx:\n"
        "        a = model(x)\n"
        "    with amp_autocast():\n"
        "        b = model(x)\n"
        "    with torch.no_grad():\n"
        "        c = model(x)\n"
        "@torch.autocast('cuda', dtype=torch.bfloat16)\n"
        "def forward(model, x):\n"
        "    return model(x)\n"
    )
    facts = facts_of(source)
    regions = facts.autocast
    a, b, c, forward = [call for call in facts.index.calls if facts.code(call) == "model(x)"]
    assert [call.qualified_name for call in regions.around(a)] == ["torch.amp.autocast"]
    assert [call.precision for call in regions.around(b)] == [Precision.FLOAT16]
    assert regions.around(c) == []
    assert [call.precision for call in regions.around(forward)] == [Precision.BFLOAT16]
    train = facts.index.functions[0]
    assert len(regions.inside(train.body)) == 2


def test_grad_scalers_and_their_enabled_flag() -> None:
    source = (
        "import torch\n"
        "from torch.cuda.amp import GradScaler\n"
        "a = GradScaler()\n"
        "b = torch.amp.GradScaler('cuda', enabled=False)\n"
        "c = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))\n"
        "d = torch.cuda.amp.GradScaler(65536.0, 2.0, 0.5, 2000, False)\n"
    )
    scalers = facts_of(source).autocast.scalers
    assert [(s.qualified_name, s.enabled) for s in scalers] == [
        ("torch.cuda.amp.GradScaler", True),
        ("torch.amp.GradScaler", False),
        ("torch.cuda.amp.GradScaler", None),
        ("torch.cuda.amp.GradScaler", False),
    ]


def test_mentions_autocast_sees_uncalled_references() -> None:
    assert facts_of("import torch\nf = torch.autocast\n").autocast.mentions_autocast
    assert facts_of("from torch.cuda.amp import autocast\n").autocast.mentions_autocast
    assert not facts_of("import torch\ntorch.zeros(3)\n").autocast.mentions_autocast
