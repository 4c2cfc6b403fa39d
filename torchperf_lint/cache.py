"""Skip files that have not changed: their findings are replayed from the cache.

An entry is keyed by a hash of everything the result depends on: the file's bytes, the name
it is reported under, the tool's version and code and the settings (the selected rule codes and the
rule options). A hit therefore needs no validation, only the file's bytes, which are read
anyway. Each entry is one small JSON file named by its key, written atomically, so parallel
workers never see half an entry and never need a lock. Anything unreadable in the cache
(corrupt, foreign, from another format, not signed with the user's key) is a miss, never an
error.

A file's entry also holds the digest of its summary for the program layer and the program
answers its findings read: the findings are replayed only while the linked program gives the
same answers (the runner checks; a file whose answers changed is linted again). Files the
program reads but that are not linted have summary-only entries, keyed by their bytes alone.
The summaries themselves are entries of their own, keyed by their digests: most of what the
cache holds, read only when the program is linked.

A whole run has a verdict entry too, keyed by the keys of every file it reads (the linted
files' entry keys, the other files' summary keys): the results of the run, their call paths
located. When no file changed it is replayed as it is, without reading the files' entries,
linking the program or importing LibCST. And a program's answers to the files' questions are
kept by the digests of all its summaries: an edit that changes no summary (a comment, say)
relints the edited file and links nothing (nor reads the other files' summaries).

The files' bytes are hashed only when their stamps (size, modification and change times,
inode) changed since the last run (`FileDigests`): an unchanged project, and the linter's own
code, are only `stat`ed.

Only linting reads and writes the cache; `--fix`, `--diff` and `--add-noqa` always lint afresh.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from torchperf_lint import __version__
from torchperf_lint.analysis import Analysis
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
from torchperf_lint.settings import LintSettings
from torchperf_lint.source import SourceError, SourceLimits, check_file_size, read_source

if TYPE_CHECKING:
    from torchperf_lint.program.link import Answer, ProgramFacts
    from torchperf_lint.program.summary import ModuleSummary
    from torchperf_lint.runner import FileJob

DEFAULT_CACHE_DIR = ".torchperf_lint_cache"
# Bump when the entry layout changes: older entries then simply miss.
FORMAT = 6
_GITIGNORE = "# Automatically created by torchperf-lint.\n*\n"
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by torchperf-lint.\n"
)


# Packages whose code never changes a file's findings.
_NOT_LINTING = frozenset({"verify", "server"})


def _code_files() -> list[tuple[str, str]]:
    """The linter's own source files that can change findings: (name in the package, path),
    sorted by name."""
    found = []
    pending = [("", os.path.dirname(os.path.realpath(__file__)))]
    while pending:
        prefix, directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _NOT_LINTING and entry.name != "__pycache__":
                        pending.append((f"{prefix}{entry.name}/", entry.path))
                elif entry.name.endswith(".py"):
                    found.append((prefix + entry.name, entry.path))
    return sorted(found)


@cache
def linter_fingerprint(digests: FileDigests) -> str:
    """A hash of the linter's own code: an editable install or a development build never
    replays findings that older rules produced, though its version string is unchanged. The
    files' digests come from `digests`: unchanged files are not read again."""
    fingerprint = hashlib.blake2b(digest_size=8)
    for name, path in _code_files():
        fingerprint.update(name.encode() + b"\0")
        with suppress(OSError):
            fingerprint.update(digests.digest(path).encode())
    return fingerprint.hexdigest()


@lru_cache(maxsize=64)
def settings_fingerprint(settings: LintSettings) -> str:
    """The settings as text: rule codes and options, so that any change misses."""
    codes = ",".join(rule.code for rule in settings.rules)
    return f"{codes}|{settings.options!r}|{settings.limits!r}"


