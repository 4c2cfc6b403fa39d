"""Jupyter notebooks in and out: lint the code cells as one module, report per cell, and write
back only the cells a fix changed.

A training loop is often split across cells (imports, the DataLoader, the loop), so the code
cells are concatenated into one module, as Ruff does, and every finding is mapped back to
(cell, row). Cells are numbered as in Ruff: the 1-based position among *all* cells, markdown
cells included, which is the number Jupyter and VS Code show. Rows are relative to the cell.

IPython syntax is not Python: line magics (`%timeit f()`), shell escapes (`!pip install`,
`files = !ls`), help (`?obj`, `obj?`) become a `pass` placeholder on the same row, so rows
stay right, with the line in its comment (what `%time train(loader)` names is still named
there: `FileFacts.ipython_names`), and they are never rewritten (one that starts a cell
indented, ` !tts ...`, at column 0: IPython removes a cell's leading indentation). A cell
magic whose body is Python (`%%time`, `%%timeit`, `%%capture`, `%%prun`) keeps its body
linted; any other cell magic (`%%bash`, `%%writefile`) takes the whole cell out, and so does
a cell whose metadata declares another language (VS Code's `"languageId": "shellscript"`).

A notebook whose joined code does not parse is read cell by cell, as IPython runs it: a cell
that does not parse on its own (a `$ python train.py` transcript, a pasted training log) fails
in IPython too, which runs the other cells, so it is left out and reported (E902, once per
cell) and the others are linted and fixed; a one-line cell that only IPython's automagic
runs (`ls /content/checkpoints/`, `pip install x`) is an IPython line.

The notebook's JSON is never re-serialised: `--fix` replaces the text of each changed cell's
`source` value in place, in the layout it had (a list of lines or one string, the same
indentation), so metadata, outputs, key order and the trailing newline stay byte for byte.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
import warnings
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from torchperf_lint.analysis import Analysis
from torchperf_lint.diagnostics import Diagnostic, Edit, FileError, FileResult, Location, Related
from torchperf_lint.engine import Linker, analyse_text, parse
from torchperf_lint.program.link import Answer, ProgramFacts
from torchperf_lint.program.summary import ModuleSummary
from torchperf_lint.settings import LintSettings
from torchperf_lint.source import (
    IPYTHON_LINE_MARKER,
    SourceError,
    SourceLimits,
    check_size,
    worth_parsing,
)

# Cell magics whose body is ordinary Python: the body is linted, the magic line is not.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})

# A line IPython turns into a call: a magic, a shell escape, help, or an assignment from one.
_IPYTHON_LINE = re.compile(
    r"""^\s*(?:
        [%!?]                                  # %magic, !shell, ?help
      | [\w.]+\?{1,2}\s*$                      # obj? and obj??
      | [\w.,\s()\[\]*]+=\s*[%!]               # x = !ls, x = %sx ls
    )""",
    re.VERBOSE,
)


# IPython's automagic (on by default) runs a one-line cell that starts with the name of a line
# magic or of a shell alias as that magic: `ls /data`, `pip install x`. Not a longer cell:
# IPython's dynamic transformations (`transform_cell`) only apply to one-line input. The linter
# reads a cell so only when it does not parse as Python (`ls -la` and `cd(x)` stay Python).
# The names are IPython's line magics (IPython 8 and 9), ipykernel's
# (`KernelMagics`) and IPython's default shell aliases on Linux and macOS
# (`IPython.core.alias.default_aliases`).
AUTOMAGIC_NAMES = frozenset({
    # IPython's line magics.
    "alias", "alias_magic", "autoawait", "autocall", "automagic", "bookmark", "cd",
    "code_wrap", "colors", "conda", "config", "debug", "dhist", "dirs", "doctest_mode", "ed",
    "edit", "env", "gui", "hist", "history", "killbgscripts", "load", "load_ext", "loadpy",
    "logoff", "logon", "logstart", "logstate", "logstop", "lsmagic", "macro", "magic", "mamba",
    "matplotlib", "micromamba", "notebook", "page", "pastebin", "pdb", "pdef", "pdoc", "pfile",
    "pinfo", "pinfo2", "pip", "popd", "pprint", "precision", "prun", "psearch", "psource",
    "pushd", "pwd", "pycat", "pylab", "quickref", "recall", "rehashx", "reload_ext", "rep",
    "rerun", "reset", "reset_selective", "run", "save", "sc", "set_env", "sx", "system", "tb",
    "time", "timeit", "unalias", "unload_ext", "uv", "who", "who_ls", "whos", "xdel", "xmode",
    # ipykernel's.
    "autosave", "clear", "connect_info", "less", "man", "more", "qtconsole",
    # The default shell aliases.
    "cat", "cp", "ldir", "lf", "lk", "ll", "ls", "lx", "mkdir", "mv", "rm", "rmdir",
})

# How IPython splits a line into the name it looks up and the rest (`split_user_input`); a
# rest starting with `=` or `,` is an assignment, which IPython runs as Python.
_AUTOMAGIC_LINE = re.compile(r"^\s*(?P<name>[\w.*]+)(?![\w.*])(?!\s*[=,])")


class NotebookError(Exception):
    """The file is not a notebook this tool can read: the reason is the message."""


@dataclass(frozen=True)
class CodeCell:
    """One code cell: where it is, its source as stored, and the Python the linter sees."""

    index: int  # 0-based position among all cells.
    source: str
    source_is_list: bool
    python: str  # `source` with IPython lines replaced by placeholders; ends with "\n".
    ipython_lines: tuple[str, ...]  # The replaced lines, in order (with their line ends).

    @property
    def number(self) -> int:
        """The cell number users see (1-based, all cells counted)."""
        return self.index + 1


@dataclass
class Notebook:
    """A parsed notebook: its JSON text, its code cells, and the markers used to join them."""

    text: str
    cells: list[CodeCell]
    separator: str  # A comment line between cells in the joined module.
    placeholder: str  # What an IPython line becomes (after its indentation).

    def joined(self) -> str:
        """The code cells as one module, a separator line between two cells."""
        return (self.separator + "\n").join(cell.python for cell in self.cells)

    def split(self, joined: str) -> list[str] | None:
        """The cells' Python back out of a joined (possibly fixed) module; None when the
        separators no longer split it into as many cells."""
        pieces: list[list[str]] = [[]]
        for line in joined.splitlines(keepends=True):
            if line.rstrip("\r\n") == self.separator:
                pieces.append([])
            else:
                pieces[-1].append(line)
        if len(pieces) != len(self.cells):
            return None
        return ["".join(piece) for piece in pieces]

    def first_rows(self, joined: str) -> list[int]:
        """The row of `joined` where each cell starts."""
        rows = [1]
        for row, line in enumerate(joined.splitlines(), start=1):
            if line == self.separator:
                rows.append(row + 1)
        return rows


# How a file that Git LFS stands in for begins, until `git lfs pull` fetches it.
_LFS_POINTER = "version https://git-lfs.github.com/spec/v1"


def read_notebook(data: bytes) -> Notebook:
    """Parse a notebook's bytes; raises `NotebookError` for anything that is not one."""
    try:
        text = data.decode("utf-8-sig")
        document = json.loads(text)
    except UnicodeDecodeError as error:
        raise NotebookError(f"cannot decode the notebook as UTF-8: {error}") from None
    except json.JSONDecodeError as error:
        if text.startswith(_LFS_POINTER):
            raise NotebookError(
                "not a notebook: a Git LFS pointer to one (`git lfs pull` fetches it)"
            ) from None
        raise NotebookError(f"not a notebook: invalid JSON: {error}") from None
    except RecursionError:
        raise NotebookError("not a notebook: JSON nested too deeply") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("not a notebook: no list of `cells`")
    nonce = secrets.token_hex(8)
    notebook = Notebook(
        text=text,
        cells=[],
        separator=f"# torchperf-lint cell boundary {nonce}",
        placeholder=f"pass  # {IPYTHON_LINE_MARKER} {nonce}",
    )
    if not _is_python(document):
        return notebook
    for index, cell in enumerate(document["cells"]):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a notebook: cell {index + 1} is not an object")
        if cell.get("cell_type") != "code" or not _cell_is_python(cell):
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            text_of_cell, is_list = "".join(source), True
        elif isinstance(source, str):
            text_of_cell, is_list = source, False
        else:
            raise NotebookError(f"not a notebook: cell {index + 1} has an invalid `source`")
        code = _code_cell(index, text_of_cell, is_list, notebook.placeholder)
        if code is not None:
            notebook.cells.append(code)
    return notebook


