"""Settings: `[tool.torchperf-lint]` in the nearest `pyproject.toml` (or `torchperf-lint.toml`),
validated, with the command line's options on top.

Each file takes its settings from the configuration nearest to it, so the packages of a
monorepo can differ. `--config FILE` makes one file's settings apply everywhere. Keys are
kebab-case, as in Ruff:

- `select`, `ignore`, `extend-select`: rule codes, code prefixes (`TPL1`, `TPL10`) or `ALL`;
  the more specific selector wins when `select` and `ignore` both match a rule (ties: ignore);
- `exclude` (replaces the default list of skipped names), `extend-exclude` (adds to it);
- `per-file-ignores`: `{glob = [codes...]}`;
- `target-device`: `"auto"`, `"cuda"` or `"cpu"`; `torch-version`: `"2.3"`, the oldest PyTorch
  the code must run on (when it is not set, the project's packaging files say which PyTorch it
  installs: see `torch_requirement`);
- `max-file-size` (bytes) and `max-line-length` (characters): above them a file is reported
  as too large instead of linted.

Globs are Ruff's: a pattern without `/` matches a file or directory name anywhere; one with `/`
matches the path relative to the configuration's directory, where `*` may cross `/`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from torchperf_lint.registry import RuleInfo
from torchperf_lint.settings import LintSettings, RuleOptions
from torchperf_lint.source import DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_LINE_LENGTH, SourceLimits
from torchperf_lint.torch_requirement import DeclaredTorch, declared_torch, newest_before

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on older interpreters
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
OWN_CONFIG = "torchperf-lint.toml"
TOOL_TABLE = "torchperf-lint"
DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    # Jupyter's autosaved copies of the notebooks beside it.
    ".ipynb_checkpoints",
    "__pycache__",
    "__pypackages__",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    # Third-party code copied into the project: not the user's to change.
    "third_party",
    "thirdparty",
    "3rdparty",
    "vendor",
    "_vendor",
    "dependencies",
)
TARGET_DEVICES = ("auto", "cuda", "cpu")
LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude")
LIMIT_KEYS = ("max-file-size", "max-line-length")
KNOWN_KEYS = frozenset(
    (*LIST_KEYS, *LIMIT_KEYS, "per-file-ignores", "target-device", "torch-version")
)


class ConfigError(Exception):
    """Settings that cannot be used; the message names the file (or option) and the key."""


# Rule selection


def resolve_selection(
    select: Sequence[str] | None,
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    source: str = "settings",
) -> tuple[RuleInfo, ...]:
    """The rules `select` (default: the default set) plus `extend_select` minus `ignore` turn on.

    Selectors are codes, prefixes or `ALL`. When a selected and an ignored selector both match
    a rule, the longer (more specific) one decides and `ignore` wins ties, as in Ruff. An
    unknown selector raises `ConfigError` naming it and `source`.
    """
    from torchperf_lint.registry import ALL_RULES

    def strongest(selectors: Iterable[str], rule: RuleInfo) -> int:
        return max((_specificity(s) for s in selectors if _matches(s, rule.code)), default=-1)

    chosen = _validated(select, source, "select") if select is not None else None
    ignored = _validated(ignore, source, "ignore")
    extended = _validated(extend_select, source, "extend-select")
    enabled = []
    for rule in ALL_RULES:
        selected = strongest((*(chosen or ()), *extended), rule)
        if chosen is None and rule.default:
            selected = max(selected, 0)
        if selected > strongest(ignored, rule):
            enabled.append(rule)
    return tuple(enabled)


def _validated(selectors: Sequence[str], source: str, key: str) -> tuple[str, ...]:
    from torchperf_lint.registry import ALL_RULES

    normalized = []
    for selector in selectors:
        upper = selector.strip().upper()
        if not any(_matches(upper, rule.code) for rule in ALL_RULES) and upper != "ALL":
            raise ConfigError(f"{source}: {key}: unknown rule code or prefix {selector!r}")
        normalized.append(upper)
    return tuple(normalized)


def _matches(selector: str, code: str) -> bool:
    return selector == "ALL" or (bool(selector) and code.startswith(selector))


def _specificity(selector: str) -> int:
    return 0 if selector == "ALL" else len(selector)


# Globs


class GlobError(ValueError):
    """A glob that cannot be used: the message says why."""


# The character classes a bracket expression may name (`[[:alpha:]]`), as git's wildmatch and
# POSIX define them, for ASCII.
_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}
# A regular expression that matches nothing.
_NOTHING = "(?!)"


@lru_cache(maxsize=1024)
def glob_regex(pattern: str, star_crosses_slash: bool, git: bool = False) -> re.Pattern[str]:
    """A compiled regex for a glob (see `glob_source`)."""
    return re.compile(glob_source(pattern, star_crosses_slash, git))


def glob_source(pattern: str, star_crosses_slash: bool, git: bool = False) -> str:
    """The regex for a glob: `*`, `?`, `[...]`, and `**` (any number of directories).

    Bracket expressions take ranges, `!`/`^` negation and POSIX classes (`[[:alpha:]]`). A
    range written backwards (`[z-a]`) or an unknown class is a `GlobError` in our own
    settings; with `git`, as git reads a `.gitignore`, it matches nothing instead (an
    unclosed `[` too), and a negated class never matches `/`.
    """
    single = ".*" if star_crosses_slash else "[^/]*"
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
            continue
        if pattern.startswith("**", index):
            parts.append(".*")
            index += 2
            continue
        if char == "*":
            parts.append(single)
        elif char == "?":
            parts.append("[^/]")
        elif char == "[" and (git or "]" in pattern[index + 2 :]):
            regex, index = _bracket_expression(pattern, index, git)
            parts.append(regex)
            continue
        elif char == "\\" and index + 1 < len(pattern):
            index += 1
            parts.append(re.escape(pattern[index]))
        else:
            parts.append(re.escape(char))
        index += 1
    return "".join(parts) + r"\Z"


def _bracket_expression(pattern: str, start: int, git: bool) -> tuple[str, int]:
    """The regex for the bracket expression at `pattern[start]` (a `[`), and the index after
    its closing `]`. Read as git's wildmatch reads it: a `]` right after the `[` (or `[!`) is
    a member, and a backslash escapes the next character."""
    index = start + 1
    negated = index < len(pattern) and pattern[index] in "!^"
    if negated:
        index += 1
    members: list[str] = []
    matches_nothing = False
    first = True
    while True:
        if index >= len(pattern):
            if git:
                return _NOTHING, index
            raise GlobError(f"unclosed character class in {pattern!r}")
        char = pattern[index]
        if char == "]" and not first:
            break
        first = False
        if char == "[" and pattern.startswith(":", index + 1):
            end = pattern.find(":]", index + 2)
            name = pattern[index + 2 : end] if end != -1 else ""
            if name not in _POSIX_CLASSES:
                if not git:
                    raise GlobError(f"unknown character class [:{name}:] in {pattern!r}")
                matches_nothing = True
                index = len(pattern) if end == -1 else end + 2
                continue
            members.append(_POSIX_CLASSES[name])
            index = end + 2
            continue
        if char == "\\" and index + 1 < len(pattern):
            index += 1
            char = pattern[index]
        if pattern.startswith("-", index + 1) and index + 2 < len(pattern) and pattern[index + 2] != "]":
            last_index = index + 2
            last = pattern[last_index]
            if last == "\\" and last_index + 1 < len(pattern):
                last_index += 1
                last = pattern[last_index]
            if char <= last:
                members.append(f"{re.escape(char)}-{re.escape(last)}")
            elif not git:
                raise GlobError(f"invalid range {char}-{last} in {pattern!r}")
            # git: a range written backwards holds nothing.
            index = last_index + 1
            continue
        members.append(re.escape(char))
        index += 1
    end = index + 1
    if matches_nothing:
        return _NOTHING, end
    if negated:
        excluded = "/" if git else ""
        return f"[^{excluded}{''.join(members)}]" if members or excluded else ".", end
    return (f"[{''.join(members)}]" if members else _NOTHING), end


@dataclass(frozen=True)
class PathPattern:
    """A Ruff-style path glob, relative to the directory of the configuration it came from."""

    pattern: str
    root: Path

    def matches(self, path: Path) -> bool:
        """Whether `path` (absolute) matches: by name when the glob has no `/`, else by the
        path relative to `root`."""
        if "/" not in self.pattern.rstrip("/"):
            return bool(glob_regex(self.pattern.rstrip("/"), True).match(path.name))
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            return False
        return bool(glob_regex(self.pattern.strip("/"), True).match(relative))


# One configuration file


@dataclass(frozen=True)
class Config:
    """The validated contents of one configuration (file, or the defaults when there is none)."""

    root: Path
    source: str = "defaults"
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    target_device: str | None = None
    torch_version: tuple[int, int] | None = None
    max_file_size: int | None = None
    max_line_length: int | None = None

    @cached_property
    def excluded(self) -> PathPatterns:
        """What `exclude` and `extend-exclude` match."""
        return PathPatterns((*self.exclude, *self.extend_exclude), self.root)


class PathPatterns:
    """Whether any of some `PathPattern`s (globs, relative to `root`) matches a path: a set of
    names for the globs that are plain names (all the default excludes), one regex for the
    other globs of names and one for the globs of paths: a walk asks this of every entry of
    the tree, and a match per glob per entry was a tenth of a cached run in a large tree."""

    def __init__(self, globs: Sequence[str], root: Path) -> None:
        self.root = root
        by_name = [glob.rstrip("/") for glob in globs if "/" not in glob.rstrip("/")]
        self.names = frozenset(glob for glob in by_name if is_literal(glob))
        self.name_regex = _any_of(
            glob_source(glob, True) for glob in by_name if glob not in self.names
        )
        self.path_regex = _any_of(
            glob_source(glob.strip("/"), True) for glob in globs if "/" in glob.rstrip("/")
        )

    def matches(self, path: Path) -> bool:
        """Whether `path` (absolute) matches any of the globs (as `PathPattern.matches`)."""
        name = path.name
        if name in self.names or (self.name_regex is not None and self.name_regex.match(name)):
            return True
        if self.path_regex is None:
            return False
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            return False
        return bool(self.path_regex.match(relative))


def is_literal(glob: str) -> bool:
    """Whether `glob` matches only itself (it has no `*`, `?`, `[` or `\\`)."""
    return _GLOB_SYNTAX.search(glob) is None


_GLOB_SYNTAX = re.compile(r"[*?\[\\]")


def _any_of(sources: Iterable[str]) -> re.Pattern[str] | None:
    """One regex that matches where any of the regexes `sources` match; None for none."""
    alternatives = [f"(?:{source})" for source in sources]
    return re.compile("|".join(alternatives)) if alternatives else None


def read_config_file(path: Path) -> Config | None:
    """The configuration in `path`; None for a `pyproject.toml` without our table."""
    try:
        with path.open("rb") as stream:
            document = tomllib.load(stream)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    except ValueError as error:  # TOMLDecodeError, or bytes that are not UTF-8
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    if path.name == PYPROJECT:
        tool = document.get("tool", {})
        if not isinstance(tool, dict):
            raise ConfigError(f"{path}: `tool` must be a table, got {tool!r}")
        table = tool.get(TOOL_TABLE)
        if table is None:
            return None
        source = f"{path} [tool.{TOOL_TABLE}]"
    else:
        table = document
        source = str(path)
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: must be a table, got {table!r}")
    return parse_config(table, path.parent.resolve(), source)


def parse_config(table: Mapping[str, object], root: Path, source: str) -> Config:
    """Validate one settings table; every problem raises `ConfigError` naming `source` and key."""
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown key {unknown[0]!r}")
    values: dict[str, object] = {}
    for key in LIST_KEYS:
        if key in table:
            values[key.replace("-", "_")] = tuple(_strings(table[key], source, key))
    for key in ("select", "ignore", "extend_select"):
        if key in values:
            values[key] = _validated(values[key], source, key.replace("_", "-"))
    for key in ("exclude", "extend_exclude"):
        for glob in values.get(key, ()):
            _check_glob(glob, source, key.replace("_", "-"))
    for key in LIMIT_KEYS:
        if key in table:
            values[key.replace("-", "_")] = _positive_integer(table[key], source, key)
    if "per-file-ignores" in table:
        values["per_file_ignores"] = _per_file_ignores(table["per-file-ignores"], source)
    if "target-device" in table:
        values["target_device"] = parse_target_device(table["target-device"], source)
    if "torch-version" in table:
        values["torch_version"] = parse_torch_version(table["torch-version"], source)
    return Config(root=root, source=source, **values)


def _strings(value: object, source: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: {key}: expected a list of strings, got {value!r}")
    return value


def _per_file_ignores(value: object, source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: per-file-ignores: expected a table of glob = [codes]")
    key = "per-file-ignores"
    for glob in value:
        _check_glob(glob, source, key)
    return tuple(
        (glob, _validated(_strings(codes, source, f"{key} {glob!r}"), source, key))
        for glob, codes in value.items()
    )


def _check_glob(glob: str, source: str, key: str) -> None:
    try:
        glob_regex(glob.strip("/"), True)
    except GlobError as error:
        raise ConfigError(f"{source}: {key}: invalid glob {glob!r}: {error}") from None


def _positive_integer(value: object, source: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{source}: {key}: expected a positive integer, got {value!r}")
    return value


def parse_target_device(value: object, source: str) -> str:
    if value not in TARGET_DEVICES:
        raise ConfigError(
            f"{source}: target-device: expected one of {', '.join(TARGET_DEVICES)}, got {value!r}"
        )
    return value


def parse_torch_version(value: object, source: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)\.(\d+)", value) if isinstance(value, str) else None
    if match is None:
        raise ConfigError(f'{source}: torch-version: expected a version like "2.3", got {value!r}')
    return int(match.group(1)), int(match.group(2))


# Command line on top of the files


@dataclass(frozen=True)
class Overrides:
    """Options given on the command line; None means "as the configuration says"."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    target_device: str | None = None
    torch_version: tuple[int, int] | None = None
    config_file: Path | None = None


