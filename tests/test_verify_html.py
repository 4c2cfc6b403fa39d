"""`verify --html`, rendered by a real headless Chromium: the page is not blank, has one chart per
section, plots exactly the JSON report's numbers, and asks the network for nothing."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from browser import Browser
from verify_helpers import PLAN, finding, rank_result

from torchperf_lint.verify.harness import Job
from torchperf_lint.verify.html import render_html
from torchperf_lint.verify.report import summarize, to_json
from torchperf_lint.verify.runner import RunOutcome, VariantRuns
from torchperf_lint.verify.variants import ALL_FIXES, BASELINE, Variant

SOURCE = (
    "import torch\nloader = DataLoader(data)\noptimizer = torch.optim.Adam(p, weight_decay=1)\n"
)
CHARTS = ["step-times", "losses", "syncs", "data-wait", "memory", "ranks"]

# What the page shows, read back from the rendered DOM: for each chart section, its number of
# <svg>s and their rendered size, and for each plotted series its numbers and how many of its
# marks have a rendered size.
PAGE_FACTS = """(() => [...document.querySelectorAll("section.chart")].map(section => {
  const svg = section.querySelector("svg").getBoundingClientRect();
  return {
    chart: section.dataset.chart,
    svgs: section.querySelectorAll("svg").length,
    size: [svg.width, svg.height],
    series: [...section.querySelectorAll("g.series")].map(group => ({
      name: group.dataset.name,
      values: group.dataset.values,
      firstDifference: group.dataset.firstDifference ?? null,
      drawn: [...group.querySelectorAll("circle, rect, polyline")].filter(mark => {
        const box = mark.getBoundingClientRect();
        return box.width > 0 && box.height > 0;
      }).length,
    })),
  };
}))()"""


def distributed_run(mode: str, rank_times: list[list[float]], losses=(1.0, 0.5)) -> RunOutcome:
    job = Job("train.py", "train.py", mode, PLAN.warmup, PLAN.steps, ranks=len(rank_times))
    results = [
        rank_result(times, losses, rank=rank, peak_memory_bytes=(100 + rank) * 2**20)
        for rank, times in enumerate(rank_times)
    ]
    return RunOutcome(job, "ok", results)


def variant_runs(variant: Variant, scale: float, losses=(2.0, 1.5, 1.2, 1.0)) -> VariantRuns:
    runs = VariantRuns(variant, "train.py")
    runs.timing = [
        distributed_run(
            "timing",
            [[scale * (0.010 + 0.001 * ((repeat + step) % 3)) for step in range(10)]] * 2,
        )
        for repeat in range(3)
    ]
    runs.census = [distributed_run("census", [[scale * 0.02] * 10] * 2, losses)]
    return runs


@pytest.fixture(scope="module")
def report():
    baseline = variant_runs(Variant(BASELINE, SOURCE), 1.0)
    baseline.census.append(baseline.census[0])
    fixed = SOURCE.replace("(data)", "(data, num_workers=4)")
    all_fixes = Variant(ALL_FIXES, fixed, (finding("TPL101", 2),), ("TPL101",))
    adamw = SOURCE.replace("Adam(", "AdamW(")
    per_fix = Variant("TPL601 3:13", adamw, (finding("TPL601", 3),), ("TPL601",))
    return summarize(
        replace(PLAN, nproc_per_node=2),
        [finding("TPL101", 2), finding("TPL601", 3)],
        [
            baseline,
            variant_runs(all_fixes, 0.5),
            variant_runs(per_fix, 0.9, losses=(2.0, 1.5, 1.1, 0.9)),
        ],
    )


@pytest.fixture(scope="module")
def rendered(report, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The page as a browser rendered it: the facts of its charts, its pixels, its requests."""
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(report), encoding="utf-8")
    with Browser() as browser:
        browser.open(path)
        return {
            "path": path,
            "charts": browser.evaluate(PAGE_FACTS),
            "pixels": browser.screenshot(1000, 1400, scale=0.25),
            "requests": browser.requested_urls(),
        }


def numbers(text: str) -> list[float]:
    return [float(number) for number in text.split()]


def test_the_page_is_not_blank_and_has_one_chart_per_section(rendered) -> None:
    pixels = [pixel for row in rendered["pixels"] for pixel in row]
    inked = sum(1 for pixel in pixels if min(pixel) < 200)
    assert inked / len(pixels) > 0.02
    charts = rendered["charts"]
    assert [chart["chart"] for chart in charts] == CHARTS
    for chart in charts:
        assert chart["svgs"] == 1, chart["chart"]
        assert min(chart["size"]) > 50, chart["chart"]
        assert chart["series"] and all(series["drawn"] > 0 for series in chart["series"])


def test_the_charts_plot_the_json_reports_numbers(rendered, report) -> None:
    document = to_json(report)
    variants = document["variants"]
    series = {chart["chart"]: chart["series"] for chart in rendered["charts"]}

    step_times = {s["name"]: numbers(s["values"]) for s in series["step-times"]}
    assert step_times == {
        v["name"]: [t for run in v["runs"] if run["mode"] == "timing" for t in run["step_times_s"]]
        for v in variants
    }
    assert len(step_times[BASELINE]) == 30

    losses = {s["name"]: (numbers(s["values"]), s["firstDifference"]) for s in series["losses"]}
    census = {v["name"]: next(r for r in v["runs"] if r["mode"] == "census") for v in variants}
    assert losses == {
        v["name"]: (census[v["name"]]["losses"], _attribute(v["loss_first_difference"]))
        for v in variants
    }
    assert losses["TPL601 3:13"][1] == "2"

    (syncs,) = series["syncs"]
    assert numbers(syncs["values"]) == [item["per_step"] for item in document["evidence"]]
    (data_wait,) = series["data-wait"]
    assert numbers(data_wait["values"]) == [v["data_wait_share"] for v in variants]
    (memory,) = series["memory"]
    assert numbers(memory["values"]) == [v["peak_memory_bytes"] for v in variants]
    (ranks,) = series["ranks"]
    assert numbers(ranks["values"]) == [t for v in variants for t in v["rank_step_time_s"]]


def _attribute(value: int | None) -> str:
    return "" if value is None else str(value)


def test_the_page_makes_no_network_request(rendered) -> None:
    text = rendered["path"].read_text(encoding="utf-8")
    assert not re.search(r"https?:|//[\w.-]+/|src=|href=|url\(|@import", text, re.IGNORECASE)
    assert not re.search(r"<(script|link|img|iframe|object|embed|base)\b", text, re.IGNORECASE)
    assert rendered["requests"] == [rendered["path"].resolve().as_uri()]


def test_a_report_without_timing_still_has_every_chart(tmp_path: Path) -> None:
    runs = VariantRuns(Variant(BASELINE, SOURCE), "train.py")
    runs.census = [RunOutcome(Job("train.py", "train.py", "census", 2, 10), "timed-out")]
    page = render_html(summarize(PLAN, [], [runs]))
    sections = re.findall(
        r'<section class="chart" data-chart="([\w-]+)">(.*?)</section>', page, re.DOTALL
    )
    assert [name for name, _ in sections] == CHARTS[:-1]
    assert all(body.count("<svg") == 1 for _, body in sections)
    assert "no timing run reached a measured step" in page
    assert "Nothing to fix" in page
