"""Training, evaluation and hot loops, and the loop each call runs in (RULES.md, "Terms").

A call belongs to its *nearest* enclosing `for`/`while` in the same function: a `.item()` in
an epoch loop that only contains the training loop runs once per epoch. Comprehensions belong
to the enclosing loop. A `for` loop's iterable is evaluated once, so it belongs to the loop
around it; a `while` loop's test runs every iteration, so it belongs to the loop itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Union

import libcst as cst

from torchperf_lint.facts.arguments import (
    UNKNOWN,
    bound_argument,
    literal_value,
    parameter_named,
    positional_parameters,
)
from torchperf_lint.facts.index import (
    LOOP_TYPES,
    SCOPE_TYPES,
    SyntaxIndex,
    descendants,
    final_simple_statement,
    statements_of,
)
from torchperf_lint.facts.names import NameResolver, dotted_name, last_identifier, target_names
from torchperf_lint.facts.scopes import Scopes

LoopNode = Union[cst.For, cst.While]

# Callables whose result is an optimizer or a gradient scaler, so `.step()` on it is a training step.
_STEPPER_PREFIXES = ("torch.optim.", "torch.amp.GradScaler", "torch.cuda.amp.GradScaler")
_LR_SCHEDULER_PREFIX = "torch.optim.lr_scheduler."
# Short names of optimizers: `opt`, `d_opt`, `opt_g` (GAN code).
_OPT = re.compile(r"(^|_)opt($|_)")
# Wrappers that iterate their first argument: `enumerate(loader)`, `tqdm(loader)`.
_ITERATION_WRAPPERS = frozenset({"enumerate", "iter", "tqdm", "zip", "islice", "track"})
# The most passes a loop makes over the same inputs to warm up or profile a step.
_FEW_PASSES = 10
# The most steps of a fit whose per-step host syncs are not worth a finding (`LoopFacts.short_fit`).
_SHORT_FIT = 100
# The nodes whose statements `_next_reads` looks into: blocks, compound statements and their
# clauses, statement lines.
_BLOCKS = (
    cst.BaseSuite, cst.BaseCompoundStatement, cst.SimpleStatementLine, cst.ExceptHandler,
    cst.Else, cst.Finally,
)


@dataclass
class LoopFacts:
    """What one loop does in its own body (nested loops and nested defs excluded)."""

    node: LoopNode
    function: cst.FunctionDef | None
    own_calls: list[cst.Call] = field(default_factory=list)
    backward_calls: list[cst.Call] = field(default_factory=list)
    step_calls: list[cst.Call] = field(default_factory=list)
    # Calls of project functions that call backward or step themselves (`train_step(batch)`).
    step_helper_calls: list[cst.Call] = field(default_factory=list)
    iterates_dataloader: bool = False
    # A `for` over a literal collection of constants (`for stride, width in [(1, 32), (2,
    # 64)]:`): a handful of configurations, each run once, not steps.
    over_constants: bool = False
    # For a `for` over `range(n)` outside any other loop of its function, with `n` a literal
    # or a name bound only to literals (`n_iter = 5`, `2 if smoke_test else 50`): the most
    # iterations it makes. None for any other loop.
    literal_trips: int | None = None

    @property
    def few_passes(self) -> bool:
        """At most `_FEW_PASSES` iterations (`for _ in range(3):`): a handful of passes, as a
        warm-up or a profiled run makes."""
        return self.literal_trips is not None and self.literal_trips <= _FEW_PASSES

    @property
    def short_fit(self) -> bool:
        """At most `_SHORT_FIT` iterations (`for i in range(50):`): a fit of a few dozen
        full-batch steps, a tutorial's, whose per-step waits add up to milliseconds."""
        return self.literal_trips is not None and self.literal_trips <= _SHORT_FIT

    @property
    def trains_itself(self) -> bool:
        """Calls `.backward()` or an optimizer/scaler `.step()` in its own body."""
        return bool(self.backward_calls or self.step_calls)

    @property
    def is_training(self) -> bool:
        """Trains itself, or calls a project step helper that does, on data: not over a
        literal collection of constants, not a handful of forward and backward passes
        that update nothing (`for _ in range(3): model(x).sum().backward()`, the warm-up or
        the profiled run of a benchmark), and not a loop that backpropagates only for the
        gradient of its input (`differentiates_inputs`)."""
        if self.over_constants:
            return False
        if self.few_passes and not (self.step_calls or self.step_helper_calls):
            return False
        if self.differentiates_inputs and not self.step_helper_calls:
            return False
        return self.trains_itself or bool(self.step_helper_calls)

    @cached_property
    def differentiates_inputs(self) -> bool:
        """Backpropagates, with no optimizer step, only to read the gradient of a tensor the
        loop marks itself (`vi.requires_grad_()`, `out.backward()`, then `ni = -vi.grad`):
        surface normals, a saliency map, an attack; nothing is trained. Asked on every
        `is_training`: walked once per loop."""
        if self.step_calls or not self.backward_calls:
            return False
        marked = {
            dotted_name(call.func.value)
            for call in self.own_calls
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "requires_grad_"
        }
        return bool(marked) and any(
            type(node) is cst.Attribute and node.attr.value == "grad" and dotted_name(node.value) in marked
            for node in descendants(self.node.body)
        )

    @property
    def is_hot(self) -> bool:
        """A training loop, or a loop over a DataLoader."""
        return self.is_training or self.iterates_dataloader

    @cached_property
    def target_names(self) -> set[str]:
        """The names a loop binds to the next item on each iteration: `i`, `x`, `y` in `for
        i, (x, y) in enumerate(loader)`, and `batch` in a `while` loop that reads `batch =
        next(data_iter)`."""
        if isinstance(self.node, cst.For):
            return target_names(self.node.target)
        return {
            name
            for assignment in _next_reads(self.node)
            for target in assignment.targets
            for name in target_names(target.target)
        }


