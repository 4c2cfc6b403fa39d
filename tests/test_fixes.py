"""`--fix`, `--diff` and `--add-noqa`, with small rules defined here (not the catalog's), so the
fix machinery is tested on its own: exact output text and bytes for every case."""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import libcst.matchers as m
import pytest

from torchperf_lint import fixes
from torchperf_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location
from torchperf_lint.engine import LintSettings, lint_text
from torchperf_lint.facts import FileFacts
from torchperf_lint.fixes import (
    MAX_PASSES,
    add_noqa_file,
    add_noqa_text,
    apply_fixes,
    fix_file,
    fix_text,
    fix_text_result,
    unified_diff,
    write_atomic,
)
from torchperf_lint.rules.base import Finding, NodeEdit, ProposedFix, Rule


class RenameCall(Rule):
    """Test rule: calls to `old(...)` become calls to `new(...)` (the name is the edit)."""

    old: ClassVar[str]
    new: ClassVar[str]
    default = True

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.index.calls:
            if m.matches(call.func, m.Name(self.old)):
                edit = NodeEdit(call.func, self.new)
                yield Finding(call, fix=ProposedFix(self.fix_applicability, "rename", (edit,)))


def rename(code: str, old: str, new: str, applicability=Applicability.SAFE) -> type[Rule]:
    return type(
        f"Rename_{old}_{new}",
        (RenameCall,),
        {
            "code": code,
            "name": f"rename-{old}",
            "message": f"`{old}` should be `{new}`",
            "old": old,
            "new": new,
            "fix_applicability": applicability,
        },
    )


class AddFastKeyword(Rule):
    """Test rule: `foo(...)`/`bar(...)` without `fast=` get `fast=True` (the whole call is the
    edit, so it overlaps a rename of the same call)."""

    code = "TST010"
    name = "add-fast"
    message = "pass `fast=True`"
    default = True
    fix_applicability = Applicability.SAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.index.calls:
            passes_fast = any(arg.keyword and arg.keyword.value == "fast" for arg in call.args)
            if m.matches(call.func, m.Name("foo") | m.Name("bar")) and call.args and not passes_fast:
                content = self.code_of(facts, call)[:-1] + ", fast=True)"
                yield Finding(call, fix=ProposedFix(Applicability.SAFE, "add", (NodeEdit(call, content),)))


class DeleteDrop(Rule):
    """Test rule: the statement calling `drop()` is deleted, line and all."""

    code = "TST020"
    name = "delete-drop"
    message = "delete"
    default = True
    fix_applicability = Applicability.SAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.index.calls:
            if m.matches(call.func, m.Name("drop")):
                statement = facts.index.parents[facts.index.parents[call]]
                edit = NodeEdit(statement, mode="delete_lines")
                yield Finding(call, fix=ProposedFix(Applicability.SAFE, "delete", (edit,)))


class PrepareBeforeMark(Rule):
    """Test rule: `x = mark()` becomes `prepare()` on a line of its own, then `x = marked()`
    (two edits in one fix: an insertion before the statement and a rename)."""

    code = "TST021"
    name = "prepare-mark"
    message = "prepare first"
    default = True
    fix_applicability = Applicability.SAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.index.calls:
            if m.matches(call.func, m.Name("mark")):
                statement = facts.index.parents[facts.index.parents[call]]
                edits = (
                    NodeEdit(statement, "prepare()\n", "insert_before"),
                    NodeEdit(call.func, "marked"),
                )
                yield Finding(call, fix=ProposedFix(Applicability.SAFE, "prepare", edits))


RENAME_FOO = rename("TST001", "foo", "bar")
RENAME_BAR = rename("TST002", "bar", "baz")
RENAME_BAR_BACK = rename("TST003", "bar", "foo")
BREAK_BAR = rename("TST030", "bar", "bar((")
REPEAT_KEYWORD = rename("TST031", "once", "twice(a=1, a=2) or once")
RENAME_NOT_LATIN_1 = rename("TST032", "foo", "foo\u03a9")
RENAME_RISKY = rename("TST040", "risky", "safer", Applicability.UNSAFE)
RENAME_SHOWN = rename("TST041", "shown", "never", Applicability.DISPLAY_ONLY)


def settings(*rules: type[Rule]) -> LintSettings:
    return LintSettings(rules=rules)


