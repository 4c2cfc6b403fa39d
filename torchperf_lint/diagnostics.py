"""The data every other layer exchanges: locations, edits, fixes and diagnostics.

Rows and columns are 1-based and count Unicode code points, as in Ruff's JSON output.

The immutable records are named tuples rather than frozen dataclasses: a dataclass compiles
its generated methods when its module is imported, about 0.7 ms a class on Python 3.11, which
every command pays (even a run whose files are all cached), and a tuple is quicker to build
when the cache replays thousands of findings.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NamedTuple


class Applicability(str, enum.Enum):
    """How freely a fix may be applied (Ruff's safety model)."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


class Location(NamedTuple):
    """A 1-based row and a 1-based column counted in code points."""

    row: int
    column: int


class Edit(NamedTuple):
    """Replace the text between `start` (inclusive) and `end` (exclusive) with `content`."""

    start: Location
    end: Location
    content: str


class Fix(NamedTuple):
    """A rewrite that resolves one diagnostic: a set of non-overlapping edits."""

    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]

    def applies(self, unsafe_fixes: bool) -> bool:
        """Whether `--fix` (with or without `--unsafe-fixes`) would apply this fix."""
        if self.applicability is Applicability.SAFE:
            return True
        return unsafe_fixes and self.applicability is Applicability.UNSAFE


class Related(NamedTuple):
    """Another place that explains a finding: in a per-step helper, the call from the training
    loop that runs it every step (SARIF `relatedLocations`, JSON `related`)."""

    filename: str
    location: Location | None
    message: str
    # Before it is located: the ordinal of the call among the file's calls (source order).
    call: int | None = None


class Diagnostic(NamedTuple):
    """One finding of one rule in one file (or one notebook cell)."""

    code: str
    name: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Fix | None = None
    noqa_row: int | None = None
    cell: int | None = None
    url: str | None = None
    related: tuple[Related, ...] = ()

    @property
    def sort_key(self) -> tuple:
        return (self.filename, self.cell or 0, self.location, self.code)


# Files (and notebook cells) that cannot be read, decoded or parsed are reported under this
# code, after Ruff's `E902 io-error`.
FILE_ERROR_CODE = "E902"
FILE_ERROR_NAME = "file-error"


class FileError(NamedTuple):
    """A file that could not be linted: unreadable, undecodable or unparsable (or a notebook's
    cell that could not, when the rest of the notebook was)."""

    filename: str
    reason: str
    location: Location | None = None
    # In a notebook, the cell `location` is relative to (a syntax error in that cell).
    cell: int | None = None

    @classmethod
    def unreadable(cls, filename: str, error: OSError) -> FileError:
        """The file could not be read (missing, a directory, no permission, a symlink loop)."""
        return cls(filename, f"cannot read: {error.strerror or error}")

    @property
    def sort_key(self) -> tuple:
        return (self.filename, self.cell or 0, self.location or Location(0, 0), "")

    def as_diagnostic(self) -> Diagnostic:
        """The error as a diagnostic (at 1:1 when it has no position), so every format lists it
        in its place."""
        location = self.location or Location(1, 1)
        return Diagnostic(
            code=FILE_ERROR_CODE,
            name=FILE_ERROR_NAME,
            message=self.reason,
            cell=self.cell,
            filename=self.filename,
            location=location,
            end_location=location,
        )


@dataclass
class FileResult:
    """Everything the linter learnt about one file."""

    filename: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: FileError | None = None
