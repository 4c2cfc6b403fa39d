"""Parse an edited text again by re-parsing only the top-level statements the edit touched.

An editor sends the whole text of a file on every keystroke, and LibCST parses a 1,000-line
file in about 0.2 s. Most edits stay inside one top-level statement (a function, a class, an
assignment), and the tree of every other top-level statement is the same as before: the
statements before the edit are tokenized from the same text, and a top-level statement starts
at column 0 with no bracket, string or block open. So the new tree is the old one with the
statements around the edit replaced by those parsed from their new text.

What LibCST decides from more than one statement is checked, and any doubt falls back to a
full parse (`None`):

- Comment and blank lines between two statements are split between the first one's block
  footer and the second one's leading lines by looking at both. So the text re-parsed is the
  edited statements with one unchanged neighbour on each side (or the start, or the end, of the
  file), and the neighbours must end and start where they did: then every boundary of a
  re-parsed statement sees exactly the text a full parse sees there.
- A module's default indentation is that of its first indented block, and its default newline
  is its first newline; nodes that differ from them spell theirs out. The re-parsed text must
  agree with the module on both, and the file's first indented block must still be where it
  was (or be in the re-parsed text).

`parsed_again` is equal to `engine.parse` of the new text whenever it returns a module (the
tests compare them on edits everywhere in real files); `engine.parse` still reports syntax
errors, since a text that does not parse is never re-parsed in part.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from torchperf_lint.facts.index import descendants
from torchperf_lint.source import SourceError


@dataclass
class ParsedText:
    """A text and its parsed module, with where each top-level statement's code starts."""

    text: str
    module: cst.Module
    # The offset of each of `module.body`'s statements in `text` (its leading lines
    # included), then the offset of the footer; None when LibCST does not give the text back
    # (it does not always, around a line continuation): computed when first asked for.
    _starts: list[int] | None = field(default=None, repr=False)
    _laid_out: bool = field(default=False, repr=False)
    _first_block: int | None = field(default=None, repr=False)

    @property
    def starts(self) -> list[int] | None:
        if not self._laid_out:
            self._laid_out = True
            self._starts = _offsets(self.module, self.text)
        return self._starts

    @property
    def first_block(self) -> int:
        """The index of the first top-level statement holding an indented block (the one the
        module's default indentation comes from); the number of statements when none does."""
        if self._first_block is None:
            body = self.module.body
            self._first_block = next(
                (index for index, statement in enumerate(body) if _opens_a_block(statement)),
                len(body),
            )
        return self._first_block


def parsed_again(previous: ParsedText, text: str, parse: Callable[[str], cst.Module]) -> ParsedText | None:
    """`text`, an edit of `previous.text`, parsed by re-parsing with `parse` only the
    top-level statements the edit touched and their neighbours; None when a full parse is
    needed (see the module's docstring), or when the re-parsed text does not parse (the full
    parse reports where)."""
    old, module = previous.text, previous.module
    if text == old:
        return previous
    body = module.body
    starts = previous.starts
    if not body or starts is None:
        return None
    prefix = _common_prefix_length(old, text)
    suffix = _common_suffix_length(old, text, min(len(old), len(text)) - prefix)
    old_end = len(old) - suffix
    # The statements the changed characters touch (an insertion touches its position's).
    first = min(max(bisect_right(starts, prefix) - 1, 0), len(body) - 1)
    last = max(min(bisect_right(starts, max(old_end - 1, prefix)) - 1, len(body) - 1), first)
    before, after = first - 1, last + 1  # the unchanged neighbours, if any
    start = starts[before] if before >= 0 else 0
    end = starts[after + 1] if after < len(body) else len(old)
    if start == 0 and end == len(old):
        return None  # the whole file: nothing to reuse
    growth = len(text) - len(old)
    chunk_text = text[start:end + growth]
    try:
        chunk = parse(chunk_text)
    except SourceError:
        return None
    offsets = _offsets(chunk, chunk_text)
    if offsets is None:
        return None
    taken = list(chunk.body)
    laid_out = [start + offset for offset in offsets]
    if before >= 0:
        # The neighbour before must end where it ended: then what follows it is split from
        # its block footer as a full parse splits it.
        if not taken or laid_out[1] != starts[first]:
            return None
        del taken[0], laid_out[0]
        header = module.header
    else:
        header = chunk.header
    if after < len(body):
        # The neighbour after must start where it started.
        if not taken or laid_out[-2] != starts[after] + growth:
            return None
        del taken[-1], laid_out[-2:]
        footer, trailing_newline = module.footer, module.has_trailing_newline
        laid_out += [offset + growth for offset in starts[after:]]
    else:
        footer, trailing_newline = chunk.footer, chunk.has_trailing_newline
    if not _same_defaults(previous, chunk, before, after):
        return None
    new_module = module.with_changes(
        body=[*body[:first], *taken, *body[last + 1:]],
        header=header,
        footer=footer,
        has_trailing_newline=trailing_newline,
    )
    return ParsedText(text, new_module, [*starts[:first], *laid_out], _laid_out=True)


def _same_defaults(previous: ParsedText, chunk: cst.Module, before: int, after: int) -> bool:
    """Whether the module's default newline and indentation are those a full parse of the new
    text finds, and those the re-parsed statements were parsed with."""
    module = previous.module
    # The first newline is before the re-parsed text (which then starts past it), or in it.
    if chunk.default_newline != module.default_newline:
        return False
    chunk_opens_a_block = any(_opens_a_block(statement) for statement in chunk.body)
    if chunk_opens_a_block and chunk.default_indent != module.default_indent:
        return False
    block = previous.first_block
    if block <= before or chunk_opens_a_block:
        return True  # the first block is before the re-parsed text, or (checked) in it
    # No block in the re-parsed text: the first one must not have been among the statements
    # it replaced.
    return block > after or block == len(module.body)


def _offsets(module: cst.Module, text: str) -> list[int] | None:
    """The offsets in `text` of the module's statements, then of its footer; None unless the
    module's code is `text`."""
    offsets = []
    pieces = [module.code_for_node(line) for line in module.header]
    position = sum(map(len, pieces))
    for statement in module.body:
        offsets.append(position)
        code = module.code_for_node(statement)
        pieces.append(code)
        position += len(code)
    offsets.append(position)
    pieces.extend(module.code_for_node(line) for line in module.footer)
    code = "".join(pieces)
    if not module.has_trailing_newline and code.endswith(module.default_newline):
        code = code[: -len(module.default_newline)]
    return offsets if code == text else None


def _opens_a_block(statement: cst.CSTNode) -> bool:
    """Whether a top-level statement holds an indented block (its code has an INDENT token)."""
    if isinstance(statement, cst.SimpleStatementLine):
        return False
    if isinstance(getattr(statement, "body", None), cst.IndentedBlock):
        return True
    return any(isinstance(node, cst.IndentedBlock) for node in descendants(statement))


def _common_prefix_length(first: str, second: str) -> int:
    """The length of the longest common prefix (by halving: string slices compare in C)."""
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix_length(first: str, second: str, limit: int) -> int:
    """The length of the longest common suffix, at most `limit`."""
    low, high = 0, max(limit, 0)
    while low < high:
        middle = (low + high + 1) // 2
        if first[len(first) - middle:] == second[len(second) - middle:]:
            low = middle
        else:
            high = middle - 1
    return low