@dataclass(frozen=True)
class Cache:
    """Entries under `directory` (one subdirectory per tool version and entry format).

    Each entry is authenticated with a secret key of the user's, kept outside every checkout
    (`key_path()`): a cache directory committed to a repository, or planted in it, cannot
    forge a result, only miss. Nothing in the cache is reached through a symbolic link: the
    directory, its subdirectories and entries are opened with `O_NOFOLLOW` relative to their
    parent, so a planted link cannot make the linter read or write elsewhere.
    """

    directory: Path

    @property
    def entries(self) -> Path:
        return self.directory / self._entries_name

    @property
    def _entries_name(self) -> str:
        return f"{__version__}-{FORMAT}-{linter_fingerprint(self.digests)}"

    @property
    def digests(self) -> FileDigests:
        """The digests of files' contents, found by their stamps (kept in this cache)."""
        return file_digests(self.directory)

    def key(self, data: bytes, filename: str, settings: LintSettings) -> str:
        return self.key_of_digest(content_digest(data), filename, settings)

    def key_of_digest(self, digest: str, filename: str, settings: LintSettings) -> str:
        """`key` of a file whose bytes have this `content_digest`."""
        key = hashlib.blake2b(digest.encode(), digest_size=20)
        key.update(b"\0" + filename.encode("utf-8", "surrogatepass"))
        key.update(b"\0" + settings_fingerprint(settings).encode("utf-8"))
        return key.hexdigest()

    def summary_key(self, digest: str) -> str:
        """The key of a summary-only entry: the file's bytes (their `content_digest`) alone.
        (A new layout of summaries needs no key of its own: it is new code, whose entries live
        under the new fingerprint.)"""
        return hashlib.blake2b(digest.encode() + b"\0summary", digest_size=20).hexdigest()

    def program_key(self, files: Sequence[tuple[str, str]]) -> str:
        """The key of the verdict on a run that reads these files: (display name, key of the
        file's entry or summary entry) each, the linted files first, in the run's order."""
        digest = hashlib.blake2b(b"program", digest_size=20)
        for name, key in files:
            digest.update(b"\0" + name.encode("utf-8", "surrogatepass") + b"\0" + key.encode())
        return digest.hexdigest()

    def get_results(self, key: str) -> list[FileResult] | None:
        """The results of the run stored under `key` (see `program_key`), or None."""
        record = self.read(key)
        if record is None:
            return None
        try:
            return [_result(result, str(name)) for name, result in record["results"]]
        except Exception:  # noqa: BLE001 - anything malformed is a miss
            return None

    def put_results(self, key: str, results: Sequence[FileResult]) -> None:
        """Store the results of a run under `key` (see `program_key`)."""
        self.write(key, {"results": [[r.filename, _record(r)] for r in results]})

    def get(self, key: str, filename: str) -> Analysis | None:
        """The analysis stored under `key` (its summary still stored: `Analysis.stored_summary`),
        or None when there is none or it cannot be used."""
        record = self.read(key)
        if record is None:
            return None
        try:
            digest = str(record["summary_digest"])
            return Analysis(
                _result(record, filename),
                asked=dict(record["asked"]),
                replayed=True,
                summary_digest=digest,
                stored_summary=digest if record["summary"] else None,
            )
        except Exception:  # noqa: BLE001 - anything malformed is a miss
            return None

    def put(self, key: str, analysis: Analysis) -> None:
        """Store `analysis` (and give it its summary's digest); a cache that cannot be written
        is silently not used."""
        record = _record(analysis.result)
        summary = None if analysis.summary is None else analysis.summary.to_json()
        record["summary"] = summary is not None
        record["summary_digest"] = analysis.summary_digest = self.put_summary(summary)
        record["asked"] = analysis.asked
        self.write(key, record)

    def put_summary(self, summary: dict[str, object] | None) -> str:
        """Store a summary's JSON (None: a file that cannot hold PyTorch code) under its
        digest, which every entry of a file with this summary shares; return the digest."""
        digest = summary_digest(summary)
        if summary is not None:
            self.write(self._summary_key(digest), {"summary": summary})
        return digest

    def summary(self, digest: str) -> ModuleSummary | None:
        """The summary stored under its `digest` (see `put_summary`), or None."""
        from torchperf_lint.program.summary import ModuleSummary

        record = self.read(self._summary_key(digest))
        if record is None:
            return None
        try:
            return ModuleSummary.from_json(record["summary"])
        except Exception:  # noqa: BLE001 - anything malformed is a miss
            return None

    @staticmethod
    def _summary_key(digest: str) -> str:
        return hashlib.blake2b(digest.encode() + b"\0summary-json", digest_size=20).hexdigest()

    def answers_key(self, digests: dict[str, str]) -> str:
        """The key of the answers of the program whose files (by name) have summaries of these
        digests: the answers depend on the summaries alone, not on the rest of the files."""
        digest = hashlib.blake2b(b"answers", digest_size=20)
        for name in sorted(digests):
            digest.update(b"\0" + name.encode("utf-8", "surrogatepass") + b"\0")
            digest.update(digests[name].encode())
        return digest.hexdigest()

    def get_answers(self, key: str) -> dict[str, dict[str, Answer]]:
        """Per file, the program answers stored under `key` (see `answers_key`); empty when
        there are none."""
        record = self.read(key)
        answers = None if record is None else record.get("answers")
        if not isinstance(answers, dict):
            return {}
        return {str(name): dict(asked) for name, asked in answers.items() if isinstance(asked, dict)}

    def put_answers(self, key: str, answers: dict[str, dict[str, Answer]]) -> None:
        """Store a program's answers, per file, under `key` (see `answers_key`)."""
        self.write(key, {"answers": answers})

    def read(self, key: str, folder: str | None = None) -> dict | None:
        """The JSON record stored under `key` (in `folder`, default: this version's entries),
        or None."""
        stored = self._read(key, folder or self._entries_name)
        if stored is None:
            return None
        try:
            record = json.loads(stored)
        except ValueError:
            return None
        return record if isinstance(record, dict) else None

    def write(self, key: str, record: dict, folder: str | None = None) -> None:
        """Store a JSON record under `key` (in `folder`, default: this version's entries); a
        cache that cannot be written is silently not used."""
        payload = json.dumps(record, separators=(",", ":")).encode("utf-8")
        with suppress(OSError):
            self._write(key, payload, folder or self._entries_name)

    # Storage: authenticated bytes, never through a symbolic link.

    def _read(self, key: str, folder: str) -> bytes | None:
        secret = _secret_key()
        if secret is None:
            return None
        try:
            with _directory(self.directory, create=False) as top, _directory(
                folder, top, create=False
            ) as entries, _directory(key[:2], entries, create=False) as shard:
                stored = _read_file(f"{key}.json", shard)
        except OSError:
            return None
        tag, payload = stored[:_TAG_SIZE], stored[_TAG_SIZE:]
        if not hmac.compare_digest(tag, _tag(secret, key, payload)):
            return None
        return payload

    def _write(self, key: str, payload: bytes, folder: str) -> None:
        secret = _secret_key()
        if secret is None:
            return
        with _directory(self.directory, create=True) as top:
            _ensure_markers(top)
            with _directory(folder, top, create=True) as entries, _directory(
                key[:2], entries, create=True
            ) as shard:
                _replace_file(f"{key}.json", shard, _tag(secret, key, payload) + payload)