def _is_python(document: dict) -> bool:
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for key, field_name in (("language_info", "name"), ("kernelspec", "language")):
        info = metadata.get(key)
        if isinstance(info, dict) and isinstance(info.get(field_name), str):
            return info[field_name].lower() == "python"
    return True


def _cell_is_python(cell: dict) -> bool:
    """False for a cell that declares another language in its metadata, as VS Code records
    it (`{"vscode": {"languageId": "shellscript"}}`), like a `%%bash` cell: not linted."""
    metadata = cell.get("metadata")
    editor = metadata.get("vscode") if isinstance(metadata, dict) else None
    language = editor.get("languageId") if isinstance(editor, dict) else None
    return not isinstance(language, str) or language.lower() == "python"


def _code_cell(
    index: int, source: str, is_list: bool, placeholder: str, automagic: int | None = None
) -> CodeCell | None:
    """The cell with IPython lines replaced (and line `automagic`, 0-based, which IPython runs
    as a magic); None for a cell that is not Python at all."""
    lines = source.splitlines(keepends=True)
    python_lines = []
    replaced = []
    continued = python_seen = False
    indent = ""
    for position, line in enumerate(lines):
        magic = continued or position == automagic or (
            _IPYTHON_LINE.match(line) is not None and not _inside_a_statement("".join(python_lines))
        )
        if position == 0 and line.startswith("%%"):
            name = line[2:].split(maxsplit=1)[0] if line[2:].strip() else ""
            if name not in PYTHON_CELL_MAGICS:
                return None
            magic = True
        if not magic:
            python_lines.append(line)
            python_seen = python_seen or bool(line.strip())
            continued = False
            continue
        replaced.append(line)
        body = line.rstrip("\r\n")
        if not continued:
            # Continuation lines keep the indentation of the line they continue. A magic before
            # any Python line of the cell starts at column 0: IPython removes a cell's leading
            # indentation (` !tts --text ...`).
            indent = body[: len(body) - len(body.lstrip())] if python_seen else ""
        python_lines.append(f"{indent}{placeholder} {body.strip()}{line[len(body):]}")
        # A magic continued with a backslash goes on over the next line.
        continued = body.endswith("\\")
    python = "".join(python_lines)
    if not python.endswith("\n"):
        python += "\n"
    return CodeCell(index, source, is_list, python, tuple(replaced))


