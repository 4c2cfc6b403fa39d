"""The fixes of TPL301 (deprecated `torch.cuda.amp`) and TPL401 (`torch.compile`)."""

from __future__ import annotations

import pytest

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.engine import LintSettings, lint_text, rules_for
from torchperf_lint.fixes import fix_text
from torchperf_lint.rules.base import RuleOptions


def settings(code: str, torch_version: tuple[int, int] = (2, 3)) -> LintSettings:
    return LintSettings(rules=rules_for([code]), options=RuleOptions(torch_version=torch_version))


def fixed(code: str, before: str, unsafe: bool = False, torch_version: tuple[int, int] = (2, 3)) -> str:
    text, _, _ = fix_text(before, "train.py", settings(code, torch_version), unsafe)
    again, applied, _ = fix_text(text, "train.py", settings(code, torch_version), unsafe)
    assert again == text and not applied  # a second --fix changes nothing
    return text


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
            'import torch\nwith torch.amp.autocast("cuda"):\n    pass\n',
        ),
        (
            # The second positional parameter of torch.amp.autocast is dtype, not enabled.
            "import torch\nwith torch.cuda.amp.autocast(use_amp, torch.bfloat16):\n    pass\n",
            ('import torch\nwith torch.amp.autocast("cuda", enabled=use_amp, dtype=torch.bfloat16):\n'
            "    pass\n"),
        ),
        (
            "import torch\ns = torch.cpu.amp.GradScaler(1024.0, enabled=False)\n",
            'import torch\ns = torch.amp.GradScaler("cpu", init_scale=1024.0, enabled=False)\n',
        ),
        (
            "import torch as T\nfrom torch.cuda import amp\nwith amp.autocast(**kw):\n    pass\n",
            'import torch as T\nfrom torch.cuda import amp\nwith T.amp.autocast("cuda", **kw):\n    pass\n',
        ),
        (
            ("from torch.cuda.amp import autocast as ac, GradScaler\n"
            "scaler = GradScaler()\n"
            "with ac(dtype=torch.float16):\n    pass\n"),
            ("from torch.amp import autocast as ac, GradScaler\n"
            'scaler = GradScaler("cuda")\n'
            'with ac("cuda", dtype=torch.float16):\n    pass\n'),
        ),
        (
            ("import torch\n"
            "def make():\n"
            "    return torch.cuda.amp.GradScaler(\n"
            "        init_scale=2.0**10,\n"
            "        growth_interval=100,\n"
            "    )\n"),
            ("import torch\n"
            "def make():\n"
            "    return torch.amp.GradScaler(\n"
            '        "cuda",\n'
            "        init_scale=2.0**10,\n"
            "        growth_interval=100,\n"
            "    )\n"),
        ),
    ],
)
def test_deprecated_amp_is_rewritten_safely(before: str, after: str) -> None:
    diagnostics = lint_text(before, "train.py", settings("TPL301"))
    assert diagnostics
    assert all(d.fix is not None and d.fix.applicability is Applicability.SAFE for d in diagnostics)
    assert fixed("TPL301", before) == after


def test_tests_of_a_project_that_supports_releases_without_the_replacement_are_not_reported() -> None:
    before = "import torch\nscaler = torch.cuda.amp.GradScaler()\nfrom torch.cuda.amp import autocast\n"
    source = before + "autocast()\n"

    def found(filename: str, version: tuple[int, int]) -> list[tuple[str, int]]:
        diagnostics = lint_text(source, filename, settings("TPL301", version))
        return [(d.code, d.location.row) for d in diagnostics]

    assert found("tests/test_amp.py", (2, 1)) == []
    assert found("tests/test_amp.py", (2, 3)) == [("TPL301", 2), ("TPL301", 3), ("TPL301", 4)]
    assert found("train.py", (2, 1)) == [("TPL301", 2), ("TPL301", 3), ("TPL301", 4)]


def test_custom_fwd_needs_torch_2_4() -> None:
    before = (
        "import torch\n"
        "@torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\n"
        "def forward(ctx, x):\n    return x\n"
    )
    assert fixed("TPL301", before, torch_version=(2, 3)) == before
    assert fixed("TPL301", before, torch_version=(2, 4)) == (
        "import torch\n"
        '@torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)\n'
        "def forward(ctx, x):\n    return x\n"
    )


def test_the_fix_is_display_only_for_a_torch_version_without_torch_amp_grad_scaler() -> None:
    before = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
    [diagnostic] = lint_text(before, "train.py", settings("TPL301", (2, 1)))
    assert diagnostic.fix is not None
    assert diagnostic.fix.applicability is Applicability.DISPLAY_ONLY
    assert diagnostic.fix.message == (
        'Use `torch.amp.GradScaler` with `"cuda"` (needs PyTorch 2.3; the oldest supported is 2.1)'
    )
    assert fixed("TPL301", before, torch_version=(2, 1)) == before
    assert fixed("TPL301", before, unsafe=True, torch_version=(2, 1)) == before


@pytest.mark.parametrize(
    "before",
    [
        # The imported name is passed around, not called: the import cannot be rewritten alone.
        "from torch.cuda.amp import autocast\nctx = autocast\nwith autocast():\n    pass\n",
        # A module-level rebinding makes the uses ambiguous.
        "from torch.cuda.amp import GradScaler\nscaler = GradScaler()\nGradScaler = object\n",
        # `*args` hides which positions the arguments take.
        "import torch\nwith torch.cuda.amp.autocast(*flags):\n    pass\n",
        # The import also brings a name that torch.amp does not have.
        "from torch.cuda.amp import GradScaler, common\nscaler = GradScaler()\n",
        # `amp` is the deprecated module, and no name is bound to `torch` to spell the new one.
        "from torch.cuda import amp\nwith amp.autocast():\n    pass\n",
    ],
)
def test_deprecated_amp_is_reported_but_not_rewritten(before: str) -> None:
    diagnostics = lint_text(before, "train.py", settings("TPL301"))
    assert diagnostics
    assert all(d.fix is None for d in diagnostics)
    assert fixed("TPL301", before) == before


def test_a_noqa_on_one_use_keeps_the_whole_import_rewrite_back() -> None:
    before = (
        "from torch.cuda.amp import GradScaler\n"
        "a = GradScaler()\n"
        "b = GradScaler()  # noqa: TPL301\n"
    )
    assert fixed("TPL301", before) == before


def test_model_is_compiled_before_the_optimizer_is_built() -> None:
    before = (
        "import torch\n"
        "def main(loader):\n"
        "    model = Net().cuda()\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for x in loader:\n"
        "        model(x).sum().backward()\n"
        "        optimizer.step()\n"
    )
    [diagnostic] = lint_text(before, "train.py", settings("TPL401"))
    assert (diagnostic.location.row, diagnostic.location.column) == (3, 13)
    assert diagnostic.fix is not None and diagnostic.fix.applicability is Applicability.UNSAFE
    assert fixed("TPL401", before) == before  # unsafe: not applied by plain --fix
    assert fixed("TPL401", before, unsafe=True) == (
        "import torch\n"
        "def main(loader):\n"
        "    model = Net().cuda()\n"
        "    model = torch.compile(model)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for x in loader:\n"
        "        model(x).sum().backward()\n"
        "        optimizer.step()\n"
    )


def test_model_in_another_block_than_its_optimizer_is_not_rewritten() -> None:
    before = (
        "import torch\n"
        "model = Net()\n"
        "if sgd:\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n"
        "    model(x).sum().backward()\n"
        "    optimizer.step()\n"
    )
    [diagnostic] = lint_text(before, "train.py", settings("TPL401"))
    assert diagnostic.fix is None
