"""A file's bytes before any parsing: reading them within the size limits, decoding them as
the interpreter would, and the quick test that skips files that cannot hold PyTorch code.

Nothing here imports LibCST: a run whose files are all cached reads and hashes files only.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import tokenize
from functools import cache
from pathlib import Path, PurePath
from typing import NamedTuple

from torchperf_lint.diagnostics import Location

# Above these a file is reported (E902 "too large") instead of parsed: LibCST needs about
# 0.7 GB and 40 s per MB of code (the largest file in PyTorch 2.13 is 1.4 MB, its longest line
# 1,405 characters), and a single line of a megabyte of tokens takes 1.5 GB.
# The comment of the `pass` a notebook's IPython line becomes (`%time train(loader)`), followed
# by a nonce and the line itself: what the line names stays visible to the analyses.
IPYTHON_LINE_MARKER = "torchperf-lint ipython line"
DEFAULT_MAX_FILE_SIZE = 5_000_000
DEFAULT_MAX_LINE_LENGTH = 100_000


class SourceLimits(NamedTuple):
    """The largest source a file may hold before it is reported instead of linted."""

    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # bytes of Python code
    max_line_length: int = DEFAULT_MAX_LINE_LENGTH  # characters on one line


class SourceError(Exception):
    """A file's bytes could not be turned into a module: the reason is the message."""

    def __init__(self, reason: str, location: Location | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.location = location


class DecodedSource(NamedTuple):
    """Text plus what is needed to write it back byte-for-byte the same way."""

    text: str
    encoding: str
    bom: bool


def decode(data: bytes) -> DecodedSource:
    """Decode Python source as the interpreter would (BOM, PEP 263 cookie, else UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise SourceError(f"cannot detect the encoding: {error}") from None
    if not _ascii_compatible(encoding):
        # The interpreter reads the cookie line as ASCII and rejects the file otherwise.
        raise SourceError(f"cannot decode as {encoding}: Python source encodings must be ASCII-compatible")
    bom = encoding == "utf-8-sig"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        raise SourceError(f"cannot decode as {encoding}: {error}") from None
    return DecodedSource(text=text, encoding=encoding, bom=bom)


@cache
def _ascii_compatible(encoding: str) -> bool:
    ascii_bytes = bytes(range(128))
    try:
        return codecs.decode(ascii_bytes, encoding) == ascii_bytes.decode("ascii")
    except (UnicodeDecodeError, LookupError):
        return False


def read_source(path: Path, limits: SourceLimits) -> bytes:
    """The bytes of the file at `path`; raises `SourceError` for a `.py` file larger than the
    limit, before reading it (notebooks are limited by the size of their code, once read)."""
    with open(path, "rb") as stream:
        check_file_size(path, os.fstat(stream.fileno()).st_size, limits)
        return stream.read()


def check_file_size(path: Path, size: int, limits: SourceLimits) -> None:
    """Raise `SourceError` when the `.py` file at `path`, of `size` bytes, is too large to read
    (as `read_source` does before reading it)."""
    if path.suffix != ".ipynb" and size > limits.max_file_size:
        raise _too_large(f"{size:,} bytes", f"max-file-size = {limits.max_file_size:_}")


def check_size(text: str, limits: SourceLimits) -> None:
    """Raise `SourceError` when `text` is over the limits (for sources not read from disk, and
    for every line's length)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_file_size:
        raise _too_large(f"{size:,} bytes of code", f"max-file-size = {limits.max_file_size:_}")
    if len(text) > limits.max_line_length:
        for row, line in enumerate(_NEWLINE.split(text), start=1):
            if len(line) > limits.max_line_length:
                raise _too_large(
                    f"line {row} has {len(line):,} characters",
                    f"max-line-length = {limits.max_line_length:_}",
                    Location(row, 1),
                )


def _too_large(what: str, setting: str, location: Location | None = None) -> SourceError:
    return SourceError(f"too large to lint: {what} (limit: `{setting}`)", location)


_NEWLINE = re.compile(r"\r\n|\r|\n")


# A file that mentions none of these cannot hold PyTorch code (a Lightning or accelerate
# script may never name `torch` itself).
_PYTORCH_MARKERS = ("torch", "lightning", "accelerate")


def worth_parsing(text: str, filename: str) -> bool:
    """Files without `torch`, `lightning` or `accelerate` in their text cannot hold PyTorch
    code and are not parsed, except a package's `__init__.py`: the names it re-exports
    (`from .alpaca import Alpaca`) link the program's imports to the modules that do; and a
    `setup.py`, which marks the folder a project inside the repository imports from."""
    if any(marker in text for marker in _PYTORCH_MARKERS):
        return True
    return PurePath(filename).name in ("__init__.py", "setup.py")