def _inside_a_statement(python: str) -> bool:
    """Whether the text ends inside an unfinished statement: an open bracket or string, or a
    line continued with a backslash. A line there that starts with `%` (`    % (count,
    minutes)` under `print("%d in %.2f" `) continues the statement: IPython reads magics,
    shell escapes and help only at the start of a statement."""
    depth = 0
    quote = ""
    position = 0
    while position < len(python):
        character = python[position]
        if quote:
            if character == "\\":
                position += 1
            elif python.startswith(quote, position):
                position += len(quote) - 1
                quote = ""
            elif character == "\n" and len(quote) == 1:
                quote = ""  # An unterminated string ends with its line (a syntax error).
        elif character == "#":
            newline = python.find("\n", position)
            position = len(python) if newline < 0 else newline - 1
        elif character in "\"'":
            quote = python[position : position + 3]
            if quote not in ('"""', "'''"):
                quote = character
            position += len(quote) - 1
        elif character in "([{":
            depth += 1
        elif character in ")]}":
            depth = max(depth - 1, 0)
        position += 1
    return depth > 0 or bool(quote) or python.rstrip("\r\n").endswith("\\")


def lintable(
    notebook: Notebook, filename: str, limits: SourceLimits | None = None
) -> tuple[Notebook, list[FileError]]:
    """The notebook as the linter reads it, and an E902 for each cell left out of it.

    A notebook whose joined code parses (or that the linter does not parse: no PyTorch in it,
    over `limits`) is read whole. Otherwise each cell is read as IPython runs it: a one-line
    automagic (`ls /data`) becomes an IPython line, and a cell that still does not parse on
    its own is left out, with its syntax error."""
    joined = notebook.joined()
    if not worth_parsing(joined, filename):
        return notebook, []
    try:
        check_size(joined, limits or SourceLimits())
    except SourceError:
        return notebook, []
    if _syntax_error(joined) is None:
        return notebook, []
    cells = []
    errors = []
    for cell in notebook.cells:
        error = _syntax_error(cell.python)
        if error is not None:
            automagic = _automagic_cell(cell, notebook.placeholder)
            if automagic is not None:
                cells.append(automagic)
                continue
            errors.append(FileError(filename, error.reason, error.location, cell.number))
            continue
        cells.append(cell)
    return replace(notebook, cells=cells), errors


