"""The TPL1xx fixes: exact rewrites, their safety, and what they leave alone."""

from __future__ import annotations

from textwrap import dedent

import pytest

from torchperf_lint.diagnostics import Applicability, Diagnostic
from torchperf_lint.engine import LintSettings, lint_text, rules_for
from torchperf_lint.fixes import fix_text


def lint(code: str, source: str) -> list[Diagnostic]:
    return lint_text(dedent(source), "train.py", LintSettings(rules=rules_for([code])))


def fixed(code: str, source: str) -> str:
    """`--fix --unsafe-fixes` with only `code` selected; a second run must change nothing."""
    settings = LintSettings(rules=rules_for([code]))
    once, _, _ = fix_text(dedent(source), "train.py", settings, unsafe_fixes=True)
    twice, applied, _ = fix_text(once, "train.py", settings, unsafe_fixes=True)
    assert twice == once and not applied
    return once


FORWARD = """\
    import torch

    class Block(torch.nn.Module):
        def forward(self, x, ref, n):
            return x + {factory}.to(ref)
    """


@pytest.mark.parametrize(
    ("factory", "shown"),
    [
        ("torch.zeros(n, 3)", "ref.new_zeros(n, 3)"),
        ("torch.ones(n)", "ref.new_ones(n)"),
        ("torch.full((n,), 0.5)", "ref.new_full((n,), 0.5)"),
        ("torch.empty(n)", "ref.new_empty(n)"),
    ],
)
def test_moving_to_what_may_be_a_tensor_shows_the_new_factory_of_that_tensor(
    factory: str, shown: str
) -> None:
    # `.to(ref)` takes `ref`'s device and dtype, as `ref.new_zeros(...)` does; `device=ref`
    # would raise when `ref` is a tensor.
    [finding] = lint("TPL105", FORWARD.format(factory=factory))
    assert finding.fix is not None
    assert finding.fix.applicability is Applicability.DISPLAY_ONLY
    assert [edit.content for edit in finding.fix.edits] == [shown]
    assert fixed("TPL105", FORWARD.format(factory=factory)) == dedent(FORWARD.format(factory=factory))


@pytest.mark.parametrize(
    "factory", ["torch.arange(n)", "torch.zeros(n, dtype=torch.long)", "torch.rand(n)"]
)
def test_moving_to_what_may_be_a_tensor_offers_no_device_keyword(factory: str) -> None:
    [finding] = lint("TPL105", FORWARD.format(factory=factory))
    assert finding.fix is None


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            """\
            loader = DataLoader(
                dataset,
                batch_size=64,
                drop_last=True,  # full batches only
            )
            """,
            """\
            loader = DataLoader(
                dataset,
                batch_size=64,
                drop_last=True,  # full batches only
                num_workers=4,
                persistent_workers=True,
            )
            """,
        ),
        (
            """\
            loader = DataLoader(
                dataset, batch_size=64, drop_last=True  # full batches only
            )
            """,
            """\
            loader = DataLoader(
                dataset, batch_size=64, drop_last=True, num_workers=4, persistent_workers=True  # full batches only
            )
            """,
        ),
        (
            """\
            loader = DataLoader(
                dataset,
                drop_last=True,
                # shuffle=True,
            )
            """,
            """\
            loader = DataLoader(
                dataset,
                drop_last=True,
                # shuffle=True,
                num_workers=4,
                persistent_workers=True,
            )
            """,
        ),
    ],
)
def test_added_keywords_leave_comments_on_their_lines(before: str, after: str) -> None:
    header = "from torch.utils.data import DataLoader\n\n\ndef build(dataset):\n"
    indented = "".join("    " + line for line in dedent(before).splitlines(keepends=True))
    expected = "".join("    " + line for line in dedent(after).splitlines(keepends=True))
    trailer = "    return loader\n"
    assert fixed("TPL101", header + indented + trailer) == header + expected + trailer
