"""The fixes of TPL802 (remove the debugging call) and TPL906/TPL909 (`bias=False`)."""

from __future__ import annotations

import pytest

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.engine import LintSettings, lint_text, rules_for
from torchperf_lint.fixes import fix_text


def fixed(code: str, source: str) -> str:
    settings = LintSettings(rules=rules_for([code]))
    text, _, _ = fix_text(source, "train.py", settings, unsafe_fixes=True)
    again, applied_again, _ = fix_text(text, "train.py", settings, unsafe_fixes=True)
    assert (again, dict(applied_again)) == (text, {})
    return text


def fixes_of(code: str, source: str) -> list:
    return [d.fix for d in lint_text(source, "train.py", LintSettings(rules=rules_for([code])))]


ANOMALY_CASES = [
    (
        "import torch\ntorch.autograd.set_detect_anomaly(True)\nprint('start')\n",
        "import torch\nprint('start')\n",
    ),
    (
        "import torch\n\n\ndef setup():\n    # debugging\n    torch.autograd.set_detect_anomaly(True)\n",
        "import torch\n\n\ndef setup():\n    # debugging\n    pass\n",
    ),
    (
        ("import torch\n\n\ndef train(model, loader):\n"
        "    for x in loader:\n"
        "        with torch.autograd.detect_anomaly():  # find the NaN\n"
        "            # forward\n"
        "            loss = model(x)\n"
        "            for part in loss:\n"
        "                part.backward()\n"
        "\n"
        "        print(x)\n"),
        ("import torch\n\n\ndef train(model, loader):\n"
        "    for x in loader:\n"
        "        # forward\n"
        "        loss = model(x)\n"
        "        for part in loss:\n"
        "            part.backward()\n"
        "\n"
        "        print(x)\n"),
    ),
    (
        ("import torch\n\n\ndef step(model, x):\n"
        "    with torch.autograd.detect_anomaly(): model(x).backward(); print(x)  # debug\n"
        "    return x\n"),
        ("import torch\n\n\ndef step(model, x):\n"
        "    model(x).backward(); print(x)  # debug\n"
        "    return x\n"),
    ),
    (
        ("import torch\nfrom torch.autograd import gradcheck\n\nif __name__ == '__main__':\n"
        "\tgradcheck(torch.sin, (torch.randn(3, dtype=torch.double, requires_grad=True),))\n"
        "\tfor x in loader:\n\t\tmodel(x).sum().backward()\n\t\toptimizer.step()\n"),
        ("import torch\nfrom torch.autograd import gradcheck\n\nif __name__ == '__main__':\n"
        "\tfor x in loader:\n\t\tmodel(x).sum().backward()\n\t\toptimizer.step()\n"),
    ),
]


@pytest.mark.parametrize(("before", "after"), ANOMALY_CASES)
def test_debug_api_fix_removes_the_call(before: str, after: str) -> None:
    assert [fix.applicability for fix in fixes_of("TPL802", before)] == [Applicability.UNSAFE]
    assert fixed("TPL802", before) == after


TRAINING_LOOP = "for x in loader:\n    model(x).sum().backward()\n    optimizer.step()\n"


@pytest.mark.parametrize(
    "source",
    [
        # The result is used (in a script that trains: elsewhere a gradient check is a test).
        "import torch\nassert torch.autograd.gradcheck(f, inputs)\n" + TRAINING_LOOP,
        "import torch\nok = torch.autograd.gradgradcheck(f, inputs)\n" + TRAINING_LOOP,
        # Other statements share the line, or the context manager.
        "import torch\nx = 1; torch.autograd.set_detect_anomaly(True)\n",
        "import torch\nwith torch.autograd.detect_anomaly(), open(p) as f:\n    f.read()\n",
        "import torch\nwith torch.autograd.detect_anomaly() as mode:\n    print(mode)\n",
        # Re-indenting would change the text of a multi-line string.
        'import torch\ndef f():\n    with torch.autograd.detect_anomaly():\n        s = """a\n    b"""\n',
    ],
)
def test_debug_api_without_a_safe_removal_has_no_fix(source: str) -> None:
    assert fixes_of("TPL802", source) == [None]
    assert fixed("TPL802", source) == source


BIAS_CASES = [
    (
        "TPL906",
        ("from torch import nn\nblock = nn.Sequential(\n    nn.Conv2d(\n        3,\n        8,\n        3,\n    ),\n"
        "    nn.BatchNorm2d(8),\n)\n"),
        ("from torch import nn\nblock = nn.Sequential(\n    nn.Conv2d(\n        3,\n        8,\n        3,\n"
        "        bias=False,\n    ),\n    nn.BatchNorm2d(8),\n)\n"),
    ),
    (
        "TPL909",
        ("from torch import nn\n\n\nclass Head(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(16, 16)\n"
        "        self.bn = nn.BatchNorm1d(16)\n\n    def forward(self, x):\n"
        "        out = self.fc(x)\n        out = self.bn(out)\n        return out\n"),
        ("from torch import nn\n\n\nclass Head(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(16, 16, bias=False)\n"
        "        self.bn = nn.BatchNorm1d(16)\n\n    def forward(self, x):\n"
        "        out = self.fc(x)\n        out = self.bn(out)\n        return out\n"),
    ),
]


@pytest.mark.parametrize(("code", "before", "after"), BIAS_CASES)
def test_bias_before_batchnorm_fix_sets_bias_false(code: str, before: str, after: str) -> None:
    assert [fix.applicability for fix in fixes_of(code, before)] == [Applicability.UNSAFE]
    assert fixed(code, before) == after


@pytest.mark.parametrize(
    "layer", ["nn.Conv2d(3, 8, 3, 1, 1, 1, 1, True)", "nn.Conv2d(3, 8, 3, bias=True)"]
)
def test_an_explicit_bias_before_batchnorm_is_a_decision(layer: str) -> None:
    source = f"import torch.nn as nn\nblock = nn.Sequential({layer}, nn.BatchNorm2d(8))\n"
    assert lint_text(source, "train.py", LintSettings(rules=rules_for(["TPL906"]))) == []


@pytest.mark.parametrize(
    ("code", "source"),
    [
        ("TPL906", "from torch import nn\nb = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8))\n"),
        ("TPL906", "from torch import nn\nb = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.BatchNorm2d(8))\n"),
        ("TPL909", "from torch import nn\nb = nn.Sequential(nn.Linear(3, 8), nn.LayerNorm(8))\n"),
        ("TPL909", "from torch import nn\nb = nn.Sequential(nn.Linear(3, 8, **options), nn.BatchNorm1d(8))\n"),
    ],
)
def test_bias_before_batchnorm_leaves_other_code_alone(code: str, source: str) -> None:
    assert fixes_of(code, source) == []
    assert fixed(code, source) == source
