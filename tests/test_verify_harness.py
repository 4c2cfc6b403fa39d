"""`verify`'s child side and runner, on CPU with a few steps: exact step and sync counts, a
clean stop, losses, GradScaler steps, a crash, a hang and a script that never steps."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchperf_lint.verify.harness import Job
from torchperf_lint.verify.runner import run_job

# Every test runs a training script under the harness.
pytestmark = pytest.mark.torch

WARMUP = 2
STEPS = 4

# A deterministic training script. Iteration i (0-based) runs:
#   a `bool()` of a tensor before the step (row 17), every iteration;
#   a `float()` before the step only when i is even (row 20);
#   AdamW's own `.item()` reads inside torch.optim (ignored);
#   a `.item()` after the step (row 24), every iteration.
# It loops far past warmup + steps, swallows every exception, and leaves a marker if it ever
# gets past the loop: the harness must stop it before that.
TRAINING_SCRIPT = textwrap.dedent(
    """\
    import sys
    from pathlib import Path
    import torch
    from helper import SCALE

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    data = torch.randn(16, 4)
    target = torch.randn(16, 1)
    for step in range(1000):
        try:
            loss = torch.nn.functional.mse_loss(model(data), target) * SCALE
            optimizer.zero_grad()
            loss.backward()
            noop = 0
            if loss > 1e9:
                noop = 1
            if step % 2 == 0:
                noop = float(loss)
            optimizer.step()
            if noop:
                pass
            logged = loss.item()
        except BaseException:
            pass
    Path(sys.argv[1]).write_text("the harness did not stop the script")
    """
)


def write_script(folder: Path, text: str, name: str = "train.py") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def run(script: Path, mode: str, *args: str, timeout_s: float = 60, code_path: Path | None = None):
    job = Job(str(script), str(code_path or script), mode, WARMUP, STEPS, args)
    return run_job(job, timeout_s, cwd=str(script.parent))


@pytest.fixture(scope="module")
def training_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("project")
    (folder / "helper.py").write_text("SCALE = 1.0\n", encoding="utf-8")
    return write_script(folder, TRAINING_SCRIPT)


@pytest.fixture(scope="module")
def census(training_script: Path):
    return run(training_script, "census", str(training_script.parent / "marker"))


def test_census_stops_after_warmup_plus_steps(census, training_script: Path) -> None:
    assert census.status == "ok"
    assert census.result["steps"] == WARMUP + STEPS
    assert census.result["measured_steps"] == STEPS
    assert not (training_script.parent / "marker").exists()


def test_census_counts_syncs_at_the_scripts_call_sites(census) -> None:
    # Measured iterations are 2..5: `bool` and `.item()` run 4 times, `float` on 2 and 4 only;
    # AdamW's internal `.item()` calls are not the script's and are not counted.
    assert census.result["syncs"] == [
        {"row": 17, "call": "__bool__", "count": 4},
        {"row": 20, "call": "__float__", "count": 2},
        {"row": 24, "call": "item", "count": 4},
    ]
    assert census.result["syncs_elsewhere"] == 0


def test_census_records_one_loss_per_backward(census) -> None:
    losses = census.result["losses"]
    assert len(losses) == WARMUP + STEPS
    assert losses[-1] < losses[0]


def test_variant_runs_with_the_original_file_and_folder(
    training_script: Path, tmp_path: Path
) -> None:
    # The rewritten copy lives elsewhere, yet `from helper import SCALE` resolves next to the
    # original, and call sites are rows of the copy.
    rewritten = TRAINING_SCRIPT.replace("AdamW", "SGD").replace("import sys\n", "import sys\n\n")
    copy = write_script(tmp_path, rewritten)
    outcome = run(training_script, "census", str(tmp_path / "marker"), code_path=copy)
    assert outcome.status == "ok"
    assert [site["row"] for site in outcome.result["syncs"]] == [18, 21, 25]


def test_timing_run_counts_no_syncs(training_script: Path) -> None:
    outcome = run(training_script, "timing", str(training_script.parent / "marker"))
    assert outcome.status == "ok"
    assert outcome.result["measured_steps"] == STEPS
    assert outcome.result["measured_time_s"] > 0
    assert "syncs" not in outcome.result and "losses" not in outcome.result


def test_steps_a_grad_scaler_skips_still_count(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        textwrap.dedent(
            """\
            import torch

            model = torch.nn.Linear(2, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cpu")
            for step in range(100):
                loss = model(torch.ones(1, 2)).sum()
                if step == 0:
                    loss = loss * float("inf")  # this step's gradients overflow: it is skipped
                optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """
        ),
    )
    outcome = run(script, "timing")
    assert outcome.status == "ok"
    assert outcome.result["used_scaler"] is True
    assert outcome.result["steps"] == WARMUP + STEPS
    assert outcome.result["optimizer_steps"] == WARMUP + STEPS - 1


def test_a_crash_is_reported_with_its_stderr(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        textwrap.dedent(
            """\
            import torch

            model = torch.nn.Linear(2, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(100):
                model(torch.ones(1, 2)).sum().backward()
                optimizer.step()
                if step == 1:
                    raise ValueError("corrupt batch")
            """
        ),
    )
    outcome = run(script, "timing")
    assert outcome.status == "crashed"
    assert outcome.problem == "crashed: ValueError: corrupt batch"
    assert 'train.py", line 9' in outcome.stderr_tail


def test_a_hang_is_killed_at_the_timeout(tmp_path: Path) -> None:
    script = write_script(tmp_path, "import time\n\ntime.sleep(600)\n")
    outcome = run(script, "timing", timeout_s=3)
    assert outcome.status == "timed-out"
    assert outcome.problem == "killed at the time limit before reaching its steps"


def test_a_script_that_never_steps_is_not_measured(tmp_path: Path) -> None:
    script = write_script(tmp_path, "import torch\n\nprint(torch.ones(2).sum())\n")
    outcome = run(script, "census")
    assert outcome.status == "no-steps"
    assert outcome.problem == "ended after 0 steps, before a measured step"


# Two ranks of DistributedDataParallel on gloo, accumulating 2 micro-batches per step; only
# rank 0 logs (one `.item()` per step, row 17).
DISTRIBUTED_SCRIPT = textwrap.dedent(
    """\
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data, target = torch.randn(8, 4) + rank, torch.randn(8, 1)
    for step in range(1000):
        loss = torch.nn.functional.mse_loss(model(data), target)
        loss.backward()
        if step % 2 == 1:
            optimizer.step()
            optimizer.zero_grad()
            logged = loss.item() if rank == 0 else None
    """
)


@pytest.mark.slow
def test_every_rank_is_counted_and_stopped_under_torchrun(tmp_path: Path) -> None:
    script = write_script(tmp_path, DISTRIBUTED_SCRIPT)
    job = Job(str(script), str(script), "census", WARMUP, STEPS, ranks=2)
    outcome = run_job(job, 120, cwd=str(tmp_path), nproc_per_node=2)
    assert outcome.status == "ok", outcome.stderr_tail
    assert [result["rank"] for result in outcome.rank_results] == [0, 1]
    for result in outcome.rank_results:
        assert (result["steps"], result["measured_steps"]) == (WARMUP + STEPS, STEPS)
        assert len(result["step_times_s"]) == STEPS
        assert len(result["losses"]) == 2 * (WARMUP + STEPS)  # one per micro-batch
    assert outcome.rank_results[0]["syncs"] == [{"row": 17, "call": "item", "count": STEPS}]
    assert outcome.rank_results[1]["syncs"] == []
    assert outcome.result is outcome.rank_results[0]
    assert outcome.step_time_s == max(
        result["measured_time_s"] / STEPS for result in outcome.rank_results
    )