def _syntax_error(text: str) -> SourceError | None:
    """Why LibCST cannot parse `text` (None: it can). Python's own parser answers first when
    it accepts the text, as it does far faster."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    try:
        parse(text)
    except SourceError as error:
        return error
    return None


def _automagic_cell(cell: CodeCell, placeholder: str) -> CodeCell | None:
    """The cell with its one line of code an IPython line, when IPython's automagic runs it
    (`ls /content/checkpoints/`, `pip install x`); None otherwise."""
    lines = cell.python.splitlines()
    rows = [row for row, line in enumerate(lines) if line.strip()]
    if len(rows) != 1:
        return None
    match = _AUTOMAGIC_LINE.match(lines[rows[0]])
    if match is None or match.group("name") not in AUTOMAGIC_NAMES:
        return None
    return _code_cell(cell.index, cell.source, cell.source_is_list, placeholder, rows[0])


# Linting


def lint_notebook(data: bytes, filename: str, settings: LintSettings) -> FileResult:
    """Lint a notebook's bytes on its own; see `analyse_notebook`."""
    return analyse_notebook(data, filename, settings).result


def analyse_notebook(
    data: bytes,
    filename: str,
    settings: LintSettings,
    program: ProgramFacts | None = None,
    link: Linker | None = None,
) -> Analysis:
    """Lint a notebook's bytes as the file `filename` of `program` (or of the one `link`
    returns, as in `engine.analyse_text`); a broken notebook or cell becomes a `FileError`,
    never an exception."""
    result = FileResult(filename)
    try:
        notebook = read_notebook(data)
    except NotebookError as error:
        result.error = FileError(filename, str(error))
        return Analysis(result)
    if not notebook.cells:
        return Analysis(result)
    notebook, unparsable = lintable(notebook, filename, settings.limits)
    result.diagnostics = [error.as_diagnostic() for error in unparsable]
    joined = notebook.joined()
    try:
        analysis = analyse_text(joined, filename, settings, program, link)
    except SourceError as error:
        result.error = _source_error(error, filename, notebook, joined)
        return Analysis(result)
    found = to_cells(analysis.diagnostics, notebook, joined)
    result.diagnostics = sorted([*found, *result.diagnostics], key=lambda d: d.sort_key)
    return Analysis(result, analysis.summary, analysis.asked)


