"""`# noqa` comments: per line (`# noqa`, `# noqa: TPL101, dataloader-no-pin-memory`) and per
file (`# torchperf-lint: noqa`, optionally with codes).

Comments are found with the tokenizer, so `"# noqa"` inside a string is not a directive.
Codes we do not know (other tools' codes) are kept and ignored: a `# noqa: E501, TPL101`
line is common and must work. TorchFix's codes for the checks we share are the exception
(`# noqa: TOR401` silences TPL101): whoever silenced TorchFix's finding on a line decided.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

_LINE = re.compile(r"#\s*noqa(?::\s*(?P<codes>[\w\-]+(?:\s*,\s*[\w\-]+)*))?", re.IGNORECASE)
_FILE = re.compile(
    r"#\s*torchperf-lint\s*:\s*noqa(?::\s*(?P<codes>[\w\-]+(?:\s*,\s*[\w\-]+)*))?",
    re.IGNORECASE,
)
ALL = frozenset({"*"})

# TorchFix (pytorch-labs/torchfix) reports some of our findings under its own code: our code →
# TorchFix's, for the checks that are the same finding (not TOR101, its every deprecated
# function, which TPL301's deprecated amp names are only some of).
TORCHFIX_CODES = {
    "TPL101": "TOR401",  # A DataLoader without worker processes.
    "TPL502": "TOR003",  # `checkpoint` without `use_reentrant`.
    "TPL506": "TOR002",  # The `require_grad` typo in an assignment.
    "TPL602": "TOR402",  # `zero_grad(set_to_none=False)`.
}
_TOOL_NAME = re.compile("torchperf-lint", re.IGNORECASE)


def may_have_file_directive(text: str) -> bool:
    """A cheap test before tokenizing: a file-level directive names the tool."""
    return _TOOL_NAME.search(text) is not None


def _codes(match: re.Match) -> frozenset[str]:
    listed = match.group("codes")
    if not listed:
        return ALL
    return frozenset(code.strip().upper() for code in listed.split(","))


@dataclass
class NoqaDirectives:
    """The suppressions written in one source text."""

    by_row: dict[int, frozenset[str]] = field(default_factory=dict)
    file_codes: frozenset[str] = frozenset()
    comment_rows: dict[int, str] = field(default_factory=dict)

    @classmethod
    def from_source(cls, text: str) -> NoqaDirectives:
        directives = cls()
        if "noqa" not in text.lower():
            return directives
        for row, comment in _comments(text):
            directives.comment_rows[row] = comment
            whole = _FILE.search(comment)
            if whole:
                directives.file_codes = directives.file_codes | _codes(whole)
                continue
            line = _LINE.search(comment)
            if line:
                directives.by_row[row] = _codes(line)
        return directives

    @property
    def whole_file(self) -> bool:
        return self.file_codes == ALL or "*" in self.file_codes

    def file_ignores(self, code: str) -> bool:
        return self.whole_file or code in self.file_codes

    def suppresses(self, row: int, code: str, name: str) -> bool:
        codes = self.by_row.get(row)
        if codes is None:
            return False
        return (
            codes is ALL
            or code in codes
            or name.upper() in codes
            or TORCHFIX_CODES.get(code) in codes
        )


def tokens(text: str) -> Iterator[tokenize.TokenInfo]:
    """`text`'s tokens, with rows as the parser counts them. `tokenize` does not end a line at a
    lone "\r" (old Mac line endings), so those are read as "\n": same rows, same columns."""
    return tokenize.generate_tokens(io.StringIO(_LONE_CR.sub("\n", text), newline="").readline)


_LONE_CR = re.compile(r"\r(?!\n)")


def _comments(text: str) -> list[tuple[int, str]]:
    found = []
    try:
        for token in tokens(text):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # The parser reports broken files; here we keep what was read before the error.
        pass
    return found


def add_codes(comment: str, codes: Iterable[str]) -> str | None:
    """`comment` with `codes` appended to the code list of its `# noqa: ...` directive.

    None when the comment has no such list: no directive at all, or a bare `# noqa`.
    """
    match = _LINE.search(comment)
    if match is None or match.group("codes") is None:
        return None
    end = match.end("codes")
    return comment[:end] + "".join(f", {code}" for code in codes) + comment[end:]


def unknown_codes(directives: NoqaDirectives, known: set[str], prefix: str = "TPL") -> list[tuple[int, str]]:
    """(row, code) pairs naming a `TPL` code that does not exist: a warning, never an error."""
    unknown = []
    for row, codes in sorted(directives.by_row.items()):
        for code in sorted(codes - ALL):
            if code.startswith(prefix) and code not in known:
                unknown.append((row, code))
    return unknown