class Loops:
    """Classifies every loop of a module and maps calls to their nearest loop."""

    def __init__(
        self,
        index: SyntaxIndex,
        scopes: Scopes,
        names: NameResolver,
        iterates_a_loader: Callable[[LoopNode], bool],
        calls_step_helper: Callable[[cst.Call], bool] = lambda call: False,
    ) -> None:
        self.index = index
        self.scopes = scopes
        self.names = names
        self.by_node: dict[LoopNode, LoopFacts] = {
            loop: LoopFacts(
                loop,
                scopes.enclosing_function(loop),
                iterates_dataloader=iterates_a_loader(loop),
                over_constants=isinstance(loop, cst.For) and _constants(loop.iter),
                literal_trips=_literal_trips(loop, scopes, index.calls),
            )
            for loop in index.loops
        }
        self._call_loop: dict[cst.Call, LoopFacts | None] = {}
        self._nearest: dict[cst.CSTNode, LoopFacts | None] = {}
        # Functions (None: module level) whose own body switches a model to eval mode.
        self._eval_functions: set[cst.FunctionDef | None] = set()
        for call in index.calls:
            method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
            if method == "eval" and not call.args:
                self._eval_functions.add(scopes.enclosing_function(call))
            loop = self.nearest_loop(call)
            self._call_loop[call] = loop
            if loop is None:
                continue
            loop.own_calls.append(call)
            if method == "backward":
                loop.backward_calls.append(call)
            elif self.is_training_step(call, method):
                loop.step_calls.append(call)
        self._find_step_helper_calls(calls_step_helper)

    def in_program(self, calls_step_helper: Callable[[cst.Call], bool]) -> Loops:
        """These loops with the calls of step helpers `calls_step_helper` knows (the
        program's): the rest is the module's own syntax, not found again."""
        other = Loops.__new__(Loops)
        other.index, other.scopes, other.names = self.index, self.scopes, self.names
        other.by_node = {node: replace(loop) for node, loop in self.by_node.items()}
        other._call_loop = {
            call: None if loop is None else other.by_node[loop.node]
            for call, loop in self._call_loop.items()
        }
        other._nearest = {}
        other._eval_functions = self._eval_functions
        other._find_step_helper_calls(calls_step_helper)
        return other

    def _find_step_helper_calls(self, calls_step_helper: Callable[[cst.Call], bool]) -> None:
        for loop in self.by_node.values():
            if not loop.trains_itself:
                loop.step_helper_calls = [c for c in loop.own_calls if calls_step_helper(c)]

    def nearest_loop(self, node: cst.CSTNode) -> LoopFacts | None:
        """The loop whose every iteration runs `node`, or None outside loops."""
        if node in self._call_loop:
            return self._call_loop[node]
        # Each node's answer is remembered, and so are those of the nodes on the way up: they
        # share it (all of a module's answers cost one walk of its tree).
        memo = self._nearest
        parents = self.scopes.parents
        path = []
        current = node
        found: LoopFacts | None = None
        while current not in memo:
            path.append(current)
            parent = parents.get(current)
            kind = type(parent)  # types, not isinstance: LibCST's ABC checks are slow here
            if parent is None or kind in SCOPE_TYPES:
                break
            if (kind is cst.For and current is parent.body) or (
                kind is cst.While and (current is parent.body or current is parent.test)
            ):
                found = self.by_node[parent]
                break
            current = parent
        else:
            found = memo[current]
        for passed in path:
            memo[passed] = found
        return found

    def loop_of_call(self, call: cst.Call) -> LoopFacts | None:
        return self._call_loop.get(call)

    def enclosing_loops(self, node: cst.CSTNode) -> list[LoopFacts]:
        """Every loop in the same function whose body contains `node`, innermost first."""
        found = []
        for parent, child in self.scopes.ancestors_with_child(node):
            kind = type(parent)
            if kind in SCOPE_TYPES:
                break
            if kind in LOOP_TYPES and child is parent.body:
                found.append(self.by_node[parent])
        return found

    def calls_eval(self, function: cst.FunctionDef | None) -> bool:
        """Whether `function`'s own body (module level for None) calls `.eval()`, the mark of
        an evaluation function (RULES.md, "Evaluation loop")."""
        return function in self._eval_functions

    @property
    def all(self) -> list[LoopFacts]:
        return list(self.by_node.values())

    def trains_within(self, loop: LoopNode) -> bool:
        """Whether `loop`, or a loop nested in its body, trains."""
        return any(
            self.by_node[node].is_training
            for node in (loop, *self.index.inside(self.index.loops, loop))
        )

    @cached_property
    def training_loops(self) -> list[LoopFacts]:
        return [loop for loop in self.by_node.values() if loop.is_training]

    @cached_property
    def epoch_loops(self) -> frozenset[LoopNode]:
        """The loops with a hot loop in their body (`for epoch in range(n):` around `for x, y
        in loader:`): each of their iterations is a whole pass of steps, so what their own body
        runs besides it (sampling a few images after the epoch) runs once per epoch."""
        return frozenset(
            outer.node
            for loop in self.by_node.values() if loop.is_hot
            for outer in self.enclosing_loops(loop.node)
        )

    @cached_property
    def passes_over_data(self) -> frozenset[LoopNode]:
        """The loops around a training loop over a DataLoader (`for epoch_logs in epochs:`
        around `for x, y in loader:`), when they do not iterate a DataLoader themselves (a
        meta-learning loop over batches of tasks steps once per task batch): each of their
        iterations is a pass over the data, also when their own body steps the optimizer once
        more after it (Poutyne's step for gradients left accumulated at the end of the pass)."""
        return frozenset(
            outer.node
            for loop in self.by_node.values() if loop.is_training and loop.iterates_dataloader
            for outer in self.enclosing_loops(loop.node)
            if not outer.iterates_dataloader  # a meta-learning step over tasks is a step
        )

    def is_training_step(self, call: cst.Call, method: str | None) -> bool:
        """`optimizer.step()`, `scaler.step(optimizer)`, or a NativeScaler call."""
        if method == "step" and self.is_optimizer_or_scaler(call.func.value):
            return True
        return self.is_scaler_step(call)

    def is_scaler_step(self, call: cst.Call) -> bool:
        """`loss_scaler(loss, optimizer, ...)`: timm's and MAE's `NativeScaler` objects run
        `scale(loss).backward()` and the optimizer step inside their `__call__`."""
        identifier = last_identifier(call.func) or ""
        if "scaler" not in identifier.lower():
            return False
        return any(
            "optim" in (last_identifier(arg.value) or "").lower() for arg in call.args
        )

    def _annotated_as_stepper(self, name: cst.Name) -> bool:
        """A parameter of the enclosing function annotated with a `torch.optim` or
        `GradScaler` type."""
        function = self.scopes.enclosing_function(name)
        if function is None:
            return False
        param = parameter_named(function, name.value)
        annotation = _annotation_name(param.annotation) if param is not None else None
        qualified = self.names.qualified_name(annotation) if annotation is not None else None
        return bool(qualified) and qualified.startswith(_STEPPER_PREFIXES)

    def is_optimizer_or_scaler(self, receiver: cst.BaseExpression) -> bool:
        """`optimizer`, `opt`, `self.scaler`, a name bound to `torch.optim.X(...)` or
        `GradScaler(...)`, or a parameter annotated as one (`opt: torch.optim.Optimizer`);
        also one item of a collection of them (`self.optimizers["critic"]`)."""
        if isinstance(receiver, cst.Subscript):
            receiver = receiver.value
        identifier = last_identifier(receiver)
        if identifier is None:
            return False
        lowered = identifier.lower()
        if "schedul" in lowered:
            return False  # `opt_param_scheduler.step()` steps the learning rate
        if "optim" in lowered or "scaler" in lowered or _OPT.search(lowered):
            return True
        if isinstance(receiver, cst.Name) and self._annotated_as_stepper(receiver):
            return True
        for value in self.scopes.bound_values(receiver):
            if isinstance(value, cst.Call):
                name = self.names.call_name(value) or ""
                if name.startswith(_STEPPER_PREFIXES) and not name.startswith(_LR_SCHEDULER_PREFIX):
                    return True
        return False


