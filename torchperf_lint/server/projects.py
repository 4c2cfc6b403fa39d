"""The projects whose files are open in the editor, each with its settings and its warm program.

A file belongs to the project of its nearest project marker (`discovery.project_root`), is
named there by its path relative to the project's root, and takes its settings from the
nearest configuration exactly as the CLI run from that root would. The project's program
holds the summary of every project file: the open ones from their buffers, the others from
disk. Files excluded by the configuration (what `--force-exclude` skips) get no diagnostics
and stay out of the program.

A project is read from disk only after the first file opened in it has been linted on its
own, so that the first diagnostics do not wait for the whole project to be parsed.

Nothing here speaks LSP: `protocol.py` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from torchperf_lint.config import ConfigError, Configuration
from torchperf_lint.diagnostics import Diagnostic, FileError, FileResult
from torchperf_lint.discovery import LAUNCHER_SUFFIXES, SOURCE_SUFFIXES, program_files, project_root
from torchperf_lint.engine import LintSettings, parse
from torchperf_lint.program.link import ProgramFacts
from torchperf_lint.program.locate import locate_related
from torchperf_lint.program.session import ProgramSession
from torchperf_lint.reparse import EditedText
from torchperf_lint.runner import summarize_file
from torchperf_lint.server.documents import NotebookSource, PythonSource, read_source


@dataclass
class Linted:
    """One lint of an open file: the source linted, its name in its program, the settings
    (None: not linted, the file is excluded or its configuration is broken), and what it
    gave: findings with located related calls, and a file error (E902) or configuration
    error, if any."""

    source: PythonSource | NotebookSource
    name: str
    settings: LintSettings | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: FileError | None = None
    config_error: str | None = None
    # The program it was linted in, and the folder its files are named from.
    program: ProgramFacts | None = None
    root: Path | None = None


class Project:
    """One project: its root, configuration, program, and the files open in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.configuration = Configuration(cwd=root)
        self.session = ProgramSession()
        self.loaded = False
        self.open: dict[str, PythonSource | NotebookSource] = {}
        # The last parse of each open Python file, re-used for its next text.
        self.edited: dict[str, EditedText] = {}

    def name_of(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def path_of(self, name: str) -> Path:
        return self.root / name

    def lint(self, path: Path, source: PythonSource | NotebookSource) -> Linted:
        """Lint the open file at `path` as part of the program, which takes its summary."""
        name = self.name_of(path)
        try:
            excluded = self.configuration.is_excluded(path)
            settings = None if excluded else self.configuration.settings_for(path)
        except ConfigError as error:
            return Linted(source, name, None, config_error=str(error))
        if settings is None:
            self.close(name)
            return Linted(source, name, None)
        self.open[name] = source
        if isinstance(source, PythonSource):
            edited = self.edited.setdefault(name, EditedText(parse))
            analysis = self.session.analyse(
                name, lambda link: source.analyse(name, settings, link, edited)
            )
        else:
            analysis = self.session.analyse(name, lambda link: source.analyse(name, settings, link))
        result = analysis.result
        locate_related([result], self._read)
        return Linted(
            source,
            name,
            settings,
            result.diagnostics,
            result.error,
            program=self.session.program,
            root=self.root,
        )

    def _read(self, name: str):
        """A program file's Python, and the (cell, row) of its rows for a notebook: from the
        editor when the file is open, else from disk."""
        source = self.open.get(name) or read_source(self.path_of(name))
        if source is None:
            return None
        if isinstance(source, NotebookSource):
            return source.python(), source.row_in_cell
        return source.python(), None

    def load(self) -> None:
        """Read the summaries of the project's files that are not open (none while the
        configuration is broken: its open files report it)."""
        self.loaded = True
        try:
            paths = program_files([self.root], self.configuration)
        except ConfigError:
            return
        for path in paths:
            name = self.name_of(path)
            if name not in self.open:
                self.session.update(name, summarize_file(path))

    def close(self, name: str) -> None:
        """The file is no longer open: its summary is the one of its file on disk again."""
        self.edited.pop(name, None)
        if self.open.pop(name, None) is None:
            return
        self.session.forget(name)
        self.changed_on_disk(self.path_of(name))

    def changed_on_disk(self, path: Path) -> None:
        """A file changed, appeared or disappeared on disk (open files keep their buffer)."""
        name = self.name_of(path)
        if name in self.open or path.suffix not in (*SOURCE_SUFFIXES, *LAUNCHER_SUFFIXES):
            return
        try:
            excluded = self.configuration.is_excluded(path)
        except ConfigError:
            excluded = True
        self.session.update(name, None if excluded else summarize_file(path))

    def stale(self) -> list[Path]:
        """The open files whose findings read answers the program now gives differently."""
        return [self.path_of(name) for name in self.session.stale() if name in self.open]


class Projects:
    """The projects of the files open in the editor, by root."""

    def __init__(self) -> None:
        self.by_root: dict[Path, Project] = {}

    def project_of(self, path: Path) -> Project:
        root = project_root(path)
        if root not in self.by_root:
            self.by_root[root] = Project(root)
        return self.by_root[root]

    def forget_all(self) -> None:
        """Drop every project (a configuration changed): they are read again when used."""
        self.by_root.clear()


def lint_detached(name: str, source: PythonSource | NotebookSource) -> Linted:
    """A buffer without a file (an unsaved, untitled one): linted on its own, with the
    settings of the working directory."""
    configuration = Configuration()
    try:
        settings = configuration.settings_for(configuration.cwd / name)
    except ConfigError as error:
        return Linted(source, name, None, config_error=str(error))
    result: FileResult = source.analyse(name, settings, None).result
    return Linted(source, name, settings, result.diagnostics, result.error)
