"""The TPL6xx/TPL7xx fixes: exact rewrites, their safety, the cases left alone, and a second
`--fix` changing nothing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.engine import LintSettings, lint_text, rules_for
from torchperf_lint.fixes import fix_text

FIXTURES = Path(__file__).parent / "fixtures"
# Another library's `AdamW` holds the name, so the fix spells PyTorch's through `T`.
TIMM_ADAMW = "import torch as T\nfrom torch.optim import Adam\nfrom timm.optim import AdamW\n"


def fixed(code: str, source: str) -> str:
    """`--fix --unsafe-fixes` with only `code` selected; also checks that it is a fixed point."""
    settings = LintSettings(rules=rules_for([code]))
    text, _, _ = fix_text(textwrap.dedent(source), "train.py", settings, unsafe_fixes=True)
    again, applied, _ = fix_text(text, "train.py", settings, unsafe_fixes=True)
    assert again == text and not applied
    return text


def fixes_of(code: str, source: str) -> list:
    settings = LintSettings(rules=rules_for([code]))
    return [d.fix for d in lint_text(textwrap.dedent(source), "train.py", settings)]


# TPL601


def test_adam_fix_is_unsafe_and_only_with_unsafe_fixes() -> None:
    source = "import torch\nopt = torch.optim.Adam(params, weight_decay=0.05)\n"
    (fix,) = fixes_of("TPL601", source)
    assert fix.applicability is Applicability.UNSAFE
    settings = LintSettings(rules=rules_for(["TPL601"]))
    assert fix_text(source, "train.py", settings, unsafe_fixes=False)[0] == source


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "import torch\nopt = torch.optim.Adam(p, lr=1e-3, weight_decay=0.05)\n",
            "import torch\nopt = torch.optim.AdamW(p, lr=1e-3, weight_decay=0.05)\n",
        ),
        (
            "from torch import optim\nopt = optim.Adam(p, 1e-3, (0.9, 0.99), 1e-8, 0.05)\n",
            "from torch import optim\nopt = optim.AdamW(p, 1e-3, (0.9, 0.99), 1e-8, 0.05)\n",
        ),
        (
            "from torch.optim import Adam\nopt = Adam(p, weight_decay=0.05)\n",
            "from torch.optim import Adam, AdamW\nopt = AdamW(p, weight_decay=0.05)\n",
        ),
        (
            "from torch.optim import Adam, AdamW\nopt = Adam(p, weight_decay=0.05)\n",
            "from torch.optim import Adam, AdamW\nopt = AdamW(p, weight_decay=0.05)\n",
        ),
        (
            "from torch.optim import (\n    Adam,\n)\nopt = Adam(p, weight_decay=0.05)\n",
            "from torch.optim import (\n    Adam, AdamW,\n)\nopt = AdamW(p, weight_decay=0.05)\n",
        ),
        (
            TIMM_ADAMW + "opt = Adam(p, weight_decay=0.05)\n",
            TIMM_ADAMW + "opt = T.optim.AdamW(p, weight_decay=0.05)\n",
        ),
        (
            "import torch\nopt = torch.optim.Adam(p, weight_decay=0.05, decoupled_weight_decay=False)\n",
            "import torch\nopt = torch.optim.AdamW(p, weight_decay=0.05)\n",
        ),
    ],
)
def test_adam_becomes_adamw(before: str, after: str) -> None:
    assert fixed("TPL601", before) == after


def test_adam_without_a_way_to_name_adamw_is_not_rewritten() -> None:
    source = "from torch.optim import Adam\nfrom timm.optim import AdamW\nopt = Adam(p, weight_decay=0.05)\n"
    assert fixes_of("TPL601", source) == [None]
    assert fixed("TPL601", source) == source


@pytest.mark.torch
def test_rewritten_adam_runs_and_keeps_weight_decay() -> None:
    import torch

    source = fixed(
        "TPL601",
        """\
        from torch.optim import Adam
        params = [torch.nn.Parameter(torch.zeros(2))]
        opt = Adam(params, lr=0.1, weight_decay=0.05)
        """,
    )
    namespace: dict = {"torch": torch}
    exec(compile(source, "train.py", "exec"), namespace)  # noqa: S102 - our own fixed snippet
    assert type(namespace["opt"]) is torch.optim.AdamW
    assert namespace["opt"].param_groups[0]["weight_decay"] == 0.05


# TPL602


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("optimizer.zero_grad(set_to_none=False)\n", "optimizer.zero_grad()\n"),
        ("model.zero_grad(False)\n", "model.zero_grad()\n"),
        ("optimizer.zero_grad(set_to_none = False, )\n", "optimizer.zero_grad()\n"),
    ],
)
def test_zero_grad_drops_set_to_none_false(before: str, after: str) -> None:
    assert fixed("TPL602", "import torch\n" + before) == "import torch\n" + after


def test_zero_grad_left_alone() -> None:
    source = "import torch\noptimizer.zero_grad(set_to_none=True)\noptimizer.zero_grad(flag)\n"
    assert fixes_of("TPL602", source) == []


# TPL603


def test_fused_is_added_as_the_last_keyword() -> None:
    before = """\
    import torch
    model = Net().cuda()
    opt = torch.optim.AdamW(
        model.parameters(),
        lr=3e-4,
    )
    for x in loader:
        model(x).sum().backward()
        opt.step()
    """
    after = before.replace("lr=3e-4,\n", "lr=3e-4,\n        fused=True,\n")
    (fix,) = fixes_of("TPL603", before)
    assert fix.applicability is Applicability.UNSAFE
    assert fixed("TPL603", before) == textwrap.dedent(after)


# TPL701


def test_eval_function_gets_the_decorator_under_its_others() -> None:
    before = """\
    import torch as T


    class Runner:
        @staticmethod
        def evaluate(model, loader):
            model.eval()
            return [model(x) for x in loader]
    """
    after = """\
    import torch as T


    class Runner:
        @staticmethod
        @T.no_grad()
        def evaluate(model, loader):
            model.eval()
            return [model(x) for x in loader]
    """
    (fix,) = fixes_of("TPL701", before)
    assert fix.applicability is Applicability.UNSAFE
    assert fixed("TPL701", before) == textwrap.dedent(after)


def test_eval_function_uses_an_imported_no_grad() -> None:
    before = "from torch import no_grad\n\ndef ev(model, xs):\n    model.eval()\n    return [model(x) for x in xs]\n"
    after = "from torch import no_grad\n\n@no_grad()\ndef ev(model, xs):\n    model.eval()\n    return [model(x) for x in xs]\n"
    assert fixed("TPL701", before) == after


def test_two_models_in_one_function_get_one_decorator() -> None:
    before = "import torch\n\ndef ev(a, b, xs):\n    a.eval()\n    b.eval()\n    return [a(x) + b(x) for x in xs]\n"
    after = "import torch\n\n@torch.no_grad()\ndef ev(a, b, xs):\n    a.eval()\n    b.eval()\n    return [a(x) + b(x) for x in xs]\n"
    assert fixed("TPL701", before) == after
    # One finding: the second `.eval()` is a place of the first's.
    [finding] = lint_text(before, "train.py", LintSettings(rules=rules_for(["TPL701"])))
    assert (finding.location.row, finding.location.column) == (4, 5)
    assert [(item.location.row, item.message) for item in finding.related] == [
        (5, "also in eval mode here; the same decorator covers it")
    ]


def test_module_level_loop_is_wrapped_in_place() -> None:
    before = """\
    import torch

    if __name__ == "__main__":
        model.eval()
        # the evaluation loop
        for x in loader:
            out = model(x)
            text = '''a
    b'''
        print("done")
    """
    after = """\
    import torch

    if __name__ == "__main__":
        model.eval()
        # the evaluation loop
        with torch.no_grad():
            for x in loader:
                out = model(x)
                text = '''a
    b'''
        print("done")
    """
    assert fixed("TPL701", before) == textwrap.dedent(after)


@pytest.mark.parametrize(
    "source",
    [
        # Not in one loop: nothing to wrap.
        "import torch\nmodel.eval()\nfor x in a:\n    model(x)\nfor y in b:\n    model(y)\n",
        # No module-level name for torch.
        "from torch import nn\n\ndef ev(model, xs):\n    model.eval()\n    return [model(x) for x in xs]\n",
        # `no_grad` would not stay active across `await`.
        "import torch\n\nasync def ev(model, xs):\n    model.eval()\n    return [model(x) for x in xs]\n",
    ],
)
def test_eval_reported_without_a_fix(source: str) -> None:
    assert fixes_of("TPL701", source) == [None]


# TPL702


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "import torch\nwith torch.no_grad():\n    y = model(x)\n",
            "import torch\nwith torch.inference_mode():\n    y = model(x)\n",
        ),
        (
            "import torch as T\nfrom torch import no_grad\nwith no_grad():\n    y = model(x)\n",
            "import torch as T\nfrom torch import no_grad\nwith T.inference_mode():\n    y = model(x)\n",
        ),
        (
            "import torch\n\n@torch.no_grad\ndef f(x):\n    return model(x)\n",
            "import torch\n\n@torch.inference_mode\ndef f(x):\n    return model(x)\n",
        ),
    ],
)
def test_no_grad_becomes_inference_mode(before: str, after: str) -> None:
    (fix,) = fixes_of("TPL702", before)
    assert fix.applicability is Applicability.UNSAFE
    assert fixed("TPL702", before) == after


def test_no_grad_imported_by_name_without_torch_is_not_rewritten() -> None:
    source = "from torch import no_grad\nwith no_grad():\n    y = model(x)\n"
    assert fixes_of("TPL702", source) == [None]
