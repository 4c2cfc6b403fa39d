"""`--fix`, `--diff` and `--add-noqa`: apply the rules' edits, loop to a fixed point, write
files atomically.

Edits arrive as 1-based rows and code-point columns (`diagnostics.Edit`). Everything outside
the edited spans is kept byte for byte: the encoding, a BOM, the line endings (`\\n`,
`\\r\\n` or `\\r`) and the file mode. A result that does not parse is never written.
"""

from __future__ import annotations

import difflib
import errno
import os
import re
import stat
import tempfile
import tokenize
import warnings
from collections import Counter
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from torchperf_lint.diagnostics import Diagnostic, Edit, FileError, Location
from torchperf_lint.engine import analyse_text, lint_text, parse
from torchperf_lint.noqa import NoqaDirectives, add_codes, tokens
from torchperf_lint.program.link import Answer, ProgramFacts
from torchperf_lint.program.summary import ModuleSummary
from torchperf_lint.settings import LintSettings
from torchperf_lint.source import DecodedSource, SourceError, decode, read_source

try:
    import fcntl
except ImportError:  # Windows: no locks, and temporary files are not swept
    fcntl = None  # type: ignore[assignment]

# Fixes rarely enable more than one or two others; a pair of fixes that undo each other must
# still end, so the loop stops here whatever is left.
MAX_PASSES = 10

# The line endings the Python tokenizer accepts; `str.splitlines` would also split on form
# feeds and Unicode separators, which Python does not treat as line ends.
_NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass
class FileFixOutcome:
    """What `--fix` did (or, without writing, would do) to one file."""

    filename: str
    before: str
    after: str
    applied: Counter[str] = field(default_factory=Counter)
    remaining: list[Diagnostic] = field(default_factory=list)
    error: FileError | None = None
    # Why fixing stopped early: a pass produced code that does not parse and was thrown away.
    reverted: str | None = None
    # The fixed text's summary, and the program answers its remaining findings read: after
    # the program is linked again, a file whose answers changed is fixed again.
    summary: ModuleSummary | None = None
    asked: dict[str, Answer] = field(default_factory=dict)


@dataclass
class TextFixResult:
    """`fix_text`'s result with the reason fixing stopped early, if it did."""

    text: str
    applied: Counter[str]
    remaining: list[Diagnostic]
    reverted: str | None = None
    summary: ModuleSummary | None = None
    asked: dict[str, Answer] = field(default_factory=dict)


@dataclass(frozen=True, order=True)
class _Span:
    """An edit as string offsets, its content already in the text's newline style."""

    start: int
    end: int
    content: str

    def conflicts_with(self, other: _Span) -> bool:
        # Two edits at the same place (two insertions, or an insertion where a replacement
        # starts) have no defined order; otherwise only a real overlap conflicts, so adjacent
        # edits both apply.
        if self.start == other.start:
            return True
        return self.start < other.end and other.start < self.end


class _Lines:
    """Row/column ↔ string offset for one text, for every kind of line ending."""

    def __init__(self, text: str) -> None:
        self.text = text
        breaks = list(_NEWLINE.finditer(text))
        self.starts = [0] + [match.end() for match in breaks]
        self.ends = [match.start() for match in breaks] + [len(text)]
        self.newline = breaks[0].group() if breaks else "\n"

    def offset(self, location: Location) -> int | None:
        """The offset of `location`, or None when it is not inside the text."""
        index = location.row - 1
        column = location.column - 1
        if index == len(self.starts) and column == 0 and self.starts[-1] < len(self.text):
            # Just past a last line without a line ending: where deleting that line ends.
            return len(self.text)
        if not 0 <= index < len(self.starts):
            return None
        if not 0 <= column <= self.ends[index] - self.starts[index]:
            return None
        return self.starts[index] + column

    def span(self, edit: Edit) -> _Span | None:
        start = self.offset(edit.start)
        end = self.offset(edit.end)
        if start is None or end is None or start > end:
            return None
        return _Span(start, end, _NEWLINE.sub(self.newline, edit.content))


