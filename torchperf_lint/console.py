"""What `check` was asked: its options, and where its output goes and how (`Console`).

Apart from `cli`, which is imported for every command: `--help` has no use for them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import click


@dataclass
class Console:
    """Where the report goes (stdout, or `--output-file`), whether it is coloured, and how much
    is said: everything, the findings only (`--quiet`) or nothing (`--silent`). Errors that
    exit 2 always reach stderr."""

    stream: TextIO = field(default_factory=lambda: sys.stdout)
    color: bool = False
    quiet: bool = False
    silent: bool = False

    def report(self, text: str) -> None:
        """Findings, statistics, a diff: what the run was asked for."""
        if text and not self.silent:
            click.echo(text, file=self.stream, nl=False, color=self.color)

    def summary(self, line: str) -> None:
        """`Found N errors.` and the like."""
        if not (self.quiet or self.silent):
            click.echo(line, file=self.stream, color=self.color)

    def note(self, line: str) -> None:
        """A line about the run, on stderr: a warning, what `--diff` would fix."""
        if not (self.quiet or self.silent):
            click.echo(line, err=True)


def use_color(flag: bool | None, stream: TextIO, to_file: bool) -> bool:
    """`--color`/`--no-color` decide; else `FORCE_COLOR` (https://force-color.org) turns colour
    on and `NO_COLOR` (https://no-color.org) off, FORCE_COLOR winning as in Ruff; else colour
    only on a terminal. A report written to `--output-file` is never coloured unless asked."""
    if flag is not None:
        return flag
    if to_file:
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    return stream.isatty()


@dataclass(frozen=True)
class CheckOptions:
    """The options of `check` that shape the run and its output."""

    output_format: str
    exit_zero: bool
    show_statistics: bool
    jobs: int
    stdin_filename: str | None
    force_exclude: bool
    fix: bool
    unsafe_fixes: bool
    diff: bool
    show_fixes: bool
    exit_non_zero_on_fix: bool
    add_noqa: bool
    fix_only: bool = False
    # Say on stderr how many files were linted and how many replayed from the cache.
    verbose: bool = False
    show_settings: bool = False
    show_files: bool = False
    # Where linting caches results (None: `--no-cache`); relative to the working directory.
    cache_dir: Path | None = None
    console: Console = field(default_factory=Console)

    @property
    def fixing(self) -> bool:
        """Whether the run fixes (or, with `--diff`, shows the fixes) instead of linting."""
        return self.fix or self.fix_only or self.diff