def content_digest(data: bytes) -> str:
    """A hash of a file's bytes."""
    return hashlib.blake2b(data, digest_size=20).hexdigest()


# A file changed less than this long before its digest is taken could change again, within the
# resolution of the file system's clock, without its stamp changing: its digest is not kept
# (git's "racily clean" entries). FAT's clock ticks every 2 seconds.
RACY_SECONDS = 2.0
# Where the stamps are kept, under the cache directory (they do not depend on the linter's
# version), and the key of their record.
_STAMPS_FOLDER = f"stamps-{FORMAT}"
_STAMPS_KEY = hashlib.blake2b(b"stamps", digest_size=20).hexdigest()


class FileDigests:
    """The `content_digest` of files, found by their stamps while they are unchanged: a run
    whose files did not change hashes none of them (nor the linter's own code), it only
    `stat`s them.

    A stamp is a file's size, modification and change times (in nanoseconds), inode and
    device. Ruff trusts the modification time alone; the change time is set by the system on
    every write, and no program can set it back, so an edit that restores the file's size and
    modification time (`touch -r`, `os.utime`) is still seen. A digest is kept only for a file
    older than `RACY_SECONDS`, so a file written twice within one tick of the clock is not
    mistaken for unchanged. (On Windows the change time is the creation time: there an edit
    that restores the size and modification time is not seen, as in Ruff.)

    The stamps are one entry of the cache, signed like the others; it holds the files the last
    run read, and is written again only when a digest was computed or a file went.
    """

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.known: dict[str, list] | None = None
        self.seen: dict[str, list] = {}

    def digest(self, path: str | Path) -> str:
        """The `content_digest` of the file at `path`; raises `OSError` when it cannot be
        read."""
        return self.source_digest(Path(path), None)

    def source_digest(self, path: Path, limits: SourceLimits | None) -> str:
        """The `content_digest` of the bytes `read_source(path, limits)` gives (of any size when
        `limits` is None), raising what it raises."""
        status = os.stat(path)
        if limits is not None:
            check_file_size(path, status.st_size, limits)
        name = os.fspath(path)
        stamp = [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino, status.st_dev]
        # Only a regular file's stamp changes with its content.
        regular = stat.S_ISREG(status.st_mode)
        known = self._known().get(name) if regular else None
        if known is not None and known[:-1] == stamp:
            self.seen[name] = known
            return known[-1]
        with open(path, "rb") as stream:
            digest = content_digest(stream.read())
        settled = time.time_ns() - int(RACY_SECONDS * 1e9)
        if regular and max(status.st_mtime_ns, status.st_ctime_ns) < settled:
            self.seen[name] = [*stamp, digest]
        return digest

    def save(self) -> None:
        """Keep the stamps of the files read since the cache was opened (and of the linter's
        own code, read by every run), when they are not what the cache holds already."""
        linter_fingerprint(self)
        if self.seen != self._known():
            self.cache.write(_STAMPS_KEY, {"files": self.seen}, _STAMPS_FOLDER)
            self.known = dict(self.seen)

    def _known(self) -> dict[str, list]:
        if self.known is None:
            record = self.cache.read(_STAMPS_KEY, _STAMPS_FOLDER)
            files = None if record is None else record.get("files")
            self.known = {
                name: known
                for name, known in (files.items() if isinstance(files, dict) else ())
                if isinstance(known, list) and len(known) == 6 and isinstance(known[-1], str)
            }
        return self.known


