"""One file's door to the linked program: its facts' questions, asked of `ProgramFacts`.

Questions are about the file's own nodes; `References` turns them into the names the summaries
use (a function's qualified name, a call's reference), so the linker can answer them. Every
answer read is recorded in `asked`: a file's findings are valid for as long as the program
gives the same answers, which is how a cached result (or one computed before linking, from the
file alone) is checked against the program of this run.
"""

from __future__ import annotations

import json

import libcst as cst

from torchperf_lint.diagnostics import Related
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.program import LoaderDescription, Program, ProgramAnswers, StepWitness
from torchperf_lint.program.link import Answer, ProgramFacts
from torchperf_lint.program.summarize import References, is_external

_STEP_NAMES = {"train": "training", "eval": "evaluation"}


def question(name: str, *arguments: object) -> str:
    """A question as the text `ProgramFacts.answer` reads (and caches record)."""
    return json.dumps([name, *arguments], separators=(",", ":"))


class LinkedAnswers(ProgramAnswers):
    """The answers of the linked program for one file, recorded as they are read."""

    def __init__(self, program: ProgramFacts, file: str, refs: References) -> None:
        self.program = program
        self.file = file
        self.refs = refs
        self.asked: dict[str, Answer] = {}
        # Each call's position among the module's calls, as the summary numbers them.
        self._ordinals: dict[cst.Call, int] | None = None

    def _ask(self, name: str, *arguments: object) -> Answer:
        key = question(name, *arguments)
        if key not in self.asked:
            self.asked[key] = self.program.answer(self.file, key)
        return self.asked[key]

    def _project_ref(self, expression: cst.BaseExpression) -> str | None:
        if isinstance(expression, cst.Call):
            ref = self.refs.callee(expression)
        else:
            ref = self.refs.of_expression(expression, expression)
            if ref is None and isinstance(expression, cst.Attribute):
                ref = self.refs.instance_method(expression)  # `collate_fn=dataset.collate_fn`
        return None if ref is None or is_external(ref) else ref

    def _ordinal(self, call: cst.Call) -> int | None:
        """The position of `call` among the module's calls, as the summary numbers them;
        None for a call that runs nothing of the project's (the summary keeps none)."""
        if self._project_ref(call) is None and self.refs.called_parameter(call) is None:
            return None
        if self._ordinals is None:
            calls = self.refs.facts.index.calls
            self._ordinals = {node: ordinal for ordinal, node in enumerate(calls)}
        return self._ordinals.get(call)

    def calls_step_helper(self, call: cst.Call) -> bool:
        ordinal = self._ordinal(call)
        return ordinal is not None and bool(self._ask("step_call", ordinal))

    def per_step(self, function: cst.FunctionDef) -> StepWitness | None:
        answer = self._ask("per_step", self.refs.qualname(function))
        if not isinstance(answer, dict):
            return None
        step = _STEP_NAMES[answer["kind"]]
        path = tuple(
            Related(file, None, _hop_message(callee, through, step), call)
            for file, call, callee, through in answer["path"]
        )
        return StepWitness(answer["kind"], path)

    def runs_every_forward(self, function: cst.FunctionDef) -> bool:
        return bool(self._ask("per_forward", self.refs.qualname(function)))

    def receives_tensor(self, function: cst.FunctionDef, parameter: str) -> bool:
        return bool(self._ask("receives_tensor", self.refs.qualname(function), parameter))

    def receives_host_values(self, function: cst.FunctionDef, parameter: str) -> bool:
        return bool(self._ask("receives_host_values", self.refs.qualname(function), parameter))

    def receives_counter(self, function: cst.FunctionDef, parameter: str, kind: str) -> bool:
        return bool(self._ask("receives_counter", self.refs.qualname(function), parameter, kind))

    def never_passed(self, test: list) -> bool:
        return bool(self._ask("never_passed", *test))

    def is_test_support(self) -> bool:
        return bool(self._ask("test_support"))

    def runs_on_cuda(self) -> bool:
        return bool(self._ask("cuda"))

    def imports_only_below(self) -> tuple[int, ...] | None:
        answer = self._ask("imports_only_below")
        return tuple(answer) if isinstance(answer, list) else None

    def runs_nowhere(self) -> bool:
        return bool(self._ask("runs_nowhere"))

    def knows_what_runs(self) -> bool:
        return bool(self._ask("knows_what_runs"))

    def trains_on_cuda(self) -> bool:
        return bool(self._ask("cuda_training"))

    def disables_grad(self, expression: cst.BaseExpression) -> bool:
        ref = self._project_ref(expression)
        return ref is not None and bool(self._ask("no_grad", ref))

    def always_called_without_grad(self, function: cst.FunctionDef) -> bool:
        return bool(self._ask("callers_no_grad", self.refs.qualname(function)))

    def seldom_called(self, function: cst.FunctionDef) -> bool:
        return bool(self._ask("seldom_called", self.refs.qualname(function)))

    def called_periodically(self, function: cst.FunctionDef) -> bool:
        return bool(self._ask("called_periodically", self.refs.qualname(function)))

    def loader_argument(self, function: cst.FunctionDef, parameter: str) -> LoaderDescription | None:
        return _loader(self._ask("loader_argument", self.refs.qualname(function), parameter))

    def dataset_argument(self, function: cst.FunctionDef, parameter: str) -> str | None:
        answer = self._ask("dataset_argument", self.refs.qualname(function), parameter)
        return answer if isinstance(answer, str) else None

    def returned_loader(self, call: cst.Call, index: int | None = None) -> LoaderDescription | None:
        ref = self._project_ref(call)
        if ref is None:
            return None
        question = ("returned_loader", ref) if index is None else ("returned_loader", ref, index)
        return _loader(self._ask(*question))

    def dataset_samples(self, call: cst.Call, index: int | None = None) -> str | None:
        ref = self._project_ref(call)
        if ref is None:
            return None
        question = ("dataset_samples", ref) if index is None else ("dataset_samples", ref, index)
        answer = self._ask(*question)
        return answer if isinstance(answer, str) else None

    def unpinnable_batch(self, collate: cst.BaseExpression) -> bool:
        ref = self._project_ref(collate)
        if ref is not None:
            return bool(self._ask("unpinnable_batch", ref))
        scopes = self.refs.facts.scopes
        return (
            # `collate_fn=train_data.collate_fn` of a dataset the function is given.
            type(collate) is cst.Attribute
            and type(collate.value) is cst.Name
            and scopes.holds_argument(collate.value)
            and bool(self._ask("unpinnable_method", collate.attr.value))
        )

    def uploads_first(self, call: cst.Call) -> tuple[str, tuple[str, ...]] | None:
        ordinal = self._ordinal(call)
        answer = None if ordinal is None else self._ask("uploads_first", ordinal)
        return None if not isinstance(answer, list) else (answer[0], tuple(answer[1]))

    def runs_training(self, call: cst.Call) -> bool:
        ordinal = self._ordinal(call)
        return ordinal is not None and bool(self._ask("runs_training", ordinal))

    def never_called(self, function: cst.FunctionDef) -> bool:
        return bool(self._ask("never_called", self.refs.qualname(function)))

    def switched_on(self, attribute: str) -> bool:
        return bool(self._ask("switched_on", attribute))

    def always_passed(self, function: cst.FunctionDef, parameter: str) -> bool:
        return bool(self._ask("always_passed", self.refs.qualname(function), parameter))

    def never_switched_on(self, function: cst.FunctionDef, parameter: str) -> bool:
        return bool(self._ask("never_switched_on", self.refs.qualname(function), parameter))

    def never_built_with(self, init: cst.FunctionDef, parameter: str) -> bool:
        return bool(self._ask("never_built_with", self.refs.qualname(init), parameter))

    def inherits_switch(self, cls: cst.ClassDef, attribute: str) -> bool:
        return bool(self._ask("inherits_switch", self.refs.qualname(cls), attribute))

    def periodic_predicate(self, name: str) -> bool:
        return bool(self._ask("periodic_predicate", name))

    def builds_released_weights(self, cls: cst.ClassDef) -> bool:
        return bool(self._ask("released_weights", self.refs.qualname(cls)))

    def external_bases(self, cls: cst.ClassDef) -> list[str]:
        answer = self._ask("external_bases", self.refs.qualname(cls))
        return [str(name) for name in answer] if isinstance(answer, list) else []


