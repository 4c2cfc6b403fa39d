"""What runs on every step: the code whose cost is paid once per batch, not once per run.

Code runs on every step when it is

- in the body of a hot loop (a training loop, or a loop over a DataLoader) and not under a
  branch that runs on few of its iterations (`if step % 100 == 0:`, `if i == 0:`), or
- in a function that runs on every step, outside such a branch: `forward` of a module (and,
  for `runs_per_step`, what a `forward` calls, through the program); a
  framework's per-step hook (`training_step` of a `LightningModule`, `compute_loss` of a
  `transformers.Trainer`, `valid_step` of a fairseq task); a function the program calls from a
  hot loop, directly or through other functions (`FileFacts.program`).

`runs_per_step` also counts each iteration of a loop that runs a model (a sampling or
denoising loop, a generation loop, a timed benchmark): a step of inference, where a per-step
cost is paid as many times as the loop runs. The set-up of such a loop, when it runs with
autograd off (what its function does before or after it, or lazily inside it), runs once per
call, its cost shared by the loop's model calls: for `runs_per_step` it is not per step, even
in a function that runs on every evaluation step or forward (a beam search's buffers).

Code on an error path (a branch that ends in `raise` or `sys.exit()`, an `except` handler) is
never per step: it runs when something went wrong, not on every batch. Nor is what a call that
saves a checkpoint runs (`save_checkpoint(iteration, model, optimizer)`, `save_model(...)`,
`saves_a_checkpoint`): a run saves at intervals, whatever decides when. For `runs_per_step`,
neither is code the program never runs (a method nothing names, a branch behind a switch
nothing turns on: `never_runs`) nor the body of a function whose result is cached
(`@cached_property`, `@lru_cache`: `memoized`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from torchperf_lint.conventions import framework_hook_kind
from torchperf_lint.diagnostics import Related
from torchperf_lint.facts.arguments import UNKNOWN, literal_value
from torchperf_lint.facts.guards import Guards
from torchperf_lint.facts.index import (
    SCOPE_TYPES,
    descendants,
    descendants_in_scope,
    final_simple_statement,
    methods_of,
)
from torchperf_lint.facts.loops import LoopFacts, Loops
from torchperf_lint.facts.names import NameResolver, last_identifier, root_name
from torchperf_lint.facts.program import ProgramAnswers, StepWitness
from torchperf_lint.facts.scopes import Scopes

_EXITS = frozenset({"sys.exit", "builtins.exit", "builtins.quit", "os._exit"})
# Statements after which nothing in their block runs.
_LEAVING = frozenset({cst.Return, cst.Raise, cst.Break, cst.Continue})


# Decorators that cache a function's result: its body runs once per object or arguments.
_MEMOIZING = frozenset({"functools.cached_property", "functools.cache", "functools.lru_cache"})

# A function that saves a checkpoint, by its name: `save_checkpoint`, `save_checkpoint_and_time`,
# `save_model`, `checkpoint_save`, `save_ckpt`, `save_state`, `save_weights`, `save_pretrained`.
_SAVE = re.compile(r"(?:^|_)save(?:_|$)", re.IGNORECASE)
_SAVED = re.compile(r"checkpoint|ckpt|model|state|weights|pretrained", re.IGNORECASE)

# Keywords of a Hugging Face `generate(...)` call.
_GENERATION_SETTINGS = frozenset({
    "max_new_tokens", "max_length", "min_length", "num_beams", "do_sample", "top_p", "top_k",
    "inputs_embeds", "num_return_sequences", "generation_config",
})

def caches_its_result(function: cst.FunctionDef, names: NameResolver) -> bool:
    """Decorated with `@functools.cached_property`, `@cache` or `@lru_cache(...)`."""
    for decorator in function.decorators:
        expression = decorator.decorator
        if isinstance(expression, cst.Call):
            expression = expression.func
        if names.qualified_name(expression) in _MEMOIZING:
            return True
    return False


def saves_a_checkpoint(call: cst.Call) -> bool:
    """A call of a function that saves a checkpoint, by its name (`save_checkpoint(...)`,
    `self.save_model(...)`, `save_checkpoint_and_time(...)`): a training loop saves at
    intervals, under a test the program may not show (`if should_checkpoint:`), so what it
    runs is not per step."""
    name = last_identifier(call.func) or ""
    return bool(_SAVE.search(name)) and bool(_SAVED.search(name))


def _ends_in_leave(block: cst.BaseSuite) -> bool:
    """Its last statement is `return`, `break` or `continue`."""
    return isinstance(final_simple_statement(block), (cst.Return, cst.Break, cst.Continue))


# Tests that find non-finite values (`torch.isnan(x).any()`, `math.isinf(v)`).
_NONFINITE_TESTS = frozenset({"isnan", "isinf", "isneginf", "isposinf"})


def _finds_nonfinite(test: cst.BaseExpression) -> bool:
    """True only when some value is NaN or infinite: `torch.isnan(x).any()`, `not
    math.isfinite(v)`, `step > 0 and torch.isinf(g)`, `isnan(a) or isinf(b)`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _all_finite(test.expression)
    if isinstance(test, cst.BooleanOperation):
        sides = (_finds_nonfinite(test.left), _finds_nonfinite(test.right))
        return any(sides) if isinstance(test.operator, cst.And) else all(sides)
    return _calls_a_nonfinite_test(test)