@cache
def file_digests(directory: Path) -> FileDigests:
    """The digests of the cache at `directory`, shared by every `Cache` of it in this process."""
    return FileDigests(Cache(directory))


_TAG_SIZE = hashlib.sha256().digest_size
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def _tag(secret: bytes, key: str, payload: bytes) -> bytes:
    # The key is part of the message: an entry cannot be moved to another file's name.
    return hmac.new(secret, key.encode("ascii") + b"\0" + payload, hashlib.sha256).digest()


@contextmanager
def _directory(name: str | Path, parent: int | None = None, *, create: bool) -> Iterator[int]:
    """A descriptor of the directory `name` (in `parent`), which must not be a symbolic link."""
    if os.open not in os.supports_dir_fd or not _NOFOLLOW:
        raise OSError(errno.ENOTSUP, "no safe way to open the cache here")
    if create:
        with suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=parent)
    descriptor = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=parent)
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def _read_file(name: str, directory: int) -> bytes:
    descriptor = os.open(name, os.O_RDONLY | _NOFOLLOW | _BINARY, dir_fd=directory)
    with os.fdopen(descriptor, "rb") as stream:
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return stream.read(_MAX_ENTRY_SIZE + 1)


# An entry larger than this is not ours (ours hold one file's findings).
_MAX_ENTRY_SIZE = 64 * 1024 * 1024


def _replace_file(name: str, directory: int, content: bytes) -> None:
    """Write `content` to `name` in `directory` atomically: a reader sees all or nothing, and a
    write that fails (a full disk) leaves no partial file."""
    import secrets  # Here: a run that only reads the cache never needs it.

    temporary = f".{name}.{secrets.token_hex(8)}.tmp"
    descriptor = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o666,
        dir_fd=directory,
    )
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(content)
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise


_MARKERS = (("CACHEDIR.TAG", _CACHEDIR_TAG), (".gitignore", _GITIGNORE))


def _ensure_markers(directory: int) -> None:
    """As Ruff's cache: invisible to git and to backup tools. Checked on every write, so a
    marker a full disk left empty is repaired by the next run that can write."""
    for name, content in _MARKERS:
        expected = content.encode("utf-8")
        try:
            if _read_file(name, directory) == expected:
                continue
        except OSError:
            pass
        _replace_file(name, directory, expected)


