"""`torchperf-lint verify` end to end, as a user runs it (few steps, one repeat, on CPU)."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchperf_lint.verify import command
from torchperf_lint.verify.command import verify

# TPL101 (workers: the same losses) and TPL601 (Adam -> AdamW: different losses) are both
# unsafe fixes; `--lr` must reach the script through `--`.
SCRIPT = textwrap.dedent(
    """\
    import argparse
    import math

    import torch
    from torch.utils.data import DataLoader, Dataset


    class Samples(Dataset):
        def __len__(self):
            return 256

        def __getitem__(self, index):
            features = [math.sin(index * 0.37 + k) for k in range(8)]
            return torch.tensor(features), torch.tensor([math.cos(index * 0.11)])


    def main(lr: float) -> None:
        torch.manual_seed(0)
        loader = DataLoader(Samples(), batch_size=16)
        model = torch.nn.Linear(8, 1)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=0.5)
        for epoch in range(100):
            for features, target in loader:
                loss = torch.nn.functional.mse_loss(model(features), target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                print(loss.item())


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, required=True)
        main(parser.parse_args().lr)
    """
)
FAST = ["--steps", "3", "--warmup", "1", "--repeats", "1", "--timeout", "60"]


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "train.py"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


@pytest.mark.torch
def test_verify_measures_and_flags_a_fix_that_changes_results(script: Path) -> None:
    result = CliRunner().invoke(
        verify, ["train.py", *FAST, "--json", "--html", "report.html", "--", "--lr", "0.1"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["schema"] == "torchperf-lint-verify/1"
    assert (report["steps"], report["warmup"], report["repeats"]) == (3, 1, 1)
    assert report["args"] == ["--lr", "0.1"]
    assert [(f["code"], f["row"], f["fix"]) for f in report["findings"]] == [
        ("TPL101", 19, "unsafe"),
        ("TPL601", 21, "unsafe"),
    ]
    baseline, fixed = report["variants"]
    assert (baseline["name"], baseline["verdict"]) == ("as written", None)
    assert baseline["syncs_per_step"] == 1.0
    assert [run["status"] for run in baseline["runs"]] == ["ok", "ok", "ok"]
    assert (fixed["name"], fixed["codes"]) == ("all fixes", ["TPL101", "TPL601"])
    assert fixed["verdict"] == "changes-results"
    assert fixed["losses_agree"] is False
    assert fixed["speedup"] > 0 and fixed["speedup_ci"][0] <= fixed["speedup_ci"][1]
    assert report["evidence"] == [
        {"row": 28, "call": "item", "count": 3, "steps": 3, "per_step": 1.0, "codes": []}
    ]
    assert report["nproc_per_node"] is None
    assert [len(run["step_times_s"]) for run in fixed["runs"]] == [3, 3]
    assert [len(run["losses"] or []) for run in fixed["runs"]] == [4, 0]  # census, timing
    # The visual report plots the same step times (tests/test_verify_html.py renders one).
    page = (script.parent / "report.html").read_text(encoding="utf-8")
    timing = fixed["runs"][1]["step_times_s"]
    plotted = f'data-name="all fixes" data-values="{" ".join(repr(t) for t in timing)}"'
    assert plotted in page


@pytest.mark.torch
def test_verify_reports_a_script_that_cannot_run(script: Path) -> None:
    result = CliRunner().invoke(verify, ["train.py", *FAST])  # no --lr: argparse exits 2
    assert result.exit_code == 2
    assert "as written, census run: crashed: the script exited with status 2" in result.output
    assert "error: the following arguments are required: --lr" in result.output


@pytest.mark.torch
def test_verify_refuses_a_file_that_does_not_parse(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\ndef f(:\n", encoding="utf-8")
    result = CliRunner().invoke(verify, [str(broken)])
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {broken}: syntax error")


def test_verify_without_torch_says_how_to_install_it(
    script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    result = CliRunner().invoke(verify, ["train.py"])
    assert result.exit_code == 2
    assert result.output == f"Error: {command.NEEDS_TORCH}\n"
