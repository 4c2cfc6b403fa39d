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
- Statements are found in the text by the length of their code, so the re-parsed text must
  come back exactly from its tree (LibCST does not always give back a line continuation).

`parsed_again` is equal to `engine.parse` of the new text whenever it returns a module (the
tests compare them on edits everywhere in real files); `engine.parse` still reports syntax
errors, since a text that does not parse is never re-parsed in part.

`EditedText` is what the language server keeps of an open file between changes: its last
parse, and per top-level statement its index (`facts.index`) and the positions of the nodes its
findings name.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst
from libcst._position import CodePosition, CodeRange

from torchperf_lint.facts.index import SyntaxIndex, descendants, joined_index, statement_index
from torchperf_lint.positions import node_positions
from torchperf_lint.source import SourceError

# Where LibCST (and Python) break lines.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


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
    def laid_out(self) -> bool:
        """Whether `starts` was computed (it is, from the last one, for a text parsed in part)."""
        return self._laid_out

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

    @cached_property
    def statement_index(self) -> dict[cst.CSTNode, int]:
        """The position of each top-level statement in the module's body."""
        return {statement: index for index, statement in enumerate(self.module.body)}

    @cached_property
    def _line_ends(self) -> list[int]:
        return [match.end() for match in _LINE_BREAK.finditer(self.text)]

    def line_at(self, offset: int) -> int:
        """The 1-based line of the text that `offset` is on."""
        return bisect_right(self._line_ends, offset) + 1


class EditedText:
    """A file the editor keeps changing. Each new text is parsed by re-using the last parse
    (`parsed_again`); the index of each top-level statement, and the positions of the nodes
    findings name, are kept per statement: a statement the edit did not touch (the same node)
    has the same index, and its positions only move by the lines added or removed above it."""

    def __init__(self, parse: Callable[[str], cst.Module]) -> None:
        self._parse = parse
        self.last: ParsedText | None = None
        self._indexes: dict[cst.CSTNode, SyntaxIndex] = {}
        # Per top-level statement, the ranges of its nodes asked for, lines counted from the
        # statement's first line.
        self._ranges: dict[cst.CSTNode, dict[cst.CSTNode, CodeRange]] = {}

    def parse(self, text: str) -> cst.Module:
        """`text` parsed, re-using the last parse where it can; raises what `parse` raises."""
        parsed = parsed_again(self.last, text, self._parse) if self.last is not None else None
        if parsed is None:
            parsed = ParsedText(text, self._parse(text))
        self.last = parsed
        return parsed.module

    def index(self, module: cst.Module) -> SyntaxIndex:
        """`facts.index.build_index(module)`, walking only the top-level statements that the
        last index did not hold."""
        known = {
            statement: self._indexes[statement]
            if statement in self._indexes
            else statement_index(statement)
            for statement in module.body
        }
        self._indexes = known
        return joined_index(module, [known[statement] for statement in module.body])

    def positions(
        self,
        module: cst.Module,
        nodes: Collection[cst.CSTNode],
        parents: Mapping[cst.CSTNode, cst.CSTNode],
    ) -> dict[cst.CSTNode, CodeRange]:
        """`node_positions(module, nodes)`, rendering only the top-level statements holding
        `nodes` whose ranges are not known yet; `parents` maps each node to its parent.

        A text parsed in full is rendered in full: finding where its statements start would
        render it once more (the next edit does, to re-parse it in part)."""
        parsed = self.last
        if parsed is None or parsed.module is not module or not parsed.laid_out:
            return node_positions(module, nodes)
        starts = parsed.starts
        if starts is None:
            return node_positions(module, nodes)
        wanted: dict[cst.CSTNode, list[cst.CSTNode]] = {}
        for node in nodes:
            statement, parent = node, parents.get(node)
            while parent is not None and parent is not module:
                statement, parent = parent, parents.get(parent)
            if parent is None:
                return node_positions(module, nodes)  # the module itself
            wanted.setdefault(statement, []).append(node)
        known: dict[cst.CSTNode, dict[cst.CSTNode, CodeRange]] = {}
        found: dict[cst.CSTNode, CodeRange] = {}
        for statement, its_nodes in wanted.items():
            ranges = self._ranges.get(statement, {})
            if any(node not in ranges for node in its_nodes):
                ranges = node_positions(module, {*ranges, *its_nodes}, statement)
            known[statement] = ranges
            shift = parsed.line_at(starts[parsed.statement_index[statement]]) - 1
            for node in its_nodes:
                if node in ranges:
                    found[node] = _moved(ranges[node], shift)
        self._ranges = known
        return found


def _moved(span: CodeRange, lines: int) -> CodeRange:
    return CodeRange(
        CodePosition(span.start.line + lines, span.start.column),
        CodePosition(span.end.line + lines, span.end.column),
    )


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