def _annotation_name(annotation: cst.Annotation | None) -> cst.BaseExpression | None:
    return None if annotation is None else annotation.annotation


def iterated_expression(loop: LoopNode) -> cst.BaseExpression | None:
    """What a `for` loop iterates, seen through `enumerate(...)`, `tqdm(...)` and the like,
    and through a logger's wrapper given the loader (`metric_logger.log_every(loader, 10)`);
    for a `while` loop, the iterator it reads with `batch = next(data_iter)` (the same
    iterator every time)."""
    if isinstance(loop, cst.For):
        return unwrapped_iterable(loop.iter)
    iterators = {dotted_name(read.value.args[0].value): read for read in _next_reads(loop)}
    if len(iterators) != 1 or None in iterators:
        return None
    return next(iter(iterators.values())).value.args[0].value


def _next_reads(loop: cst.While) -> list[cst.Assign]:
    """The assignments `batch = next(data_iter)` of a `while` loop's own body (in its
    blocks, `try` and `except` included; not in nested loops or definitions)."""
    found = []
    blocks: list[cst.CSTNode] = [loop.body]
    while blocks:
        block = blocks.pop()
        for child in block.children:
            if type(child) in LOOP_TYPES or type(child) in SCOPE_TYPES:
                continue
            if (
                type(child) is cst.Assign
                and isinstance(child.value, cst.Call)
                and dotted_name(child.value.func) == "next"
                and child.value.args
            ):
                found.append(child)
            elif isinstance(child, _BLOCKS):
                blocks.append(child)
    return found


