"""The README's promises: its sample output is what the installed command prints today."""

from __future__ import annotations

import re
from pathlib import Path

from tests.cli_helpers import torchperf_lint

ROOT = Path(__file__).parent.parent
SAMPLE = re.compile(
    r"```\n\$ torchperf-lint examples/train\.py --output-format concise\n(?P<output>.*?)```",
    re.DOTALL,
)


def test_readme_sample_output_is_what_the_example_prints(tmp_path: Path) -> None:
    match = SAMPLE.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert match, "the README shows the example's output"
    result = torchperf_lint(
        "examples/train.py", "--output-format", "concise", "--no-cache", cwd=ROOT
    )
    assert result.returncode == 1
    assert result.stdout == match.group("output")
