"""Re-parsing an edited text in part (`reparse`, what the language server does on every
change): whenever it gives a module, that module is the one a full parse of the new text gives,
the positions and index it keeps per statement are those of a full render and a full walk, and
linting through it gives what linting the new text afresh gives."""

from __future__ import annotations

import random
from dataclasses import fields
from pathlib import Path

import libcst as cst
import pytest

from torchperf_lint.config import resolve_selection
from torchperf_lint.engine import analyse_text, parse
from torchperf_lint.facts.index import build_index
from torchperf_lint.positions import node_positions
from torchperf_lint.reparse import EditedText, ParsedText, parsed_again
from torchperf_lint.settings import LintSettings
from torchperf_lint.source import SourceError

ROOT = Path(__file__).parent.parent
# The examples, and the rule fixtures with the most top-level statements.
SOURCES = sorted((ROOT / "examples").glob("*.py")) + sorted(
    (ROOT / "tests" / "fixtures").glob("TPL*.py"),
    key=lambda path: -sum(line[:1].isalpha() for line in path.read_text("utf-8").splitlines()),
)[:10]
EXAMPLE = ROOT / "examples" / "train.py"


def assert_full_parse(parsed: ParsedText, text: str) -> None:
    full = parse(text)
    assert parsed.text == text
    assert parsed.module.deep_equals(full)
    for attribute in ("default_indent", "default_newline", "has_trailing_newline", "encoding"):
        assert getattr(parsed.module, attribute) == getattr(full, attribute), attribute
    # As a full parse gives it back: LibCST does not always give back a line continuation
    # (`     \\\n   optimizer.step()`), and an unchanged text keeps its last (full) parse.
    assert parsed.module.code == full.code
    assert parsed.starts == ParsedText(text, full).starts


def again(text: str, edited: str) -> ParsedText | None:
    parsed = parsed_again(ParsedText(text, parse(text)), edited, parse)
    if parsed is not None:
        assert_full_parse(parsed, edited)
    return parsed


def test_an_edit_inside_a_function_reparses_it_and_keeps_every_other_statement() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    previous = ParsedText(text, parse(text))
    edited = text.replace("lr=1e-3", "lr=2e-4", 1)
    parsed = parsed_again(previous, edited, parse)
    assert parsed is not None
    assert_full_parse(parsed, edited)
    old_body, new_body = previous.module.body, parsed.module.body
    changed = [index for index, statement in enumerate(new_body) if statement is not old_body[index]]
    assert [new_body[index].name.value for index in changed] == ["main"]


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        # A comment indented as the function's body belongs to its block's footer, one at
        # column 0 to the next statement: which one depends on the statements on both sides.
        ("def f():\n    x = 1\n\ndef g():\n    y = 2\n", "\ndef g", "\n    # note\ndef g"),
        ("def f():\n    x = 1\n    # note\ndef g():\n    y = 2\n", "    # note\n", "# note\n"),
        ("a = 1\n\ndef f():\n    x = 1\n\nb = 2\n", "b = 2", "    # note\nb = 2"),
        # The default indentation is the first block's: it changes with the first function's.
        ("def f():\n    x = 1\n\ndef g():\n  y = 2\n", "    x = 1", "  x = 1"),
        ("x = 1\n\ndef f():\n  y = 2\n\ndef g():\n    z = 3\n", "def f():\n  y = 2\n", "f = 2\n"),
        ("x = 1\n\ndef f():\n    y = 2\n\ndef g():\n  z = 3\n", "def f():\n    y = 2\n", "f = 2\n"),
        # The default newline is the first one.
        ("x = 1\r\ny = 2\nz = 3\n", "x = 1\r\n", "x = 1\n"),
        ("x = 1\ny = 2\r\nz = 3\n", "y = 2\r\n", "y = 2\r\nw = 4\n"),
        # The header and footer of the file, and a file without a final newline.
        ("# header\n\nx = 1\ny = 2\n", "# header", "# header, longer"),
        ("x = 1\ny = 2\nz = 3\n# footer\n", "# footer", "# footer, longer"),
        ("x = 1\ny = 2\nz = 3", "z = 3", "z = 4"),
        ("x = 1\ny = 2\nz = 3\n", "z = 3\n", "z = 3"),
        # Statements split, joined, added and removed.
        ("x = 1\ny = 2\nz = 3\n", "y = 2", "y = 2; w = 4"),
        ("x = 1\ny = 2\nz = 3\n", "y = 2\n", ""),
        ("x = 1\ny = 2\nz = 3\n", "y = 2\n", "if y:\n    pass\nelse:\n    w = 1\n"),
        ("x = 1\nif y:\n    pass\nz = 3\n", "if y:\n    pass\n", "if y: pass\n"),
        ("x = (1,\n     2)\ny = 2\nz = 3\n", "y = 2", "y = (2 +\n 3)"),
        # A line continuation (LibCST does not always give such text back).
        ("x = 1\ny = 2\nz = 3\n", "y = 2\n", "y = \\\n    2\n"),
        ("x = 1\ny = 2\nz = 3\n", "y = 2\n", "  \\\ny = 2\n"),
    ],
)
def test_edits_at_statement_boundaries_give_the_full_parse_or_none(text: str, old: str, new: str) -> None:
    assert old in text
    again(text, text.replace(old, new, 1))