def diagnostic(code: str, *edits: Edit, applicability=Applicability.SAFE, row: int = 1) -> Diagnostic:
    """A diagnostic built by hand, for edits no rule would produce."""
    return Diagnostic(
        code=code,
        name=code.lower(),
        message="m",
        filename="x.py",
        location=Location(row, 1),
        end_location=Location(row, 2),
        fix=Fix(applicability, "fix", edits),
        noqa_row=row,
    )


def edit(start: tuple[int, int], end: tuple[int, int], content: str) -> Edit:
    return Edit(Location(*start), Location(*end), content)


# One pass: overlapping, adjacent, invalid and no-op edits.


def test_a_fix_overlapping_an_accepted_one_waits_for_the_next_pass() -> None:
    text = "import torch\nfoo(x)\n"
    diagnostics = lint_text(text, "x.py", settings(RENAME_FOO, AddFastKeyword))
    assert [d.code for d in diagnostics] == ["TST001", "TST010"]

    assert apply_fixes(text, diagnostics, unsafe_fixes=False) == (
        "import torch\nbar(x)\n",
        Counter({"TST001": 1}),
    )


def test_the_deferred_fix_is_applied_in_a_later_pass() -> None:
    text, applied, remaining = fix_text(
        "import torch\nfoo(x)\n", "x.py", settings(RENAME_FOO, AddFastKeyword), False
    )
    assert text == "import torch\nbar(x, fast=True)\n"
    assert applied == Counter({"TST001": 1, "TST010": 1})
    assert remaining == []


def test_adjacent_edits_both_apply_and_edits_at_the_same_place_conflict() -> None:
    text = "abcdef\n"
    diagnostics = [
        diagnostic("A", edit((1, 1), (1, 4), "X")),
        diagnostic("B", edit((1, 4), (1, 7), "Y")),
        diagnostic("C", edit((1, 1), (1, 1), "inserted")),
        diagnostic("D", edit((1, 7), (1, 7), "!")),
        diagnostic("E", edit((1, 7), (1, 7), "?")),
    ]
    assert apply_fixes(text, diagnostics, False) == ("XY!\n", Counter({"A": 1, "B": 1, "D": 1}))


def test_a_fix_is_applied_whole_or_not_at_all() -> None:
    text = "one two three\n"
    diagnostics = [
        diagnostic("A", edit((1, 5), (1, 8), "2")),
        diagnostic("B", edit((1, 1), (1, 4), "1"), edit((1, 6), (1, 7), "W")),
        diagnostic("C", edit((1, 9), (1, 14), "3"), edit((1, 1), (1, 1), "> ")),
    ]
    assert apply_fixes(text, diagnostics, False) == ("> one 2 3\n", Counter({"A": 1, "C": 1}))


@pytest.mark.parametrize(
    "bad_edit",
    [
        edit((3, 1), (3, 2), "x"),  # past the last row
        edit((3, 1), (3, 1), "x"),  # the row after the empty one a final line ending opens
        edit((1, 1), (1, 9), "x"),  # past the end of the row
        edit((0, 1), (1, 2), "x"),  # row 0
        edit((1, 4), (1, 2), "x"),  # ends before it starts
    ],
)
def test_edits_outside_the_text_are_never_applied(bad_edit: Edit) -> None:
    assert apply_fixes("abc\n", [diagnostic("A", bad_edit)], False) == ("abc\n", Counter())


def test_a_fix_that_changes_nothing_is_not_counted() -> None:
    assert apply_fixes("abc\n", [diagnostic("A", edit((1, 1), (1, 4), "abc"))], False) == (
        "abc\n",
        Counter(),
    )


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_rows_and_columns_are_code_points_for_every_line_ending(newline: str) -> None:
    text = f"a = 'é𝄞'; foo(1){newline}b = 2{newline}"
    diagnostics = [
        diagnostic("A", edit((1, 11), (1, 14), "bar")),
        diagnostic("B", edit((2, 1), (2, 1), "c = 3\n"), row=2),
        diagnostic("C", edit((2, 6), (3, 1), "  # end\r\n"), row=2),
    ]
    fixed, applied = apply_fixes(text, diagnostics, False)
    assert fixed == f"a = 'é𝄞'; bar(1){newline}c = 3{newline}b = 2  # end{newline}"
    assert applied == Counter({"A": 1, "B": 1, "C": 1})


