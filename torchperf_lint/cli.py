"""The `torchperf-lint` command: thin glue between options, settings, the runner and reporters.

`torchperf-lint src/` is `torchperf-lint check src/`: a first argument that names no command
is routed to `check`. Exit codes: 0 clean, 1 findings (or a file that cannot be read or
parsed, or `--diff` would change something), 2 bad usage, bad settings or an internal error.
"""

from __future__ import annotations

import codecs
import importlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from torchperf_lint import __version__
from torchperf_lint.formats import FORMATS, TEXT_FORMATS

if TYPE_CHECKING:
    from torchperf_lint.config import Configuration
    from torchperf_lint.console import CheckOptions, Console
    from torchperf_lint.diagnostics import Diagnostic, FileError
    from torchperf_lint.discovery import Discovery
    from torchperf_lint.program.link import ProgramFacts
    from torchperf_lint.report import Report
    from torchperf_lint.runner import (
        FileJob,
        InternalError,
        Run,
    )

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# As a shell reports a command ended by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130
STDIN = "-"
VERIFY_MODULE = "torchperf_lint.verify.command"


class CheckByDefault(click.Group):
    """A group whose unknown first argument (a path, an option of `check`) runs `check`;
    `verify` is imported only when it is used or listed."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if (
            args
            and args[0] not in ("--help", "-h", "--version")
            and self.get_command(ctx, args[0]) is None
        ):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        if _verify_module_exists():
            names.add("verify")
        return sorted(names)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click lists the commands, but `verify` by its help line alone: importing it
        (and LibCST) would triple the time `--help` takes."""
        rows = []
        for name in self.list_commands(ctx):
            command = None if name == "verify" else self.get_command(ctx, name)
            if command is None or not command.hidden:
                rows.append((name, command))
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section("Commands"):
            formatter.write_dl([
                (name, _short_help(VERIFY_HELP, limit) if command is None
                 else command.get_short_help_str(limit))
                for name, command in rows
            ])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name == "verify":
            return _verify_command()
        return super().get_command(ctx, name)

    def main(self, *args, **kwargs):
        _replace_unencodable_output()
        return super().main(*args, **kwargs)

    def invoke(self, ctx: click.Context):
        """Every command's way out: Ctrl-C exits 130 (not click's "Aborted!" and 1), and a
        reader that closed the pipe (`| head -1`) ends the run quietly with 0, as Ruff does."""
        try:
            try:
                return super().invoke(ctx)
            finally:
                # A closed pipe shows here rather than in the interpreter's last flush.
                sys.stdout.flush()
        except KeyboardInterrupt:
            ctx.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            _discard_output()
            ctx.exit(EXIT_CLEAN)


def _replace_unencodable_output() -> None:
    """File names that are not valid UTF-8 (kept by Python as lone surrogates) are printed with
    U+FFFD in their place, so every output format stays valid UTF-8."""
    for stream in (sys.stdout, sys.stderr):
        if not hasattr(stream, "reconfigure"):
            continue
        utf8 = codecs.lookup(stream.encoding or "ascii").name == "utf-8"
        stream.reconfigure(errors=_REPLACEMENT if utf8 else "replace")


def _replace_with_fffd(error: UnicodeError) -> tuple[bytes, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    # Bytes: the UTF-8 encoder takes only ASCII text from an error handler.
    return "\ufffd".encode("utf-8") * (error.end - error.start), error.end


_REPLACEMENT = "torchperf-lint-replace"
codecs.register_error(_REPLACEMENT, _replace_with_fffd)


def _discard_output() -> None:
    """Point stdout and stderr at the null device, so what is still buffered goes nowhere."""
    null = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(null, stream.fileno())
        except (OSError, ValueError):
            pass
    os.close(null)


# `verify`'s help line, for `--help` (a test checks it against the command's own).
VERIFY_HELP = "Run SCRIPT as written and with its fixes applied, and measure whether they pay off."


def _short_help(text: str, limit: int) -> str:
    return click.utils.make_default_short_help(text, limit)


def _verify_module_exists() -> bool:
    return importlib.util.find_spec(VERIFY_MODULE) is not None


def _verify_command() -> click.Command | None:
    """The `verify` command, or None while its module does not exist yet."""
    try:
        module = importlib.import_module(VERIFY_MODULE)
    except ModuleNotFoundError as error:
        if error.name in (VERIFY_MODULE, VERIFY_MODULE.rpartition(".")[0]):
            return None
        raise
    return module.verify


@click.group(cls=CheckByDefault, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="torchperf-lint")
def main() -> None:
    """Find, explain, fix and measure performance mistakes in PyTorch training code.

    `torchperf-lint PATH...` is short for `torchperf-lint check PATH...`.
    """


def _codes(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]):
    """Comma-separated lists, possibly repeated: `--select TPL1,TPL201 --select TPL3`."""
    if not value:
        return None
    return tuple(code.strip() for item in value for code in item.split(",") if code.strip())


