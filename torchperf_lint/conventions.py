"""What a file or a method is by its name alone: test files, the methods frameworks run on
every step, and the switches libraries leave off. Free of LibCST: the program linker reads
these for cached summaries too.
"""

from __future__ import annotations

from pathlib import PurePath

# Folders that hold tests or the code only tests run (helpers, fixtures, test utilities).
_TEST_FOLDERS = frozenset({"tests", "test", "testing", "unittests", "unit_tests", "fixtures"})
# Files of test-support code outside such folders: pytest's and libraries' testing helpers.
_TEST_SUPPORT_FILES = frozenset({"conftest.py", "testing_utils.py"})


def is_test_file(path: PurePath) -> bool:
    """A test or test-support file: under a `tests/`, `test/`, `testing/`, `unittests/`,
    `unit_tests/` or `fixtures/` folder or a `test_utils*` one, or named `test_*.py` (`test_utils*.py` included),
    `*_test.py`, `conftest.py`, `testing_utils.py` or `*fixtures.py` (a test suite's or a
    doctest run's fixtures: `doctest_fixtures.py`)."""
    name = path.name
    return (
        any(part in _TEST_FOLDERS or part.startswith("test_utils") for part in path.parts[:-1])
        or name.startswith("test_")
        or name.endswith(("_test.py", "fixtures.py"))
        or name in _TEST_SUPPORT_FILES
    )


# Folders that keep a superseded copy of the project's code (`old/`, `legacy/`): their own
# scripts are no entry points of the project.
_SUPERSEDED_FOLDERS = frozenset({"old", "legacy", "deprecated", "archive", "archived", "obsolete"})


def is_superseded(path: PurePath) -> bool:
    """Under an `old/`, `legacy/`, `deprecated/`, `archive(d)/` or `obsolete/` folder: a copy
    the project keeps beside the code it runs now (BiSeNet's `old/`, whose README says
    users will not need it)."""
    return any(part in _SUPERSEDED_FOLDERS for part in path.parts[:-1])


_LIGHTNING_ROOTS = ("lightning.", "pytorch_lightning.")


def is_lightning_name(qualified: str) -> bool:
    """A name from Lightning (`lightning.LightningDataModule`, `pytorch_lightning.Trainer`)."""
    return qualified.startswith(_LIGHTNING_ROOTS)


# The checkpointing switches that libraries' models set to `False` when they are built, and
# the methods of those libraries that turn them on: Hugging Face's `gradient_checkpointing`
# (`gradient_checkpointing_enable()`, diffusers' `enable_gradient_checkpointing()`, both
# through the hook `_set_gradient_checkpointing`), timm's and open_clip's `grad_checkpointing`
# (`set_grad_checkpointing()`).
LIBRARY_SWITCHES: dict[str, frozenset[str]] = {
    "gradient_checkpointing": frozenset({
        "gradient_checkpointing_enable", "enable_gradient_checkpointing",
        "_set_gradient_checkpointing",
    }),
    "grad_checkpointing": frozenset({"set_grad_checkpointing"}),
}
# The values that leave a switch off (`self.gradient_checkpointing = False`, `with_cp=None`);
# any other value may turn it on.
OFF_VALUES = (False, None, 0)


# Methods a framework calls on every batch, by the base class that declares them.
_LIGHTNING_MODULE_HOOKS = {
    "training_step": "train",
    "on_train_batch_start": "train",
    "on_train_batch_end": "train",
    "on_before_backward": "train",
    "on_after_backward": "train",
    "on_before_optimizer_step": "train",
    "optimizer_step": "train",
    "on_before_zero_grad": "train",
    "backward": "train",
    "validation_step": "eval",
    "test_step": "eval",
    "predict_step": "eval",
    "on_validation_batch_start": "eval",
    "on_validation_batch_end": "eval",
    "on_test_batch_start": "eval",
    "on_test_batch_end": "eval",
}
_LIGHTNING_CALLBACK_HOOKS = {
    name: kind
    for name, kind in _LIGHTNING_MODULE_HOOKS.items()
    if name.startswith("on_")
}
_TRAINER_HOOKS = {"training_step": "train", "compute_loss": "train", "prediction_step": "eval"}
_FAIRSEQ_TASK_HOOKS = {"train_step": "train", "valid_step": "eval", "inference_step": "eval"}


def runs_its_model_per_step(framework_class: str) -> bool:
    """Whether a framework class (a qualified name) runs the model it is given (`model=`)
    forward on every training step: a `transformers.Trainer` and its kin."""
    return framework_class.startswith("transformers.") and framework_class.endswith("Trainer")


# Classes that run the function they are given on every iteration: Ignite's engines
# (`trainer = Engine(train_step)`, `evaluator = Engine(eval_step)`).
_STEP_RUNNERS = frozenset({
    "ignite.engine.Engine", "ignite.engine.engine.Engine", "ignite.engine.DeterministicEngine",
    "ignite.engine.deterministic.DeterministicEngine",
})


def runs_its_function_per_step(framework_class: str) -> bool:
    """Whether a framework class (a qualified name) runs the function it is given (its
    first argument, `process_function=`) on every iteration: Ignite's `Engine`."""
    return framework_class in _STEP_RUNNERS


def framework_hook_kind(base: str, method: str) -> str | None:
    """The kind of step ("train" or "eval") on which a framework runs `method` of a class
    derived from `base` (a qualified name), or None when it does not run it on every step."""
    last = base.rsplit(".", 1)[-1]
    if is_lightning_name(base):
        if last == "LightningModule":
            return _LIGHTNING_MODULE_HOOKS.get(method)
        if last == "Callback":
            return _LIGHTNING_CALLBACK_HOOKS.get(method)
        return None
    if base.startswith("transformers.") and last.endswith("Trainer"):
        return _TRAINER_HOOKS.get(method)
    if base.startswith("fairseq.tasks.") and last.endswith("Task"):
        return _FAIRSEQ_TASK_HOOKS.get(method)
    return None
