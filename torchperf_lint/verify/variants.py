"""The programs `verify` compares: the script as written, all fixes, and one per fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torchperf_lint.diagnostics import Diagnostic
from torchperf_lint.rules import ALL_RULES

if TYPE_CHECKING:
    from torchperf_lint.engine import LintSettings

BASELINE = "as written"
ALL_FIXES = "all fixes"

# Rules whose gain exists only on a CUDA device (pinned memory and non-blocking copies,
# tensors created on the device, CUDA AMP, the caching allocator, fused CUDA optimizers): on a
# CPU-only machine their rewrite cannot show a gain.
CUDA_ONLY_RULES = frozenset(rule.code for rule in ALL_RULES if rule.gains_only_on_cuda)


@dataclass(frozen=True)
class Variant:
    """One program to run: its name, its source, the findings whose fixes it applies and the
    codes of every fix applied (fixes can enable further fixes: `pin_memory=True` makes
    `non_blocking=True` apply)."""

    name: str
    source: str
    fixed: tuple[Diagnostic, ...] = ()
    codes: tuple[str, ...] = ()

    @property
    def is_baseline(self) -> bool:
        return not self.codes

    @property
    def cuda_only(self) -> bool:
        """Whether every fix it applies can only pay off on CUDA."""
        return bool(self.codes) and all(code in CUDA_ONLY_RULES for code in self.codes)

    def write(self, folder: Path, filename: str) -> Path:
        """Write the source to `folder/filename` (byte for byte, as UTF-8) and return the path."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / filename
        path.write_bytes(self.source.encode("utf-8"))
        return path


def applicable(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The findings whose fix `--fix --unsafe-fixes` would apply (not display-only)."""
    return [d for d in diagnostics if d.fix is not None and d.fix.applies(unsafe_fixes=True)]


def build_variants(
    text: str,
    filename: str,
    settings: LintSettings,
    diagnostics: list[Diagnostic],
    per_fix: bool,
) -> list[Variant]:
    """The baseline, then (when anything is fixable) the all-fixes variant (safe and unsafe
    fixes, to a fixed point), then with `per_fix` one variant per fixable finding."""
    from torchperf_lint.fixes import apply_fixes, fix_text

    variants = [Variant(BASELINE, text)]
    fixable = applicable(diagnostics)
    if not fixable:
        return variants
    fixed_text, applied, _ = fix_text(text, filename, settings, unsafe_fixes=True)
    variants.append(Variant(ALL_FIXES, fixed_text, tuple(fixable), tuple(sorted(applied))))
    if per_fix and len(fixable) > 1:
        for diagnostic in fixable:
            single, applied = apply_fixes(text, [diagnostic], True)
            name = f"{diagnostic.code} {diagnostic.location.row}:{diagnostic.location.column}"
            variants.append(Variant(name, single, (diagnostic,), tuple(sorted(applied))))
    return variants
