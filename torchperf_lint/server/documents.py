"""The text of one file as the language server holds it: a Python buffer or a notebook's cells,
open in the editor or read from disk, and how it is linted.

A notebook is linted as the CLI lints one (`notebooks.py`): its code cells joined into one
module, findings mapped back to (cell, row). Cells are numbered as the CLI numbers them: the
1-based position among all cells.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torchperf_lint.diagnostics import FileError, FileResult
from torchperf_lint.engine import (
    Analysis,
    Linker,
    LintSettings,
    SourceError,
    analyse_text,
    decode,
)
from torchperf_lint.notebooks import (
    CodeCell,
    Notebook,
    NotebookError,
    analyse_notebook,
    cell_of_row,
    read_notebook,
)
from torchperf_lint.reparse import EditedText

_CELL_PREFIX = re.compile(r"cell (\d+): ")


@dataclass(frozen=True)
class PythonSource:
    """A `.py` file's text."""

    text: str

    def python(self) -> str:
        """The Python the linter sees."""
        return self.text

    def analyse(
        self,
        name: str,
        settings: LintSettings,
        link: Linker | None,
        edited: EditedText | None = None,
    ) -> Analysis:
        """Lint as the file `name` of the program `link` gives (None: alone), re-using the
        file's last parse held by `edited`; a text that does not parse gets a file error
        (E902) and no summary."""
        result = FileResult(name)
        try:
            analysis = analyse_text(self.text, name, settings, link=link, edited=edited)
        except SourceError as error:
            result.error = FileError(name, error.reason, error.location)
            return Analysis(result)
        result.diagnostics = analysis.diagnostics
        return Analysis(result, analysis.summary, analysis.asked)


@dataclass(frozen=True)
class NotebookSource:
    """A notebook: its JSON bytes, parsed, and the URIs of the editor's cell documents (by
    cell index, all cells counted) when the notebook is open."""

    data: bytes
    notebook: Notebook
    cell_uris: tuple[str, ...] = ()

    @classmethod
    def from_bytes(cls, data: bytes) -> NotebookSource:
        """A notebook file's bytes; raises `NotebookError` when they are not a notebook."""
        return cls(data, read_notebook(data))

    @classmethod
    def from_cells(
        cls, cells: Sequence[tuple[str, bool, str]], metadata: dict | None = None
    ) -> NotebookSource:
        """A notebook open in the editor: (cell URI, is code, text) per cell, in order."""
        document = {
            "cells": [
                {"cell_type": "code" if is_code else "markdown", "source": text}
                for _, is_code, text in cells
            ],
            "metadata": metadata or {},
        }
        data = json.dumps(document).encode("utf-8")
        return cls(data, read_notebook(data), tuple(uri for uri, _, _ in cells))

    def python(self) -> str:
        return self.notebook.joined()

    def row_in_cell(self, row: int) -> tuple[int, int]:
        """The cell number and the row there of a row of `python()`."""
        return cell_of_row(self.notebook, self.python(), row)

    def code_cell(self, number: int) -> CodeCell | None:
        """The code cell numbered `number` (1-based, all cells counted)."""
        return next((cell for cell in self.notebook.cells if cell.number == number), None)

    def cell_uri(self, number: int) -> str | None:
        return self.cell_uris[number - 1] if 0 < number <= len(self.cell_uris) else None

    def analyse(self, name: str, settings: LintSettings, link: Linker | None) -> Analysis:
        """Lint the joined code cells as the CLI does: diagnostics and a syntax error carry
        their cell."""
        return analyse_notebook(self.data, name, settings, link=link)


def error_cell(error: FileError) -> tuple[int | None, str]:
    """The cell a notebook's file error names (None: none), and its reason without it."""
    match = _CELL_PREFIX.match(error.reason)
    if match is None:
        return None, error.reason
    return int(match.group(1)), error.reason[match.end():]


def read_source(path: Path) -> PythonSource | NotebookSource | None:
    """A file's source from disk; None when it cannot be read, decoded or is not a notebook."""
    try:
        data = path.read_bytes()
        if path.suffix == ".ipynb":
            return NotebookSource.from_bytes(data)
        return PythonSource(decode(data).text)
    except (OSError, SourceError, NotebookError):
        return None