def apply_fixes(
    text: str, diagnostics: Sequence[Diagnostic], unsafe_fixes: bool
) -> tuple[str, Counter[str]]:
    """One pass: apply, in diagnostic order, every fix the flags allow whose edits overlap no
    edit accepted before it. Returns the new text and the number of fixes applied per code.

    A fix is applied whole or not at all. Fixes that overlap an accepted one wait for the next
    pass; fixes on a line whose `# noqa` covers their code, fixes with edits outside the text
    and fixes that would change nothing are never applied.
    """
    lines = _Lines(text)
    noqa = NoqaDirectives.from_source(text)
    accepted: list[_Span] = []
    applied: Counter[str] = Counter()
    for diagnostic in diagnostics:
        fix = diagnostic.fix
        if fix is None or not fix.edits or not fix.applies(unsafe_fixes):
            continue
        if any(
            noqa.suppresses(row, diagnostic.code, diagnostic.name)
            for row in _rows_of(diagnostic, fix.edits)
        ):
            continue
        spans = [lines.span(edit) for edit in fix.edits]
        if any(span is None for span in spans):
            continue
        # An edit identical to one already accepted (two fixes adding the same import) is
        # that edit, not a conflict.
        spans = [span for span in spans if span not in accepted]
        if any(
            span.conflicts_with(other)
            for position, span in enumerate(spans)
            for other in [*spans[position + 1:], *accepted]
        ):
            continue
        if all(text[span.start:span.end] == span.content for span in spans):
            continue
        accepted.extend(spans)
        applied[diagnostic.code] += 1
    return _rewrite(text, accepted), applied


def _rows_of(diagnostic: Diagnostic, edits: Sequence[Edit]) -> set[int]:
    """The rows a fix rewrites, and the row its `# noqa` would sit on."""
    rows = {diagnostic.noqa_row or diagnostic.location.row}
    for edit in edits:
        last = edit.end.row
        if edit.end.column == 1 and edit.end.row > edit.start.row:
            last -= 1  # The edit stops at the start of this row and leaves it alone.
        rows.update(range(edit.start.row, last + 1))
    return rows


def _rewrite(text: str, spans: list[_Span]) -> str:
    pieces = []
    position = 0
    for span in sorted(spans):
        pieces.append(text[position:span.start])
        pieces.append(span.content)
        position = span.end
    pieces.append(text[position:])
    return "".join(pieces)


def fix_text(
    text: str,
    filename: str,
    settings: LintSettings,
    unsafe_fixes: bool,
    program: ProgramFacts | None = None,
) -> tuple[str, Counter[str], list[Diagnostic]]:
    """Lint and fix `text` until no applicable fix is left (at most `MAX_PASSES` passes).

    Returns the fixed text, the fixes applied per code, and the diagnostics of the fixed text.
    A pass whose result does not parse is thrown away and fixing stops. Raises `SourceError`
    when `text` itself does not parse.
    """
    result = fix_text_result(text, filename, settings, unsafe_fixes, program)
    return result.text, result.applied, result.remaining


def fix_text_result(
    text: str,
    filename: str,
    settings: LintSettings,
    unsafe_fixes: bool,
    program: ProgramFacts | None = None,
) -> TextFixResult:
    """`fix_text`, also saying why fixing stopped early when a pass was thrown away."""
    analysis = analyse_text(text, filename, settings, program)
    original = text
    applied_total: Counter[str] = Counter()
    reverted = None
    for _ in range(MAX_PASSES):
        candidate, applied = apply_fixes(text, analysis.diagnostics, unsafe_fixes)
        if not applied:
            break
        try:
            parse(candidate)
            # The compiler also rejects what the parser accepts, such as a repeated keyword
            # argument; code that did not compile before (a notebook's top-level `await`) is
            # only held to parsing.
            if not compiles(candidate) and compiles(original):
                raise SourceError("it no longer compiles")
            candidate_analysis = analyse_text(candidate, filename, settings, program)
        except SourceError as error:
            codes = ", ".join(sorted(applied))
            reverted = f"fixes for {codes} produced invalid code ({error.reason}); not applied"
            break
        text, analysis = candidate, candidate_analysis
        applied_total.update(applied)
    return TextFixResult(
        text, applied_total, analysis.diagnostics, reverted, analysis.summary, analysis.asked
    )