def _loader(answer: Answer) -> LoaderDescription | None:
    if not isinstance(answer, list):
        return None
    return LoaderDescription(pins_memory=bool(answer[0]), has_custom_collate=bool(answer[1]))


class LinkedProgram(Program):
    """The linked program, as seen from the file reported as `file` (whose references, when
    already built for its summary, are `refs`)."""

    def __init__(self, program: ProgramFacts, file: str, refs: References | None = None) -> None:
        self.program = program
        self.file = file
        self.refs = refs

    def answers_for(self, facts: FileFacts) -> LinkedAnswers:
        return LinkedAnswers(self.program, self.file, self.refs or References(facts))


def _hop_message(callee: str, through: str, step: str) -> str:
    """What one call of a per-step path does: `calls `log_metrics` on every training step`,
    or, for a function passed to another that runs it, `passes `train_step` to `gpu_timer`,
    which runs it on every training step`."""
    if through:
        return (
            f"passes `{_callee_label(callee)}` to `{_callee_label(through)}`, which runs it on "
            f"every {step} step"
        )
    return f"calls `{_callee_label(callee)}` on every {step} step"


def _callee_label(qualname: str) -> str:
    """How a path names a function it goes through: `log_metrics`, and a special method
    with its class (`ComputeLoss.__call__`, what `compute_loss(pred, targets)` runs)."""
    label = qualname.rsplit(".", 2)[-2:]
    return ".".join(label) if label[-1].startswith("__") else label[-1]
