"""Positions and edits between the linter's rows and columns and LSP's (`server/text.py`)."""

from __future__ import annotations

import pytest

from torchperf_lint.server.text import LineIndex, TextEdit, text_edits


def apply(text: str, edits: list[TextEdit]) -> str:
    for edit in reversed(edits):
        text = text[: edit.start] + edit.content + text[edit.end:]
    return text


@pytest.mark.parametrize(
    ("encoding", "character"), [("utf-16", 7), ("utf-8", 9), ("utf-32", 6)]
)
def test_columns_count_the_units_of_the_negotiated_encoding(encoding: str, character: int) -> None:
    # "😀" is one code point, two UTF-16 units and four UTF-8 bytes.
    lines = LineIndex('s = "😀"; x.item()\n', encoding)
    assert lines.position(1, 7) == (0, character)
    assert lines.row_column(0, character) == (1, 7)


def test_rows_split_only_where_python_splits_them() -> None:
    # A form feed ends no line for Python (nor for the linter's rows).
    lines = LineIndex("a = 1\r\nb = 2\x0c c = 3\rd = 4\n")
    assert lines.position(3, 1) == (2, 0)
    assert lines.position(2, 8) == (1, 7)
    assert lines.position_at(len("a = 1\r\nb = 2\x0c c = 3\r")) == (2, 0)


def test_a_position_past_the_last_line_is_the_end_of_the_text() -> None:
    lines = LineIndex("x = 1\ny = 2")
    assert lines.position(3, 1) == (1, 5)
    assert lines.offset(7, 0) == len("x = 1\ny = 2")


def test_an_edit_is_trimmed_to_the_characters_that_differ() -> None:
    before = 'x = x.to("cuda")\ny = 2\n'
    after = 'x = x.to("cuda", non_blocking=True)\ny = 2\n'
    assert text_edits(before, after) == [TextEdit(15, 15, ", non_blocking=True")]


def test_distant_changes_become_separate_edits() -> None:
    before = "import torch\n" + "pass\n" * 20 + "torch.cuda.amp.autocast()\n"
    after = "import torch\nimport os\n" + "pass\n" * 20 + "torch.amp.autocast('cuda')\n"
    edits = text_edits(before, after)
    assert len(edits) == 2
    assert apply(before, edits) == after


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("a\r\nb\r\n", "a\r\nc\r\nb\r\n"),
        ("x = 1", "x = 1\n"),
        ("x = 1\ny = 2\n", "y = 2\n"),
        ("", "x = 1\n"),
        ("x = 1\n", ""),
    ],
)
def test_edits_turn_the_old_text_into_the_new_one(before: str, after: str) -> None:
    assert apply(before, text_edits(before, after)) == after