def test_text_that_no_longer_parses_is_left_to_the_full_parse() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    edited = text.replace("criterion = nn.CrossEntropyLoss()", "criterion = nn.CrossEntropyLoss(", 1)
    assert parsed_again(ParsedText(text, parse(text)), edited, parse) is None
    with pytest.raises(SourceError):
        parse(edited)


def _edit(text: str, chooser: random.Random) -> str:
    """A random edit an editor could send: a line duplicated, removed, a comment or blank line
    added at the line's indentation, deeper or at column 0, a character replaced, or a snippet
    typed anywhere."""
    lines = text.splitlines(keepends=True)
    if chooser.random() < 0.25:
        offset = chooser.randrange(len(text) + 1)
        end = min(len(text), offset + chooser.choice([0, 0, 1, 3, 40]))
        snippet = chooser.choice(["x", "\n", "    ", "# c\n", "(", ")", ":", "pass\n", "\\\n", ""])
        return text[:offset] + snippet + text[end:]
    index = chooser.randrange(len(lines))
    line = lines[index]
    indent = line[: len(line) - len(line.lstrip())].rstrip("\r\n")
    operation = chooser.randrange(6)
    if operation == 0:
        lines.insert(index, line)
    elif operation == 1:
        del lines[index]
    elif operation == 2:
        lines.insert(index, indent + "# note\n")
    elif operation == 3:
        lines.insert(index, chooser.choice(["# top\n", "\n", indent + "    # deeper\n"]))
    else:
        letters = [position for position, char in enumerate(line) if char.isalnum()]
        if letters:
            position = chooser.choice(letters)
            lines[index] = line[:position] + chooser.choice("xy1") + line[position + 1:]
    return "".join(lines)


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
def test_random_edits_of_real_files_give_the_full_parse_whenever_they_reparse_in_part() -> None:
    chooser = random.Random(14)
    reparsed = fell_back = 0
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        previous = ParsedText(text, parse(text))
        for _ in range(12):
            edited = _edit(text, chooser)
            parsed = parsed_again(previous, edited, parse)
            try:
                full = parse(edited)
            except SourceError:
                assert parsed is None
                continue
            if parsed is None:
                fell_back += 1
                parsed = ParsedText(edited, full)
            else:
                reparsed += 1
                assert_full_parse(parsed, edited)
            # Continue from the part-parsed text too: its statement offsets are re-used.
            text, previous = edited, parsed
    assert reparsed > 3 * fell_back


def test_positions_kept_per_statement_are_those_of_a_full_render() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    edited = EditedText(parse)
    for version in range(4):
        if version:
            # A line added and a value changed: the statements below move down.
            text = text.replace("    model = SmallNet()", f"    step = {version}\n    model = SmallNet()", 1)
        module = edited.parse(text)
        index = build_index(module)
        nodes = [*index.calls, *index.loops, *index.assigns]
        assert edited.positions(module, nodes, index.parents) == node_positions(module, nodes)
    # A new module (the file was parsed in full elsewhere) is rendered in full.
    other = cst.parse_module(text)
    calls = build_index(other).calls
    assert edited.positions(other, calls, {}) == node_positions(other, calls)


def test_index_kept_per_statement_is_the_full_walk() -> None:
    chooser = random.Random(7)
    text = EXAMPLE.read_text(encoding="utf-8")
    edited = EditedText(parse)
    for _ in range(20):
        module = edited.parse(text)
        index, full = edited.index(module), build_index(module)
        assert list(index.parents.items()) == list(full.parents.items())
        for bucket in fields(full):
            assert getattr(index, bucket.name) == getattr(full, bucket.name), bucket.name
        text = _parsable_edit(text, chooser)


def _parsable_edit(text: str, chooser: random.Random) -> str:
    while True:
        edited = _edit(text, chooser)
        try:
            parse(edited)
        except SourceError:
            continue
        return edited


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
def test_random_edits_lint_as_the_new_text_linted_afresh() -> None:
    """What the language server computes on each change (the last parse, positions and index
    re-used per statement) is what the CLI's engine gives for the whole new text: findings with
    their messages, rows, columns and fixes, the file's summary and the program answers read."""
    settings = LintSettings(resolve_selection(["ALL"]))
    chooser = random.Random(3)
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        edited = EditedText(parse)
        for _ in range(6):
            incremental = analyse_text(text, "train.py", settings, edited=edited)
            afresh = analyse_text(text, "train.py", settings)
            assert incremental.diagnostics == afresh.diagnostics
            assert incremental.summary == afresh.summary
            assert incremental.asked == afresh.asked
            text = _parsable_edit(text, chooser)