# Words in the name of a flag set when the optimizer skipped a step (an fp16 overflow).
_SKIPPED_STEP_WORDS = ("skipped", "overflow")


def _skipped_step_test(test: cst.BaseExpression) -> bool | None:
    """True for a test of a skipped-step flag (`skipped_iter`, `self.overflow`), False for
    its negation (`not skipped_iter`), None for any other test."""
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    flag = test.expression if negated else test
    if not isinstance(flag, (cst.Name, cst.Attribute)):
        return None
    name = (last_identifier(flag) or "").lower()
    return None if not any(word in name for word in _SKIPPED_STEP_WORDS) else not negated


def _all_finite(test: cst.BaseExpression) -> bool:
    """True only when every value is finite: `torch.isfinite(loss).all()`,
    `math.isfinite(v) and math.isfinite(w)`, `_tensor_is_finite(loss)`."""
    if isinstance(test, cst.BooleanOperation):
        return (
            isinstance(test.operator, cst.And)
            and _all_finite(test.left)
            and _all_finite(test.right)
        )
    return any(
        type(node) is cst.Call and "finite" in (last_identifier(node.func) or "").lower()
        for node in (test, *descendants(test))
    ) and not _calls_a_nonfinite_test(test)


def _calls_a_nonfinite_test(test: cst.BaseExpression) -> bool:
    return any(
        type(node) is cst.Call and last_identifier(node.func) in _NONFINITE_TESTS
        for node in (test, *descendants(test))
    )


@dataclass(frozen=True)
class Step:
    """Why a node runs on every step: the hot loop whose body holds it (in its own function),
    or, outside hot loops, the per-step function it is in."""

    loop: LoopFacts | None
    witness: StepWitness | None = None

    @property
    def kind(self) -> str | None:
        """"train" or "eval"; None for a loop over a DataLoader that neither trains nor runs a
        model."""
        if self.loop is not None:
            return "train" if self.loop.is_training else None
        return self.witness.kind if self.witness is not None else None

    @property
    def path(self) -> tuple[Related, ...]:
        """The calls from the loop (or hook) that run the function on every step."""
        return self.witness.path if self.witness is not None else ()


