"""The cache: unchanged files are replayed exactly, any change of content, name, settings or
version misses, and a broken cache is ignored."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from cli_helpers import torchperf_lint, write_files

from torchperf_lint import cache as cache_module
from torchperf_lint.cache import Cache, analyse_cached
from torchperf_lint.config import resolve_selection
from torchperf_lint.diagnostics import FileResult
from torchperf_lint.engine import LintSettings
from torchperf_lint.rules.base import RuleOptions
from torchperf_lint.runner import FileJob, lint_one, lint_program

FIXTURES = Path(__file__).parent / "fixtures"


def lint_cached(cache: Cache, path: Path, name: str, settings: LintSettings) -> FileResult:
    """A file's result through the cache, as the first phase of a run gets it."""
    return analyse_cached(cache, FileJob(path, name, settings), None).result

SETTINGS = LintSettings(resolve_selection(["ALL"]))
TRAIN = """import torch
from torch.utils.data import DataLoader

loader = DataLoader(ds)
for x in loader:
    x = x.cuda()
    loss = model(x)
    loss.backward()
    opt.step()
    print(loss.item())
"""


def entries(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.json"))


def test_a_hit_replays_the_result_exactly_fixes_included(tmp_path):
    source = tmp_path / "train.py"
    source.write_text(TRAIN)
    cache = Cache(tmp_path / "cache")
    fresh = lint_cached(cache, source, "train.py", SETTINGS)
    assert fresh.diagnostics and any(d.fix for d in fresh.diagnostics)
    # The file's entry, and its summary's (kept apart, by its digest).
    assert len(entries(cache.directory)) == 2
    replayed = lint_cached(cache, source, "train.py", SETTINGS)
    assert replayed == fresh


def test_a_hit_does_not_lint_again(tmp_path, monkeypatch):
    source = tmp_path / "train.py"
    source.write_text(TRAIN)
    cache = Cache(tmp_path / "cache")
    lint_cached(cache, source, "train.py", SETTINGS)
    monkeypatch.setattr("torchperf_lint.runner.analyse_one", None)  # Any call would raise.
    assert lint_cached(cache, source, "train.py", SETTINGS).diagnostics


def test_notebook_results_and_file_errors_are_cached_too(tmp_path):
    notebook = FIXTURES / "notebooks" / "train_loop.ipynb"
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\ndef f(:\n")
    cache = Cache(tmp_path / "cache")
    for path, name in ((notebook, "train_loop.ipynb"), (broken, "broken.py")):
        fresh = lint_cached(cache, path, name, SETTINGS)
        assert lint_cached(cache, path, name, SETTINGS) == fresh
        assert fresh == lint_one(path, name, SETTINGS)
    # Two entries, and the notebook's summary (the broken file has none).
    assert len(entries(cache.directory)) == 3
    assert lint_cached(cache, broken, "broken.py", SETTINGS).error.location.row == 2


def test_content_name_settings_and_version_are_in_the_key(tmp_path, monkeypatch):
    cache = Cache(tmp_path)
    data = TRAIN.encode()
    key = cache.key(data, "train.py", SETTINGS)
    assert cache.key(data + b"\n", "train.py", SETTINGS) != key
    assert cache.key(data, "other.py", SETTINGS) != key
    fewer_rules = LintSettings(SETTINGS.rules[1:], SETTINGS.options)
    assert cache.key(data, "train.py", fewer_rules) != key
    options = RuleOptions(torch_version=(2, 0))
    assert cache.key(data, "train.py", LintSettings(SETTINGS.rules, options)) != key
    # The version and a hash of the linter's code name the entries' directory.
    before = cache.entries
    monkeypatch.setattr(cache_module, "__version__", "9.9.9")
    assert cache.entries != before
    versioned = cache.entries
    monkeypatch.setattr(cache_module, "linter_fingerprint", lambda digests: "0123456789abcdef")
    assert cache.entries != versioned


def test_corrupt_or_foreign_entries_are_misses_and_get_replaced(tmp_path):
    source = tmp_path / "train.py"
    source.write_text(TRAIN)
    cache = Cache(tmp_path / "cache")
    fresh = lint_cached(cache, source, "train.py", SETTINGS)
    (entry,) = (path for path in entries(cache.directory) if b'"diagnostics"' in path.read_bytes())
    for garbage in (b"", b"\xff\xfe", b"[1, 2]", b'{"diagnostics": [[1]], "error": null}',
                    json.dumps({"diagnostics": [], "error": {"reason": "x", "location": "a"}}).encode()):
        entry.write_bytes(garbage)
        assert lint_cached(cache, source, "train.py", SETTINGS) == fresh
    # An entry is its authentication tag (32 bytes) and the JSON record.
    assert json.loads(entry.read_bytes()[32:])["diagnostics"]


def test_an_unwritable_cache_is_not_an_error(tmp_path):
    source = tmp_path / "train.py"
    source.write_text(TRAIN)
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache directory should be")
    result = lint_cached(Cache(blocker), source, "train.py", SETTINGS)
    assert result == lint_one(source, "train.py", SETTINGS)


def test_cli_uses_the_cache_by_default_and_honours_no_cache_and_cache_dir(tmp_path):
    write_files(tmp_path, {"train.py": TRAIN})
    first = torchperf_lint("--output-format", "json", ".", cwd=tmp_path)
    default_dir = tmp_path / ".torchperf_lint_cache"
    # The file's entry and its summary's, the run's verdict, the answers of the program of its
    # summaries and the stamps of the files read.
    assert len(entries(default_dir)) == 5
    assert (default_dir / ".gitignore").read_text().endswith("*\n")
    assert (default_dir / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f59")
    second = torchperf_lint("--output-format", "json", ".", cwd=tmp_path)
    assert (second.returncode, second.stdout) == (first.returncode, first.stdout) == (
        1, first.stdout
    )
    torchperf_lint("--cache-dir", "elsewhere", ".", cwd=tmp_path)
    assert len(entries(tmp_path / "elsewhere")) == 5
    (tmp_path / "nocache").mkdir()
    write_files(tmp_path / "nocache", {"train.py": TRAIN})
    torchperf_lint("--no-cache", ".", cwd=tmp_path / "nocache")
    assert not (tmp_path / "nocache" / ".torchperf_lint_cache").exists()


def test_fix_neither_reads_nor_writes_the_cache(tmp_path):
    # Workers load the batches, so the loader should pin them (TPL102's unsafe fix).
    write_files(tmp_path, {"train.py": TRAIN.replace("DataLoader(ds)", "DataLoader(ds, num_workers=2)")})
    completed = torchperf_lint("--fix", "--unsafe-fixes", "--select", "TPL102", ".", cwd=tmp_path)
    assert completed.stdout == "Found 1 error (1 fixed, 0 remaining).\n"
    assert not (tmp_path / ".torchperf_lint_cache").exists()
    fixed = (tmp_path / "train.py").read_text()
    assert "loader = DataLoader(ds, num_workers=2, pin_memory=True)" in fixed


CALLER = """import torch
from torch.utils.data import DataLoader
from helpers import log

loader = DataLoader(ds)
for x in loader:
    loss = model(x.cuda())
    loss.backward()
    opt.step()
    log(loss)
"""
HELPERS = """import torch


def log(loss):
    print(loss.item())
"""


def test_an_unchanged_run_replays_its_verdict_and_a_cross_file_change_is_seen(tmp_path):
    """The verdict of a run is keyed by every file it reads: editing the caller changes what
    the helper's findings depend on, so the helper's findings change with it."""
    write_files(tmp_path, {"train.py": CALLER, "helpers.py": HELPERS, "pyproject.toml": ""})

    def run(*args: str):
        completed = torchperf_lint("--output-format", "concise", "-v", *args, ".", cwd=tmp_path)
        return completed.stdout, completed.stderr

    first, log = run()
    assert "helpers.py:5:11: TPL201" in first
    assert log == "debug: linted 2 files, replayed 0 files from the cache\n"
    assert run() == (first, "debug: linted 0 files, replayed 2 files from the cache\n")
    # Only the caller changed, but the helper's `.item()` is no longer on every step.
    (tmp_path / "train.py").write_text(CALLER.replace("    log(loss)\n", ""))
    edited, log = run()
    assert "helpers.py" not in edited
    assert log == "debug: linted 2 files, replayed 0 files from the cache\n"
    assert run("--no-cache") == (edited, "debug: linted 2 files (no cache)\n")
    assert run()[0] == edited


def test_a_verdict_hit_neither_lints_nor_links(tmp_path, monkeypatch):
    from torchperf_lint import runner

    write_files(tmp_path, {"train.py": CALLER, "helpers.py": HELPERS})
    jobs = [
        FileJob(tmp_path / name, name, SETTINGS, cache_dir=tmp_path / "cache")
        for name in ("helpers.py", "train.py")
    ]
    first = runner.lint_program(jobs, jobs, workers=1)

    def fail(*args, **kwargs):
        raise AssertionError("linked again")

    monkeypatch.setattr(runner, "_lint_program", fail)
    again = runner.lint_program(jobs, jobs, workers=1)
    assert (again.outcomes, again.linted) == (first.outcomes, [])


def test_an_edit_that_changes_no_summary_reads_the_programs_answers_from_the_cache(
    tmp_path, monkeypatch
):
    """The program's answers are cached by the digests of all its summaries: a comment added
    to the caller relints the caller alone (on its own), and the program is not asked again."""
    from torchperf_lint import runner
    from torchperf_lint.program.link import ProgramFacts

    write_files(tmp_path, {"train.py": CALLER, "helpers.py": HELPERS})
    jobs = [
        FileJob(tmp_path / name, name, SETTINGS, cache_dir=tmp_path / "cache")
        for name in ("helpers.py", "train.py")
    ]
    first = runner.lint_program(jobs, jobs, workers=1)
    (tmp_path / "train.py").write_text(CALLER + "# a comment changes no summary\n")
    answer = ProgramFacts.answer

    def alone(program, file, question):
        # A file linted on its own asks the program of itself alone; the whole program is
        # not asked.
        assert list(program.summaries) == [file], "the whole program was asked"
        return answer(program, file, question)

    monkeypatch.setattr(ProgramFacts, "answer", alone)
    again = runner.lint_program(jobs, jobs, workers=1)
    assert (again.outcomes, again.linted, again.internal_errors) == (first.outcomes, ["train.py"], [])


def test_a_summary_is_kept_once_apart_from_the_entries_and_read_only_to_link(
    tmp_path, monkeypatch
):
    """Entries hold their summary's digest; the summary itself (most of what the cache holds)
    is stored once per digest, and an edit that changes no summary reads none of them."""
    write_files(tmp_path, {"train.py": CALLER, "helpers.py": HELPERS, "copy.py": HELPERS})
    jobs = [
        FileJob(tmp_path / name, name, SETTINGS, cache_dir=tmp_path / "cache")
        for name in ("copy.py", "helpers.py", "train.py")
    ]
    first = lint_program(jobs, jobs, workers=1)
    kept = [path for path in entries(tmp_path / "cache") if b'{"summary":{' in path.read_bytes()]
    # helpers.py and copy.py have one summary.
    assert len(kept) == 2
    (tmp_path / "train.py").write_text(CALLER + "# a comment changes no summary\n")

    def no_summary(cache, digest):
        raise AssertionError("a summary was read")

    monkeypatch.setattr(Cache, "summary", no_summary)
    again = lint_program(jobs, jobs, workers=1)
    assert (again.outcomes, again.linted) == (first.outcomes, ["train.py"])


def test_a_summary_gone_from_the_cache_is_summarized_again(tmp_path):
    write_files(tmp_path, {"train.py": CALLER, "helpers.py": HELPERS})
    jobs = [
        FileJob(tmp_path / name, name, SETTINGS, cache_dir=tmp_path / "cache")
        for name in ("helpers.py", "train.py")
    ]
    lint_program(jobs, jobs, workers=1)
    for path in entries(tmp_path / "cache"):
        if b'{"summary":{' in path.read_bytes():
            path.unlink()
    # The helper's finding depends on the caller: the edit makes the program be linked.
    (tmp_path / "train.py").write_text(CALLER.replace("    log(loss)\n", ""))
    again = lint_program(jobs, jobs, workers=1)
    uncached = [job._replace(cache_dir=None) for job in jobs]
    assert again.outcomes == lint_program(uncached, uncached, workers=1).outcomes
    assert not any(d.code == "TPL201" for r in again.outcomes for d in r.diagnostics)


def settle(*paths: Path) -> None:
    """Wait until the files' stamps can be trusted (see `RACY_SECONDS`, patched small)."""
    newest = max(max(p.stat().st_mtime_ns, p.stat().st_ctime_ns) for p in paths)
    while time.time_ns() - newest <= 2 * cache_module.RACY_SECONDS * 1e9:
        time.sleep(0.01)


def settled_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[FileJob]:
    """A two-file program whose files are older than the racy window, as jobs with a cache."""
    monkeypatch.setattr(cache_module, "RACY_SECONDS", 0.05)
    write_files(tmp_path, {"train.py": CALLER, "helpers.py": HELPERS})
    settle(tmp_path / "train.py", tmp_path / "helpers.py")
    return [
        FileJob(tmp_path / name, name, SETTINGS, cache_dir=tmp_path / "cache")
        for name in ("helpers.py", "train.py")
    ]


def test_unchanged_files_are_found_by_their_stamps_without_being_read(tmp_path, monkeypatch):
    jobs = settled_project(tmp_path, monkeypatch)
    first = lint_program(jobs, jobs, workers=1)
    # Another run (a fresh process) reads the stamps from the cache, and no file.
    stamps = cache_module.FileDigests(Cache(tmp_path / "cache"))
    monkeypatch.setattr(cache_module, "file_digests", lambda directory: stamps)

    def no_reading(*args, **kwargs):
        raise AssertionError("a file was read")

    monkeypatch.setattr(cache_module, "open", no_reading, raising=False)
    assert lint_program(jobs, jobs, workers=1).outcomes == first.outcomes


def test_an_edit_that_restores_the_size_and_modification_time_is_seen(tmp_path, monkeypatch):
    """The stamp holds the change time too, which no program can set back (`touch -r`,
    `os.utime` and `rsync -t` set the modification time only)."""
    jobs = settled_project(tmp_path, monkeypatch)
    first = lint_program(jobs, jobs, workers=1)
    assert any(d.code == "TPL201" for r in first.outcomes for d in r.diagnostics)
    helpers = tmp_path / "helpers.py"
    before = helpers.stat()
    # The same size, the same modification time, and the `.item()` gone.
    helpers.write_text(HELPERS.replace("loss.item()", "loss.mean()"))
    os.utime(helpers, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = helpers.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    again = lint_program(jobs, jobs, workers=1)
    assert not any(d.code == "TPL201" for r in again.outcomes for d in r.diagnostics)
    assert again.outcomes == lint_program(
        [job._replace(cache_dir=None) for job in jobs], jobs, workers=1
    ).outcomes


def test_a_file_changed_within_racy_seconds_gets_no_stamp(tmp_path):
    """A file written just now could be written again within the same tick of the file
    system's clock, its stamp unchanged: it is read again by the next run."""
    source = tmp_path / "train.py"
    source.write_text(TRAIN)
    digests = cache_module.FileDigests(Cache(tmp_path / "cache"))
    assert digests.digest(source) == cache_module.content_digest(TRAIN.encode())
    assert os.fspath(source) not in digests.seen


def test_the_linters_code_is_fingerprinted_by_content(tmp_path, monkeypatch):
    """A development build whose code changed (even with the sizes and modification times
    restored) names another entries directory; an unchanged one is fingerprinted by stamps."""
    monkeypatch.setattr(cache_module, "RACY_SECONDS", 0.05)
    rule = tmp_path / "package" / "rule.py"
    write_files(tmp_path / "package", {"rule.py": "CODE = 1\n"})
    monkeypatch.setattr(cache_module, "_code_files", lambda: [("rule.py", rule)])
    settle(rule)

    def fingerprint() -> str:
        return cache_module.linter_fingerprint(cache_module.FileDigests(Cache(tmp_path / "cache")))

    first = fingerprint()
    assert first == fingerprint()
    cache_module.FileDigests(Cache(tmp_path / "cache")).save()
    before = rule.stat()
    rule.write_text("CODE = 2\n")
    os.utime(rule, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert fingerprint() != first
