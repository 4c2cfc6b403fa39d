"""The `torchperf-lint verify` command: lint, rewrite, run before and after, report."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

import click

from torchperf_lint.config import ConfigError, Configuration, Overrides
from torchperf_lint.engine import SourceError, decode, lint_text
from torchperf_lint.verify.report import render, summarize, to_json
from torchperf_lint.verify.runner import Plan, measure
from torchperf_lint.verify.variants import build_variants

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
    "--json", "as_json", is_flag=True, help="Print the report as JSON (schema in the docs)."
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
    as_json: bool,
) -> None:
    """Run SCRIPT as written and with its fixes applied, and measure whether they pay off.

    Each variant runs in its own process, with the original __file__, working directory and
    sys.path[0]. A step is one optimizer.step(); after --warmup + --steps steps the run stops.
    Exit status: 0 when it measured, 2 when the script could not be run at all.
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

    plan = Plan(script, script_args, steps, warmup, repeats, timeout_s)
    show_progress = sys.stderr.isatty() and not as_json
    folder = Path(tempfile.mkdtemp(prefix="torchperf-verify-"))
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
    click.echo(json.dumps(to_json(report), indent=2) if as_json else render(report))
    if not report.measured:
        sys.exit(2)