def to_cells(
    diagnostics: Sequence[Diagnostic], notebook: Notebook, joined: str
) -> list[Diagnostic]:
    """Diagnostics of the joined module with their cell and cell-relative rows."""
    first_rows = notebook.first_rows(joined)
    mapped = []
    for diagnostic in diagnostics:
        position = _cell_position(first_rows, diagnostic.location.row)
        offset = first_rows[position] - 1
        fix = diagnostic.fix
        if fix is not None:
            fix = fix._replace(edits=tuple(_shift_edit(edit, offset) for edit in fix.edits))
        mapped.append(
            diagnostic._replace(
                cell=notebook.cells[position].number,
                location=_shift(diagnostic.location, offset),
                end_location=_shift(diagnostic.end_location, offset),
                noqa_row=None if diagnostic.noqa_row is None else diagnostic.noqa_row - offset,
                fix=fix,
                related=tuple(
                    _in_cell(item, notebook, first_rows) for item in diagnostic.related
                ),
            )
        )
    return sorted(mapped, key=lambda d: d.sort_key)


def cell_of_row(notebook: Notebook, joined: str, row: int) -> tuple[int, int]:
    """The cell number and the cell-relative row of row `row` of the joined module."""
    first_rows = notebook.first_rows(joined)
    position = _cell_position(first_rows, row)
    return notebook.cells[position].number, row - first_rows[position] + 1


def _cell_position(first_rows: list[int], row: int) -> int:
    """The position, among the notebook's code cells, of the cell holding row `row` of the
    joined module (`first_rows`: the row where each cell starts)."""
    return max(0, bisect_right(first_rows, row) - 1)


def _in_cell(item: Related, notebook: Notebook, first_rows: list[int]) -> Related:
    """A related place located in the joined module (another read of the same run) in its
    cell; places in other files, and calls still to be located, are left as they are."""
    if item.location is None or item.call is not None:
        return item
    position = _cell_position(first_rows, item.location.row)
    cell = notebook.cells[position].number
    location = _shift(item.location, first_rows[position] - 1)
    return Related(item.filename, location, f"cell {cell}: {item.message}")


def _shift(location: Location, rows: int) -> Location:
    return Location(location.row - rows, location.column)


def _shift_edit(edit: Edit, rows: int) -> Edit:
    return Edit(_shift(edit.start, rows), _shift(edit.end, rows), edit.content)


def _source_error(
    error: SourceError, filename: str, notebook: Notebook, joined: str
) -> FileError:
    """A syntax error, located in its cell."""
    if error.location is None:
        return FileError(filename, error.reason)
    cell, row = cell_of_row(notebook, joined, error.location.row)
    location = Location(row, error.location.column)
    return FileError(filename, error.reason, location, cell)


def cell_source(notebook_text: str, cell: int) -> str | None:
    """The source of cell `cell` (1-based, all cells counted) of a notebook's JSON text, for
    reporters that show the reported line; None when there is no such cell."""
    try:
        cells = json.loads(notebook_text)["cells"]
        source = cells[cell - 1]["source"]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return None
    if isinstance(source, list):
        return "".join(source) if all(isinstance(line, str) for line in source) else None
    return source if isinstance(source, str) else None


@dataclass(frozen=True)
class NotebookLines:
    """Where the characters of each code cell's source lie in the notebook's JSON text, so the
    formats that name a line of the file (GitHub annotations, SARIF, GitLab, JUnit, pylint,
    rdjson) point at the line of the `.ipynb` file that holds the reported code."""

    file_line_starts: tuple[int, ...]
    # Cell number → (offsets in the cell's source where its rows start, the offset in the
    # notebook text of each character of the source, plus one past its end).
    cells: dict[int, tuple[tuple[int, ...], tuple[int, ...]]]

    def file_location(self, cell: int, location: Location) -> Location | None:
        """`location` (relative to `cell`) as a row and column of the notebook file."""
        if cell not in self.cells:
            return None
        row_starts, offsets = self.cells[cell]
        if not 1 <= location.row <= len(row_starts):
            return None
        index = min(row_starts[location.row - 1] + location.column - 1, len(offsets) - 1)
        offset = offsets[index]
        row = bisect_right(self.file_line_starts, offset)
        return Location(row, offset - self.file_line_starts[row - 1] + 1)