def test_inserted_lines_take_the_file_s_line_ending() -> None:
    text, applied, _ = fix_text(
        "import torch\r\nx = mark()\r\n", "x.py", settings(PrepareBeforeMark), False
    )
    assert text == "import torch\r\nprepare()\r\nx = marked()\r\n"
    assert applied == Counter({"TST021": 1})


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("import torch\ndrop()\nx = 1\n", "import torch\nx = 1\n"),
        ("import torch\nx = 1\ndrop()", "import torch\nx = 1\n"),
        ("import torch\r\ndrop()\r\nx = 1\r\n", "import torch\r\nx = 1\r\n"),
    ],
)
def test_deleting_lines_removes_them_with_their_line_ending(before: str, after: str) -> None:
    assert fix_text(before, "x.py", settings(DeleteDrop), False)[0] == after


# Applicability and noqa comments.


def test_safe_fixes_by_default_unsafe_with_the_flag_display_only_never() -> None:
    text = "import torch\nfoo(1)\nrisky(2)\nshown(3)\n"
    rules = settings(RENAME_FOO, RENAME_RISKY, RENAME_SHOWN)

    safe_text, safe_applied, safe_remaining = fix_text(text, "x.py", rules, unsafe_fixes=False)
    assert safe_text == "import torch\nbar(1)\nrisky(2)\nshown(3)\n"
    assert safe_applied == Counter({"TST001": 1})
    assert [d.code for d in safe_remaining] == ["TST040", "TST041"]

    unsafe_text, unsafe_applied, unsafe_remaining = fix_text(text, "x.py", rules, unsafe_fixes=True)
    assert unsafe_text == "import torch\nbar(1)\nsafer(2)\nshown(3)\n"
    assert unsafe_applied == Counter({"TST001": 1, "TST040": 1})
    assert [d.code for d in unsafe_remaining] == ["TST041"]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_line_whose_noqa_covers_the_code_is_never_rewritten(newline: str) -> None:
    text = """import torch
foo(1)  # noqa: TST001
foo(2)  # noqa: E501
foo(3)  # noqa
""".replace("\n", newline)
    fixed, applied, _ = fix_text(text, "x.py", settings(RENAME_FOO), False)
    assert fixed == text.replace("foo(2)", "bar(2)")
    assert applied == Counter({"TST001": 1})


def test_apply_fixes_itself_skips_fixes_that_touch_a_noqa_line() -> None:
    # Diagnostics built by hand (the engine already drops those reported on a noqa line): one
    # reported on a noqa line, one whose multi-line edit reaches a line with a bare noqa.
    text = """a = 1  # noqa: A
b = 2
c = 3  # noqa
d = 4
"""
    diagnostics = [
        diagnostic("A", edit((1, 5), (1, 6), "9")),
        diagnostic("B", edit((2, 5), (3, 6), "9"), row=2),
        diagnostic("C", edit((4, 5), (4, 6), "9"), row=4),
    ]
    assert apply_fixes(text, diagnostics, False) == (text.replace("d = 4", "d = 9"), Counter({"C": 1}))


# Passes: fixed point, termination, invalid results.


def test_one_fix_enabling_another_reaches_a_fixed_point() -> None:
    rules = settings(RENAME_FOO, RENAME_BAR)
    text, applied, remaining = fix_text("import torch\nfoo(1)\n", "x.py", rules, False)
    assert (text, applied, remaining) == (
        "import torch\nbaz(1)\n",
        Counter({"TST001": 1, "TST002": 1}),
        [],
    )
    assert fix_text(text, "x.py", rules, False) == (text, Counter(), [])


def test_fixes_that_undo_each_other_stop_after_the_last_pass() -> None:
    text, applied, remaining = fix_text(
        "import torch\nfoo(1)\n", "x.py", settings(RENAME_FOO, RENAME_BAR_BACK), False
    )
    assert sum(applied.values()) == MAX_PASSES
    assert text == "import torch\nfoo(1)\n"
    assert [d.code for d in remaining] == ["TST001"]


def test_a_pass_that_breaks_the_syntax_is_thrown_away() -> None:
    result = fix_text_result(
        "import torch\nfoo(x)\n", "x.py", settings(RENAME_FOO, BREAK_BAR), False
    )
    assert result.text == "import torch\nbar(x)\n"
    assert result.applied == Counter({"TST001": 1})
    assert [d.code for d in result.remaining] == ["TST030"]
    assert result.reverted.startswith("fixes for TST030 produced invalid code (syntax error")


def test_a_pass_that_parses_but_no_longer_compiles_is_thrown_away() -> None:
    result = fix_text_result("import torch\nonce()\n", "x.py", settings(REPEAT_KEYWORD), False)
    assert (result.text, result.applied) == ("import torch\nonce()\n", Counter())
    assert result.reverted == (
        "fixes for TST031 produced invalid code (it no longer compiles); not applied"
    )