@dataclass
class Configuration:
    """Settings for any path: the nearest configuration with the command line's options on top.

    Lookups are cached per directory; `ConfigError` is raised for the first broken file met.
    """

    overrides: Overrides = field(default_factory=Overrides)
    cwd: Path = field(default_factory=Path.cwd)
    _nearest: dict[Path, Config] = field(default_factory=dict, init=False, repr=False)
    _settings: dict[Config, tuple[RuleInfo, ...]] = field(
        default_factory=dict, init=False, repr=False
    )
    _declared: dict[Path, DeclaredTorch | None] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.cwd = self.cwd.resolve()
        self._explicit: Config | None = None
        if self.overrides.config_file is not None:
            path = self.overrides.config_file.resolve()
            self._explicit = read_config_file(path) or Config(root=path.parent, source=str(path))
        # Validate the command line's selectors before any file is read.
        resolve_selection(
            self.overrides.select or (),
            self.overrides.ignore,
            self.overrides.extend_select,
            source="command line",
        )

    def config_for(self, path: Path) -> Config:
        """The configuration that governs `path` (a file or a directory)."""
        if self._explicit is not None:
            return self._explicit
        absolute = path if path.is_absolute() else self.cwd / path
        directory = absolute if absolute.is_dir() else absolute.parent
        return self._config_of_directory(directory)

    def _config_of_directory(self, directory: Path) -> Config:
        cached = self._nearest.get(directory)
        if cached is not None:
            return cached
        config = _config_in(directory)
        if config is None:
            parent = directory.parent
            config = (
                Config(root=self.cwd) if parent == directory else self._config_of_directory(parent)
            )
        self._nearest[directory] = config
        return config

    def settings_for(self, path: Path) -> LintSettings:
        """The rules and options that apply to the file at `path`."""
        config = self.config_for(path)
        rules = self._selected(config)
        absolute = path if path.is_absolute() else self.cwd / path
        for glob, codes in config.per_file_ignores:
            if PathPattern(glob, config.root).matches(absolute):
                rules = tuple(r for r in rules if not any(_matches(c, r.code) for c in codes))
        limits = SourceLimits(
            max_file_size=config.max_file_size or DEFAULT_MAX_FILE_SIZE,
            max_line_length=config.max_line_length or DEFAULT_MAX_LINE_LENGTH,
        )
        defaults = RuleOptions()
        options = defaults._replace(
            target_device=self.overrides.target_device
            or config.target_device
            or defaults.target_device,
            torch_version=self.overrides.torch_version
            or config.torch_version
            or defaults.torch_version,
        )
        declared = None if self._torch_configured(config) else self._declared_in(absolute.parent)
        if declared is not None:
            oldest, below = declared.versions
            if oldest is None:  # no floor: the default, unless a cap allows only older releases
                oldest = defaults.torch_version
                if below is not None:
                    oldest = min(oldest, newest_before(below))
            options = options._replace(torch_version=oldest[:2], torch_below=below)
        return LintSettings(rules=rules, options=options, limits=limits)

    def declared_torch(self, path: Path) -> DeclaredTorch | None:
        """The PyTorch the project of `path` declares, which its settings take: the packaging
        files of the nearest folder, from the file's own up to its project's root, that name
        torch. None when `torch-version` is configured, or nothing names torch."""
        absolute = path if path.is_absolute() else self.cwd / path
        if self._torch_configured(self.config_for(absolute)):
            return None
        return self._declared_in(absolute if absolute.is_dir() else absolute.parent)

    def _torch_configured(self, config: Config) -> bool:
        return (self.overrides.torch_version or config.torch_version) is not None

    def _declared_in(self, directory: Path) -> DeclaredTorch | None:
        if directory not in self._declared:
            from torchperf_lint.discovery import marks_a_project  # discovery imports this module

            at_root = marks_a_project(directory) or directory.parent == directory
            inherited = None if at_root else self._declared_in(directory.parent)
            # A README below the root declares only where the packaging above does not.
            declared = declared_torch(directory, readmes=inherited is None)
            self._declared[directory] = declared if declared is not None else inherited
        return self._declared[directory]

    def _selected(self, config: Config) -> tuple[RuleInfo, ...]:
        if config not in self._settings:
            cli = self.overrides
            # As in Ruff, a `--select` on the command line starts the selection afresh.
            if cli.select is not None:
                select, ignore, extend = cli.select, cli.ignore, cli.extend_select
            else:
                select = config.select
                ignore = (*config.ignore, *cli.ignore)
                extend = (*config.extend_select, *cli.extend_select)
            self._settings[config] = resolve_selection(select, ignore, extend, config.source)
        return self._settings[config]

    def is_excluded(self, path: Path) -> bool:
        """Whether `path` or one of its directories (up to its configuration's directory)
        matches `exclude`/`extend-exclude`."""
        absolute = path if path.is_absolute() else self.cwd / path
        config = self.config_for(absolute)
        for candidate in (absolute, *absolute.parents):
            if candidate == config.root or candidate == candidate.parent:
                break
            if config.excluded.matches(candidate):
                return True
        return False


def _config_in(directory: Path) -> Config | None:
    for name in (OWN_CONFIG, PYPROJECT):
        candidate = directory / name
        # os.path: a directory we may not enter has no configuration we can read.
        if os.path.isfile(candidate):
            config = read_config_file(candidate)
            if config is not None:
                return config
    return None