def notebook_lines(notebook_text: str) -> NotebookLines | None:
    """The cell-to-file map of a notebook's JSON text; None when it is not a notebook."""
    try:
        document = json.loads(notebook_text)
        spans = _source_spans(notebook_text)
    except (ValueError, IndexError, TypeError, AssertionError, AttributeError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        return None
    cells = {}
    for index, (start, end) in spans.items():
        offsets = _source_offsets(notebook_text, start)
        source = document["cells"][index].get("source")
        text = "".join(source) if isinstance(source, list) else source
        if not isinstance(text, str) or offsets is None or len(offsets) != len(text) + 1:
            continue
        row_starts = (0, *(match.end() for match in _LINE_END.finditer(text)))
        cells[index + 1] = (row_starts, offsets)
    line_starts = (0, *(match.end() for match in re.finditer("\n", notebook_text)))
    return NotebookLines(line_starts, cells)


_LINE_END = re.compile(r"\r\n|\r|\n")


def _source_offsets(text: str, position: int) -> tuple[int, ...] | None:
    """The offset in `text` of each character of the `source` value at `position` (a JSON
    string or list of strings), and one past the last; None for any other value."""
    whitespace = re.compile(r"[ \t\n\r]*")
    if text[position] == '"':
        offsets, end = _string_offsets(text, position)
        return (*offsets, end - 1)
    if text[position] != "[":
        return None
    offsets: list[int] = []
    position = whitespace.match(text, position + 1).end()
    end = position
    while text[position] != "]":
        if text[position] != '"':
            return None
        item, end = _string_offsets(text, position)
        offsets += item
        position = whitespace.match(text, end).end()
        if text[position] == ",":
            position = whitespace.match(text, position + 1).end()
    return (*offsets, max(end - 1, 0))


def _string_offsets(text: str, position: int) -> tuple[list[int], int]:
    """The offset of each decoded character of the JSON string at `position` (its escape
    sequence counts as one character where it starts), and the offset past its closing quote."""
    offsets = []
    index = position + 1
    while text[index] != '"':
        offsets.append(index)
        if text[index] != "\\":
            index += 1
        elif text[index + 1] != "u":
            index += 2
        elif 0xD800 <= int(text[index + 2 : index + 6], 16) < 0xDC00 and text.startswith(
            "\\u", index + 6
        ):
            index += 12  # A surrogate pair is one character once decoded.
        else:
            index += 6
    return offsets, index + 1


# Fixing


@dataclass
class NotebookFix:
    """The fixed cells' new sources, and what was applied and what remains."""

    sources: dict[int, str] = field(default_factory=dict)  # Cell index → new source.
    remaining: list[Diagnostic] = field(default_factory=list)
    applied: dict[str, int] = field(default_factory=dict)
    reverted: str | None = None
    summary: ModuleSummary | None = None
    asked: dict[str, Answer] = field(default_factory=dict)


def fix_notebook_cells(
    notebook: Notebook,
    filename: str,
    settings: LintSettings,
    unsafe_fixes: bool,
    program: ProgramFacts | None = None,
) -> NotebookFix:
    """Fix the joined module to a fixed point and cut it back into cells. Raises
    `SourceError` when the notebook's code does not parse, and `NotebookError` when a fix
    would change an IPython line or move code across cells (nothing is then written)."""
    from torchperf_lint.fixes import fix_text_result

    joined = notebook.joined()
    result = fix_text_result(joined, filename, settings, unsafe_fixes, program)
    outcome = NotebookFix(
        reverted=result.reverted,
        applied=dict(result.applied),
        summary=result.summary,
        asked=result.asked,
    )
    outcome.remaining = to_cells(result.remaining, notebook, result.text)
    if result.text == joined:
        return outcome
    pieces = notebook.split(result.text)
    if pieces is None:
        raise NotebookError("the fixes would move code across cells; not fixed")
    for cell, python in zip(notebook.cells, pieces):
        if python == cell.python:
            continue
        outcome.sources[cell.index] = restore_ipython(cell, python, notebook.placeholder)
    return outcome


def restore_ipython(cell: CodeCell, python: str, placeholder: str) -> str:
    """The fixed cell's text with its IPython lines back, and without the newline the join
    added."""
    lines = python.splitlines(keepends=True)
    originals = iter(cell.ipython_lines)
    restored = []
    for line in lines:
        if line.lstrip().startswith(placeholder):
            original = next(originals, None)
            if original is None:
                raise NotebookError("a fix would change an IPython line; not fixed")
            restored.append(original)
        else:
            restored.append(line)
    if next(originals, None) is not None:
        raise NotebookError("a fix would remove an IPython line; not fixed")
    text = "".join(restored)
    if not cell.source.endswith("\n") and text.endswith("\n"):
        text = text[:-1]
    return text


def rewrite_sources(notebook: Notebook, sources: dict[int, str]) -> str:
    """The notebook's JSON text with the `source` of the given cells replaced, each in the
    layout it had, and every other byte kept."""
    spans = _source_spans(notebook.text)
    by_index = {cell.index: cell for cell in notebook.cells}
    pieces = []
    position = 0
    for index in sorted(sources):
        start, end = spans[index]
        pieces.append(notebook.text[position:start])
        pieces.append(
            _encode_source(sources[index], by_index[index].source_is_list, notebook.text, start, end)
        )
        position = end
    pieces.append(notebook.text[position:])
    return "".join(pieces)


def _encode_source(source: str, as_list: bool, text: str, start: int, end: int) -> str:
    """`source` as a JSON value laid out like the one at `text[start:end]`."""
    ascii_only = text.isascii()
    if not as_list:
        return json.dumps(source, ensure_ascii=ascii_only)
    items = [json.dumps(line, ensure_ascii=ascii_only) for line in source.splitlines(keepends=True)]
    if not items:
        return "[]"
    old = text[start:end]
    if "\n" not in old:
        return "[" + (", " if ", " in old else ",").join(items) + "]"
    # "[", one item per line, then the closing bracket on its own line: copy both indents,
    # and the line ending the notebook's JSON uses (a notebook saved on Windows has CRLF).
    newline = "\r\n" if "\r\n" in old else "\n"
    lines = old.split(newline)
    closing = _indentation(lines[-1])
    item_indent = _indentation(lines[1]) if len(lines) > 2 else closing + " "
    return (
        "[" + newline + ("," + newline).join(item_indent + item for item in items)
        + newline + closing + "]"
    )


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _source_spans(text: str) -> dict[int, tuple[int, int]]:
    """Where each cell's `source` value lies in the notebook's JSON text (cell index →
    (start, end) offsets)."""
    decoder = json.JSONDecoder()
    whitespace = re.compile(r"[ \t\n\r]*")

    def skip(position: int) -> int:
        return whitespace.match(text, position).end()

    def members(position: int):
        """(key, value start, value end) of the object at `position`, and its end."""
        assert text[position] == "{"
        position = skip(position + 1)
        found = []
        while text[position] != "}":
            key, position = decoder.raw_decode(text, position)
            position = skip(skip(position) + 1)  # The colon.
            value_start = position
            _, position = decoder.raw_decode(text, position)
            found.append((key, value_start, position))
            position = skip(position)
            if text[position] == ",":
                position = skip(position + 1)
        return found, position + 1

    spans = {}
    start = 1 if text.startswith("\ufeff") else 0
    top, _ = members(skip(start))
    for key, value_start, _ in top:
        if key != "cells":
            continue
        position = skip(value_start + 1)
        index = 0
        while text[position] != "]":
            cell_members, position = members(position)
            for cell_key, source_start, source_end in cell_members:
                if cell_key == "source":
                    spans[index] = (source_start, source_end)
            index += 1
            position = skip(position)
            if text[position] == ",":
                position = skip(position + 1)
    return spans


def fix_notebook(
    path: Path,
    filename: str,
    settings: LintSettings,
    unsafe_fixes: bool,
    write: bool,
    program: ProgramFacts | None = None,
):
    """`fixes.fix_file` for a notebook: the same outcome, with `before`/`after` the JSON text."""
    from torchperf_lint.fixes import FileFixOutcome, write_atomic

    outcome = FileFixOutcome(filename=filename, before="", after="")
    try:
        data = path.read_bytes()
        notebook = read_notebook(data)
    except OSError as error:
        outcome.error = FileError.unreadable(filename, error)
        return outcome
    except NotebookError as error:
        outcome.error = FileError(filename, str(error))
        return outcome
    outcome.before = outcome.after = notebook.text
    if not notebook.cells:
        return outcome
    # The cells left out are never rewritten: only the linted cells' sources are replaced.
    notebook, unparsable = lintable(notebook, filename, settings.limits)
    try:
        fixed = fix_notebook_cells(notebook, filename, settings, unsafe_fixes, program)
    except SourceError as error:
        outcome.error = _source_error(error, filename, notebook, notebook.joined())
        return outcome
    except NotebookError as error:
        outcome.error = FileError(filename, str(error))
        return outcome
    outcome.remaining = sorted(
        [*fixed.remaining, *(error.as_diagnostic() for error in unparsable)],
        key=lambda d: d.sort_key,
    )
    outcome.reverted = fixed.reverted
    outcome.summary, outcome.asked = fixed.summary, fixed.asked
    if not fixed.sources:
        return outcome
    text = rewrite_sources(notebook, fixed.sources)
    try:
        if write:
            bom = "\ufeff" if data.startswith(b"\xef\xbb\xbf") else ""
            write_atomic(path, (bom + text).encode("utf-8"))
    except OSError as error:
        outcome.error = FileError(filename, f"cannot write: {error.strerror or error}")
        outcome.remaining = []
        return outcome
    outcome.after = text
    outcome.applied.update(fixed.applied)
    return outcome


def add_noqa_notebook(
    path: Path, filename: str, settings: LintSettings, program: ProgramFacts | None = None
) -> int:
    """`fixes.add_noqa_file` for a notebook: `# noqa: CODE` on each reported row of its cells,
    written back into the changed cells only (IPython lines untouched). Returns how many rows
    changed; a notebook that cannot be read or parsed counts 0 (linting reports it)."""
    from torchperf_lint.fixes import add_noqa_text, write_atomic

    try:
        data = path.read_bytes()
        notebook = read_notebook(data)
        if not notebook.cells:
            return 0
        notebook, _ = lintable(notebook, filename, settings.limits)
        joined = notebook.joined()
        diagnostics = analyse_text(joined, filename, settings, program).diagnostics
        commented, changed = add_noqa_text(joined, diagnostics)
        pieces = notebook.split(commented)
        if not changed or pieces is None:
            return 0
        sources = {
            cell.index: restore_ipython(cell, python, notebook.placeholder)
            for cell, python in zip(notebook.cells, pieces)
            if python != cell.python
        }
    except (OSError, NotebookError, SourceError):
        return 0
    bom = "\ufeff" if data.startswith(b"\xef\xbb\xbf") else ""
    write_atomic(path, (bom + rewrite_sources(notebook, sources)).encode("utf-8"))
    return changed