def compiles(text: str) -> bool:
    """Whether Python compiles `text` (which rejects some code the parser accepts)."""
    with warnings.catch_warnings():
        # Invalid escape sequences and the like warn at compile time; they are the user's.
        warnings.simplefilter("ignore")
        try:
            compile(text, "<fixed>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return False
    return True


def fix_file(
    path: Path,
    filename: str,
    settings: LintSettings,
    unsafe_fixes: bool,
    write: bool,
    program: ProgramFacts | None = None,
) -> FileFixOutcome:
    """Fix one `.py` file; with `write`, save the result atomically if anything changed.

    A file that cannot be read, decoded, parsed or written back in its own encoding gets an
    `error` (and no `remaining` diagnostics: the error is the finding) and is left untouched.
    """
    outcome = FileFixOutcome(filename=filename, before="", after="")
    try:
        data = read_source(path, settings.limits)
        source = decode(data)
    except OSError as error:
        outcome.error = FileError.unreadable(filename, error)
        return outcome
    except SourceError as error:
        outcome.error = FileError(filename, error.reason, error.location)
        return outcome
    outcome.before = outcome.after = source.text
    try:
        result = fix_text_result(source.text, filename, settings, unsafe_fixes, program)
    except SourceError as error:
        outcome.error = FileError(filename, error.reason, error.location)
        return outcome
    outcome.remaining = result.remaining
    outcome.reverted = result.reverted
    outcome.summary, outcome.asked = result.summary, result.asked
    if result.text == source.text:
        return outcome
    try:
        encoded = _encode(result.text, source, data)
        if write:
            write_atomic(path, encoded)
    except SourceError as error:
        outcome.error = FileError(filename, error.reason)
    except OSError as error:
        outcome.error = FileError(filename, f"cannot write: {error.strerror or error}")
    if outcome.error is not None:
        # The file keeps its old text, which these diagnostics do not describe.
        outcome.remaining = []
        return outcome
    outcome.after = result.text
    outcome.applied = result.applied
    return outcome


def _encode(text: str, source: DecodedSource, original: bytes) -> bytes:
    """`text` in the file's own encoding (a BOM stays, as `utf-8-sig` writes it)."""
    if source.text.encode(source.encoding) != original:
        # Some codecs do not round-trip; writing would change bytes outside the edits.
        raise SourceError(f"cannot write back {source.encoding} byte for byte; not fixed")
    try:
        return text.encode(source.encoding)
    except UnicodeEncodeError as error:
        raise SourceError(f"the fixed text cannot be encoded as {source.encoding}: {error}") from None


# Temporary files are named `.NAME.PID.RANDOM.torchperf-lint.tmp` beside the file they replace,
# so a later run can tell ours from anything else and know which process wrote them.
_TEMPORARY_SUFFIX = ".torchperf-lint.tmp"


def write_atomic(path: Path, data: bytes) -> None:
    """Replace the file at `path` (through a symlink, if it is one) with `data` so that a
    crash leaves either the old or the new file, never half of one.

    The new file keeps the old one's mode, owner and group. What replacing cannot keep is
    refused (an `OSError`, nothing written): a file we may not write (read-only), a file with
    other hard links (they would keep the old text), a file whose owner we cannot give the
    replacement. A temporary file left by a process that was killed mid-write is removed by
    the next write in its directory.
    """
    target = Path(os.path.realpath(path))
    try:
        existing: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        existing = None
    if existing is not None:
        _check_replaceable(target, existing)
        mode = stat.S_IMODE(existing.st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    remove_stale_temporaries(target.parent)
    descriptor, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.{os.getpid()}.", suffix=_TEMPORARY_SUFFIX
    )
    try:
        _lock(descriptor)
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
            if existing is not None:
                _give_owner(stream.fileno(), existing)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(target.parent)


def _check_replaceable(target: Path, existing: os.stat_result) -> None:
    if not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, "the file is read-only; not fixed", str(target))
    if existing.st_nlink > 1:
        raise PermissionError(
            errno.EMLINK,
            f"the file has {existing.st_nlink} hard links, which replacing it would break;"
            " not fixed",
            str(target),
        )


def _give_owner(descriptor: int, existing: os.stat_result) -> None:
    """The replacement gets the old file's owner and group, or the file is not replaced."""
    if not hasattr(os, "fchown"):
        return
    current = os.fstat(descriptor)
    if (current.st_uid, current.st_gid) == (existing.st_uid, existing.st_gid):
        return
    try:
        os.fchown(descriptor, existing.st_uid, existing.st_gid)
    except PermissionError:
        raise PermissionError(
            errno.EPERM, "the file belongs to another user or group; not fixed"
        ) from None


