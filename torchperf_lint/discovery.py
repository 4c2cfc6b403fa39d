"""Which files to lint.

Directories are walked for `*.py` and `*.ipynb`, skipping virtualenvs (any directory holding a
`pyvenv.cfg`), the configured `exclude`/`extend-exclude` globs (by default `.git`, `.venv`,
`venv`, `build`, `dist`, `__pycache__`, `node_modules`, ...) and what git ignores: `.gitignore`
files and the repository's `.git/info/exclude`.
Symbolic links to directories are not followed, so a link loop cannot hang the walk. A path
named on the command line is linted whatever its name, unless `force_exclude` applies the
excludes to it too (pre-commit names every file). A directory that cannot be read is reported
(as `E902`, like a file that cannot be read) and the walk goes on.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from torchperf_lint.config import Configuration, glob_regex, glob_source, is_literal
from torchperf_lint.diagnostics import FileError

SOURCE_SUFFIXES = (".py", ".ipynb")
# The files a project launches its runs with, read for the settings they give a run
# (`program.options`): shell scripts, YAML, JSON, INI and TOML configs, the README's
# commands (a `pyproject.toml` also makes the project a distribution: `program.link`).
LAUNCHER_SUFFIXES = (
    ".sh", ".bash", ".zsh", ".slurm", ".yaml", ".yml", ".json", ".md", ".rst", ".cfg", ".toml"
)
# A launcher larger than this is data (annotations, vocabularies), not a config.
LAUNCHER_MAX_BYTES = 256 * 1024
_WALKED_SUFFIXES = SOURCE_SUFFIXES + LAUNCHER_SUFFIXES
GITIGNORE = ".gitignore"


@dataclass(frozen=True)
class IgnorePattern:
    """One line of a `.gitignore`, relative to the directory holding it."""

    regex_source: str
    negated: bool
    directory_only: bool
    anchored: bool

    @classmethod
    def parse(cls, line: str) -> IgnorePattern | None:
        """The pattern on `line`; None for blank lines and comments."""
        line = line.rstrip("\n").rstrip("\r")
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        if not line or line.startswith("#"):
            return None
        negated = line.startswith("!")
        if negated or line.startswith(("\\!", "\\#")):
            line = line[1:]
        directory_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            return None
        # A slash at the start or in the middle anchors the pattern to the .gitignore's folder.
        anchored = "/" in line
        return cls(line.lstrip("/"), negated, directory_only, anchored)

    def matches(self, relative: str, is_dir: bool) -> bool:
        """Whether the path `relative` (POSIX, relative to the .gitignore's folder) matches."""
        if self.directory_only and not is_dir:
            return False
        regex = glob_regex(self.regex_source, False, git=True)
        if self.anchored:
            return bool(regex.match(relative))
        return bool(regex.match(relative.rsplit("/", 1)[-1]))


@dataclass(frozen=True)
class IgnoreFile:
    """The patterns of one `.gitignore` and the folder they are relative to."""

    directory: Path
    patterns: tuple[IgnorePattern, ...]

    @classmethod
    def read(cls, directory: Path, path: Path | None = None) -> IgnoreFile | None:
        """The patterns of `path` (default: the `.gitignore` in `directory`), relative to
        `directory`; None when there is no such file or it has no pattern."""
        try:
            text = (path or directory / GITIGNORE).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        patterns = tuple(p for p in map(IgnorePattern.parse, text.splitlines()) if p)
        return cls(directory, patterns) if patterns else None

    @cached_property
    def _without_negation(self) -> _AnyPattern | None:
        """Without `!` lines the order of the lines does not matter: any match ignores."""
        if any(pattern.negated for pattern in self.patterns):
            return None
        return _AnyPattern(self.patterns)

    def verdict(self, relative: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by `!`) or None (no pattern speaks of the path
        `relative` to the `.gitignore`'s folder, in POSIX form)."""
        if self._without_negation is not None:
            return True if self._without_negation.matches(relative, is_dir) else None
        for pattern in reversed(self.patterns):
            if pattern.matches(relative, is_dir):
                return not pattern.negated
        return None


class _AnyPattern:
    """Whether any of some `.gitignore` patterns matches, with one set of plain names (most
    lines of a `.gitignore`) and one regular expression per kind of pattern instead of one per
    line (a `.gitignore` of a hundred lines, matched against every file of a large tree, took
    a third of a cached run; compiling it as one expression still took a tenth)."""

    def __init__(self, patterns: Sequence[IgnorePattern]) -> None:
        def any_of(
            anchored: bool, directories: bool
        ) -> tuple[frozenset[str], re.Pattern[str] | None]:
            kind = [
                p.regex_source
                for p in patterns
                if p.anchored == anchored and p.directory_only == directories
            ]
            literal = frozenset(source for source in kind if is_literal(source))
            sources = [
                glob_source(source, False, git=True) for source in kind if source not in literal
            ]
            return literal, re.compile("|".join(f"(?:{s})" for s in sources)) if sources else None

        self.paths = any_of(anchored=True, directories=False)
        self.names = any_of(anchored=False, directories=False)
        self.directory_paths = any_of(anchored=True, directories=True)
        self.directory_names = any_of(anchored=False, directories=True)

    def matches(self, relative: str, is_dir: bool) -> bool:
        name = relative.rsplit("/", 1)[-1]
        checks = [(self.paths, relative), (self.names, name)]
        if is_dir:
            checks += [(self.directory_paths, relative), (self.directory_names, name)]
        return any(
            text in literal or (regex is not None and regex.match(text))
            for (literal, regex), text in checks
        )


def is_gitignored(
    name: str, is_dir: bool, ignore_files: Sequence[IgnoreFile], folders: Sequence[str]
) -> bool:
    """Whether the entry `name` of a folder is ignored, the folder being `folders[i]` relative
    to `ignore_files[i]`'s (`""`, or ending with `/`). Git's precedence: the deepest
    `.gitignore` that speaks of the entry decides, and within one file the last matching line
    does."""
    for ignore_file, folder in zip(reversed(ignore_files), reversed(folders)):
        verdict = ignore_file.verdict(folder + name, is_dir)
        if verdict is not None:
            return verdict
    return False


def _folder_in(directory: Path, ignore_file: IgnoreFile) -> str:
    """Where `directory` is relative to the folder of `ignore_file`, as `is_gitignored` takes
    it."""
    relative = directory.relative_to(ignore_file.directory).as_posix()
    return "" if relative == "." else relative + "/"


def ancestor_ignore_files(directory: Path) -> tuple[IgnoreFile, ...]:
    """What git ignores above `directory`: the repository's `.git/info/exclude` (git consults
    it last, so it comes first), then the `.gitignore` files above `directory` within its
    work tree, outermost first."""
    found = []
    for ancestor in (directory, *directory.parents):
        if ancestor != directory:
            ignore_file = IgnoreFile.read(ancestor)
            if ignore_file:
                found.append(ignore_file)
        if os.path.exists(ancestor / ".git"):
            exclude = _info_exclude(ancestor)
            return (*([exclude] if exclude else []), *reversed(found))
    return ()


def _info_exclude(work_tree: Path) -> IgnoreFile | None:
    """The `info/exclude` of the repository whose work tree is `work_tree`; a linked worktree
    or submodule (`.git` is a file naming the git directory) shares its common directory's."""
    git = work_tree / ".git"
    git_dir = git
    if git.is_file():
        try:
            pointer = git.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if not pointer.startswith("gitdir:"):
            return None
        git_dir = (work_tree / pointer[len("gitdir:") :].strip()).resolve()
        try:
            common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
            git_dir = (git_dir / common).resolve()
        except OSError:
            pass  # Not a linked worktree: the git directory holds its own info/.
    return IgnoreFile.read(work_tree, git_dir / "info" / "exclude")


def is_virtualenv(directory: Path) -> bool:
    # os.path, not Path.is_file: a directory we may not enter is simply not a virtualenv.
    return os.path.isfile(directory / "pyvenv.cfg")


@dataclass
class Discovery:
    """The files to lint, sorted and without duplicates, and the directories that could not
    be read (reported under their name relative to the working directory)."""

    files: list[Path] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    # The launchers in the directories walked (`LAUNCHER_SUFFIXES`), read by the program only.
    launchers: list[Path] = field(default_factory=list)


def discover(
    paths: Sequence[Path], configuration: Configuration, force_exclude: bool = False
) -> Discovery:
    """The files to lint under `paths`, and the directories that could not be read."""
    found: set[Path] = set()
    launchers: set[Path] = set()
    unreadable: dict[Path, OSError] = {}
    for given in paths:
        absolute = given if given.is_absolute() else configuration.cwd / given
        if os.path.isdir(absolute):
            if force_exclude and configuration.is_excluded(absolute):
                continue
            inherited = ancestor_ignore_files(absolute)
            for path in _walk(absolute, configuration, inherited, unreadable):
                (launchers if path.name.endswith(LAUNCHER_SUFFIXES) else found).add(path)
        elif not (force_exclude and configuration.is_excluded(absolute)):
            # Missing files are kept: linting reports them as unreadable.
            found.add(absolute)
    errors = [
        _directory_error(directory, error, configuration.cwd)
        for directory, error in sorted(unreadable.items())
    ]
    return Discovery(sorted(found), errors, sorted(launchers))


def _directory_error(directory: Path, error: OSError, cwd: Path) -> FileError:
    try:
        name = str(directory.relative_to(cwd))
    except ValueError:
        name = str(directory)
    return FileError(name, f"cannot read directory: {error.strerror or error}")


# What marks the top of a project: the program the linter sees is every file below it.
PROJECT_MARKERS = ("pyproject.toml", "torchperf-lint.toml", "setup.py", "setup.cfg", ".git")


def marks_a_project(directory: Path) -> bool:
    """Whether `directory` holds a project marker. A `setup.py` beside an `__init__.py` is a
    module of a package (`dinov2/eval/setup.py`, which sets up a model) unless it builds a
    distribution (its text names `setuptools` or `distutils`)."""
    for marker in PROJECT_MARKERS:
        if not os.path.exists(directory / marker):
            continue
        if marker != "setup.py" or not os.path.exists(directory / "__init__.py"):
            return True
        try:
            text = (directory / marker).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "setuptools" in text or "distutils" in text:
            return True
    return False


def project_root(path: Path) -> Path | None:
    """The nearest folder at or above `path` with a project marker (`pyproject.toml`,
    `setup.py`, `.git`, ...), or None outside any project."""
    start = path if path.is_dir() else path.parent
    for candidate in (start, *start.parents):
        if marks_a_project(candidate):
            return candidate
    return None


def program_files(
    paths: Sequence[Path], configuration: Configuration, discovered: Discovery | None = None
) -> list[Path]:
    """Every file of the projects `paths` belong to (their project roots, with the same
    excludes), and their launchers: the program whose facts the linted files are judged by.
    A path outside any project is its own program (a file in `/tmp` does not make all of
    `/tmp` one).
    `discovered`, what `discover(paths, configuration)` found, is taken as it is when `paths`
    are their own project roots (`torchperf-lint .` at the top of a project), not walked again."""
    roots = set()
    absolute_paths = set()
    for given in paths:
        absolute = given if given.is_absolute() else configuration.cwd / given
        absolute_paths.add(absolute)
        roots.add(project_root(absolute) or absolute)
    if discovered is not None and roots == absolute_paths and all(map(os.path.isdir, roots)):
        return [*discovered.files, *discovered.launchers]
    found = discover(sorted(roots), configuration)
    return [*found.files, *found.launchers]


def _walk(
    directory: Path,
    configuration: Configuration,
    ignore_files: tuple[IgnoreFile, ...],
    unreadable: dict[Path, OSError],
) -> Iterator[Path]:
    own = IgnoreFile.read(directory)
    if own:
        ignore_files = (*ignore_files, own)
    excluded = configuration.config_for(directory).excluded
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError as error:
        unreadable[directory] = error
        return
    folders = [_folder_in(directory, ignore_file) for ignore_file in ignore_files]
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        # Neither a directory, a source nor a launcher (`Path.suffix`: `.py` alone has
        # none): nothing to ask of it (most files of a tree).
        if not is_dir and (
            not entry.name.endswith(_WALKED_SUFFIXES) or entry.name in SOURCE_SUFFIXES
        ):
            continue
        try:
            linked_dir = not is_dir and entry.is_symlink() and entry.is_dir()
        except OSError:
            linked_dir = False
        path = Path(entry.path)
        if linked_dir or excluded.matches(path):
            continue
        if is_gitignored(entry.name, is_dir, ignore_files, folders) and (
            is_dir or not entry.name.endswith(LAUNCHER_SUFFIXES)
        ):
            continue  # a launcher is read even when ignored: a run script of the user's
        if is_dir:
            if not is_virtualenv(path):
                yield from _walk(path, configuration, ignore_files, unreadable)
        else:
            yield path