# Files: bytes outside the edits, encodings, modes, errors, atomic writes.


def write(tmp_path: Path, data: bytes, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            b"import torch\r\n\r\nfoo(1)  # keep\r\nx = [ 1,2 ]\r\n",
            b"import torch\r\n\r\nbar(1)  # keep\r\nx = [ 1,2 ]\r\n",
        ),
        (
            b"\xef\xbb\xbfimport torch\nfoo('\xc3\xa9')\n",
            b"\xef\xbb\xbfimport torch\nbar('\xc3\xa9')\n",
        ),
        (
            b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9t\xe9'\rfoo(name)\n",
            b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9t\xe9'\rbar(name)\n",
        ),
    ],
    ids=["crlf", "utf-8-bom", "latin-1-mixed-endings"],
)
def test_fix_file_keeps_every_byte_outside_the_edits(tmp_path: Path, before: bytes, after: bytes) -> None:
    path = write(tmp_path, before)
    outcome = fix_file(path, "train.py", settings(RENAME_FOO), False, write=True)
    assert (outcome.error, outcome.applied) == (None, Counter({"TST001": 1}))
    assert path.read_bytes() == after

    second = fix_file(path, "train.py", settings(RENAME_FOO), False, write=True)
    assert (second.applied, second.after) == (Counter(), second.before)
    assert path.read_bytes() == after


def test_fix_file_keeps_the_file_mode_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = write(tmp_path, b"import torch\nfoo(1)\n")
    path.chmod(0o751)
    fix_file(path, "train.py", settings(RENAME_FOO), False, write=True)
    assert path.read_bytes() == b"import torch\nbar(1)\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert os.listdir(tmp_path) == ["train.py"]


def test_fix_file_writes_through_a_symlink(tmp_path: Path) -> None:
    target = write(tmp_path, b"import torch\nfoo(1)\n", "real.py")
    link = tmp_path / "link.py"
    link.symlink_to(target)
    fix_file(link, "link.py", settings(RENAME_FOO), False, write=True)
    assert link.is_symlink()
    assert target.read_bytes() == b"import torch\nbar(1)\n"


def test_fix_file_without_write_reports_the_fix_and_leaves_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, b"import torch\nfoo(1)\n")
    outcome = fix_file(path, "train.py", settings(RENAME_FOO), False, write=False)
    assert (outcome.before, outcome.after) == ("import torch\nfoo(1)\n", "import torch\nbar(1)\n")
    assert outcome.applied == Counter({"TST001": 1})
    assert path.read_bytes() == b"import torch\nfoo(1)\n"


def test_fix_file_never_writes_a_file_it_does_not_change(tmp_path: Path, monkeypatch) -> None:
    def refuse(path: Path, data: bytes) -> None:
        raise AssertionError(f"wrote {path}")

    monkeypatch.setattr(fixes, "write_atomic", refuse)
    path = write(tmp_path, b"import torch\nshown(1)\nbar(2)\n")
    outcome = fix_file(path, "train.py", settings(RENAME_FOO, RENAME_SHOWN), True, write=True)
    assert (outcome.error, outcome.applied) == (None, Counter())
    assert [d.code for d in outcome.remaining] == ["TST041"]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"import torch\nfoo(\n", "syntax error"),
        (b"import torch\nfoo('\xff')\n", "cannot decode as utf-8"),
    ],
)
def test_a_file_that_cannot_be_parsed_is_reported_and_untouched(
    tmp_path: Path, data: bytes, reason: str
) -> None:
    path = write(tmp_path, data)
    outcome = fix_file(path, "train.py", settings(RENAME_FOO), True, write=True)
    assert outcome.error.reason.startswith(reason)
    assert (outcome.applied, outcome.remaining) == (Counter(), [])
    assert path.read_bytes() == data


def test_a_missing_file_is_reported(tmp_path: Path) -> None:
    outcome = fix_file(tmp_path / "gone.py", "gone.py", settings(RENAME_FOO), False, write=True)
    assert outcome.error.reason.startswith("cannot read: ")
    assert os.listdir(tmp_path) == []


def test_a_fix_the_file_s_encoding_cannot_hold_is_not_written(tmp_path: Path) -> None:
    data = b"# coding: latin-1\nimport torch\nfoo('\xe9')\n"
    path = write(tmp_path, data)
    outcome = fix_file(path, "train.py", settings(RENAME_NOT_LATIN_1), False, write=True)
    assert outcome.error.reason.startswith("the fixed text cannot be encoded as iso-8859-1")
    assert outcome.applied == Counter()
    assert path.read_bytes() == data