def _lock(descriptor: int) -> None:
    # Held while the temporary file exists: a sweep never removes a file being written.
    if fcntl is not None:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)


def remove_stale_temporaries(directory: Path) -> None:
    """Remove our temporary files in `directory` whose writer is gone (its process no longer
    exists and nothing holds the file's lock): what a SIGKILL mid-write leaves behind."""
    if fcntl is None:
        return
    try:
        names = [name for name in os.listdir(directory) if name.endswith(_TEMPORARY_SUFFIX)]
    except OSError:
        return
    for name in names:
        parts = name[: -len(_TEMPORARY_SUFFIX)].rsplit(".", 2)
        if len(parts) != 3 or not parts[1].isdigit() or _process_exists(int(parts[1])):
            continue
        path = directory / name
        with suppress(OSError):
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(path)
            finally:
                os.close(descriptor)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not every platform can open a directory.
    with suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def unified_diff(filename: str, before: str, after: str) -> str:
    """A unified diff from `a/filename` to `b/filename`, empty when nothing changed."""
    if before == after:
        return ""
    lines = difflib.unified_diff(
        _lines_with_endings(before),
        _lines_with_endings(after),
        fromfile=f"a/{filename}",
        tofile=f"b/{filename}",
    )
    output = []
    for line in lines:
        output.append(line)
        if not _NEWLINE.search(line[-1:]):
            # As `diff` and `git diff` mark a last line without a line ending.
            output.append("\n\\ No newline at end of file\n")
    return "".join(output)


def _lines_with_endings(text: str) -> list[str]:
    lines = _Lines(text)
    rows = [text[start:next_start] for start, next_start in zip(lines.starts, lines.starts[1:])]
    if lines.starts[-1] < len(text):
        rows.append(text[lines.starts[-1]:])
    return rows


def add_noqa_file(
    path: Path, filename: str, settings: LintSettings, program: ProgramFacts | None = None
) -> int:
    """Add `# noqa: CODE` comments for every finding in the file, written atomically.

    Returns how many comments were added or extended. A file that cannot be read, decoded or
    parsed is left alone and counts 0 (linting reports it); a failed write raises `OSError`.
    """
    try:
        data = read_source(path, settings.limits)
        source = decode(data)
        diagnostics = lint_text(source.text, filename, settings, program)
    except (OSError, SourceError):
        return 0
    text, changed = add_noqa_text(source.text, diagnostics)
    if not changed:
        return 0
    try:
        encoded = _encode(text, source, data)
    except SourceError:
        return 0
    write_atomic(path, encoded)
    return changed


def add_noqa_text(text: str, diagnostics: Sequence[Diagnostic]) -> tuple[str, int]:
    """`text` with `# noqa: CODE[, CODE]` on each row the diagnostics report, merged into a
    `# noqa: ...` the row already has; returns the new text and how many rows changed.

    Rows whose end is not the end of a logical or bracketed line (inside a multi-line string,
    or after a backslash continuation) cannot take a comment and are skipped.
    """
    codes_by_row: dict[int, set[str]] = {}
    for diagnostic in diagnostics:
        row = diagnostic.noqa_row or diagnostic.location.row
        codes_by_row.setdefault(row, set()).add(diagnostic.code)
    if not codes_by_row:
        return text, 0
    lines = _Lines(text)
    noqa = NoqaDirectives.from_source(text)
    commentable = _rows_ending_a_line(text)
    spans = []
    for row, codes in sorted(codes_by_row.items()):
        if row not in commentable or row > len(lines.starts):
            continue
        start, end = lines.starts[row - 1], lines.ends[row - 1]
        content = text[start:end]
        comment = noqa.comment_rows.get(row, "")
        extended = add_codes(comment, sorted(codes)) if comment else None
        if extended is not None and content.endswith(comment):
            spans.append(_Span(end - len(comment), end, extended))
        else:
            spans.append(_Span(end, end, f"  # noqa: {', '.join(sorted(codes))}"))
    return _rewrite(text, spans), len(spans)


def _rows_ending_a_line(text: str) -> set[int]:
    """Rows that end in a NEWLINE or NL token: a comment appended there stays a comment."""
    rows = set()
    with suppress(tokenize.TokenError, IndentationError, SyntaxError):
        for token in tokens(text):
            if token.type in (tokenize.NEWLINE, tokenize.NL):
                rows.add(token.start[0])
    return rows
