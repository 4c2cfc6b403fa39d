"""The training program across functions and modules: fixture projects with exact findings.

Each folder under `tests/fixtures/projects/` is a small project (its `pyproject.toml` marks
its root): lines that must be reported end with `# error: TPLnnn:COL`, as in the rule fixtures,
and every other line must stay silent when the whole project is linted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import torchperf_lint
from test_rule_fixtures import expected_findings

from torchperf_lint.config import Configuration, Overrides
from torchperf_lint.diagnostics import Diagnostic, Location, Related
from torchperf_lint.discovery import discover, program_files
from torchperf_lint.engine import LintSettings, lint_text, rules_for
from torchperf_lint.runner import FileJob, Run, lint_program

PROJECTS = Path(__file__).parent / "fixtures" / "projects"
# The opt-in rules a project exercises, on top of the default ones.
EXTEND_SELECT = ("TPL603",)


def lint_project(root: Path, cache: Path | None = None, paths: list[Path] | None = None) -> Run:
    """Lint `paths` (default: the whole project) as the CLI does from `root`."""
    configuration = Configuration(Overrides(extend_select=EXTEND_SELECT), cwd=root)
    no_rules = LintSettings(rules=())

    def job(path: Path, settings: LintSettings) -> FileJob:
        return FileJob(path, path.relative_to(root).as_posix(), settings, cache_dir=cache)

    files = discover(paths or [root], configuration).files
    jobs = [job(path, configuration.settings_for(path)) for path in files]
    context = [job(path, no_rules) for path in program_files(paths or [root], configuration)]
    return lint_program(jobs, context, workers=1)


def findings(run: Run) -> list[tuple[str, str, int, int]]:
    """(file, code, row, column) of every finding; a notebook's file is `name.ipynb:N`, its
    N-th code cell, where the row counts."""
    return sorted(
        (d.filename if d.cell is None else f"{d.filename}:{d.cell}", d.code, d.location.row, d.location.column)
        for result in run.outcomes
        for d in result.diagnostics
    )


def annotated(root: Path) -> list[tuple[str, str, int, int]]:
    """The `# error:` annotations of the project's files (of each code cell of a notebook)."""
    return sorted(
        (name, code, row, column)
        for path in (*root.rglob("*.py"), *root.rglob("*.ipynb"))
        for name, text in annotated_texts(path, path.relative_to(root).as_posix())
        for code, row, column in expected_findings(text)
    )


