"""`--output-format concise`: one line per finding, `path:row:col: CODE [*] message`."""

from __future__ import annotations

from torchperf_lint.diagnostics import Diagnostic
from torchperf_lint.report import Report, fix_applies, paint


def heading(diagnostic: Diagnostic, report: Report) -> str:
    """`path:row:col: CODE [*] message` (`path:cell N:row:col: ...` in a notebook, as Ruff
    writes it); `[*]` when the current flags would apply the fix."""
    color = report.color
    colon = paint(":", color, fg="cyan")
    cell = () if diagnostic.cell is None else (f"cell {diagnostic.cell}",)
    where = colon.join(
        (
            paint(diagnostic.filename, color, bold=True),
            *cell,
            str(diagnostic.location.row),
            str(diagnostic.location.column),
        )
    )
    code = paint(diagnostic.code, color, fg="red", bold=True)
    marker = (
        " " + paint("[*]", color, fg="cyan") if fix_applies(diagnostic, report.unsafe_fixes) else ""
    )
    return f"{where}{colon} {code}{marker} {diagnostic.message}"


def render(report: Report) -> str:
    return "".join(heading(d, report) + "\n" for d in report.diagnostics)
