"""The `torchperf-lint verify` command: lint, rewrite, run before and after, report."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shutil
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import click

from torchperf_lint.config import ConfigError, Configuration, Overrides
from torchperf_lint.engine import SourceError, decode, lint_text
from torchperf_lint.verify.html import render_html
from torchperf_lint.verify.processes import Stopped, make_scratch_folder, remove_abandoned_scratch
from torchperf_lint.verify.report import render, summarize, to_json
from torchperf_lint.verify.runner import Plan, measure
from torchperf_lint.verify.variants import build_variants

UNWINDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
NEEDS_TORCH = "verify needs PyTorch: pip install 'torch>=2.1' (or the `verify` extra)"


class CannotVerify(click.ClickException):
    """`verify` could not run at all: printed as `Error: ...`, exit status 2."""

    exit_code = 2


def _codes(values: tuple[str, ...]) -> tuple[str, ...] | None:
    """`--select A,B --select C` as one tuple; None when the option was not given."""
    return (
        tuple(code.strip() for value in values for code in value.split(",") if code.strip()) or None
    )


@click.command(
    "verify",
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Everything after `--` is passed to the script: verify train.py -- --epochs 1",
)
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--steps",
    default=50,
    show_default=True,
    type=click.IntRange(min=1),
    help="Training steps measured per run, after the warm-up.",
)
@click.option(
    "--warmup",
    default=5,
    show_default=True,
    type=click.IntRange(min=0),
    help="Steps run before measuring (torch.compile, allocator and cache warm-up).",
)
@click.option(
    "--repeats",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Timing runs per variant, alternating A B A B ...",
)
@click.option(
    "--select",
    "select",
    multiple=True,
    metavar="CODES",
    help="Rules whose fixes to verify (codes or prefixes, comma-separated).",
)
@click.option(
    "--per-fix", is_flag=True, help="Also run one variant per fix, to attribute the gain."
)
@click.option(
    "--timeout",
    "timeout_s",
    default=300.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds before a run is killed.",
)
@click.option(
    "--nproc-per-node",
    "nproc_per_node",
    type=click.IntRange(min=1),
    help="Run every variant through torch.distributed.run (torchrun) with N processes.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the report as JSON (schema in the docs)."
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Also write a self-contained visual report to this file.",
)
def verify(
    script: str,
    script_args: tuple[str, ...],
    steps: int,
    warmup: int,
    repeats: int,
    select: tuple[str, ...],
    per_fix: bool,
    timeout_s: float,
    nproc_per_node: int | None,
    as_json: bool,
    html_path: str | None,
) -> None:
    """Run SCRIPT as written and with its fixes applied, and measure whether they pay off.

    Each variant runs in its own process (one per rank with --nproc-per-node), with the
    original __file__, working directory and sys.path[0]. A step is one optimizer.step(); after
    --warmup + --steps steps the run stops. Exit status: 0 when it measured, 2 when the script
    could not be run at all, 128 + N when stopped by signal N (no process or temporary file of
    the run is left).
    """
    if importlib.util.find_spec("torch") is None:
        raise CannotVerify(NEEDS_TORCH)
    path = Path(script)
    try:
        settings = Configuration(Overrides(select=_codes(select))).settings_for(path)
        text = decode(path.read_bytes()).text
        findings = lint_text(text, script, settings)
        variants = build_variants(text, script, settings, findings, per_fix)
    except (ConfigError, SourceError, OSError) as error:
        raise CannotVerify(f"{script}: {error}") from None

    plan = Plan(script, script_args, steps, warmup, repeats, timeout_s, nproc_per_node)
    show_progress = sys.stderr.isatty() and not as_json
    remove_abandoned_scratch()
    with _stop_signals_unwind():
        folder = make_scratch_folder()
        try:
            located = [(variants[0], str(path.resolve()))]
            for number, variant in enumerate(variants[1:], start=1):
                located.append((variant, str(variant.write(folder / str(number), path.name))))
            runs = measure(
                plan,
                located,
                progress=lambda message: click.echo(message, err=True) if show_progress else None,
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    report = summarize(plan, findings, runs)
    if html_path is not None:
        Path(html_path).write_text(render_html(report), encoding="utf-8")
    click.echo(json.dumps(to_json(report), indent=2) if as_json else render(report))
    if not report.measured:
        sys.exit(2)


@contextlib.contextmanager
def _stop_signals_unwind() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into an exception while the runs go on, so that `finally`
    blocks stop the run's supervisor and remove the scratch folders; then exit 128 + N. Ctrl-C
    (SIGINT) already raises KeyboardInterrupt: it exits 130 the same way."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous = {signum: signal.getsignal(signum) for signum in UNWINDING_SIGNALS}

    def unwind(signum: int, frame: object) -> None:
        for number in UNWINDING_SIGNALS:
            signal.signal(number, signal.SIG_IGN)  # one stop is enough; let the clean-up run
        raise Stopped(signum)

    for signum in UNWINDING_SIGNALS:
        signal.signal(signum, unwind)
    try:
        yield
    except Stopped as stop:
        sys.exit(128 + stop.signum)
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGINT)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