def test_a_failed_write_keeps_the_old_file_and_no_temporary_file(tmp_path: Path, monkeypatch) -> None:
    def fail(source, target) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    path = write(tmp_path, b"import torch\nfoo(1)\n")
    outcome = fix_file(path, "train.py", settings(RENAME_FOO), False, write=True)
    assert outcome.error.reason == "cannot write: No space left on device"
    assert (outcome.applied, outcome.after) == (Counter(), "import torch\nfoo(1)\n")
    assert path.read_bytes() == b"import torch\nfoo(1)\n"
    assert os.listdir(tmp_path) == ["train.py"]


def test_write_atomic_creates_a_missing_file(tmp_path: Path) -> None:
    write_atomic(tmp_path / "new.py", b"x = 1\n")
    assert (tmp_path / "new.py").read_bytes() == b"x = 1\n"
    assert os.listdir(tmp_path) == ["new.py"]


# --diff


def test_unified_diff_text() -> None:
    outcome_before = "import torch\n\nfoo(1)\nx = 2\ny = 3\nz = 4\nw = 5\nfoo(6)"
    outcome_after = "import torch\n\nbar(1)\nx = 2\ny = 3\nz = 4\nw = 5\nbar(6)"
    assert unified_diff("src/train.py", outcome_before, outcome_after) == (
        "--- a/src/train.py\n"
        "+++ b/src/train.py\n"
        "@@ -1,8 +1,8 @@\n"
        " import torch\n"
        " \n"
        "-foo(1)\n"
        "+bar(1)\n"
        " x = 2\n"
        " y = 3\n"
        " z = 4\n"
        " w = 5\n"
        "-foo(6)\n"
        "\\ No newline at end of file\n"
        "+bar(6)\n"
        "\\ No newline at end of file\n"
    )
    assert unified_diff("src/train.py", outcome_before, outcome_before) == ""


def test_unified_diff_of_a_fixed_file(tmp_path: Path) -> None:
    path = write(tmp_path, b"import torch\r\nfoo(1)\r\n")
    outcome = fix_file(path, "train.py", settings(RENAME_FOO), False, write=False)
    assert unified_diff(outcome.filename, outcome.before, outcome.after) == (
        "--- a/train.py\n+++ b/train.py\n@@ -1,2 +1,2 @@\n import torch\r\n-foo(1)\r\n+bar(1)\r\n"
    )


# --add-noqa

NOQA_BEFORE = '''import torch
foo(1)
foo(2)  # noqa: E501
foo(3)  # explain
foo(4); risky(5)
x = foo("""
""")
y = [
    foo(7),
]
'''

NOQA_AFTER = '''import torch
foo(1)  # noqa: TST001
foo(2)  # noqa: E501, TST001
foo(3)  # explain  # noqa: TST001
foo(4); risky(5)  # noqa: TST001, TST040
x = foo("""
""")
y = [
    foo(7),  # noqa: TST001
]
'''


def test_add_noqa_text_exact_output() -> None:
    rules = settings(RENAME_FOO, RENAME_RISKY)
    text, changed = add_noqa_text(NOQA_BEFORE, lint_text(NOQA_BEFORE, "x.py", rules))
    assert (text, changed) == (NOQA_AFTER, 5)
    # The row that ends inside a string cannot take a comment: it is the only finding left.
    assert [(d.code, d.location.row) for d in lint_text(text, "x.py", rules)] == [("TST001", 6)]


def test_add_noqa_file_keeps_bom_and_line_endings(tmp_path: Path) -> None:
    path = write(tmp_path, b"\xef\xbb\xbfimport torch\r\nfoo(1)\r\nx = foo(2) + \\\r\n    1\r\n")
    assert add_noqa_file(path, "train.py", settings(RENAME_FOO)) == 1
    assert path.read_bytes() == (
        b"\xef\xbb\xbfimport torch\r\nfoo(1)  # noqa: TST001\r\nx = foo(2) + \\\r\n    1\r\n"
    )
    assert os.listdir(tmp_path) == ["train.py"]
    assert add_noqa_file(path, "train.py", settings(RENAME_FOO)) == 0


def test_add_noqa_leaves_an_unparsable_file_alone(tmp_path: Path) -> None:
    path = write(tmp_path, b"import torch\nfoo(\n")
    assert add_noqa_file(path, "train.py", settings(RENAME_FOO)) == 0
    assert path.read_bytes() == b"import torch\nfoo(\n"
