"""Positions and edits between the linter's terms and the editor's.

The linter counts 1-based rows and code-point columns, rows split only where Python splits
them (`\\n`, `\\r\\n`, `\\r`). LSP counts 0-based lines and characters in the negotiated
position encoding (UTF-16 unless the client offers another). A change the linter computes as a
whole new text (a fix, `# noqa`) reaches the editor as the few edits that turn the old text
into the new one, so the cursor and the undo history stay where they are.
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_right
from dataclasses import dataclass

_NEWLINE = re.compile(r"\r\n|\r|\n")
# Characters beyond the Basic Multilingual Plane: two UTF-16 code units each.
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def _units(text: str, encoding: str) -> int:
    """The length of `text` in the code units of a position encoding."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32" or text.isascii():
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))


@dataclass(frozen=True)
class TextEdit:
    """Replace the characters between two string offsets of a text with `content`."""

    start: int
    end: int
    content: str


class LineIndex:
    """Rows, columns, LSP positions and string offsets of one text."""

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.encoding = encoding
        self.starts = [0] + [match.end() for match in _NEWLINE.finditer(text)]

    def _line(self, line: int) -> str:
        start = self.starts[line]
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def position(self, row: int, column: int) -> tuple[int, int]:
        """The LSP (line, character) of a 1-based row and code-point column; past the end of
        the text, its end."""
        if row - 1 >= len(self.starts):
            return self.position_at(len(self.text))
        line = max(row - 1, 0)
        return line, _units(self._line(line)[: max(column - 1, 0)], self.encoding)

    def position_at(self, offset: int) -> tuple[int, int]:
        """The LSP (line, character) of a string offset."""
        line = bisect_right(self.starts, offset) - 1
        return line, _units(self.text[self.starts[line]:offset], self.encoding)

    def offset(self, line: int, character: int) -> int:
        """The string offset of an LSP position (clamped to its line and the text)."""
        if line >= len(self.starts):
            return len(self.text)
        text = self._line(line)
        column = 0
        units = 0
        while column < len(text) and units < character:
            units += _units(text[column], self.encoding)
            column += 1
        return self.starts[line] + column

    def row_column(self, line: int, character: int) -> tuple[int, int]:
        """The 1-based row and code-point column of an LSP position."""
        offset = self.offset(line, character)
        return line + 1, offset - self.starts[min(line, len(self.starts) - 1)] + 1


def _lines(text: str) -> list[str]:
    """The lines of `text`, each with its line ending."""
    starts = [0] + [match.end() for match in _NEWLINE.finditer(text)]
    lines = [text[start:end] for start, end in zip(starts, starts[1:])]
    if starts[-1] < len(text):
        lines.append(text[starts[-1]:])
    return lines


def text_edits(before: str, after: str) -> list[TextEdit]:
    """Edits (offsets into `before`, in order, not overlapping) that turn `before` into
    `after`: one per run of changed lines, trimmed to the characters that differ."""
    old, new = _lines(before), _lines(after)
    starts = [0]
    for line in old:
        starts.append(starts[-1] + len(line))
    edits = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = starts[old_start], starts[old_end]
        replaced, content = before[start:end], "".join(new[new_start:new_end])
        prefix = len(_common_prefix(replaced, content))
        suffix = len(_common_prefix(replaced[prefix:][::-1], content[prefix:][::-1]))
        edits.append(TextEdit(start + prefix, end - suffix, content[prefix:len(content) - suffix]))
    return edits


def _common_prefix(first: str, second: str) -> str:
    length = 0
    for a, b in zip(first, second):
        if a != b:
            break
        length += 1
    return first[:length]
