"""`--output-format full` (the default): each finding's line, then the source line with the
reported span underlined and the fix's message, as in Ruff:

```
train.py:3:10: TPL101 [*] message
  |
3 | loader = DataLoader(ds)
  |          ^^^^^^^^^^^^^^ TPL101
  |
  = help: fix message
```

A finding in a helper run on every step has a note per call on its path, from the loop:
`= note: engine.py:12:9: calls `log_metrics` on every training step`.
"""

from __future__ import annotations

from torchperf_lint.diagnostics import Diagnostic
from torchperf_lint.report import Report, paint
from torchperf_lint.report.concise import heading


def render(report: Report) -> str:
    blocks = []
    sources: dict[tuple[str, int | None], list[str] | None] = {}
    for diagnostic in report.diagnostics:
        key = (diagnostic.filename, diagnostic.cell)
        if key not in sources:
            text = report.source_of(diagnostic.filename)
            if text is not None and diagnostic.cell is not None:
                # Rows in a notebook are relative to the cell: show the cell's lines.
                from torchperf_lint.notebooks import cell_source

                text = cell_source(text, diagnostic.cell)
            sources[key] = text.splitlines() if text is not None else None
        lines = [heading(diagnostic, report)]
        lines += _snippet(diagnostic, sources[key], report.color)
        # As in Ruff, a blank line follows every finding.
        blocks.append("\n".join(lines) + "\n\n")
    return "".join(blocks)


def _snippet(diagnostic: Diagnostic, source: list[str] | None, color: bool) -> list[str]:
    row = diagnostic.location.row
    if source is None or not 1 <= row <= len(source):
        return []
    line = source[row - 1].expandtabs(1)
    start = diagnostic.location.column - 1
    end = len(line)
    if diagnostic.end_location.row == row:
        end = min(end, diagnostic.end_location.column - 1)
    width = max(1, end - start)
    gutter = " " * len(str(row))
    bar = paint("|", color, fg="blue", bold=True)
    carets = paint("^" * width + " " + diagnostic.code, color, fg="red", bold=True)
    snippet = [
        f"{gutter} {bar}",
        f"{paint(str(row), color, fg='blue', bold=True)} {bar} {line}",
        f"{gutter} {bar} {' ' * start}{carets}",
        f"{gutter} {bar}",
    ]
    if diagnostic.fix is not None:
        snippet.append(f"{gutter} = {paint('help', color, bold=True)}: {diagnostic.fix.message}")
    for item in diagnostic.related:
        if item.location is not None:
            where = f"{item.filename}:{item.location.row}:{item.location.column}"
            snippet.append(f"{gutter} = {paint('note', color, bold=True)}: {where}: {item.message}")
    return snippet