class Steps:
    """Answers "does this node run on every step?" for one module."""

    def __init__(
        self,
        scopes: Scopes,
        names: NameResolver,
        loops: Loops,
        guards: Guards,
        program: ProgramAnswers,
        runs_a_model: Callable[[cst.Call], bool] = lambda call: False,
        holds_a_model: Callable[[cst.BaseExpression], bool] = lambda expression: False,
    ) -> None:
        self.scopes = scopes
        self.names = names
        self.loops = loops
        self.guards = guards
        self.program = program
        # Whether a call runs a model (`model(x)`, `self.unet(latents, t)`).
        self.runs_a_model = runs_a_model
        # Whether a name or attribute holds a model (`self.model`, `decoder`).
        self.holds_a_model = holds_a_model
        self._witnesses: dict[cst.FunctionDef, StepWitness | None] = {}
        # Per function: its loops that run a model for inference, and those that optimize inputs.
        self._model_loops: dict[cst.FunctionDef, tuple[list[LoopFacts], list[LoopFacts]]] = {}
        self._generating: dict[cst.FunctionDef, list[cst.Call]] = {}
        self._export_operators: dict[cst.ClassDef, bool] = {}

    def runs_per_step(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs on every training or evaluation step, every forward pass, or
        every iteration of a loop that runs a model (see the module's docs)."""
        if self.prepares_generation(node) or self.never_runs(node) or self.memoized(node):
            return False
        if self.behind_periodic_predicate(node) or self.exports_an_operator(node):
            return False
        if self.in_model_loop(node):
            # Not in a sampler that the training runs only every N steps, for a preview.
            function = self.scopes.enclosing_function(node)
            return function is None or not self.program.called_periodically(function)
        if self.sets_up_a_model_loop(node):
            return False
        if self.step_of(node) is not None:
            return True
        function = self.scopes.enclosing_function(node)
        return (
            function is not None
            and (self.is_forward(function) or self.program.runs_every_forward(function))
            and self.guards.periodic_guard(node) is None
            and not self.guards.counter_guard(node)
            and not self.guards.initializes_once(node)
            and not self.off_the_usual_path(node)
        )

    def off_the_usual_path(self, node: cst.CSTNode) -> bool:
        """On a path that the steps of a usual run do not take: a failure path
        (`on_error_path`), a debugging mode (`Guards.debug_only`), a branch that only objects
        built with a switch away from its default run (`Guards.off_default_option`), the
        fallback for an empty input (`Guards.for_empty_input`), a branch that needs a
        setting no run the project ships gives it (`left_off_by_settings`), or code no path
        reaches (`unreachable`)."""
        return (
            self.unreachable(node)
            or self.on_error_path(node)
            or self.guards.debug_only(node)
            or self.guards.off_default_option(node)
            or self.guards.for_empty_input(node)
            or self.left_off_by_settings(node)
        )

    def taken_by_every_run(self, node: cst.CSTNode) -> bool:
        """`node` needs values of the run's settings that every shipped run gives (`if
        args.fp16:` for a `--fp16` flag stored with `action="store_true", default=True`,
        SlotCon's): the other way is never passed (`ProgramAnswers.never_passed`)."""
        tests = self.guards.setting_tests(node)
        return bool(tests) and all(
            self.program.never_passed([*test[:3], not test[3]]) for test in tests
        )

    def left_off_by_settings(self, node: cst.CSTNode) -> bool:
        """In a branch that needs a value of the run's settings that no shipped run gives
        (`ProgramAnswers.never_passed`): the body of `if args.verbose:` where `--verbose` is
        off by default and no launcher turns it on, the `else` of `if
        config.TRAIN.CLIP_GRAD:` where every config clips."""
        return any(self.program.never_passed(test) for test in self.guards.setting_tests(node))

    def behind_periodic_predicate(self, node: cst.CSTNode) -> bool:
        """Guarded by a project function that returns a periodic test (`if step_check(step,
        n):`, `if not self.metrics.should_log(self.step): return` before it)."""
        return any(
            self.program.periodic_predicate(name) for name in self.guards.predicate_guards(node)
        )

    def exports_an_operator(self, node: cst.CSTNode) -> bool:
        """In a class that defines `symbolic`, an operator for ONNX export
        (`torch.autograd.Function` with `def symbolic(g, ...)`): its `forward` only makes up
        outputs of the right shape while `torch.onnx.export` traces the model, once."""
        cls = self.scopes.enclosing_class(node)
        if cls is None:
            return False
        if cls not in self._export_operators:  # asked of most nodes `runs_per_step` is asked of
            self._export_operators[cls] = bool(methods_of(cls, ("symbolic",)))
        return self._export_operators[cls]

    def memoized(self, node: cst.CSTNode) -> bool:
        """In a function whose result is cached (`@functools.cached_property`, `@cache`,
        `@lru_cache(...)`): it runs once per object or per distinct arguments, such as a
        probe of a model's minimum input size."""
        return any(
            caches_its_result(function, self.names)
            for function in self.scopes.enclosing_functions(node)
        )

    def callers_never_take(self, node: cst.CSTNode) -> bool:
        """In a branch of its function that no caller takes: a fallback for callers that
        leave out an optional parameter (`if x_mask is None: x_mask = torch.ones(...)`) of a
        function whose every caller passes it, or the branch of a switch off by default
        (`if checkpoint_activations:` with `checkpoint_activations=False`) that no caller
        turns on (`ProgramAnswers.never_switched_on`); in a module's `forward`, also when no
        code of the project calls it with the switch on, though none may call it at all
        (`if init is True:` in `forward(self, x, init=False)`: a model builds it with the
        defaults and calls it as `layer(x)`; `ProgramAnswers.never_built_with`)."""
        function = self.scopes.enclosing_function(node)
        if function is None:
            return False
        return any(
            self.program.always_passed(function, parameter)
            for parameter in self.guards.omitted_parameters(node)
        ) or any(
            self.program.never_switched_on(function, parameter)
            or self.is_forward(function) and self.program.never_built_with(function, parameter)
            for parameter in self.guards.required_parameters(node)
        )

    def never_runs(self, node: cst.CSTNode) -> bool:
        """Whether the program never runs `node`: it is in a function that nothing can call
        (`ProgramAnswers.never_called`), in a branch that needs a switch nothing turns on
        (`Guards.never_enabled`), or in a branch of its function that no caller takes
        (`callers_never_take`). A training loop nothing calls runs nonetheless where the
        project's modules are its users' API (a distribution's trainer); in a research
        program (`ProgramAnswers.knows_what_runs`), a trainer class no file names is a
        leftover."""
        if self.guards.never_enabled(node) or self.callers_never_take(node):
            return True
        if any(loop.is_training for loop in self.loops.enclosing_loops(node)) and not (
            self.program.knows_what_runs()
        ):
            return False
        return any(
            self.program.never_called(function)
            for function in self.scopes.enclosing_functions(node)
        )

    def step_of(self, node: cst.CSTNode) -> Step | None:
        """Why `node` runs on every step of a training or evaluation run, or None.

        The innermost hot loop of its function decides (a loop nested in a training loop runs
        on every step too); outside hot loops, the function it is in, when the program runs that
        function on every step. Periodic and counter guards (`if step % 100 == 0:`), lazy
        initialisations (`if self.cache is None: self.cache = ...`), paths a usual step does
        not take (`off_the_usual_path`: error paths, debugging modes, branches that only
        objects built with a non-default switch run) and code the program never runs
        (`never_runs`: a branch that needs a switch nothing turns on, a trainer class no file
        of a research program names) end it.
        """
        if (
            self.off_the_usual_path(node)
            or self.never_runs(node)
            or self.behind_periodic_predicate(node)
        ):
            return None
        for loop in self.loops.enclosing_loops(node):
            if loop.is_hot:
                if loop.node in self.loops.passes_over_data:
                    return None  # once per pass: after the training loop over the data
                sparse = self.guards.sparse_guard(node, loop.node) is not None
                return None if sparse else Step(loop)
        function = self.scopes.enclosing_function(node)
        if function is None or self.guards.periodic_guard(node) is not None:
            return None
        if self.guards.counter_guard(node):
            return None  # `if self.iteration_step == self.initial_iter_step:` in a step method
        if any(
            self.program.receives_counter(function, name, kind)
            for name, kind in self.guards.counter_parameter_tests(node)
        ):
            return None  # `if iteration == last + k:`, where callers pass their loop counter
        if self.guards.initializes_once(node):
            return None  # `if self.cache is None: self.cache = ...` in a per-step function
        witness = self.witness(function)
        if witness is None:
            return None
        if witness.kind == "train" and self.guards.evaluation_only(node):
            # `if stage != Stage.TRAIN:` in a step function training and evaluation share.
            return Step(None, StepWitness("eval", witness.path))
        return Step(None, witness)

    def in_model_loop(self, node: cst.CSTNode) -> bool:
        """In the body of a loop that runs a model on every iteration, outside sparse guards
        and error paths: a sampling or denoising loop (`self.unet(...)` then
        `scheduler.step(...)` for each timestep), a generation loop, a timed benchmark loop.
        Each of its iterations is a step of inference; a loop over a literal collection of
        constants runs a handful of configurations instead, and a loop of epochs
        (`Loops.epoch_loops`) a whole pass of steps. (`runs_per_step` leaves out the loops
        of a function every caller runs under a periodic guard: a sampler that draws a
        preview every N training steps.)"""
        if self.on_error_path(node):
            return False
        return any(
            not loop.over_constants
            and loop.node not in self.loops.epoch_loops
            and any(self.runs_a_model(call) for call in loop.own_calls)
            and self.guards.sparse_guard(node, loop.node) is None
            for loop in self.loops.enclosing_loops(node)
        )

    def sets_up_a_model_loop(self, node: cst.CSTNode) -> bool:
        """In a function that runs a model in a loop of its own for inference (a decoding or
        sampling loop, with autograd off), but not on every iteration of that loop: before or
        after it, or under a guard that runs on few of its iterations (`if attn is None: attn =
        torch.empty(...)`). Such set-up runs once per call, and its cost is shared by every
        model call of the loop. With autograd on, the loop is part of a training step (an RNN's
        time steps in `forward`), whose set-up is paid on every step."""
        function = self._without_grad(node)
        if function is None:
            return False
        return self._sets_up(node, self._loops_of(function)[0])

    def sets_up_input_optimization(self, node: cst.CSTNode) -> bool:
        """In a function with a loop that optimizes inputs (`optimizes_inputs`: an
        adversarial attack's steps), but not on every iteration of it: set-up that runs once
        per call, whose cost the loop's forward and backward passes share."""
        function = self.scopes.enclosing_function(node)
        return function is not None and self._sets_up(node, self._loops_of(function)[1])

    def _sets_up(self, node: cst.CSTNode, loops: list[LoopFacts]) -> bool:
        """Some of `loops` exist, and `node` runs on every iteration of none of them."""
        enclosing = self.loops.enclosing_loops(node)
        return bool(loops) and not any(
            loop in enclosing and self.guards.sparse_guard(node, loop.node) is None
            for loop in loops
        )

    def _loops_of(self, function: cst.FunctionDef) -> tuple[list[LoopFacts], list[LoopFacts]]:
        """The loops of `function` that run a model for inference, and those that optimize
        inputs."""
        if function not in self._model_loops:
            own = [loop for loop in self.loops.all if loop.function is function]
            self._model_loops[function] = (
                [loop for loop in own if self._repeats_a_model(loop)],
                [loop for loop in own if self.optimizes_inputs(loop)],
            )
        return self._model_loops[function]

    def optimizes_inputs(self, loop: LoopFacts) -> bool:
        """A `for` loop over `range(...)` that, on each iteration, takes the gradient of
        something with `torch.autograd.grad` (an adversarial attack's `grad =
        torch.autograd.grad(cost, adv_images)[0]`), or steps an optimizer its function builds
        over a list of tensors rather than a model's parameters (`optim.Adam([w], lr=lr)`):
        a loop of many forward and backward passes that updates inputs, not a training step."""
        node = loop.node
        if type(node) is not cst.For or type(node.iter) is not cst.Call:
            return False
        if self.names.call_name(node.iter) != "builtins.range":
            return False
        return any(
            self.names.call_name(call) == "torch.autograd.grad" for call in loop.own_calls
        ) or any(
            type(call.func) is cst.Attribute and self._optimizer_of_tensors(call.func.value)
            for call in loop.step_calls
        )

    def _optimizer_of_tensors(self, receiver: cst.BaseExpression) -> bool:
        """`receiver` is bound only to an optimizer built over a list or tuple display of
        tensors (`optimizer = optim.Adam([w], lr=self.lr)`)."""
        bound = self.scopes.bound_values(receiver)
        return bool(bound) and all(
            type(value) is cst.Call
            and (self.names.call_name(value) or "").startswith("torch.optim.")
            and bool(value.args)
            and type(value.args[0].value) in (cst.List, cst.Tuple)
            for value in bound
        )

    def _without_grad(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The function `node` is in, when `node` runs with autograd off (under `no_grad`, or
        in a function every caller runs so)."""
        function = self.scopes.enclosing_function(node)
        if function is None or not (
            self.guards.grad_disabled(node) or self.program.always_called_without_grad(function)
        ):
            return None
        return function

    def prepares_generation(self, node: cst.CSTNode) -> bool:
        """In a function that runs a model's `generate(...)` with autograd off (Hugging Face
        generation: a decoding loop that runs the model once per token), outside any loop
        that generates on each of its iterations: what it prepares, even per frame of a
        video, is paid once per generation and dwarfed by it."""
        function = self._without_grad(node)
        if function is None:
            return False
        generations = self.generations(function)
        return bool(generations) and not any(
            any(self.scopes.within_same_scope(call, loop.node) for call in generations)
            for loop in self.loops.enclosing_loops(node)
        )

    def generations(self, function: cst.FunctionDef) -> list[cst.Call]:
        """The calls of a model's `generate(...)` in `function` (`self.llm_model.generate(
        inputs_embeds=..., max_new_tokens=...)`): the receiver holds a model, or the call
        passes generation settings."""
        if function not in self._generating:
            self._generating[function] = [
                call for call in descendants_in_scope(function.body)
                if type(call) is cst.Call
                and type(call.func) is cst.Attribute
                and call.func.attr.value == "generate"
                and (
                    self.holds_a_model(call.func.value)
                    or any(
                        arg.keyword is not None and arg.keyword.value in _GENERATION_SETTINGS
                        for arg in call.args
                    )
                )
            ]
        return self._generating[function]

    def _repeats_a_model(self, loop: LoopFacts) -> bool:
        """Runs a model, or a method of one (`self.model.forward_decoder(...)`), on each
        iteration, and trains nothing (the micro-batches of a gradient-accumulation loop are
        parts of one step), nor runs a pass of steps on each (`Loops.epoch_loops`). A module
        the loop iterates over (`for layer in self.layers:`) is no model that repeats."""
        if loop.is_training or loop.node in self.loops.epoch_loops:
            return False
        return any(
            (
                self.runs_a_model(call)
                or isinstance(call.func, cst.Attribute) and self.holds_a_model(call.func.value)
            )
            and root_name(call.func) not in loop.target_names
            for call in loop.own_calls
        )

    def witness(self, function: cst.FunctionDef) -> StepWitness | None:
        """Why `function` runs on every step, when it does: a framework hook, or the program's
        call path from a hot loop. `forward` is not included: a module's forward runs on every
        step only where the program calls that module."""
        if function not in self._witnesses:
            kind = self.hook_kind(function)
            local = StepWitness(kind, ()) if kind is not None else None
            self._witnesses[function] = self.program.per_step(function) or local
        return self._witnesses[function]

    def hook_kind(self, function: cst.FunctionDef) -> str | None:
        """"train" or "eval" when `function` is a per-step hook of a framework class it
        derives from directly (`class Model(LightningModule)`)."""
        owner = self.scopes.parents.get(self.scopes.parents.get(function))
        if not isinstance(owner, cst.ClassDef):
            return None
        for base in owner.bases:
            qualified = self.names.qualified_name(base.value)
            kind = framework_hook_kind(qualified, function.name.value) if qualified else None
            if kind is not None:
                return kind
        return None

    def is_forward(self, function: cst.FunctionDef) -> bool:
        """`forward` of a class (a module's forward pass runs on every step that calls it)."""
        owner = self.scopes.parents.get(self.scopes.parents.get(function))
        return function.name.value == "forward" and isinstance(owner, cst.ClassDef)

    def on_error_path(self, node: cst.CSTNode) -> bool:
        """Where the program goes when something failed: inside an `except` handler, a branch
        whose last statement raises or exits, what follows an early exit in a block that ends
        by raising (`if torch.isfinite(x).all(): return`, then the count of bad values for
        the `raise`'s message), and a branch for non-finite values (`if
        torch.isnan(loss).any():`, `if not math.isfinite(v):`, the `else` of `if
        torch.isfinite(loss).all():`), which recovers from a divergence or skips the step,
        and a branch for a step the optimizer skipped on an overflow (`if overflow:`, the
        `else` of `if not skipped_iter:`). The test itself runs on every step."""
        for parent, child in self.scopes.ancestors_with_child(node):
            kind = type(parent)
            if kind in SCOPE_TYPES:
                return False
            if kind is cst.ExceptHandler:
                return True
            if (
                (kind is cst.If or kind is cst.Else)
                and child is parent.body
                and self._ends_in_exit(parent.body)
            ):
                return True
            if kind is cst.If and (
                (child is parent.body and _finds_nonfinite(parent.test))
                or (child is parent.orelse and _all_finite(parent.test))
            ):
                return True
            if kind is cst.If and child in (parent.body, parent.orelse):
                skipped = _skipped_step_test(parent.test)  # runs when the flag is `skipped`
                if skipped is not None and (child is parent.body) == skipped:
                    return True
            if kind is cst.IndentedBlock and self._after_exit_before_raise(parent, child):
                return True
        return False

    def unreachable(self, node: cst.CSTNode) -> bool:
        """After a `return`, `raise`, `break` or `continue` of its block, or of a block
        around it in its function: no path reaches it (`def sync(device): return`, then
        `torch.cuda.synchronize(device)`, a profiling helper switched off by hand); or in the
        branch of an `if` that a constant rules out (`_decided_by_a_constant`)."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if type(parent) is cst.IndentedBlock and child in parent.body:
                earlier = parent.body[: parent.body.index(child)]
                if any(
                    type(line) is cst.SimpleStatementLine
                    and any(type(small) in _LEAVING for small in line.body)
                    for line in earlier
                ):
                    return True
            if type(parent) is cst.If and child is not parent.test:
                decided = self._decided_by_a_constant(parent.test)
                if decided is not None and decided is not (child is parent.body):
                    return True
        return False

    def _decided_by_a_constant(self, test: cst.BaseExpression) -> bool | None:
        """Whether `test` holds, when a literal decides it: `if 0:`, or `if intra_list:` (or
        `if not intra_list:`) right after `intra_list = 1`, the value that reaches the test
        (ReChorus' MIR, whose `else` branch a hand-set switch disables)."""
        negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
        tested = test.expression if negated else test
        if type(tested) is cst.Name and tested.value not in ("True", "False", "None"):
            value = self.scopes.reaching_value(tested)
            tested = value if value is not None else tested
        constant = literal_value(tested)
        if constant is UNKNOWN:
            return None
        return bool(constant) is not negated

    def _after_exit_before_raise(self, block: cst.IndentedBlock, statement: cst.CSTNode) -> bool:
        """`statement` follows an `if` that leaves (`if ok: return`) in a block that ends by
        raising: only the calls that did not leave run it."""
        statements = list(block.body)
        if statement not in statements or not self._ends_in_exit(block):
            return False
        return any(
            isinstance(earlier, cst.If) and _ends_in_leave(earlier.body)
            for earlier in statements[: statements.index(statement)]
        )

    def _ends_in_exit(self, block: cst.BaseSuite) -> bool:
        """Its last statement raises or exits, or is an `if`/`else` one of whose branches
        does and the other leaves (`if raise_on_error: raise ... else: return`)."""
        statements = getattr(block, "body", ())
        if not statements:
            return False
        last = statements[-1]
        if isinstance(last, cst.If) and isinstance(last.orelse, cst.Else):
            branches = (last.body, last.orelse.body)
            return any(self._ends_in_exit(branch) for branch in branches) and all(
                self._ends_in_exit(branch) or _ends_in_leave(branch) for branch in branches
            )
        final = final_simple_statement(block)
        if isinstance(final, cst.Raise):
            return True
        return (
            isinstance(final, cst.Expr)
            and isinstance(final.value, cst.Call)
            and self.names.call_name(final.value) in _EXITS
        )