def unwrapped_iterable(expression: cst.BaseExpression) -> cst.BaseExpression:
    """What an iterable wraps: `loader` for `enumerate(loader)`, `tqdm(loader)` and the like,
    and for a logger's wrapper given the loader (`metric_logger.log_every(loader, 10)`)."""
    while isinstance(expression, cst.Call) and expression.args:
        if (last_identifier(expression.func) or "").lower() in _ITERATION_WRAPPERS:  # also `TQDM`
            expression = expression.args[0].value
            continue
        loaders = [
            arg.value for arg in expression.args
            if "loader" in (last_identifier(arg.value) or "").lower()
        ]
        if len(loaders) != 1:
            break
        expression = loaders[0]
    return expression


def _literal_trips(loop: LoopNode, scopes: Scopes, calls: list[cst.Call]) -> int | None:
    """The most iterations of `for _ in range(n):` outside any other loop of its function,
    `n` a literal or a name bound only to literals (`n_iter = 5`, also `training_iter = 2 if
    smoke_test else 50`: either count), or of a loop over `enumerate(...)` that leaves after
    a literal count (`if idx == 3: break`, a feature demo's four steps, or `if batch_idx + 1
    == num_it: break` with `num_it=100` the default that every call of the function in the
    module keeps: a learning-rate range test); None for any other loop."""
    if not isinstance(loop, cst.For) or scopes.in_a_loop(loop):
        return None
    expression = loop.iter
    counted = _trips_until_break(loop, scopes, calls)
    if counted is not None:
        return counted
    if not (
        isinstance(expression, cst.Call)
        and isinstance(expression.func, cst.Name)
        and expression.func.value == "range"
        and len(expression.args) == 1
    ):
        return None
    bound = expression.args[0].value
    values = scopes.bound_values(bound) if isinstance(bound, cst.Name) else [bound]
    values = [
        branch for value in values
        for branch in ((value.body, value.orelse) if isinstance(value, cst.IfExp) else (value,))
    ]
    counts = [literal_value(value) for value in values]
    if not counts or not all(type(count) is int for count in counts):
        return None
    return max(counts)