def key_path() -> Path:
    """Where the user's cache key lives: `$XDG_CACHE_HOME/torchperf-lint/key`
    (`~/.cache/torchperf-lint/key` by default; `%LOCALAPPDATA%` on Windows)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.environ.get("LOCALAPPDATA")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "torchperf-lint" / "key"


_KEY_SIZE = 32


@lru_cache(maxsize=1)
def _secret_key() -> bytes | None:
    """The user's secret cache key, created (readable by the user only) on first use; None
    when it can neither be read nor created: the cache is then not used."""
    path = key_path()
    try:
        return _read_key(path)
    except OSError:
        pass
    import secrets

    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_name(f".key.{secrets.token_hex(8)}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(secrets.token_bytes(_KEY_SIZE))
            # A link, not a rename: two first runs at once agree on the key that won.
            os.link(temporary, path)
        except FileExistsError:
            pass
        finally:
            with suppress(OSError):
                os.unlink(temporary)
        return _read_key(path)
    except OSError:
        return None


def _read_key(path: Path) -> bytes:
    descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | _BINARY)
    with os.fdopen(descriptor, "rb") as stream:
        status = os.fstat(stream.fileno())
        key = stream.read(_KEY_SIZE + 1)
    private = os.name != "posix" or (
        status.st_uid == os.geteuid() and not status.st_mode & 0o077
    )
    if len(key) != _KEY_SIZE or not private or not stat.S_ISREG(status.st_mode):
        raise OSError(errno.EPERM, f"{path} is not a private key of this user")
    return key


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

    name = job.display_name
    try:
        data = read_source(job.path, job.settings.limits)
    except OSError as error:
        return Analysis(FileResult(name, error=FileError.unreadable(name, error)))
    except SourceError as error:
        return Analysis(FileResult(name, error=FileError(name, error.reason)))
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


def job_key(cache: Cache, job: FileJob) -> str | None:
    """The key of a linted file's entry (as `analyse_cached` computes it), for a run's verdict
    and for replaying the file without a worker; None when the file cannot be read."""
    try:
        digest = cache.digests.source_digest(job.path, job.settings.limits)
    except OSError:
        return None
    except SourceError as error:
        # Too large to read: the run reports the same error for the same size and limits.
        digest = content_digest(f"\0error\0{error.reason}".encode())
    return cache.key_of_digest(digest, job.display_name, job.settings)


def summary_key(cache: Cache, path: Path) -> str | None:
    """The key of the summary-only entry of a file the program reads but does not lint; None
    when it cannot be read (it has no summary)."""
    try:
        return cache.summary_key(cache.digests.source_digest(path, SourceLimits()))
    except (OSError, SourceError):
        return None


def summary_digest(summary: dict[str, object] | None) -> str:
    """A hash of a summary's JSON (None: a file that cannot hold PyTorch code)."""
    text = json.dumps(summary, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def get_summary(cache: Cache, key: str) -> tuple[bool, str] | None:
    """The summary-only entry `key`: whether the file has a summary (a file that cannot hold
    PyTorch code has none) and the summary's digest (`Cache.summary`); None when it is not in
    the cache."""
    record = cache.read(key)
    if record is not None:
        with suppress(Exception):
            return bool(record["summary"]), str(record["digest"])
    return None


def summary_cached(cache: Cache, path: Path) -> tuple[ModuleSummary | None, str | None]:
    """`runner.summarize_file` through the cache, keyed by the file's bytes alone, and the
    summary's digest (None when the file cannot be read)."""
    from torchperf_lint.runner import summarize_file

    key = summary_key(cache, path)
    if key is None:
        return None, None
    found = get_summary(cache, key)
    if found is not None:
        has_summary, digest = found
        if not has_summary:
            return None, digest
        summary = cache.summary(digest)
        if summary is not None:
            return summary, digest
    summary = summarize_file(path)
    record = None if summary is None else summary.to_json()
    digest = cache.put_summary(record)
    cache.write(key, {"summary": record is not None, "digest": digest})
    return summary, digest