def _device(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from torchperf_lint.config import parse_target_device

    return None if value is None else _usage(parse_target_device, value, "--target-device")


def _version(ctx: click.Context, param: click.Parameter, value: str | None):
    from torchperf_lint.config import parse_torch_version

    return None if value is None else _usage(parse_torch_version, value, "--torch-version")


def _usage(parse, value, option):
    from torchperf_lint.config import ConfigError

    try:
        return parse(value, option)
    except ConfigError as error:
        raise click.BadParameter(str(error).removeprefix(f"{option}: ")) from None


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--select",
    multiple=True,
    callback=_codes,
    help="Rules to run (codes, prefixes, ALL); replaces the configured selection.",
)
@click.option("--ignore", multiple=True, callback=_codes, help="Rules not to run.")
@click.option(
    "--extend-select", multiple=True, callback=_codes, help="Rules to run on top of the selection."
)
@click.option("--output-format", type=click.Choice(FORMATS), default="full", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--statistics", "show_statistics", is_flag=True, help="Count findings per code.")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Parallel processes (default: all cores).",
)
@click.option("--stdin-filename", help="The name (and settings) of the source read from stdin.")
@click.option(
    "--force-exclude", is_flag=True, help="Apply excludes to paths named on the command line too."
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Use this configuration file for every path.",
)
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option(
    "--fix-only",
    is_flag=True,
    help="Apply fixes, but don't report on, or exit non-zero for, leftover findings. "
    "Implies --fix.",
)
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (and mark [*]) unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a diff; write nothing.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied, per file.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when anything was fixed.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa` comments for every finding.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Also print, on stderr, how many files were linted and how many replayed from the cache.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print findings, but nothing else.")
@click.option(
    "--silent",
    "-s",
    is_flag=True,
    help="Print nothing (but still exit with status 1 upon findings).",
)
@click.option(
    "--output-file",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The file to write the report to (default: stdout).",
)
@click.option(
    "--color/--no-color",
    default=None,
    help="Colour the output (default: on a terminal, following FORCE_COLOR and NO_COLOR).",
)
@click.option(
    "--show-settings",
    is_flag=True,
    help="See the settings torchperf-lint will use to lint the first file, and exit.",
)
@click.option(
    "--show-files",
    is_flag=True,
    help="See the files torchperf-lint will be run against with the current settings, and exit.",
)
@click.option(
    "--cache-dir", type=click.Path(path_type=Path, file_okay=False), help="Where the cache lives."
)
@click.option("--target-device", callback=_device, help="auto, cuda or cpu.")
@click.option(
    "--torch-version",
    callback=_version,
    help='The oldest PyTorch the code must run on, e.g. "2.3".',
)
def check(
    paths: tuple[Path, ...],
    select: tuple[str, ...] | None,
    ignore: tuple[str, ...] | None,
    extend_select: tuple[str, ...] | None,
    config_file: Path | None,
    target_device: str | None,
    torch_version: tuple[int, int] | None,
    jobs: int | None,
    no_cache: bool,
    cache_dir: Path | None,
    quiet: bool,
    silent: bool,
    output_file: Path | None,
    color: bool | None,
    **flags: object,
) -> None:
    """Lint PATHS (default: the current directory); `-` reads the source from stdin."""
    from torchperf_lint.cache import DEFAULT_CACHE_DIR
    from torchperf_lint.config import ConfigError, Configuration, Overrides
    from torchperf_lint.console import CheckOptions, Console, use_color
    from torchperf_lint.runner import default_jobs

    overrides = Overrides(
        select=select,
        ignore=ignore or (),
        extend_select=extend_select or (),
        target_device=target_device,
        torch_version=torch_version,
        config_file=config_file,
    )
    with _report_stream(output_file) as stream:
        console = Console(
            stream=stream,
            color=use_color(color, stream, to_file=output_file is not None),
            quiet=quiet,
            silent=silent,
        )
        options = CheckOptions(
            jobs=jobs or default_jobs(),
            cache_dir=None if no_cache else (cache_dir or Path(DEFAULT_CACHE_DIR)),
            console=console,
            **flags,  # type: ignore[arg-type]
        )
        try:
            configuration = Configuration(overrides)
            code = _check(paths, configuration, options)
        except ConfigError as error:
            click.echo(f"error: {error}", err=True)
            code = EXIT_ERROR
        except (click.ClickException, BrokenPipeError):
            raise
        except Exception as error:  # noqa: BLE001 - a bug must still exit 2, with a clear line
            click.echo(f"error: internal error: {type(error).__name__}: {error}", err=True)
            code = EXIT_ERROR
    sys.exit(code)


@contextmanager
def _report_stream(output_file: Path | None) -> Iterator[TextIO]:
    """stdout, or `--output-file` (its folder created, as Ruff does)."""
    if output_file is None:
        yield sys.stdout
        return
    try:
        output_file.parent.mkdir(parents=True, exist_ok=True)
        # Names that are not UTF-8 get U+FFFD, as on stdout (_replace_unencodable_output).
        stream = output_file.open("w", encoding="utf-8", errors=_REPLACEMENT)
    except OSError as error:
        raise click.BadParameter(
            f"cannot write {output_file}: {error.strerror or error}", param_hint="--output-file"
        ) from None
    with stream:
        yield stream


def _check(paths: Sequence[Path], configuration: Configuration, options: CheckOptions) -> int:
    from torchperf_lint.discovery import discover
    from torchperf_lint.runner import (
        FileJob,
        display_name,
        link_files,
        lint_program,
        sorted_findings,
    )

    if options.add_noqa and options.fixing:
        raise click.UsageError("--add-noqa cannot be combined with --fix, --fix-only or --diff")
    if options.show_settings:
        return _show_settings(paths, configuration, options)
    if list(paths) == [Path(STDIN)] or (not paths and options.stdin_filename):
        return _check_stdin(configuration, options)
    discovery = discover(paths or [Path(".")], configuration, options.force_exclude)
    if options.show_files:
        for path in discovery.files:
            click.echo(str(path), file=options.console.stream)
        return EXIT_CLEAN
    if not discovery.files and not discovery.errors:
        options.console.note("warning: No Python files found under the given path(s)")
    jobs = [
        FileJob(path, display_name(path, configuration.cwd), configuration.settings_for(path))
        for path in discovery.files
    ]
    context = _program_context(
        paths, configuration, None if options.force_exclude else discovery
    )
    # Files reached through symbolic links are only written when they are inside these.
    roots = tuple(writable_root(configuration.cwd / path) for path in paths or [Path(".")])
    if options.add_noqa or options.fixing:
        linked = {job.display_name for job in jobs}
        program = link_files(
            [*jobs, *(job for job in context if job.display_name not in linked)], options.jobs
        )
        if options.add_noqa:
            return _add_noqa(jobs, program, options, roots, discovery.errors)
        return _fix(jobs, program, configuration, options, roots, discovery.errors)
    if options.cache_dir is not None:
        cache_dir = configuration.cwd / options.cache_dir
        jobs = [job._replace(cache_dir=cache_dir) for job in jobs]
        context = [job._replace(cache_dir=cache_dir) for job in context]
    run = lint_program(jobs, context, options.jobs)
    if options.verbose:
        _print_work(run, cached=options.cache_dir is not None)
    diagnostics, errors = sorted_findings(run.outcomes)
    errors = [*errors, *run.crashed, *discovery.errors]
    return _report(diagnostics, errors, run.internal_errors, configuration, options)


def _print_work(run: Run, cached: bool) -> None:
    """`--verbose`: what the run did, as a debug line on stderr (Ruff's `-v` logs likewise)."""
    linted = len(run.linted)
    if cached:
        replayed = len(run.outcomes) - linted
        click.echo(f"debug: linted {_files(linted)}, replayed {_files(replayed)} from the cache", err=True)
    else:
        click.echo(f"debug: linted {_files(linted)} (no cache)", err=True)


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def _program_context(
    paths: Sequence[Path], configuration: Configuration, discovered: Discovery | None = None
) -> list[FileJob]:
    """The files of the projects being linted, read for the program's facts only (`discovered`:
    what the paths hold, without `--force-exclude`, reused when they are the projects)."""
    from torchperf_lint.discovery import program_files
    from torchperf_lint.runner import FileJob, display_name
    from torchperf_lint.settings import LintSettings

    no_rules = LintSettings(rules=())
    return [
        FileJob(path, display_name(path, configuration.cwd), no_rules)
        for path in program_files(paths or [Path(".")], configuration, discovered)
    ]


def _check_stdin(configuration: Configuration, options: CheckOptions) -> int:
    from torchperf_lint.runner import FileJob, lint_source, sorted_findings

    if options.add_noqa:
        raise click.UsageError("--add-noqa cannot read from stdin")
    name = options.stdin_filename or STDIN
    path = configuration.cwd / name
    data = sys.stdin.buffer.read()
    if options.stdin_filename and options.force_exclude and configuration.is_excluded(path):
        # As Ruff: an excluded file is skipped; when fixing, the source goes back unchanged,
        # so an editor that replaces the buffer with our output loses nothing.
        if options.fix or options.fix_only:
            _write_stdout(data)
        return EXIT_CLEAN
    if options.fixing:
        return _fix_stdin(data, path, name, configuration, options)
    settings = configuration.settings_for(path)
    context = _program_context([path], configuration)
    result = lint_source(FileJob(path, name, settings), data, context, options.jobs)
    diagnostics, errors = sorted_findings([result])
    sources = {name: _text_or_none(data)}
    return _report(diagnostics, errors, [], configuration, options, sources)


def _fix_stdin(
    data: bytes, path: Path, name: str, configuration: Configuration, options: CheckOptions
) -> int:
    """As Ruff: `--fix` prints the fixed source, `--diff` the diff; findings go to stderr."""
    from torchperf_lint.fixes import unified_diff
    from torchperf_lint.report import merged, render
    from torchperf_lint.runner import FileJob

    with tempfile.TemporaryDirectory() as directory:
        copy = Path(directory) / path.name
        copy.write_bytes(data)
        job = FileJob(copy, name, configuration.settings_for(path))
        outcome = fix_job(job, options.unsafe_fixes, write=not options.diff)
        fixed_data = copy.read_bytes()
    if options.diff:
        options.console.report(unified_diff(name, outcome.before, outcome.after))
        return _diff_exit(outcome.before != outcome.after or outcome.error is not None)
    _write_stdout(fixed_data)
    errors = [outcome.error] if outcome.error else []
    remaining = [] if options.fix_only else outcome.remaining
    lines = merged(remaining, errors)
    if not options.console.silent:
        for line in render("concise", _make_report(lines, configuration, options)).splitlines():
            click.echo(line, err=True)
    return _exit_code(bool(lines), sum(outcome.applied.values()) > 0, [], options)


def _write_stdout(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


def _text_or_none(data: bytes) -> str | None:
    from torchperf_lint.source import SourceError, decode

    try:
        return decode(data).text
    except SourceError:
        return None


def _report(
    diagnostics: Sequence[Diagnostic],
    errors: Sequence[FileError],
    internal_errors: Sequence[InternalError],
    configuration: Configuration,
    options: CheckOptions,
    sources: dict[str, str | None] | None = None,
    fixed: int | None = None,
) -> int:
    """Print the findings (and the summary for text formats); return the exit code."""
    from torchperf_lint.report import (
        check_summary,
        fix_summary,
        merged,
        render,
        statistics,
        statistics_records,
    )

    everything = merged(diagnostics, errors)
    report = _make_report(everything, configuration, options, sources)
    text_format = options.output_format in TEXT_FORMATS
    console = options.console
    if options.show_statistics:
        if text_format:
            console.report(statistics(report))
        else:
            import json

            console.report(json.dumps(statistics_records(report), indent=2) + "\n")
    else:
        console.report(render(options.output_format, report))
    if text_format:
        if fixed is None:
            summary = check_summary(everything, options.unsafe_fixes)
        else:
            summary = fix_summary(fixed, everything, options.unsafe_fixes)
        for line in summary:
            console.summary(line)
    _print_internal_errors(internal_errors)
    return _exit_code(bool(everything), bool(fixed), internal_errors, options)


def _make_report(
    diagnostics: Sequence[Diagnostic],
    configuration: Configuration,
    options: CheckOptions,
    sources: dict[str, str | None] | None = None,
) -> Report:
    from torchperf_lint.registry import ALL_RULES
    from torchperf_lint.report import Report

    def source_of(filename: str) -> str | None:
        if sources is not None and filename in sources:
            return sources[filename]
        try:
            return _text_or_none((configuration.cwd / filename).read_bytes())
        except OSError:
            return None

    return Report(
        diagnostics=diagnostics,
        unsafe_fixes=options.unsafe_fixes,
        color=options.console.color,
        rules=ALL_RULES,
        cwd=configuration.cwd,
        source_of=source_of,
    )


def _print_internal_errors(internal_errors: Sequence[InternalError]) -> None:
    for error in internal_errors:
        click.echo(
            f"error: internal error while linting {error.filename}: {error.message}", err=True
        )


def _exit_code(
    findings: bool, fixed: bool, internal_errors: Sequence[InternalError], options: CheckOptions
) -> int:
    if internal_errors:
        return EXIT_ERROR
    failed = findings or (fixed and options.exit_non_zero_on_fix)
    return EXIT_FINDINGS if failed and not options.exit_zero else EXIT_CLEAN


def _diff_exit(changed: bool) -> int:
    return EXIT_FINDINGS if changed else EXIT_CLEAN


# --fix, --diff, --add-noqa


def writable_root(given: Path) -> Path:
    """What a path named on the command line lets `--fix` write in: the directory itself, or
    the directory of a named file (symbolic links resolved)."""
    real = Path(os.path.realpath(given))
    return real if real.is_dir() else Path(os.path.realpath(given.parent))


def outside_roots(path: Path, roots: Sequence[Path]) -> str | None:
    """Why `path` must not be written: a symbolic link (of the file or of a directory on the
    way) to a file outside every root; None when it may be."""
    real = Path(os.path.realpath(path))
    if any(real == root or root in real.parents for root in roots):
        return None
    return f"not fixed: a symbolic link to {real}, outside the paths given"


def fix_job(job: FileJob, unsafe_fixes: bool, write: bool, roots: Sequence[Path] = ()):
    """Fix one file (a `.py` file or a notebook, as in `lint_one`) as part of the program the
    run shares; with `roots`, a file that resolves outside them is refused."""
    from torchperf_lint.diagnostics import FileError
    from torchperf_lint.fixes import FileFixOutcome, fix_file
    from torchperf_lint.runner import shared

    refusal = outside_roots(job.path, roots) if write and roots else None
    if refusal is not None:
        error = FileError(job.display_name, refusal)
        return FileFixOutcome(job.display_name, before="", after="", error=error)
    program = shared()
    if job.path.suffix == ".ipynb":
        from torchperf_lint.notebooks import fix_notebook

        return fix_notebook(job.path, job.display_name, job.settings, unsafe_fixes, write, program)
    return fix_file(job.path, job.display_name, job.settings, unsafe_fixes, write, program)


# A fix in one file can enable one in another (pinning the loader in `data.py` makes the
# copies in `engine.py` non-blocking): after writing, the program is linked again and the files
# whose findings read different answers are fixed again, at most this many times.
MAX_PROGRAM_ROUNDS = 3


def _fix_program(
    jobs: Sequence[FileJob], program: ProgramFacts, options: CheckOptions, roots: Sequence[Path]
) -> Run:
    """Fix every job's file; when writing, then fix again the files that the fixes of other
    files changed the program for."""
    from torchperf_lint.program.link import ProgramFacts
    from torchperf_lint.runner import run_jobs

    task = partial(
        fix_job, unsafe_fixes=options.unsafe_fixes, write=not options.diff, roots=roots
    )
    run = run_jobs(task, jobs, options.jobs, shared=program)
    if options.diff:
        return run
    outcomes = {outcome.filename: outcome for outcome in run.outcomes}
    changed = [outcome for outcome in run.outcomes if outcome.applied]
    by_name = {job.display_name: job for job in jobs}
    for _ in range(MAX_PROGRAM_ROUNDS - 1):
        if not changed:
            break
        summaries = dict(program.summaries)
        summaries.update({o.filename: o.summary for o in changed if o.summary is not None})
        program = ProgramFacts(summaries)
        stale = [
            by_name[name]
            for name, outcome in outcomes.items()
            if any(program.answer(name, q) != a for q, a in outcome.asked.items())
        ]
        again = run_jobs(task, stale, options.jobs, shared=program)
        run.internal_errors.extend(again.internal_errors)
        run.crashed.extend(again.crashed)
        changed = [outcome for outcome in again.outcomes if outcome.applied]
        for outcome in again.outcomes:
            first = outcomes[outcome.filename]
            outcome.before = first.before
            outcome.applied.update(first.applied)
            outcomes[outcome.filename] = outcome
    run.outcomes = [outcomes[job.display_name] for job in jobs if job.display_name in outcomes]
    return run


def _fix(
    jobs: Sequence[FileJob],
    program: ProgramFacts,
    configuration: Configuration,
    options: CheckOptions,
    roots: Sequence[Path] = (),
    discovery_errors: Sequence[FileError] = (),
) -> int:
    from torchperf_lint.fixes import unified_diff

    console = options.console
    run = _fix_program(jobs, program, options, roots)
    for outcome in run.outcomes:
        if outcome.reverted:
            console.note(f"warning: {outcome.filename}: {outcome.reverted}")
    remaining = [d for outcome in run.outcomes for d in outcome.remaining]
    errors = sorted(
        [
            *(outcome.error for outcome in run.outcomes if outcome.error),
            *run.crashed,
            *discovery_errors,
        ],
        key=lambda e: e.sort_key,
    )
    fixed = sum(sum(outcome.applied.values()) for outcome in run.outcomes)
    if options.diff or options.fix_only:
        # They report no findings, but a notebook's cell that does not parse is an error.
        errors = sorted([*errors, *_unparsable_cells(remaining)], key=lambda e: e.sort_key)
    if options.diff:
        changed = [o for o in run.outcomes if o.before != o.after]
        for outcome in changed:
            console.report(unified_diff(outcome.filename, outcome.before, outcome.after))
        _print_file_errors(errors, console)
        console.note(f"Would fix {_errors(fixed)}." if fixed else "No errors would be fixed.")
        _print_internal_errors(run.internal_errors)
        if run.internal_errors:
            return EXIT_ERROR
        return _diff_exit(bool(changed) or bool(errors))
    if options.show_fixes and fixed and not (console.quiet or console.silent):
        _print_fixes(run.outcomes, console)
    if options.fix_only:
        # Ruff's --fix-only: what was fixed, never what remains; only files that could not be
        # fixed at all, and internal errors, still fail the run.
        _print_file_errors(errors, console)
        if fixed:
            console.summary(f"Fixed {_errors(fixed)}.")
        _print_internal_errors(run.internal_errors)
        return _exit_code(bool(errors), bool(fixed), run.internal_errors, options)
    diagnostics = sorted(remaining, key=lambda d: d.sort_key)
    return _report(diagnostics, errors, run.internal_errors, configuration, options, fixed=fixed)


def _unparsable_cells(diagnostics: Sequence[Diagnostic]) -> list[FileError]:
    """The notebook cells that could not be parsed (their E902 diagnostics), as errors."""
    from torchperf_lint.diagnostics import FILE_ERROR_CODE, FileError

    return [
        FileError(d.filename, d.message, d.location, d.cell)
        for d in diagnostics
        if d.code == FILE_ERROR_CODE
    ]


def _print_file_errors(errors: Sequence[FileError], console: Console) -> None:
    if not console.silent:
        for error in errors:
            cell = "" if error.cell is None else f"cell {error.cell}: "
            click.echo(f"error: {error.filename}: {cell}{error.reason}", err=True)


def _errors(count: int) -> str:
    return f"{count} error" if count == 1 else f"{count} errors"


def _print_fixes(outcomes: Sequence, console: Console) -> None:
    """Ruff's `--show-fixes` list: `Fixed N errors:`, then `- file:` and `  k × CODE (name)`."""
    from torchperf_lint.registry import BY_CODE

    total = sum(sum(outcome.applied.values()) for outcome in outcomes)
    lines = [f"Fixed {_errors(total)}:"]
    for outcome in sorted(outcomes, key=lambda o: o.filename):
        if not outcome.applied:
            continue
        lines.append(f"- {outcome.filename}:")
        for code, count in sorted(outcome.applied.items()):
            lines.append(f"    {count} × {code} ({BY_CODE[code].name})")
    console.report("\n".join(lines) + "\n\n")


def add_noqa_job(job: FileJob, roots: Sequence[Path] = ()) -> int | FileError:
    """How many `# noqa` comments were added to the file (a `.py` file or a notebook's cells),
    or why it could not be written."""
    from torchperf_lint.diagnostics import FileError
    from torchperf_lint.runner import shared

    refusal = outside_roots(job.path, roots) if roots else None
    if refusal is not None:
        return FileError(job.display_name, refusal)
    try:
        if job.path.suffix == ".ipynb":
            from torchperf_lint.notebooks import add_noqa_notebook

            return add_noqa_notebook(job.path, job.display_name, job.settings, shared())
        from torchperf_lint.fixes import add_noqa_file

        return add_noqa_file(job.path, job.display_name, job.settings, shared())
    except OSError as error:
        return FileError(job.display_name, f"cannot write: {error.strerror or error}")


def _add_noqa(
    jobs: Sequence[FileJob],
    program: ProgramFacts,
    options: CheckOptions,
    roots: Sequence[Path] = (),
    discovery_errors: Sequence[FileError] = (),
) -> int:
    from torchperf_lint.diagnostics import FileError
    from torchperf_lint.runner import run_jobs

    run = run_jobs(partial(add_noqa_job, roots=roots), jobs, options.jobs, shared=program)
    added = sum(outcome for outcome in run.outcomes if isinstance(outcome, int))
    noun = "directive" if added == 1 else "directives"
    refused = [outcome for outcome in run.outcomes if isinstance(outcome, FileError)]
    errors = sorted([*refused, *run.crashed, *discovery_errors], key=lambda e: e.sort_key)
    _print_file_errors(errors, options.console)
    if not (options.console.quiet or options.console.silent):
        click.echo(f"Added {added} noqa {noun}.", err=True)
    _print_internal_errors(run.internal_errors)
    if run.internal_errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if errors else EXIT_CLEAN


def _show_settings(
    paths: Sequence[Path], configuration: Configuration, options: CheckOptions
) -> int:
    """Ruff's `--show-settings`: the settings that apply to the first file to lint."""
    from torchperf_lint.discovery import discover

    if options.stdin_filename and (not paths or list(paths) == [Path(STDIN)]):
        path = configuration.cwd / options.stdin_filename
    else:
        files = discover(paths or [Path(".")], configuration, options.force_exclude).files
        if not files:
            raise click.UsageError("no file to show the settings of")
        path = files[0]
    config = configuration.config_for(path)
    settings = configuration.settings_for(path)
    cache = "(none)" if options.cache_dir is None else str(options.cache_dir)
    torch_version = 'torch-version = "{}.{}"'.format(*settings.options.torch_version)
    declared = configuration.declared_torch(path)
    if declared is not None:
        below = settings.options.torch_below
        newest = "" if below is None else ", below {}".format(".".join(map(str, below)))
        torch_version += f"  # declared in {', '.join(declared.files)}{newest}"

    def strings(values: Sequence[str]) -> str:
        return "[" + ", ".join(f'"{value}"' for value in values) + "]"

    lines = [
        f'Resolved settings for: "{path}"',
        f"Settings path: {config.source}",
        "",
        f"rules = {strings([rule.code for rule in settings.rules])}",
        f'target-device = "{settings.options.target_device}"',
        torch_version,
        f"exclude = {strings(config.exclude)}",
        f"extend-exclude = {strings(config.extend_exclude)}",
        "per-file-ignores = {"
        + ", ".join(f'"{glob}" = {strings(codes)}' for glob, codes in config.per_file_ignores)
        + "}",
        f"cache-dir = {cache}",
        f"jobs = {options.jobs}",
    ]
    click.echo("\n".join(lines), file=options.console.stream)
    return EXIT_CLEAN


# The catalog


@main.command("rules")
def list_rules() -> None:
    """List every rule: code, name, default or opt-in, and fix availability."""
    from torchperf_lint.docs import fix_availability, status
    from torchperf_lint.registry import ALL_RULES

    header = ("Code", "Name", "Status", "Fix")
    rows = [(r.code, r.name, status(r), fix_availability(r)) for r in ALL_RULES]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


@main.command("rule")
@click.argument("code")
def show_rule(code: str) -> None:
    """Print the documentation of the rule CODE (or its kebab-case name)."""
    from torchperf_lint.docs import render_page
    from torchperf_lint.registry import lookup

    rule = lookup(code)
    if rule is None:
        click.echo(f"error: unknown rule {code!r} (see `torchperf-lint rules`)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(render_page(rule), nl=False)


@main.command("server")
def server() -> None:
    """Run the language server (LSP over stdio); needs the `lsp` extra."""
    from torchperf_lint.server import serve

    sys.exit(serve())
