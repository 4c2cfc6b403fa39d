"""`--output-format grouped`: the findings under the name of their file, as Ruff's `grouped`:

```
train.py:
   3:10 TPL101 `DataLoader` without `num_workers` ...
  12:5  TPL201 `.item()` on every training step ...

```
Rows and columns are padded to line up within a file; a blank line follows each file.
"""

from __future__ import annotations

from itertools import groupby

from torchperf_lint.diagnostics import Diagnostic
from torchperf_lint.report import Report, fix_applies, paint


def render(report: Report) -> str:
    blocks = []
    for filename, group in groupby(report.diagnostics, key=lambda d: d.filename):
        diagnostics = list(group)
        row_width = max(len(str(d.location.row)) for d in diagnostics)
        column_width = max(len(str(d.location.column)) for d in diagnostics)
        lines = [paint(filename, report.color, underline=True) + ":"]
        lines += [_line(d, report, row_width, column_width) for d in diagnostics]
        blocks.append("\n".join(lines) + "\n\n")
    return "".join(blocks)


def _line(diagnostic: Diagnostic, report: Report, row_width: int, column_width: int) -> str:
    color = report.color
    colon = paint(":", color, fg="cyan")
    row, column = str(diagnostic.location.row), str(diagnostic.location.column)
    cell = "" if diagnostic.cell is None else f"cell {diagnostic.cell}{colon}"
    code = paint(diagnostic.code, color, fg="red", bold=True)
    marker = paint("[*]", color, fg="cyan") + " " if fix_applies(diagnostic, report.unsafe_fixes) else ""
    return (
        f"  {' ' * (row_width - len(row))}{cell}{row}{colon}{column}"
        f"{' ' * (column_width - len(column))} {code} {marker}{diagnostic.message}"
    )
