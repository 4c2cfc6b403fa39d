"""The questions a file's facts ask of the rest of the program, and their answers alone.

A rule sees one file, but the training program spans many: the loop is in `engine.py`, the
sync in `utils.py`, the device in `train.py`. The program layer (`torchperf_lint.program`)
links every file's summary and answers these questions; a file linted without it (a single
buffer, a test) gets `NO_PROGRAM`, whose answers are what the file alone can tell: nothing is
known beyond it. Questions are asked about this file's own nodes; answers are plain data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from torchperf_lint.diagnostics import Related

if TYPE_CHECKING:
    from torchperf_lint.facts import FileFacts


@dataclass(frozen=True)
class StepWitness:
    """Why a function runs on every step: the kind of step, and the call path from the loop
    (or framework hook) that runs it, outermost call first."""

    kind: str  # "train" or "eval"
    path: tuple[Related, ...]

    @property
    def origin(self) -> Related | None:
        """The call in the loop (or hook) where the per-step path starts."""
        return self.path[0] if self.path else None


@dataclass(frozen=True)
class LoaderDescription:
    """What is known of a DataLoader built elsewhere in the program."""

    pins_memory: bool
    has_custom_collate: bool
    # A framework copies its batches to the device itself (`accelerator.prepare(loader)`).
    moved_by_a_framework: bool = False


class ProgramAnswers:
    """The answers of a file linted on its own: the program adds nothing to its facts.

    `torchperf_lint.program.view.LinkedAnswers` overrides every method with what the linked
    program knows.
    """

    def calls_step_helper(self, call: cst.Call) -> bool:
        """Whether `call` runs a project function that steps an optimizer outside any loop of
        its own, or backpropagates outside its loops and steps anywhere in it (a
        `train_step(batch)` helper, or one it passes to a function that calls it:
        `gpu_timer(train_step)`), so the loop around it is a training loop."""
        return False

    def per_step(self, function: cst.FunctionDef) -> StepWitness | None:
        """Whether `function` is run on every training or evaluation step by the program (called
        from such a loop, directly or through other functions, or a framework's per-step hook)."""
        return None

    def runs_every_forward(self, function: cst.FunctionDef) -> bool:
        """Whether a module's `forward` calls `function` on every pass, directly or through
        other functions (`timestep_embedding(t, dim)` in a UNet's forward)."""
        return False

    def receives_tensor(self, function: cst.FunctionDef, parameter: str) -> bool:
        """Whether a caller passes `function` a tensor that may live on the device as
        `parameter` (or, for its `**kwargs`, as any keyword it does not name)."""
        return False

    def receives_host_values(self, function: cst.FunctionDef, parameter: str) -> bool:
        """Whether every caller (one at least) passes `function`, as `parameter`, a value in
        host memory (`self._mask_tokens(lm_input_ids)` of a loader's batch before its copy)."""
        return False

    def never_passed(self, test: list) -> bool:
        """Whether no run the project ships passes `test` of one of its settings
        (`Guards.setting_test`, `program.options`): the setting's default fails it and no
        launcher gives it a value that passes."""
        return False

    def receives_counter(self, function: cst.FunctionDef, parameter: str, kind: str) -> bool:
        """Whether every caller passes `function`, as `parameter`, a counter of a loop around
        the call (`kind` "counter": `training_log(loss, iteration)` in `while iteration <
        n:`) or a flag true on its first iteration only ("first")."""
        return False

    def is_test_support(self) -> bool:
        """Whether only tests (and other test support) import this file, though its path does
        not say it is a test (`demos/boring_classes.py`)."""
        return False

    def runs_on_cuda(self) -> bool:
        """Whether the program this file belongs to runs on CUDA (beyond the file's own use)."""
        return False

    def imports_only_below(self) -> tuple[int, ...] | None:
        """The first PyTorch release (`(2, 0, 0)`) on which no program this file belongs to
        can be imported, because each imports a module PyTorch removed (`from torch._six
        import inf`, unguarded); None when some program runs on any release."""
        return None

    def runs_nowhere(self) -> bool:
        """Whether nothing runs this module: outside a distribution, no test, notebook,
        script or launcher reaches it through imports or by naming it (a vendored copy of a
        library that no entry point imports)."""
        return False

    def knows_what_runs(self) -> bool:
        """Whether the project's entry points say what runs: it is no distribution (no
        `setup.py`, `setup.cfg` or `pyproject.toml`, whose modules are its users' API) and
        has scripts, notebooks, tests or launchers. Unknown (linted alone): False."""
        return False

    def trains_on_cuda(self) -> bool:
        """Whether the file belongs to a training program that runs on CUDA (a module that
        trains, and the project modules it imports)."""
        return False

    def disables_grad(self, expression: cst.BaseExpression) -> bool:
        """Whether `expression` (a decorator or a `with` item) is the project's own wrapper of
        `torch.no_grad` / `torch.inference_mode` (`@smart_inference_mode()`)."""
        return False

    def always_called_without_grad(self, function: cst.FunctionDef) -> bool:
        """Whether every caller of `function` outside tests runs it with autograd off."""
        return False

    def seldom_called(self, function: cst.FunctionDef) -> bool:
        """Whether every caller of `function` outside tests runs it on few steps: under a
        periodic guard (`if epoch % 10 == 0:`) or once (an `--eval` mode's one pass)."""
        return False

    def called_periodically(self, function: cst.FunctionDef) -> bool:
        """Whether every caller of `function` outside tests runs it under a periodic guard
        (`if step % val_step == 0:`): not a one-off pass, which may cover a whole corpus."""
        return False

    def loader_argument(self, function: cst.FunctionDef, parameter: str) -> LoaderDescription | None:
        """The DataLoader every caller outside tests passes as `parameter` of `function`."""
        return None

    def returned_loader(self, call: cst.Call, index: int | None = None) -> LoaderDescription | None:
        """The DataLoader that the project function `call` runs returns (a loader factory);
        with `index`, the DataLoader that is that item of the tuple it returns
        (`return loader, dataset`)."""
        return None

    def dataset_argument(self, function: cst.FunctionDef, parameter: str) -> str | None:
        """What the datasets that every caller of `function` outside tests passes as
        `parameter` hold (as `dataset_samples` says), or None when they do not all say the
        same."""
        return None

    def dataset_samples(self, call: cst.Call, index: int | None = None) -> str | None:
        """What the dataset that `call` builds (a project class) or returns (a project
        function; with `index`, that item of the tuple it returns) holds, when no file is
        read for a sample: "made_up" (random stand-ins), "in_memory" (indexing what it holds,
        also a dataset read back whole with `torch.load`), "rows" (a Hugging Face dataset
        preprocessed ahead of training), or None when the program does not say."""
        return None

    def unpinnable_batch(self, collate: cst.BaseExpression) -> bool:
        """Whether the project function `collate` (a DataLoader's `collate_fn`) returns a
        batch that pinning cannot pin: one it builds from a plain class without
        `pin_memory` (DETR's `utils.collate_fn`, whose images are a `NestedTensor`); for
        `dataset.collate_fn` of a dataset the function is given, whether every project
        class's method of that name returns such a batch."""
        return False

    def uploads_first(self, call: cst.Call) -> tuple[str, tuple[str, ...]] | None:
        """The parameter of the project function `call` runs whose data that function first
        copies to the device with a blocking copy, before any other work, and the parameters
        the call's arguments bind (`prepare_inputs(batch, device)` whose body starts `image,
        text = batch; text = text.to(device)` gives ("batch", ("batch", "device"))); None
        for another call."""
        return None

    def runs_training(self, call: cst.Call) -> bool:
        """Whether `call` runs a project function that trains: one with a training loop
        (`model_training(args, data, model, ...)` of a sibling `trainer.py`), or a training
        step."""
        return False

    def never_called(self, function: cst.FunctionDef) -> bool:
        """Whether nothing can run `function`, a method or a private function: no file of
        the project, tests included, names it, no decorator registers it, and no framework
        class outside the project that its class derives from may call it
        (`get_query_outputs` of a model that nothing calls); or a method of a class that no
        file names but as the base of such classes and no decorator registers, in a module
        another file imports (a legacy model nothing builds)."""
        return False

    def switched_on(self, attribute: str) -> bool:
        """Whether code of the project that may run sets `attribute` (of any object) to a
        value that may be true (`module.gradient_checkpointing = value`)."""
        return True

    def always_passed(self, function: cst.FunctionDef, parameter: str) -> bool:
        """Whether `function` has callers outside tests and every one of them passes
        `parameter` (so a fallback for when it is left out, `if x_mask is None:`, never runs)."""
        return False

    def never_switched_on(self, function: cst.FunctionDef, parameter: str) -> bool:
        """Whether `function` has callers outside tests and none of them turns `parameter`, a
        switch off by default (`checkpoint_activations=False`), on: each leaves it out,
        passes `False` or `None`, or passes on a parameter of its own that no caller turns on,
        and no call anywhere passes that keyword anything else (so the branch `if
        checkpoint_activations:` never runs)."""
        return False

    def never_built_with(self, init: cst.FunctionDef, parameter: str) -> bool:
        """Whether no code of the project builds the class of `init` (its `__init__`) with
        `parameter`, a switch off by default (`with_cp=False`), turned on: no call or config
        dict of the project passes that keyword a value that may be true, no code sets an
        attribute of that name to one, and no construction the linker resolves passes it by
        position (so `if self.with_cp:` after `self.with_cp = with_cp` never runs). Unlike
        `never_switched_on`, it needs no caller: asked of another function (a `forward`), it
        says whether any code of the project may call it with the switch on."""
        return False

    def inherits_switch(self, cls: cst.ClassDef, attribute: str) -> bool:
        """Whether a project class that `cls` derives from stores `attribute` as a switch its
        constructor takes (`self.with_cp = with_cp` in another module's base class)."""
        return False

    def periodic_predicate(self, name: str) -> bool:
        """Whether a project function called `name` returns a periodic test of its arguments
        (`def should_log(self, step): return step == 1 or step % self.freq == 0`)."""
        return False

    def builds_released_weights(self, cls: cst.ClassDef) -> bool:
        """Whether a module that loads published weights into its models builds `cls`,
        directly or as a part of another class it builds (a block of a released
        architecture): its parameters are keys of those checkpoints."""
        return False

    def external_bases(self, cls: cst.ClassDef) -> list[str]:
        """The qualified names of the classes outside the project that `cls` derives from,
        also through project base classes in other files (`lightning.LightningDataModule`)."""
        return []


NO_PROGRAM = ProgramAnswers()


class Program:
    """What the runner hands to `FileFacts`: a way to get one file's answers."""

    def answers_for(self, facts: FileFacts) -> ProgramAnswers:
        return NO_PROGRAM


__all__ = ["NO_PROGRAM", "LoaderDescription", "Program", "ProgramAnswers", "StepWitness"]