def _trips_until_break(loop: cst.For, scopes: Scopes, calls: list[cst.Call]) -> int | None:
    """For `for idx, batch in enumerate(loader):` whose body holds `if idx == 3: break` (or
    `idx >= 3`, `idx > 2`, `idx + 1 == 4`), the iterations it makes at most (4); the bound
    may be a parameter's literal default that the module's calls keep (`_kept_default`);
    else None."""
    target = loop.target
    if not (
        isinstance(loop.iter, cst.Call)
        and dotted_name(loop.iter.func) == "enumerate"
        and isinstance(target, cst.Tuple)
        and target.elements
        and isinstance(target.elements[0].value, cst.Name)
    ):
        return None
    counter = target.elements[0].value.value
    for statement in statements_of(loop.body):
        if not (type(statement) is cst.If and type(final_simple_statement(statement.body)) is cst.Break):
            continue
        test = statement.test
        if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
            continue
        [comparison] = test.comparisons
        counted, offset = test.left, 0
        if type(counted) is cst.BinaryOperation and type(counted.operator) is cst.Add:
            counted, offset = counted.left, literal_value(counted.right)
        bound = literal_value(comparison.comparator)
        if type(comparison.comparator) is cst.Name:
            bound = _kept_default(comparison.comparator, scopes, calls)
        if dotted_name(counted) != counter or type(bound) is not int or type(offset) is not int:
            continue
        extra = {cst.Equal: 1, cst.GreaterThanEqual: 1, cst.GreaterThan: 2}.get(type(comparison.operator))
        if extra is not None:
            return bound - offset + extra
    return None


def _kept_default(name: cst.Name, scopes: Scopes, calls: list[cst.Call]) -> object:
    """The literal default of the parameter `name` reads, when its function never rebinds it
    and the module calls the function, each time leaving the parameter out
    (`record_lr(model, loader, optimizer)` for `num_it=100`); else None."""
    function = scopes.enclosing_function(name)
    if function is None or not scopes.holds_argument(name):
        return None
    param = parameter_named(function, name.value)
    own_calls = scopes.calls_of(function, calls)
    if param is None or param.default is None or not own_calls:
        return None
    signature = positional_parameters(function)
    if any(bound_argument(call, name.value, signature) is not None for call in own_calls):
        return None
    return literal_value(param.default)


def _constants(expression: cst.BaseExpression) -> bool:
    """A literal list, tuple or set of literal values or of such tuples: `[(1, 32), (2, 64)]`,
    `("fp16", "bf16")`."""
    if isinstance(expression, (cst.List, cst.Tuple, cst.Set)):
        return bool(expression.elements) and all(
            not isinstance(element, cst.StarredElement) and _constants_or_value(element.value)
            for element in expression.elements
        )
    return False


def _constants_or_value(expression: cst.BaseExpression) -> bool:
    return _constants(expression) or literal_value(expression) is not UNKNOWN
