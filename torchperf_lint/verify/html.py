"""`verify --html`: the report as one self-contained page for people to look at.

Inline CSS and SVG only: no script, no font, no image, no link to anything, so the file opens
offline and makes no request. Every chart section (`<section class="chart">`) holds exactly one
`<svg>`; each plotted series is a `<g class="series">` whose `data-values` are the plotted
numbers, written as Python's `repr` so that they read back equal to the JSON report's
(`--json`) numbers:

- `step-times`: every measured step of every timing run, per variant (the slowest rank's), in
  the order of the variant's timing runs in the JSON report;
- `losses`: every recorded loss of the first census run of the script as written and of each
  variant's census run (rank 0), with `data-first-difference`, the index of the first loss
  beyond the tolerance (`loss_first_difference`), drawn as a dashed line;
- `syncs`: host syncs per step at each source line of the script as written (`evidence`);
- `data-wait` and `memory`: the data-wait share and the peak memory of each variant;
- `ranks` (with `--nproc-per-node`): each rank's step time, per variant.

Then the findings and, per variant, the diff it applied.
"""

from __future__ import annotations

import difflib
import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from torchperf_lint.verify.report import (
    CALL_TEXT,
    VariantSummary,
    VerifyReport,
    device_text,
    speedup_text,
)

WIDTH = 760
LEFT = 200  # room for the labels of rows
RIGHT = 20
TOP = 16
BOTTOM = 36  # room for the x axis and its title
ROW = 34
PLOT_HEIGHT = 240
# Distinguishable in colour and for colour-blind readers (Okabe and Ito).
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442")

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 820px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; } td, th { padding: 2px 10px; text-align: left; }
th { border-bottom: 1px solid #999; } pre { background: #f6f6f6; padding: 8px; overflow-x: auto; }
svg { display: block; } svg text { font: 12px system-ui, sans-serif; fill: #222; }
.axis line { stroke: #888; } .axis line.grid { stroke: #e4e4e4; }
.del { color: #b00; } .add { color: #070; } .note { color: #555; }
"""


def render_html(report: VerifyReport) -> str:
    """The whole page."""
    plan = report.plan
    title = f"torchperf-lint verify {Path(plan.script).name}"
    processes = f", {plan.nproc_per_node} processes" if plan.nproc_per_node else ""
    colours = {
        summary.runs.variant.name: PALETTE[position % len(PALETTE)]
        for position, summary in enumerate(report.variants)
    }
    sections = [
        _chart_section(
            "step-times",
            "Step time of every measured step",
            "Each dot is one step of a timing run (the slowest rank's); the bar is the median "
            "of the runs' mean step times, as in the table.",
            _step_time_chart(report.variants, colours),
        ),
        _chart_section(
            "losses",
            "Loss curves",
            "Every loss passed to backward() in the census runs. A dashed line marks where a "
            "variant first differs from the script as written beyond the tolerance.",
            _loss_chart(report.variants, colours),
        ),
        _chart_section(
            "syncs",
            "Host syncs per step, by source line",
            "In the script as written (census run, measured steps).",
            _bar_chart(
                [
                    f"{Path(plan.script).name}:{item.row} {_plain(CALL_TEXT[item.call])}"
                    for item in report.evidence
                ],
                [item.count / item.steps for item in report.evidence],
                [PALETTE[0]] * len(report.evidence),
                _Unit("syncs per step", 1, "{:g}"),
                empty="no host sync at the script's own lines",
            ),
        ),
        _chart_section(
            "data-wait",
            "Time waiting for the DataLoader",
            "Share of the measured window spent in DataLoader.__next__ (median of the runs).",
            _variant_bars(
                report.variants,
                colours,
                lambda s: s.data_wait_share,
                _Unit("% of the measured window", 0.01, "{:.0f}%"),
            ),
        ),
        _chart_section(
            "memory",
            "Peak memory",
            "torch.cuda.max_memory_allocated on CUDA, the process's peak RSS elsewhere.",
            _variant_bars(
                report.variants,
                colours,
                lambda s: s.peak_memory_bytes,
                _Unit("MiB", 2**20, "{:,.0f} MiB"),
            ),
        ),
    ]
    if plan.nproc_per_node:
        sections.append(
            _chart_section(
                "ranks",
                "Step time per rank",
                "The slowest rank's step time is the variant's step time.",
                _rank_chart(report.variants, colours),
            )
        )
    body = [
        f"<h1>{_text(title)}</h1>",
        (
            f'<p class="note">{plan.steps} steps after {plan.warmup} warm-up, {plan.repeats} '
            f"repeats{processes}, torch {_text(report.torch_version or '?')}, "
            f"{device_text(report.cuda_available)}</p>"
        ),
        _summary_table(report.variants),
        *sections,
        _findings_section(report),
        _diffs_section(report),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{_text(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


# Sections.


def _chart_section(name: str, heading: str, note: str, chart: str) -> str:
    return (
        f'<section class="chart" data-chart="{name}">\n<h2>{_text(heading)}</h2>\n'
        f'<p class="note">{_text(note)}</p>\n{chart}\n</section>'
    )


def _summary_table(variants: list[VariantSummary]) -> str:
    rows = [
        (
            "<tr><th>variant</th><th>fixes</th><th>step time</th><th>speedup (95% CI)</th>"
            "<th>losses</th><th>verdict</th></tr>"
        )
    ]
    for summary in variants:
        variant = summary.runs.variant
        losses = {True: "agree", False: "differ", None: "-"}[summary.losses.agree]
        step = "-" if summary.step_time_s is None else f"{summary.step_time_s * 1000:.2f} ms"
        rows.append(
            f"<tr><td>{_text(variant.name)}</td><td>{_text(', '.join(variant.codes) or '-')}</td>"
            f"<td>{step}</td><td>{_text(speedup_text(summary))}</td>"
            f"<td>{'-' if variant.is_baseline else losses}</td>"
            f"<td>{_text(summary.verdict or '-')}</td></tr>"
        )
    notes = "".join(
        f"<li>{_text(s.runs.variant.name)}: {_text(s.note)}</li>" for s in variants if s.note
    )
    return (
        f'<section class="summary">\n<table>{"".join(rows)}</table>\n'
        + (f"<ul>{notes}</ul>\n" if notes else "")
        + "</section>"
    )


def _findings_section(report: VerifyReport) -> str:
    name = Path(report.plan.script).name
    items = "".join(
        f"<li><code>{_text(name)}:{d.location.row}:{d.location.column}</code> "
        f"<b>{_text(d.code)}</b> {_text(d.message)}"
        f"{' (fix: ' + _text(d.fix.applicability.value) + ')' if d.fix else ''}</li>"
        for d in report.findings
    )
    return (
        '<section class="findings">\n<h2>Findings</h2>\n'
        + (f"<ul>{items}</ul>" if items else "<p>None.</p>")
        + "\n</section>"
    )


def _diffs_section(report: VerifyReport) -> str:
    baseline = report.variants[0].runs.variant.source
    name = Path(report.plan.script).name
    parts = ['<section class="diffs">\n<h2>What each variant changed</h2>']
    for summary in report.variants[1:]:
        variant = summary.runs.variant
        lines = difflib.unified_diff(
            baseline.splitlines(keepends=True),
            variant.source.splitlines(keepends=True),
            f"{name} (as written)",
            f"{name} ({variant.name})",
        )
        rendered = "".join(_diff_line(line) for line in lines)
        parts.append(f"<h3>{_text(variant.name)}</h3>\n<pre>{rendered}</pre>")
    if len(parts) == 1:
        parts.append("<p>Nothing to fix: only the script as written ran.</p>")
    return "\n".join(parts) + "\n</section>"


def _diff_line(line: str) -> str:
    text = _text(line if line.endswith("\n") else line + "\n")
    if line.startswith("-") and not line.startswith("---"):
        return f'<span class="del">{text}</span>'
    if line.startswith("+") and not line.startswith("+++"):
        return f'<span class="add">{text}</span>'
    return text


# Charts.


def _step_time_chart(variants: list[VariantSummary], colours: dict[str, str]) -> str:
    samples = [
        [
            time
            for run in summary.runs.timing
            if run.measured
            for time in run.slowest_rank["step_times_s"]
        ]
        for summary in variants
    ]
    every = [time * 1000 for sample in samples for time in sample]
    height = TOP + ROW * len(variants) + BOTTOM
    if not every:
        return _empty_chart(height, "no timing run reached a measured step")
    scale = _Scale(0.0, max(every), LEFT, WIDTH - RIGHT)
    parts = [_x_axis(scale, height - BOTTOM, "ms per step")]
    for row, (summary, sample) in enumerate(zip(variants, samples)):
        name = summary.runs.variant.name
        middle = TOP + ROW * row + ROW / 2
        marks = [
            f'<circle cx="{scale(time * 1000):.1f}" cy="{middle + _jitter(index):.1f}" r="2.2" '
            f'fill="{colours[name]}" fill-opacity="0.55"/>'
            for index, time in enumerate(sample)
        ]
        if summary.step_time_s is not None:
            x = scale(summary.step_time_s * 1000)
            marks.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{middle - 12:.1f}" y2="{middle + 12:.1f}" '
                'stroke="#222" stroke-width="2"/>'
            )
        label = f'<text x="{LEFT - 8}" y="{middle + 4:.1f}" text-anchor="end">{_text(name)}</text>'
        if summary.speedup is not None:
            label = (
                f'<text x="{LEFT - 8}" y="{middle - 2:.1f}" text-anchor="end">{_text(name)}</text>'
                f'<text x="{LEFT - 8}" y="{middle + 12:.1f}" text-anchor="end">'
                f"{_text(speedup_text(summary))}</text>"
            )
        parts.append(label + _series(name, sample, "".join(marks)))
    return _svg(height, parts)


def _loss_chart(variants: list[VariantSummary], colours: dict[str, str]) -> str:
    curves = [(summary, _census_losses(summary)) for summary in variants]
    curves = [(summary, losses) for summary, losses in curves if losses]
    height = TOP + PLOT_HEIGHT + BOTTOM + 20 * len(curves)
    finite = [loss for _, losses in curves for loss in losses if math.isfinite(loss)]
    if not finite:
        return _empty_chart(TOP + ROW + BOTTOM, "no losses were recorded")
    longest = max(len(losses) for _, losses in curves)
    x_scale = _Scale(0.0, max(longest - 1, 1), LEFT, WIDTH - RIGHT)
    y_scale = _Scale(min(finite), max(finite), TOP + PLOT_HEIGHT, TOP)
    parts = [
        _x_axis(x_scale, TOP + PLOT_HEIGHT, "backward() call"),
        _y_axis(y_scale, "loss"),
    ]
    for position, (summary, losses) in enumerate(curves):
        name = summary.runs.variant.name
        points = " ".join(
            f"{x_scale(index):.1f},{y_scale(loss):.1f}"
            for index, loss in enumerate(losses)
            if math.isfinite(loss)
        )
        first = summary.losses.first_difference
        extra = ""
        if first is not None:
            x = x_scale(first)
            extra = (
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + PLOT_HEIGHT}" '
                f'stroke="{colours[name]}" stroke-dasharray="5 4" stroke-width="1.5"/>'
            )
        legend_y = TOP + PLOT_HEIGHT + BOTTOM + 20 * position + 4
        label = name if first is None else f"{name} (parts from the script at call {first})"
        dashes = ' stroke-dasharray="6 3"' if position else ""
        parts.append(
            _series(
                name,
                losses,
                f'<polyline points="{points}" fill="none" stroke="{colours[name]}" '
                f'stroke-width="1.6"{dashes}/>{extra}'
                f'<rect x="{LEFT}" y="{legend_y - 9}" width="14" height="4" fill="{colours[name]}"/>'
                f'<text x="{LEFT + 20}" y="{legend_y}">{_text(label)}</text>',
                first_difference=first,
            )
        )
    return _svg(height, parts)


def _census_losses(summary: VariantSummary) -> list[float]:
    census = [run for run in summary.runs.census if run.measured]
    return list(census[0].result.get("losses", [])) if census else []


@dataclass(frozen=True)
class _Unit:
    """How a bar chart shows its values: the axis title, the size of one unit in the plotted
    numbers (2**20 bytes for MiB), and the format of one value in units."""

    title: str
    size: float
    format: str

    def text(self, value: float) -> str:
        return self.format.format(value / self.size)


def _variant_bars(
    variants: list[VariantSummary],
    colours: dict[str, str],
    value_of: Callable[[VariantSummary], float | None],
    unit: _Unit,
) -> str:
    measured = [summary for summary in variants if value_of(summary) is not None]
    return _bar_chart(
        [summary.runs.variant.name for summary in measured],
        [value_of(summary) for summary in measured],
        [colours[summary.runs.variant.name] for summary in measured],
        unit,
        empty="no variant was measured",
    )


def _rank_chart(variants: list[VariantSummary], colours: dict[str, str]) -> str:
    labels, values, fills = [], [], []
    for summary in variants:
        for rank, time in enumerate(summary.rank_step_time_s or ()):
            labels.append(f"{summary.runs.variant.name}, rank {rank}")
            values.append(time)
            fills.append(colours[summary.runs.variant.name])
    return _bar_chart(labels, values, fills, _Unit("ms per step", 1e-3, "{:.2f} ms"), "no rank")


def _bar_chart(
    labels: Sequence[str],
    values: Sequence[float],
    fills: Sequence[str],
    unit: _Unit,
    empty: str,
) -> str:
    """Horizontal bars, one per label; one series holding every value."""
    height = TOP + ROW * max(len(values), 1) + BOTTOM
    if not values:
        return _empty_chart(height, empty)
    scale = _Scale(0.0, max(max(values) / unit.size, 1e-12), LEFT, WIDTH - RIGHT - 80)
    bars = []
    for row, (label, value, fill) in enumerate(zip(labels, values, fills)):
        top = TOP + ROW * row + 6
        end = scale(value / unit.size)
        bars.append(
            f'<text x="{LEFT - 8}" y="{top + 15}" text-anchor="end">{_text(label)}</text>'
            f'<rect x="{LEFT}" y="{top}" width="{max(end - LEFT, 1):.1f}" height="20" '
            f'fill="{fill}"/><text x="{end + 6:.1f}" y="{top + 15}">{_text(unit.text(value))}</text>'
        )
    return _svg(
        height,
        [_x_axis(scale, height - BOTTOM, unit.title), _series(unit.title, values, "".join(bars))],
    )


# Drawing.


class _Scale:
    """A linear map from data values to pixels, padded so no mark sits on the frame."""

    def __init__(self, low: float, high: float, start: float, end: float) -> None:
        if high <= low:
            low, high = low - 0.5, high + 0.5
        self.low, self.high, self.start, self.end = low, high, start, end

    def __call__(self, value: float) -> float:
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)

    def ticks(self, count: int = 5) -> list[float]:
        """Round values between low and high, at a 1, 2 or 5 times power-of-ten step."""
        raw = (self.high - self.low) / count
        power = 10 ** math.floor(math.log10(raw))
        step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
        first = math.ceil(self.low / step) * step
        return [first + k * step for k in range(int((self.high - first) / step) + 1)]


def _x_axis(scale: _Scale, y: float, title: str) -> str:
    ticks = "".join(
        f'<line class="grid" x1="{scale(t):.1f}" x2="{scale(t):.1f}" y1="{TOP}" y2="{y}"/>'
        f'<text x="{scale(t):.1f}" y="{y + 14}" text-anchor="middle">{t:g}</text>'
        for t in scale.ticks()
    )
    return (
        f'<g class="axis">{ticks}<line x1="{scale.start}" x2="{scale.end}" y1="{y}" y2="{y}"/>'
        f'<text x="{(scale.start + scale.end) / 2:.1f}" y="{y + 30}" text-anchor="middle">'
        f"{_text(title)}</text></g>"
    )


def _y_axis(scale: _Scale, title: str) -> str:
    ticks = "".join(
        f'<text x="{LEFT - 6}" y="{scale(t) + 4:.1f}" text-anchor="end">{t:.4g}</text>'
        for t in scale.ticks()
    )
    return (
        f'<g class="axis">{ticks}<line x1="{LEFT}" x2="{LEFT}" y1="{scale.end}" '
        f'y2="{scale.start}"/><text x="{LEFT - 60}" y="{TOP + 4}" text-anchor="end">'
        f"{_text(title)}</text></g>"
    )


def _series(name: str, values: Sequence[float], marks: str, **data: int | None) -> str:
    attributes = "".join(
        f' data-{key.replace("_", "-")}="{"" if value is None else value}"'
        for key, value in data.items()
    )
    numbers = " ".join(repr(float(value)) for value in values)
    return (
        f'<g class="series" data-name="{_text(name)}" data-values="{numbers}"{attributes}>'
        f"{marks}</g>"
    )


def _svg(height: float, parts: list[str]) -> str:
    return (
        f'<svg width="{WIDTH}" height="{height:.0f}" viewBox="0 0 {WIDTH} {height:.0f}" '
        f'role="img">{"".join(parts)}</svg>'
    )


def _empty_chart(height: float, message: str) -> str:
    return _svg(
        height,
        [f'<text x="{WIDTH / 2}" y="{height / 2}" text-anchor="middle">{_text(message)}</text>'],
    )


def _jitter(index: int) -> float:
    """A fixed vertical spread, so that equal step times do not hide one another."""
    return ((index * 7) % 11 - 5) * 1.6


# Text.


def _text(value: object) -> str:
    return html.escape(str(value))


def _plain(markdown: str) -> str:
    return markdown.replace("`", "")
