"""Skip files that have not changed: their findings are replayed from the cache.

An entry is keyed by a hash of everything the result depends on: the file's bytes, the name
it is reported under, the tool's version and the settings (the selected rule codes and the
rule options). A hit therefore needs no validation, only the file's bytes, which are read
anyway. Each entry is one small JSON file named by its key, written atomically, so parallel
workers never see half an entry and never need a lock. Anything unreadable in the cache
(corrupt, foreign, from another format) is a miss, never an error.

A file's entry also holds its summary for the program layer and the program answers its
findings read: the findings are replayed only while the linked program gives the same answers
(the runner checks; a file whose answers changed is linted again). Files the program reads but
that are not linted have summary-only entries, keyed by their bytes alone.

Only linting reads and writes the cache; `--fix`, `--diff` and `--add-noqa` always lint afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from torchperf_lint import __version__
from torchperf_lint.diagnostics import (
    Applicability,
    Diagnostic,
    Edit,
    FileError,
    FileResult,
    Fix,
    Location,
    Related,
)
from torchperf_lint.engine import Analysis, LintSettings
from torchperf_lint.program.link import ProgramFacts
from torchperf_lint.program.summary import SUMMARY_FORMAT, ModuleSummary

if TYPE_CHECKING:
    from torchperf_lint.runner import FileJob

DEFAULT_CACHE_DIR = ".torchperf_lint_cache"
# Bump when the entry layout changes: older entries then simply miss.
FORMAT = 2
_GITIGNORE = "# Automatically created by torchperf-lint.\n*\n"
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by torchperf-lint.\n"
)


@lru_cache(maxsize=64)
def settings_fingerprint(settings: LintSettings) -> str:
    """The settings as text: rule codes and options, so that any change misses."""
    codes = ",".join(rule.code for rule in settings.rules)
    return f"{codes}|{settings.options!r}"


@dataclass(frozen=True)
class Cache:
    """Entries under `directory` (one subdirectory per tool version and entry format)."""

    directory: Path

    @property
    def entries(self) -> Path:
        return self.directory / f"{__version__}-{FORMAT}"

    def key(self, data: bytes, filename: str, settings: LintSettings) -> str:
        digest = hashlib.blake2b(data, digest_size=20)
        digest.update(b"\0" + filename.encode("utf-8", "surrogatepass"))
        digest.update(b"\0" + settings_fingerprint(settings).encode("utf-8"))
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.entries / key[:2] / f"{key}.json"

    def summary_key(self, data: bytes) -> str:
        digest = hashlib.blake2b(data, digest_size=20)
        digest.update(f"\0summary-{SUMMARY_FORMAT}".encode())
        return digest.hexdigest()

    def get(self, key: str, filename: str) -> Analysis | None:
        """The analysis stored under `key`, or None when there is none or it cannot be used."""
        record = self.read(key)
        if record is None:
            return None
        try:
            summary = record["summary"]
            return Analysis(
                _result(record, filename),
                None if summary is None else ModuleSummary.from_json(summary),
                dict(record["asked"]),
                replayed=True,
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def put(self, key: str, analysis: Analysis) -> None:
        """Store `analysis`; a cache that cannot be written is silently not used."""
        record = _record(analysis.result)
        record["summary"] = None if analysis.summary is None else analysis.summary.to_json()
        record["asked"] = analysis.asked
        self.write(key, record)

    def read(self, key: str) -> dict | None:
        """The JSON record stored under `key`, or None."""
        try:
            with open(self._path(key), "rb") as stream:
                record = json.loads(stream.read())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def write(self, key: str, record: dict) -> None:
        """Store a JSON record under `key`, atomically; a cache that cannot be written is
        silently not used."""
        path = self._path(key)
        with suppress(OSError):
            self._create_directory()
            path.parent.mkdir(exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            try:
                with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
                    json.dump(record, stream, separators=(",", ":"))
                os.replace(temporary, path)
            except BaseException:
                with suppress(OSError):
                    os.unlink(temporary)
                raise

    def _create_directory(self) -> None:
        if self.entries.is_dir():
            return
        self.entries.mkdir(parents=True, exist_ok=True)
        # As Ruff's cache: invisible to git and to backup tools.
        for name, content in (("CACHEDIR.TAG", _CACHEDIR_TAG), (".gitignore", _GITIGNORE)):
            marker = self.directory / name
            if not marker.exists():
                marker.write_text(content, encoding="utf-8")


# Entries are JSON, not pickle: a cache directory is a file anyone may drop into a checkout,
# and reading it must never run code.


def _record(result: FileResult) -> dict[str, object]:
    error = result.error
    return {
        "diagnostics": [_diagnostic_record(d) for d in result.diagnostics],
        "error": None
        if error is None
        else {
            "reason": error.reason,
            "location": _location_record(error.location),
            "cell": error.cell,
        },
    }


def _diagnostic_record(diagnostic: Diagnostic) -> list[object]:
    fix = diagnostic.fix
    return [
        diagnostic.code,
        diagnostic.name,
        diagnostic.message,
        _location_record(diagnostic.location),
        _location_record(diagnostic.end_location),
        None
        if fix is None
        else [
            fix.applicability.value,
            fix.message,
            [
                [_location_record(e.start), _location_record(e.end), e.content]
                for e in fix.edits
            ],
        ],
        diagnostic.noqa_row,
        diagnostic.cell,
        diagnostic.url,
        [
            [item.filename, _location_record(item.location), item.message, item.call]
            for item in diagnostic.related
        ],
    ]


def _location_record(location: Location | None) -> list[int] | None:
    return None if location is None else [location.row, location.column]


def _result(record: dict, filename: str) -> FileResult:
    error = record["error"]
    return FileResult(
        filename=filename,
        diagnostics=[_diagnostic(item, filename) for item in record["diagnostics"]],
        error=None
        if error is None
        else FileError(
            filename, str(error["reason"]), _location(error["location"]), error.get("cell")
        ),
    )


def _diagnostic(item: list, filename: str) -> Diagnostic:
    code, name, message, start, end, fix, noqa_row, cell, url, related = item
    if not all(isinstance(text, str) for text in (code, name, message)):
        raise TypeError("code, name and message are strings")
    return Diagnostic(
        code=code,
        name=name,
        message=message,
        filename=filename,
        location=_location(start),
        end_location=_location(end),
        fix=None
        if fix is None
        else Fix(
            applicability=Applicability(fix[0]),
            message=fix[1],
            edits=tuple(Edit(_location(a), _location(b), content) for a, b, content in fix[2]),
        ),
        noqa_row=noqa_row,
        cell=cell,
        url=url,
        related=tuple(
            Related(str(file), _location(at), str(text), call) for file, at, text, call in related
        ),
    )


def _location(pair: list[int] | None) -> Location | None:
    if pair is None:
        return None
    row, column = pair
    if not isinstance(row, int) or not isinstance(column, int):
        raise TypeError("a location is two integers")
    return Location(row, column)


def analyse_cached(cache: Cache, job: FileJob, program: ProgramFacts | None) -> Analysis:
    """`runner.analyse_one` through the cache. Without a program (the first phase) an entry
    is replayed whatever answers it read (the runner checks them); with one, only when they
    are the program's. A new analysis is stored; an unreadable file is reported, not stored."""
    from torchperf_lint.runner import analyse_one

    try:
        data = job.path.read_bytes()
    except OSError as error:
        name = job.display_name
        return Analysis(FileResult(name, error=FileError.unreadable(name, error)))
    key = cache.key(data, job.display_name, job.settings)
    cached = cache.get(key, job.display_name)
    if cached is not None and (
        program is None
        or all(program.answer(job.display_name, q) == a for q, a in cached.asked.items())
    ):
        return cached
    analysis = analyse_one(job.path, job.display_name, job.settings, data, program)
    cache.put(key, analysis)
    return analysis


def summary_cached(cache: Cache, path: Path) -> ModuleSummary | None:
    """`runner.summarize_file` through the cache, keyed by the file's bytes alone."""
    from torchperf_lint.runner import summarize_file

    try:
        data = path.read_bytes()
    except OSError:
        return None
    key = cache.summary_key(data)
    record = cache.read(key)
    if record is not None:
        with suppress(ValueError, KeyError, TypeError, AttributeError):
            summary = record["summary"]
            return None if summary is None else ModuleSummary.from_json(summary)
    summary = summarize_file(path)
    cache.write(key, {"summary": None if summary is None else summary.to_json()})
    return summary
