"""The TPL5xx fixes: exact rewrites, their safety, and what they leave alone."""

from __future__ import annotations

from textwrap import dedent

from torchperf_lint.diagnostics import Applicability, Diagnostic, Edit
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


def shown(source: str, edits: tuple[Edit, ...]) -> str:
    """The text a display-only fix shows (edits applied by row and column, last first)."""
    lines = dedent(source).splitlines(keepends=True)

    def offset(row: int, column: int) -> int:
        return sum(len(line) for line in lines[: row - 1]) + column - 1

    text = "".join(lines)
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        start = offset(edit.start.row, edit.start.column)
        text = text[:start] + edit.content + text[offset(edit.end.row, edit.end.column):]
    return text


TRAINING = """\
    import torch

    def train(model, loader, criterion, optimizer):
        total = 0
        weighted = 0
        losses = []
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss
            weighted += loss * x.size(0)
            losses.append((loss))
        return total, weighted, losses
    """


def test_loss_graph_fix_detaches_the_stored_value() -> None:
    [first, *_] = lint("TPL501", TRAINING)
    assert first.fix is not None and first.fix.applicability is Applicability.UNSAFE
    assert fixed("TPL501", TRAINING) == dedent(TRAINING).replace(
        "total += loss\n", "total += loss.detach()\n"
    ).replace(
        "weighted += loss * x.size(0)", "weighted += (loss * x.size(0)).detach()"
    ).replace("losses.append((loss))", "losses.append((loss.detach()))")


def test_loss_graph_fix_is_not_applied_without_unsafe_fixes() -> None:
    settings = LintSettings(rules=rules_for(["TPL501"]))
    text, applied, remaining = fix_text(dedent(TRAINING), "train.py", settings, unsafe_fixes=False)
    assert text == dedent(TRAINING) and not applied and len(remaining) == 3


def test_gradient_accumulation_is_left_alone() -> None:
    source = """\
        import torch

        def train(model, loader, criterion, optimizer):
            loss = 0
            for x, y in loader:
                loss = loss + criterion(model(x), y)
            loss.backward()
            optimizer.step()
        """
    assert lint("TPL501", source) == []
    assert fixed("TPL501", source) == dedent(source)


CHECKPOINT = """\
    import torch
    from torch.utils.checkpoint import checkpoint

    class Net(torch.nn.Module):
        def forward(self, x, **options):
            x = checkpoint(self.block, x)
            x = checkpoint(
                self.block,
                x,
            )
            return checkpoint(self.block, x, **options)
    """


def test_checkpoint_fix_adds_use_reentrant_false_keeping_the_layout() -> None:
    diagnostics = lint("TPL502", CHECKPOINT)
    assert [d.location.row for d in diagnostics] == [6, 7]
    assert all(d.fix.applicability is Applicability.UNSAFE for d in diagnostics)
    assert fixed("TPL502", CHECKPOINT) == dedent(CHECKPOINT).replace(
        "checkpoint(self.block, x)\n", "checkpoint(self.block, x, use_reentrant=False)\n"
    ).replace("            x,\n        )", "            x,\n            use_reentrant=False,\n        )")


EMPTY_CACHE = """\
    import torch

    def train(model, loader, optimizer, low_memory):
        for x in loader:
            model(x).sum().backward()
            optimizer.step()
            torch.cuda.empty_cache()  # free memory
            if low_memory:
                torch.cuda.empty_cache()
            if low_memory: torch.cuda.empty_cache()
            if not low_memory:
                torch.cuda.empty_cache()
                torch.cuda.empty_cache()
    """


def test_empty_cache_fix_deletes_the_line_or_leaves_pass() -> None:
    assert all(d.fix.applicability is Applicability.UNSAFE for d in lint("TPL503", EMPTY_CACHE))
    assert fixed("TPL503", EMPTY_CACHE) == dedent("""\
        import torch

        def train(model, loader, optimizer, low_memory):
            for x in loader:
                model(x).sum().backward()
                optimizer.step()
                if low_memory:
                    pass
                if low_memory: pass
                if not low_memory:
                    pass
        """)


def test_empty_cache_not_alone_in_its_statement_is_reported_without_a_fix() -> None:
    source = """\
        import torch

        def train(model, loader, optimizer):
            for x in loader:
                model(x).sum().backward()
                optimizer.step(); torch.cuda.empty_cache()
                freed = torch.cuda.empty_cache()
        """
    diagnostics = lint("TPL503", source)
    assert [(d.location.row, d.fix) for d in diagnostics] == [(6, None), (7, None)]
    assert fixed("TPL503", source) == dedent(source)


def test_requires_grad_typo_fix_renames_the_attribute() -> None:
    source = """\
        import torch

        def freeze(model):
            for p in model.parameters():
                p.require_grad = False
        """
    [diagnostic] = lint("TPL506", source)
    assert diagnostic.fix.applicability is Applicability.UNSAFE
    assert fixed("TPL506", source) == dedent(source).replace("require_grad", "requires_grad")


GROWN = """\
    import torch

    def collect(model, loader):
        preds = torch.empty(0)
        for x, _ in loader:
            preds = torch.cat([preds, model(x)], dim=0)
        return preds
    """


def test_tensor_grown_fix_is_display_only_and_shows_the_list_rewrite() -> None:
    [diagnostic] = lint("TPL505", GROWN)
    assert diagnostic.fix.applicability is Applicability.DISPLAY_ONLY
    assert fixed("TPL505", GROWN) == dedent(GROWN)
    assert shown(GROWN, diagnostic.fix.edits) == dedent("""\
        import torch

        def collect(model, loader):
            preds = torch.empty(0)
            preds_parts = [preds]
            for x, _ in loader:
                preds_parts.append(model(x))
            preds = torch.cat(preds_parts, dim=0)
            return preds
        """)


def test_tensor_grown_in_a_branch_is_reported_without_a_rewrite() -> None:
    source = """\
        import torch

        def collect(model, loader):
            preds = None
            for x, _ in loader:
                if preds is None:
                    preds = model(x)
                else:
                    preds = torch.cat([preds, model(x)])
            return preds
        """
    [diagnostic] = lint("TPL505", source)
    assert diagnostic.location.row == 9 and diagnostic.fix is None


def test_repeat_fix_is_display_only_and_drops_the_copy() -> None:
    source = """\
        import torch

        class Scorer(torch.nn.Module):
            def forward(self, q, k, n):
                q = torch.randn(4, 8)
                return q * k.unsqueeze(1).repeat(1, n, 1)
        """
    settings = LintSettings(rules=rules_for(["TPL507"]))
    [diagnostic] = lint_text(dedent(source), "train.py", settings)
    assert diagnostic.fix.applicability is Applicability.DISPLAY_ONLY
    assert shown(source, diagnostic.fix.edits) == dedent(source).replace(".repeat(1, n, 1)", "")
    assert fixed("TPL507", source) == dedent(source)