def annotated_texts(path: Path, name: str) -> list[tuple[str, str]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return [(name, text)]
    cells = [cell for cell in json.loads(text)["cells"] if cell["cell_type"] == "code"]
    return [(f"{name}:{number}", "".join(cell["source"])) for number, cell in enumerate(cells, 1)]


def diagnostic(run: Run, filename: str, code: str, row: int) -> Diagnostic:
    [found] = [
        d
        for result in run.outcomes
        for d in result.diagnostics
        if (d.filename, d.code, d.location.row) == (filename, code, row)
    ]
    return found


@pytest.mark.parametrize("project", sorted(p.name for p in PROJECTS.iterdir() if p.is_dir()))
def test_project_findings_match_annotations(project: str) -> None:
    root = PROJECTS / project
    assert findings(lint_project(root)) == annotated(root)


def test_a_sync_in_a_helper_is_reported_once_with_the_call_path_from_the_loop() -> None:
    run = lint_project(PROJECTS / "per_step_helper")
    logged = diagnostic(run, "utils.py", "TPL201", 5)
    assert logged.related == (
        Related("engine.py", Location(15, 9), "calls `log_metrics` on every training step"),
    )
    checked = diagnostic(run, "utils.py", "TPL201", 15)
    assert checked.related == (
        Related("engine.py", Location(12, 9), "calls `check_finite` on every training step"),
    )


def test_calling_a_loss_object_runs_its_call_method_and_the_path_names_its_class() -> None:
    run = lint_project(PROJECTS / "loss_object")
    read = diagnostic(run, "loss.py", "TPL201", 26)
    assert read.related == (
        Related("train.py", Location(12, 20), "calls `ComputeLoss.__call__` on every training step"),
        Related("loss.py", Location(14, 23), "calls `build_targets` on every training step"),
    )


def test_a_call_under_a_test_of_an_optional_parameter_runs_only_for_callers_that_pass_it() -> None:
    # `fit` calls `chamfer(...)` without `normals`, `fit_with_normals` passes them: the path
    # to the sync goes through the caller that makes the guarded call run.
    run = lint_project(PROJECTS / "optional_argument")
    assert diagnostic(run, "losses.py", "TPL201", 21).related == (
        Related("train.py", Location(18, 16), "calls `chamfer` on every training step"),
        Related("losses.py", Location(8, 31), "calls `normal_penalty` on every training step"),
    )


def test_reads_in_a_row_are_one_finding_that_points_at_each_read_after_its_call_path() -> None:
    run = lint_project(PROJECTS / "narrowed_instance")
    merged = diagnostic(run, "resample.py", "TPL201", 12)
    assert merged.message.startswith(
        "A run of 2 statements with 2 host syncs (`.item()`, `.tolist()`) on every training step"
    )
    assert merged.related == (
        Related(
            "train.py", Location(18, 17), "calls `update_with_local_losses` on every training step"
        ),
        Related("resample.py", Location(13, 33), "also waits here: `.tolist()`"),
    )


def test_a_step_helper_makes_its_callers_loop_a_training_loop() -> None:
    run = lint_project(PROJECTS / "step_helper")
    in_helper = diagnostic(run, "steps.py", "TPL201", 9)
    assert in_helper.related == (
        Related("train.py", Location(10, 26), "calls `train_step` on every training step"),
    )
    assert diagnostic(run, "train.py", "TPL201", 11).related == ()


def test_a_helper_that_starts_by_copying_the_batch_is_the_next_steps_blocking_copy() -> None:
    run = lint_project(PROJECTS / "batch_copy_helper")
    paired = diagnostic(run, "train.py", "TPL201", 14)
    assert paired.message.endswith("removing one of the two waits alone gains little")
    assert paired.related == (
        Related("train.py", Location(9, 26), "the next step's blocking batch copy waits for the GPU here too"),
    )
    alone = diagnostic(run, "train.py", "TPL201", 25)
    assert alone.related == () and "gains little" not in alone.message
    # A method called on `self`: its `self` is no argument of the call.
    assert diagnostic(run, "train.py", "TPL201", 41).related == (
        Related("train.py", Location(36, 30), "the next step's blocking batch copy waits for the GPU here too"),
    )


def test_a_module_no_entry_point_reaches_runs_nowhere_outside_a_distribution(tmp_path) -> None:
    # `vendored_copy` has no packaging file: the copy's trainer and loss (imported only by
    # the rest of the copy) and a baseline nothing imports are never run. The same files in
    # a distribution are its users' API, and are reported.
    root = tmp_path / "vendored_copy"
    shutil.copytree(PROJECTS / "vendored_copy", root)
    assert findings(lint_project(root)) == [("interact/fbrs/predictor.py", "TPL201", 5, 19)]
    (root / "pyproject.toml").write_text('[project]\nname = "vendored_copy"\n')
    assert findings(lint_project(root)) == [
        ("baselines/nrde.py", "TPL105", 7, 20),
        ("interact/fbrs/losses.py", "TPL105", 5, 14),
        ("interact/fbrs/predictor.py", "TPL201", 5, 19),
        ("interact/fbrs/trainer.py", "TPL201", 12, 15),
    ]


def test_a_module_imported_by_a_computed_name_may_be_any_beside_one_that_runs(tmp_path) -> None:
    # `importlib.import_module(f"baselines.{name}")` in a module that runs may run every
    # module of its folder (a model a user names on the command line), but none elsewhere.
    root = tmp_path / "vendored_copy"
    shutil.copytree(PROJECTS / "vendored_copy", root)
    (root / "baselines" / "select.py").write_text(
        'import importlib\n\nimport torch\n\n\ndef build(name):\n'
        '    return importlib.import_module(f"baselines.{name}")\n'
    )
    (root / "run.py").write_text(
        "import baselines.select\nfrom engine import train\nfrom setup_run import build\n\ntrain(*build())\n"
    )
    assert findings(lint_project(root)) == [
        ("baselines/nrde.py", "TPL105", 7, 20),
        ("interact/fbrs/predictor.py", "TPL201", 5, 19),
    ]


def test_a_step_passed_to_a_function_that_calls_it_runs_where_it_is_passed() -> None:
    # `gpu_timer(train_step)` runs `train_step()`: the loop trains, and the path names the call.
    run = lint_project(PROJECTS / "passed_step")
    passed = Related(
        "train.py",
        Location(21, 41),
        "passes `train_step` to `gpu_timer`, which runs it on every training step",
    )
    assert diagnostic(run, "train.py", "TPL201", 19).related == (passed,)
    assert diagnostic(run, "timing.py", "TPL201", 37).related == (
        passed,
        Related("train.py", Location(17, 30), "calls `grad_logger` on every training step"),
    )
    # `timed(fn)` passes it on to `gpu_timer`; `optimizer.step(closure)` runs `closure()`.
    assert diagnostic(run, "train.py", "TPL201", 52).related == (
        Related(
            "train.py",
            Location(44, 13),
            "passes `train_step` to `timed`, which runs it on every training step",
        ),
    )
    assert diagnostic(run, "train.py", "TPL201", 64).related == (
        Related("train.py", Location(67, 9), "calls `closure` on every training step"),
    )


def test_a_loss_object_a_constructor_keeps_on_self_runs_what_its_callers_pass() -> None:
    # `Trainer(model, train_loss, ...)` with `train_loss = LossCompute.from_opts(...)`, a class
    # method returning `cls(...)`: `self.train_loss(output, tgt)` runs `LossCompute.forward`.
    run = lint_project(PROJECTS / "stored_loss")
    step = Related("trainer.py", Location(22, 13), "calls `_step` on every training step")
    forward = Related("trainer.py", Location(27, 23), "calls `forward` on every training step")
    assert diagnostic(run, "loss.py", "TPL201", 22).related == (step, forward)
    assert diagnostic(run, "loss.py", "TPL201", 27).related == (
        step,
        forward,
        Related("loss.py", Location(22, 17), "calls `_stats` on every training step"),
        Related("loss.py", Location(28, 27), "also waits here: `.item()`"),
    )
    # A loss object passed as a parameter and called: `criterion(...)` in `fit`.
    assert diagnostic(run, "loss.py", "TPL201", 41).related == (
        Related("trainer.py", Location(37, 24), "calls `forward` on every training step"),
    )


def test_a_trainer_runs_the_forward_of_the_model_it_is_given_on_every_step() -> None:
    run = lint_project(PROJECTS / "trainer_model")
    assert diagnostic(run, "model/llava_arch.py", "TPL201", 10).related == (
        Related("train.py", Location(16, 15), "calls `forward` on every training step"),
        Related(
            "model/llava_llama.py",
            Location(9, 25),
            "calls `prepare_inputs_labels_for_multimodal` on every training step",
        ),
    )


def test_a_method_of_what_the_callers_pass_is_called_from_the_loop() -> None:
    run = lint_project(PROJECTS / "logger_argument")
    assert diagnostic(run, "loggers.py", "TPL201", 14).related == (
        Related("engine.py", Location(12, 13), "calls `update` on every training step"),
    )


def test_a_base_class_step_calls_the_subclass_override() -> None:
    run = lint_project(PROJECTS / "overridden_step")
    assert diagnostic(run, "latent.py", "TPL201", 9).related == (
        Related("base.py", Location(14, 16), "calls `shared_step` on every training step"),
    )


def test_one_file_is_judged_by_the_program_of_its_project() -> None:
    """`torchperf-lint utils.py` sees the same program as `torchperf-lint .`."""
    root = PROJECTS / "per_step_helper"
    alone = lint_project(root, paths=[root / "utils.py"])
    assert findings(alone) == [f for f in annotated(root) if f[0] == "utils.py"]


def test_a_file_linted_without_its_program_knows_nothing_of_its_callers() -> None:
    source = (PROJECTS / "per_step_helper" / "utils.py").read_text(encoding="utf-8")
    settings = LintSettings(rules=rules_for(["TPL201"]))
    assert lint_text(source, "utils.py", settings) == []


def test_the_cli_prints_the_path_and_json_carries_it(tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(PROJECTS / "per_step_helper", root)
    full = torchperf_lint("utils.py", "--no-cache", "--select", "TPL201", cwd=root)
    assert full.returncode == 1
    assert "  = note: engine.py:15:9: calls `log_metrics` on every training step\n" in full.stdout
    assert "   = note: engine.py:12:9: calls `check_finite` on every training step\n" in full.stdout
    sarif = torchperf_lint(".", "--no-cache", "--select", "TPL201", "--output-format", "sarif",
                           cwd=root)

    [first, _] = json.loads(sarif.stdout)["runs"][0]["results"]
    assert first["relatedLocations"] == [
        {
            "id": 0,
            "physicalLocation": {
                "artifactLocation": {"uri": "engine.py"},
                "region": {"startLine": 15, "startColumn": 9},
            },
            "message": {"text": "calls `log_metrics` on every training step"},
        }
    ]


def test_editing_a_helper_lints_it_again_and_replays_its_callers(tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(PROJECTS / "per_step_helper", root)
    cache = tmp_path / "cache"
    first = lint_project(root, cache)
    assert sorted(first.linted) == ["data.py", "engine.py", "train.py", "utils.py"]
    assert lint_project(root, cache).linted == []

    utils = root / "utils.py"
    utils.write_text(utils.read_text().replace("loss.item()", "loss.detach()", 1))
    edited = lint_project(root, cache)
    assert edited.linted == ["utils.py"]
    assert [f for f in findings(edited) if f[0] == "utils.py"] == [("utils.py", "TPL201", 15, 16)]

    # A caller that stops calling the helper every step changes what the helper's findings
    # read: the helper is linted again too, and its sync is no longer reported.
    engine = root / "engine.py"
    engine.write_text(engine.read_text().replace("        check_finite(model)\n", ""))
    again = lint_project(root, cache)
    assert sorted(again.linted) == ["engine.py", "utils.py"]
    assert [f for f in findings(again) if f[0] == "utils.py"] == []


def test_fix_relinks_the_program_so_one_files_fix_enables_anothers(tmp_path: Path) -> None:
    """Pinning the loader in `data.py` (TPL102) makes the copies in `engine.py` worth making
    non-blocking (TPL104): one `--fix` run does both."""
    root = tmp_path / "project"
    shutil.copytree(PROJECTS / "per_step_helper", root)
    data = root / "data.py"
    data.write_text(data.read_text().replace(", pin_memory=True", ""))
    fixed = torchperf_lint(
        ".", "--fix", "--unsafe-fixes", "--no-cache", "--select", "TPL102,TPL104", cwd=root
    )
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "DataLoader(Squares(), batch_size=32, num_workers=4, pin_memory=True)" in data.read_text()
    assert '        x = x.to("cuda", non_blocking=True)  # error: TPL104:13\n' in (
        (root / "engine.py").read_text()
    )


def test_a_notebook_runs_on_cuda_only_by_its_own_cells() -> None:
    """A CPU-only tutorial that imports a library training on CUDA stays on the CPU: its
    `.item()` waits for nothing. The same loop in a notebook that moves to CUDA is reported."""
    found = findings(lint_project(PROJECTS / "cpu_notebook"))
    assert [f for f in found if f[0].startswith("cpu_tutorial.ipynb")] == []
    assert ("gpu_tutorial.ipynb:2", "TPL201", 8, 11) in found
