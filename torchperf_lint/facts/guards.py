"""Conditions around a node: periodic guards, flags, and whether autograd is switched off."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cached_property

import libcst as cst

from torchperf_lint.conventions import LIBRARY_SWITCHES, OFF_VALUES
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
    ScopeNode,
    SyntaxIndex,
    descendants,
    descendants_in_scope,
    final_simple_statement,
    methods_of,
    statements_of,
)
from torchperf_lint.facts.names import NameResolver, dotted_name, last_identifier, target_names
from torchperf_lint.facts.scopes import Scopes

_GRAD_DISABLING = frozenset({"torch.no_grad", "torch.inference_mode"})
# Errors a compatibility shim catches: a missing module or name, an argument an older
# PyTorch does not take (`TypeError: unexpected keyword argument`).
_COMPATIBILITY_ERRORS = frozenset({
    "ImportError", "ModuleNotFoundError", "AttributeError", "TypeError", "Exception",
    "BaseException",
})
# Tests that pick an API by PyTorch version or feature: `torch.__version__ >= "2.3"`,
# `TORCH_GE_2_3`, `hasattr(torch, "amp")`, `is_torch_greater_or_equal("2.4")`, or a call
# given a version string, `ppe.requires("2.3.0")`.
_VERSION_TEST = re.compile(
    r"version|hasattr|getattr|greater|older|newer|\d_\d|\(\s*[\"']\d+\.\d+", re.IGNORECASE
)


def is_modulo_test(test: cst.BaseExpression) -> bool:
    """`E % K == C`, `E % K != C`, `not E % K`, or an `and` with one of those as an operand."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return is_modulo_test(test.left) or is_modulo_test(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _is_modulo(test.expression)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            return _is_modulo(test.left) or _is_modulo(target.comparator)
    return False


def _is_interval_flag(test: cst.BaseExpression) -> bool:
    """`state.should_save`, `control.should_log`, `self.control.should_evaluate`: a flag a
    trainer's callbacks set on its save, logging or evaluation steps (Hugging Face's
    `TrainerControl`), or an `and` with one as an operand."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _is_interval_flag(test.left) or _is_interval_flag(test.right)
    return isinstance(test, cst.Attribute) and test.attr.value in _INTERVAL_FLAGS


def switch_tested(test: cst.BaseExpression) -> str | None:
    """The name or attribute a test of a plain switch reads (`log` for `if log:`,
    `args.prefetcher` for `if not args.prefetcher:`), or None for any other test."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    return dotted_name(test) if type(test) in (cst.Name, cst.Attribute) else None


def setting_test(test: cst.BaseExpression, expected: bool = True) -> list | None:
    """`test` as a test of one of the run's settings (`program.options`): `[key, operator,
    literal, expected]`, true when the setting passes it. `args.verbose` is `["verbose",
    "truth", None, True]`, `not config.TRAIN.CLIP_GRAD` is `["TRAIN.CLIP_GRAD", "truth",
    None, False]`, `self.args.my_qa_mask != 1` is `["my_qa_mask", "!=", 1, True]`. None for
    any other test, and for a setting that picks the device (`args.cuda`, `cfg.MODEL.DEVICE`):
    the runs that matter pass a test for the GPU."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return setting_test(test.expression, not expected)
    comparison, literal = "truth", None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = _COMPARISON_OPERATORS.get(type(test.comparisons[0].operator))
        literal = literal_value(test.comparisons[0].comparator)
        if comparison is None or literal is UNKNOWN:
            return None
        test = test.left
    key = _setting_key(test)
    if key is None or any(word in key.lower() for word in _DEVICE_WORDS):
        return None
    return [key, comparison, literal, expected]


def _setting_key(expression: cst.BaseExpression) -> str | None:
    """The key of a setting read from the run's settings object (`verbose` of `args.verbose`
    or `self.args.verbose`, `TRAIN.CLIP_GRAD` of `config.TRAIN.CLIP_GRAD`, `flooding_level`
    of `self.train_config.flooding_level`), also of one
    entry of it (`kl_threshold` of `self.cfg.kl_threshold[uid]`, one agent's value of a
    setting that a single value sets for all)."""
    if isinstance(expression, cst.Subscript):
        expression = expression.value
    name = dotted_name(expression) if isinstance(expression, cst.Attribute) else None
    if name is None:
        return None
    parts = name.split(".")
    start = 1 if parts[0] == "self" and len(parts) > 2 else 0
    holder = parts[start]
    if holder not in _SETTINGS_OBJECTS and not (start and holder.endswith(_SETTINGS_SUFFIXES)):
        return None
    return ".".join(parts[start + 1:])


# The comparisons that order their operands.
_ORDERINGS = (cst.GreaterThan, cst.GreaterThanEqual, cst.LessThan, cst.LessThanEqual)
# The calls that take the next milestone off a schedule (`optimize_times.pop()`).
_SCHEDULE_POPS = frozenset({"pop", "popleft"})


def _moves_its_milestone(test: cst.Comparison, branch: cst.If) -> bool:
    """`progress >= milestone` (or `milestone <= progress`) whose branch moves `milestone`
    on: assigns it (`next_eval += eval_every`, `next_eval = step + k`), or pops the schedule
    it reads the milestone from (`optimize_times[-1]`, then `optimize_times.pop()`)."""
    operator = type(test.comparisons[0].operator)
    milestone = (
        test.comparisons[0].comparator
        if operator in (cst.GreaterThan, cst.GreaterThanEqual) else test.left
    )
    schedule = dotted_name(milestone.value) if type(milestone) is cst.Subscript else None
    name = dotted_name(milestone)
    if name is None and schedule is None:
        return False
    for node in descendants(branch.body):
        kind = type(node)
        if kind in (cst.AssignTarget, cst.AugAssign) and name is not None and (
            dotted_name(node.target) == name
        ):
            return True
        if (
            kind is cst.Call
            and schedule is not None
            and type(node.func) is cst.Attribute
            and node.func.attr.value in _SCHEDULE_POPS
            and dotted_name(node.func.value) == schedule
        ):
            return True
    return False


def conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of a chain of `and`s (`a and b and c`), or the test itself."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*conjuncts(test.left), *conjuncts(test.right)]
    return [test]


def _presence_tested(test: cst.BaseExpression) -> str | None:
    """The name `test` requires to be given: `name is not None`, or `name` itself."""
    if isinstance(test, cst.Name):
        return test.value
    return _compared_with_none(test, cst.IsNot)


def _true_tested(test: cst.BaseExpression) -> str | None:
    """The name `test` requires to be `True`: `name is True` or `name == True` (its `else`
    runs for a `False` passed as well as for a missing one)."""
    if (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, (cst.Is, cst.Equal))
        and isinstance(test.left, cst.Name)
        and literal_value(test.comparisons[0].comparator) is True
    ):
        return test.left.value
    return None


def _absence_tested(test: cst.BaseExpression) -> str | None:
    """The name `test` requires to be missing: `name is None`, or `not name`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression.value if isinstance(test.expression, cst.Name) else None
    return _compared_with_none(test, cst.Is)


def _compared_with_none(test: cst.BaseExpression, operator: type) -> str | None:
    """`name` in `name is None` (operator `cst.Is`) or `name is not None` (`cst.IsNot`)."""
    if (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, operator)
        and isinstance(test.left, cst.Name)
        and literal_value(test.comparisons[0].comparator) is None
    ):
        return test.left.value
    return None


def _is_modulo(expression: cst.BaseExpression) -> bool:
    return isinstance(expression, cst.BinaryOperation) and isinstance(
        expression.operator, cst.Modulo
    )


# How many names bound to names a guard test is followed through.
_NAME_DEPTH = 3
# The flags a trainer's callbacks set on its save, logging and evaluation steps.
_INTERVAL_FLAGS = frozenset({"should_save", "should_log", "should_evaluate"})
# Wall clocks: a synchronize next to a clock read bounds a timed interval, and a test of the
# time since a clock read that the test's body resets runs at intervals.
CLOCKS = frozenset({
    "time.time", "time.perf_counter", "time.monotonic",
    "time.time_ns", "time.perf_counter_ns", "time.monotonic_ns", "timeit.default_timer",
})
# The objects that hold a run's settings (`args.flag`, `self.config.level`).
_SETTINGS_OBJECTS = frozenset({"args", "config", "cfg", "opt", "opts", "hparams", "settings"})
# Words of a setting that picks the device (`args.cuda`, `args.no_gpu`, `cfg.MODEL.DEVICE`).
_DEVICE_WORDS = ("cuda", "gpu", "device")
_COMPARISON_OPERATORS = {
    cst.Equal: "==", cst.NotEqual: "!=", cst.LessThan: "<", cst.LessThanEqual: "<=",
    cst.GreaterThan: ">", cst.GreaterThanEqual: ">=", cst.Is: "is", cst.IsNot: "is not",
}
# How the names of settings objects end (`training_args`, `model_config`).
_SETTINGS_SUFFIXES = tuple(_SETTINGS_OBJECTS)
# Words in the name of a switch that turns on a debugging or profiling mode (`args.debug`,
# `config.sanity_checks`, `self.train_profile`), and words that turn the switch's meaning
# around (`ignore_sanity_checks`, `no_debug`).
_DEBUG_WORDS = ("debug", "sanity", "profil")
_NEGATING_WORDS = ("ignore", "skip", "disable", "no_", "without")
# Names of flags that say a step trains (`self.training`, `is_train`).
_TRAINING_FLAGS = frozenset({"training", "is_train", "is_training", "train_mode"})
# Constants that name a stage that does not train.
_EVALUATION_STAGES = frozenset({
    "valid", "val", "validation", "validate", "test", "eval", "evaluation", "predict",
    "inference",
})


class Counters:
    """The names that count iterations: those of each loop, and those the loops of each
    class's methods count with. They depend on the module's syntax alone, so the facts of a
    file and of the file in its program share them (`FileFacts.with_program`)."""

    def __init__(self, index: SyntaxIndex, scopes: Scopes) -> None:
        self.index = index
        self.scopes = scopes
        self._counters: dict[cst.For | cst.While | cst.ClassDef, frozenset[str]] = {}
        self._first_flags: dict[cst.For | cst.While, frozenset[str]] = {}

    def first_flags(self, loop: cst.For | cst.While) -> frozenset[str]:
        """The names true on the first iteration of `loop` only: bound to `True` before it
        and to `False` in its body (`is_first_iteration = True`, then `is_first_iteration =
        False` at the end of each step), and to nothing else in the function."""
        if loop not in self._first_flags:
            # Per name, how each assignment binds it: "set" (`True` outside the loop),
            # "cleared" (`False` in its body), or "other".
            kinds: dict[str, set[str]] = {}
            function = self.scopes.enclosing_function(loop)
            assigns = self.index.assigns
            if function is not None:
                assigns = self.index.inside(assigns, function)
            for node in assigns:
                if type(node) is not cst.Assign:
                    continue
                if self.scopes.enclosing_function(node) is not function:
                    continue
                value = node.value.value if type(node.value) is cst.Name else None
                in_body = self.index.contains(loop.body, node)
                kind = (
                    "cleared" if in_body and value == "False"
                    else "set" if not in_body and value == "True"
                    else "other"
                )
                for target in node.targets:
                    if type(target.target) is cst.Name:
                        kinds.setdefault(target.target.value, set()).add(kind)
            self._first_flags[loop] = frozenset(
                name for name, found in kinds.items() if found == {"set", "cleared"}
            )
        return self._first_flags[loop]

    def of_class(self, cls: cst.ClassDef) -> frozenset[str]:
        """The attributes of `self` that the loops of `cls`'s methods count with: a `for`
        target (`for self.iteration_step in range(...)`) or a literal increment in a loop."""
        if cls not in self._counters:
            counters = {
                loop_counter(loop, attributes=True)
                for loop in self.index.inside(self.index.loops, cls)
                if type(loop) is cst.For and isinstance(loop.target, cst.Attribute)
            }
            for node in self.index.inside(self.index.assigns, cls):
                if type(node) in (cst.AugAssign, cst.Assign) and any(
                    type(parent) in LOOP_TYPES for parent in self.scopes.ancestors(node)
                ):
                    counters.add(_increment(node))
            self._counters[cls] = frozenset(
                name for name in counters if name is not None and name.startswith("self.")
            )
        return self._counters[cls]

    def of_loop(self, loop: cst.For | cst.While) -> frozenset[str]:
        """The names that count `loop`'s iterations: its own counter (`loop_counter`), the
        names its body increments by a literal (`step += 1`, `self.it = self.it + 1`), and the
        names its body binds to a counter plus or minus a literal or an offset of names,
        or divided by a number (`batch_count = i + 1`, `ni = i + nb * epoch`, `i_accum = i //
        accum_freq`)."""
        if loop not in self._counters:
            counter = loop_counter(loop) or self._enumerated_counter(loop)
            counters = {counter} if counter is not None else set()
            offsets = []
            # The assignments of the loop's body, not those of a `def` or class in it.
            for node in self.index.inside(self.index.assigns, loop.body):
                if not self.scopes.within_same_scope(node, loop.body):
                    continue
                increment = _increment(node)
                if increment is not None:
                    counters.add(increment)
                elif type(node) is cst.Assign and len(node.targets) == 1:
                    offsets.append(node)
            for assignment in offsets:  # in source order: `n = i + 1` then `m = n - 1`
                bases = _counted_from(assignment.value)
                target = dotted_name(assignment.targets[0].target)
                if target is not None and any(base in counters for base in bases):
                    counters.add(target)
            self._counters[loop] = frozenset(counters)
        return self._counters[loop]

    def _enumerated_counter(self, loop: cst.For | cst.While) -> str | None:
        """`i` in `for i, batch in pbar:` after `pbar = enumerate(loader)` (and `pbar =
        tqdm(pbar)`), or in `for i, batch in tqdm(enumerate(loader)):`: a progress bar
        wrapping an `enumerate` yields its pairs."""
        if type(loop) is not cst.For or not isinstance(loop.target, (cst.Tuple, cst.List)):
            return None
        first = loop.target.elements[0].value if loop.target.elements else None
        if type(first) is not cst.Name or not self._enumerates(loop.iter):
            return None
        return first.value

    def _enumerates(self, iterated: cst.BaseExpression, depth: int = 0) -> bool:
        """`enumerate(...)`, a call given one first (`tqdm(enumerate(loader))`), or a name
        bound only to these, or to a call given the name itself (`pbar = tqdm(pbar)`), and to
        one of these at least."""
        if type(iterated) is cst.Name and depth < 3:
            values = [
                value for value in self.scopes.bound_values(iterated)
                if not _wraps_name(value, iterated.value)
            ]
            return bool(values) and all(self._enumerates(value, depth + 1) for value in values)
        if type(iterated) is not cst.Call or not iterated.args:
            return False
        if dotted_name(iterated.func) == "enumerate":
            return True
        first = iterated.args[0]
        return first.keyword is None and not first.star and self._enumerates(first.value, depth)


class Guards:
    """Answers "does this run every iteration?" and "is autograd recording here?"."""

    def __init__(
        self,
        index: SyntaxIndex,
        scopes: Scopes,
        names: NameResolver,
        counters: Counters,
        project_disables_grad: Callable[[cst.BaseExpression], bool] = lambda expression: False,
        project_switches_on: Callable[[str], bool] = lambda attribute: True,
        project_never_builds_with: Callable[[cst.FunctionDef, str], bool] = (
            lambda init, parameter: False
        ),
        project_inherits_switch: Callable[[cst.ClassDef, str], bool] = (
            lambda cls, attribute: False
        ),
    ) -> None:
        """`counters` are the module's: they do not depend on the program."""
        self.index = index
        self.scopes = scopes
        self.names = names
        self.counters = counters
        # The project's own no-grad wrappers (`@smart_inference_mode()`), known to the program.
        self.project_disables_grad = project_disables_grad
        # Whether code of the program sets an attribute to a true value (`ProgramAnswers`).
        self.project_switches_on = project_switches_on
        self.project_never_builds_with = project_never_builds_with
        self.project_inherits_switch = project_inherits_switch
        # Per block, its first early exit on the other steps (`_exit_off_period_before`).
        self._first_exits: dict[cst.CSTNode, tuple[int, cst.If] | None] = {}
        # Per `if`, the operands of its `or` and its first-time tests (`_first_time_operands`).
        self._first_times: dict[cst.If, tuple[list, list]] = {}
        # Per loop, the `if`s that leave it (`_exits_of`).
        self._exits: dict[cst.CSTNode, list[cst.If]] = {}
        # Per node, the tests of settings it must pass to run (`setting_tests`).
        self._setting_tests: dict[cst.CSTNode, list[list]] = {}

    def periodic_guard(self, node: cst.CSTNode, within: cst.CSTNode | None = None) -> cst.If | None:
        """The `if step % n == 0:` whose body holds `node` (below `within`, if given); the
        test may also be a name bound to such a test (`do_log = step % n == 0; if do_log:`).
        An early exit on the other steps before `node` in its block guards it too:
        `if (step + 1) % accumulation != 0: continue` (or `return`)."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if parent is within or type(parent) in SCOPE_TYPES:
                return None
            if type(parent) is cst.If and child is parent.body and (
                self.is_periodic_test(parent.test) or self._every_interval(parent)
            ):
                return parent
            exit_ = self._exit_off_period_before(parent, child)
            if exit_ is not None:
                return exit_
        return None

    def _every_interval(self, branch: cst.If) -> bool:
        """The body runs once per interval, however many steps it spans: of time (`if now -
        last_logging > args.log_freq_time:` whose body sets `last_logging` again, with `now`
        read from a wall clock), or of a schedule whose next milestone the body moves on
        (`if niter * batch_size >= optimize_times[-1]:` whose body pops `optimize_times`,
        `if step >= next_eval:` whose body advances `next_eval`). Also as an operand of an
        `and` (`if args.rank == 0 and now - last > 60:`)."""
        for test in conjuncts(branch.test):
            if (
                type(test) is not cst.Comparison
                or len(test.comparisons) != 1
                or type(test.comparisons[0].operator) not in _ORDERINGS
            ):
                continue
            if self._since_a_clock_reset(test, branch) or _moves_its_milestone(test, branch):
                return True
        return False

    def _since_a_clock_reset(self, test: cst.Comparison, branch: cst.If) -> bool:
        """`now - last > interval` whose branch sets `last` again, `now` a clock read."""
        if (
            type(test.comparisons[0].operator) not in (cst.GreaterThan, cst.GreaterThanEqual)
            or type(test.left) is not cst.BinaryOperation
            or type(test.left.operator) is not cst.Subtract
        ):
            return False
        now, last = test.left.left, test.left.right
        reset = dotted_name(last)
        return reset is not None and self._reads_a_clock(now) and any(
            type(node) is cst.AssignTarget and dotted_name(node.target) == reset
            for node in descendants(branch.body)
        )

    def _reads_a_clock(self, expression: cst.BaseExpression) -> bool:
        """`time.time()`, or a name bound only to such a read."""
        values = (
            self.scopes.bound_values(expression)
            if isinstance(expression, (cst.Name, cst.Attribute)) else [expression]
        )
        return bool(values) and all(
            isinstance(value, cst.Call) and self.names.call_name(value) in CLOCKS
            for value in values
        )

    def _exit_off_period_before(self, block: cst.CSTNode, child: cst.CSTNode) -> cst.If | None:
        """An `if <off-period test>: continue` (or `return`, also after other work: `if
        self.skip_log: log_loss(); return`) among the statements of `block` before `child`."""
        # Every call asks about every block around it: each block is scanned once.
        if block not in self._first_exits:
            statements = statements_of(block)
            self._first_exits[block] = next(
                (
                    (position, statement)
                    for position, statement in enumerate(statements)
                    if type(statement) is cst.If
                    and statement.orelse is None
                    and type(final_simple_statement(statement.body)) in (cst.Continue, cst.Return)
                    and self._is_off_period_test(statement.test)
                ),
                None,
            )
        first = self._first_exits[block]
        if first is None:
            return None
        position, statement = first
        statements = statements_of(block)
        return statement if child in statements[position + 1:] else None

    def _is_off_period_test(self, test: cst.BaseExpression, depth: int = 0) -> bool:
        """True on the steps between the periodic ones: `step % n != 0`, `step % n`, or an
        `or` or `and` with one of those as an operand (`if skip_batch and skip_time: return`:
        the other reasons to skip are rarer still); also a name bound to one, or an
        attribute of `self` (`self.skip_log = batch_idx % self.log_every != 0` in a hook
        that runs before each step)."""
        if isinstance(test, cst.BooleanOperation):
            return self._is_off_period_test(test.left, depth) or self._is_off_period_test(
                test.right, depth
            )
        if _is_modulo(test):
            return True
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            target = test.comparisons[0]
            return isinstance(target.operator, cst.NotEqual) and (
                _is_modulo(test.left) or _is_modulo(target.comparator)
            )
        if type(test) is cst.Name and depth < _NAME_DEPTH:
            return self._bound_only_to(test, self._is_off_period_test, depth)
        if (dotted_name(test) or "").startswith("self.") and depth < _NAME_DEPTH:
            # The value `__init__` starts it with is the one before the first step's hook.
            return self._bound_only_to(
                test, self._is_off_period_test, depth, besides=self._set_in_constructor
            )
        return False

    def _set_in_constructor(self, value: cst.BaseExpression, name: str) -> bool:
        function = self.scopes.enclosing_function(value)
        return function is not None and function.name.value == "__init__"

    def is_periodic_test(self, test: cst.BaseExpression, depth: int = 0) -> bool:
        """A modulo test (`is_modulo_test`) or a trainer's interval flag (`if
        state.should_save:`), or a name every value of which is one, also as
        an operand of a top-level `and`; a value that narrows the name's own test (`test =
        step % freq == 0`, then `test = test and acc_step == 0`) keeps it periodic."""
        if is_modulo_test(test) or _is_interval_flag(test):
            return True
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self.is_periodic_test(test.left, depth) or self.is_periodic_test(test.right, depth)
        if isinstance(test, cst.Name) and depth < _NAME_DEPTH:
            return self._bound_only_to(test, self.is_periodic_test, depth, besides=_narrows)
        return False

    def _bound_only_to(
        self,
        name: cst.Name | cst.Attribute,
        passes: Callable[[cst.BaseExpression, int], bool],
        depth: int,
        besides: Callable[[cst.BaseExpression, str], bool] = lambda value, name: False,
    ) -> bool:
        """Whether `name` is bound, and every value it is bound to `passes` (given the depth
        of names followed so far): a name bound to a sparse test, also through other names,
        `_NAME_DEPTH` deep (`last = i == n - 1`, `is_log_step = i % k == 0 or last`,
        `is_metric_step = i % m == 0 or is_log_step`). Values `besides` says derive from the
        name itself (`_narrows`) are left out."""
        bound = self.scopes.bound_values(name)
        values = [value for value in bound if not besides(value, dotted_name(name) or "")]
        return bool(values) and all(passes(value, depth + 1) for value in values)

    def sparse_guard(self, node: cst.CSTNode, loop: cst.For | cst.While) -> cst.If | None:
        """The `if` inside `loop` whose body holds `node` and runs on few of its iterations.

        That is a periodic guard, a test of one of the loop's counters (`Counters.of_loop`) for
        equality (`if i == 0:`, `if i + 1 == len(loader):`) or against a literal bound (a
        prefix of the iterations: `if step < 5:`, `if i <= 4:`; or the `else` of a test for
        inequality, `if i != len(loader) - 1: ... else:`), a name bound to one of those
        (`last = i == n - 1`, `do_reg = i % k == 0`), an `and` with one of those as an
        operand, or an `or` of them only; or a lazy initialisation (`if attn is None:` whose
        body assigns `attn`), which runs until its body has run once; or a test of the time
        since a clock read that its body resets (`if now - last > 60: ...; last = now`); or
        a branch whose body ends by leaving the loop (`if updates == max_updates: ...;
        break`), which runs once; or an early exit on the other steps before `node` (`if (i +
        1) % accumulation != 0: continue`).
        """
        counters = self.counters.of_loop(loop)
        flags = self.counters.first_flags(loop)
        for parent, child in self.scopes.ancestors_with_child(node):
            if parent is loop or type(parent) in SCOPE_TYPES:
                return None
            if (
                type(parent) is cst.If
                and child is parent.body
                and (
                    self._is_sparse_test(parent.test, counters, flags=flags)
                    or self._initialized_once(parent) is not None
                    or self._every_interval(parent)
                    or self._leaves(parent.body, loop)
                )
            ):
                return parent
            if type(parent) is cst.If and child is parent.orelse and _tests_all_but_few_counts(
                parent.test, counters
            ):
                return parent  # the `else` of `if i != len(loader) - 1:`: the last iteration
            exit_ = self._exit_off_period_before(parent, child)
            if exit_ is not None:
                return exit_
        return None

    def counter_guard(self, node: cst.CSTNode) -> bool:
        """In a method, under a test that is true on few values of a counter of its class's
        loops (`_is_sparse_test`): `if self.iteration_step == self.initial_iter_step:` where
        a method of the class runs `for self.iteration_step in range(...)` (or increments
        `self.step += 1` in a loop). The method runs once per iteration; its branch on few."""
        cls = self.scopes.enclosing_class(node)
        counters = self.counters.of_class(cls) if cls is not None else frozenset()
        if not counters:
            return False
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if (
                type(parent) is cst.If
                and child is parent.body
                and self._is_sparse_test(parent.test, counters)
            ):
                return True
        return False

    def counter_parameter_tests(self, node: cst.CSTNode) -> list[list[str]]:
        """The parameters of `node`'s function that an `if` around it tests as a counter or
        a first-iteration flag, each with what it must receive ("counter" or "first"): a test
        true on few values (`_is_sparse_test`) of the parameter (`if iteration ==
        last_collection + k:`), or the parameter itself in an `or` with a periodic test (`if
        iteration % k == 0 or is_first_iteration:`), also in an `or` with first-time tests
        (`if rollouts is None or iteration == ...:`, whose body assigns `rollouts`). When the
        program's callers pass a loop counter (`Counters.of_loop`) or a first-iteration flag
        (`Counters.first_flags`) as that parameter, `node` runs on few steps of their loop."""
        function = self.scopes.enclosing_function(node)
        if function is None:
            return []
        parameters = [param.name.value for param in _parameters_of(function)]
        found: list[list[str]] = []
        for parent, child in self.scopes.ancestors_with_child(node):
            if parent is function:
                break
            if type(parent) is not cst.If or child is not parent.body:
                continue
            for name in parameters:
                one = frozenset({name})
                if self._tests_counter_once_in_a_while(parent, one, frozenset()):
                    found.append([name, "counter"])
                elif self._tests_counter_once_in_a_while(parent, frozenset(), one):
                    found.append([name, "first"])
        return found

    def _tests_counter_once_in_a_while(
        self, branch: cst.If, counters: frozenset[str], flags: frozenset[str]
    ) -> bool:
        test = branch.test
        if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or)):
            return self._is_sparse_test(test, counters, flags=flags)
        operands, first_time = self._first_time_operands(branch)
        return len(first_time) < len(operands) and all(
            operand in first_time or self._is_sparse_test(operand, counters, flags=flags)
            for operand in operands
        )

    def _first_time_operands(
        self, branch: cst.If
    ) -> tuple[list[cst.BaseExpression], list[cst.BaseExpression]]:
        """The operands of the `or` that `branch` tests, and those of them that are
        first-time tests (`rollouts is None`, of a name the body assigns); found once per
        branch, though every parameter of the function asks."""
        if branch not in self._first_times:
            operands = list(_or_operands(branch.test))
            assigned = {
                name
                for node in descendants(branch.body)
                if type(node) is cst.AssignTarget
                for name in (dotted_name(node.target), *target_names(node.target))
            }
            first_time = [
                operand for operand in operands if _none_tested(operand) in assigned - {None}
            ]
            self._first_times[branch] = (operands, first_time)
        return self._first_times[branch]

    def _is_sparse_test(
        self,
        test: cst.BaseExpression,
        counters: frozenset[str],
        depth: int = 0,
        flags: frozenset[str] = frozenset(),
    ) -> bool:
        """True on few iterations: a modulo test, a test of few values of one of `counters`,
        one of `flags` (true on the first iteration only), or a name bound to one of those;
        an `and` with one such operand, an `or` of them only."""
        if is_modulo_test(test) or _is_interval_flag(test) or self._leaves_the_loop_on(test):
            return True
        if isinstance(test, cst.BooleanOperation):
            left = self._is_sparse_test(test.left, counters, depth, flags)
            right = self._is_sparse_test(test.right, counters, depth, flags)
            return left or right if isinstance(test.operator, cst.And) else left and right
        if isinstance(test, cst.Name) and test.value in flags:
            return True
        if isinstance(test, cst.Name) and depth < _NAME_DEPTH:
            return self._bound_only_to(
                test,
                lambda value, deeper: self._is_sparse_test(value, counters, deeper, flags),
                depth,
            )
        return bool(counters) and _tests_few_counts(test, counters)

    def _leaves_the_loop_on(self, test: cst.BaseExpression) -> bool:
        """A comparison or a flag on which the loop around it also leaves (`self.iter_count >=
        self.total_steps`, with `if self.iter_count >= self.total_steps: return results` later
        in the loop; `done`, with `if done: break`): true on the loop's last iteration only."""
        if type(test) not in (cst.Comparison, cst.Name, cst.Attribute):
            return False
        loop = next(
            (parent for parent in self.scopes.ancestors(test) if type(parent) in (*LOOP_TYPES, *SCOPE_TYPES)),
            None,
        )
        if type(loop) not in LOOP_TYPES:
            return False
        return any(branch.test.deep_equals(test) for branch in self._exits_of(loop))

    def _exits_of(self, loop: cst.For | cst.While) -> list[cst.If]:
        """The `if`s of `loop` whose body ends by leaving it: `return`, or `break` of this loop."""
        if loop not in self._exits:
            self._exits[loop] = [
                branch
                for branch in descendants_in_scope(loop.body)
                if type(branch) is cst.If and self._leaves(branch.body, loop)
            ]
        return self._exits[loop]

    def _leaves(self, body: cst.BaseSuite, loop: cst.For | cst.While) -> bool:
        final = final_simple_statement(body)
        if final is None:
            return False
        if type(final) is cst.Return:
            return True
        nearest = next(parent for parent in self.scopes.ancestors(final) if type(parent) in LOOP_TYPES)
        return type(final) is cst.Break and nearest is loop

    def under_condition(self, node: cst.CSTNode, within: cst.CSTNode | None = None) -> bool:
        """Whether `node` runs only under some `if` (either branch) in its function (or
        inside `within`, a loop of it)."""
        for parent in self.scopes.ancestors(node):
            if isinstance(parent, ScopeNode) or parent is within:
                return False
            if isinstance(parent, (cst.If, cst.IfExp)):
                return True
        return False

    def under_flag(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs only under a condition (`if args.debug:`, `x if flag else y`).

        `if __name__ == "__main__":` is not a flag: it runs whenever the script does.
        """
        for parent, child in self.scopes.ancestors_with_child(node):
            if isinstance(parent, ScopeNode):
                return False
            if isinstance(parent, cst.IfExp) and child is not parent.test:
                return True
            if isinstance(parent, cst.If) and child is not parent.test:
                return not (child is parent.body and is_main_test(parent.test))
        return False

    def debug_only(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs only in a debugging, sanity-checking or profiling mode: the
        body of `if args.debug:`, `if self.debug_mode and ...:`, `if not
        config.ignore_sanity_checks:` or `if self.train_profile and ...:` (a `--profile`
        run that synchronizes to time each part). A user who turns such a mode on trades
        speed for checks or measurements on purpose."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if type(parent) is cst.If and child is parent.body and any(
                _turns_on_debugging(operand) for operand in conjuncts(parent.test)
            ):
                return True
        return False

    def under_opt_in(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs only under `if flag:` where `flag` is a parameter of its function
        that defaults to `False` (`def __call__(..., clear_cache=False)`), or a setting of the
        run's configuration (`if self.args.enable_sleep_mode:`,
        `if args.empty_unused_memory_level >= 1:`): its callers, or its users, opt in, trading
        speed for something else on purpose."""
        function = self.scopes.enclosing_function(node)
        if function is None:
            return False
        opt_ins = {
            param.name.value
            for param in (*function.params.params, *function.params.kwonly_params)
            if param.default is not None and literal_value(param.default) is False
        }
        for parent, child in self.scopes.ancestors_with_child(node):
            if isinstance(parent, ScopeNode):
                return False
            if isinstance(parent, cst.If) and child is parent.body and (
                _names_one_of(parent.test, opt_ins) or _tests_a_setting(parent.test)
            ):
                return True
        return False

    def setting_tests(self, node: cst.CSTNode) -> list[list]:
        """The tests of the run's settings (`setting_test`) that `node` must pass to run, in
        its function: an operand of the `and` of an `if` (or conditional expression) whose
        body holds it, the left operand of an `and` whose right operand holds it (negated
        for an `or`), the negation of the test of one whose `else` holds it (`get_grad_norm`
        in the `else` of `if config.TRAIN.CLIP_GRAD:`) or of an early exit before it (`if
        args.qa_mask != 1: continue`). Asked of most nodes the steps are asked about: kept
        per node on the way up, which the nodes of a block share."""
        if self.scopes.enclosing_function(node) not in self._testing_settings:
            return []
        path: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        tests: list[list] = []
        for parent, child in self.scopes.ancestors_with_child(node):
            known = self._setting_tests.get(child)
            if known is not None:
                tests = known
                break
            if type(parent) in SCOPE_TYPES:
                break
            path.append((parent, child))
        for parent, child in reversed(path):
            tests = [*self._setting_tests_at(parent, child), *tests]
            self._setting_tests[child] = tests
        return tests

    @cached_property
    def _testing_settings(self) -> frozenset[cst.FunctionDef | None]:
        """The functions (None: module code) with an `if` or a conditional expression that
        tests a setting (`setting_test`), the only ones `setting_tests` has to look in."""
        return frozenset(
            self.scopes.enclosing_function(condition)
            for condition in self.index.conditions
            if type(condition) in (cst.If, cst.IfExp)
            and any(setting_test(operand) for operand in conjuncts(condition.test))
        )

    def _setting_tests_at(self, parent: cst.CSTNode, child: cst.CSTNode) -> list[list]:
        """The tests of settings that `parent` puts on running its `child`."""
        tests = []
        statements = statements_of(parent)
        if statements and child in statements:  # after `if args.qa_mask != 1: continue`
            tests.extend(
                test
                for earlier in statements[: statements.index(child)]
                if type(earlier) is cst.If and _only_exits(earlier.body)
                and (test := setting_test(earlier.test, expected=False)) is not None
            )
        if type(parent) is cst.BooleanOperation and child is parent.right:
            # `if self.cfg.kl_threshold and kl > self.cfg.kl_threshold:`: the right operand
            # runs only when the left one passes (`and`) or fails (`or`).
            if type(parent.operator) is cst.And:
                tests.extend(filter(None, map(setting_test, conjuncts(parent.left))))
            else:
                tests.extend(filter(None, [setting_test(parent.left, expected=False)]))
            return tests
        if type(parent) not in (cst.If, cst.IfExp) or child is parent.test:
            return tests
        if child is parent.body:
            tests.extend(filter(None, map(setting_test, conjuncts(parent.test))))
        else:
            tests.extend(filter(None, [setting_test(parent.test, expected=False)]))
        return tests

    def cpu_branch(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs only in the branch of a device dispatch taken for the CPU: the
        body of `if device_type == "cpu":` (or `elif device.type == "cpu":`, `if device.type !=
        "cuda":`) in its function, or the `else` of `if device.type == "cuda":` (or of `if
        torch.cuda.is_available():`). Work there runs synchronously on the host."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if type(parent) is not cst.If:
                continue
            if child is parent.body and any(
                self._device_tested(operand) == "cpu" for operand in conjuncts(parent.test)
            ):
                return True
            if child is parent.orelse and self._device_tested(parent.test) == "cuda":
                return True
        return False

    def runs_on_every_iteration(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """Whether `node`, in the body of `loop`, runs on each of its iterations of a usual
        run: no `if` (or conditional expression) between them on a setting, a name or an
        attribute that a run may switch either way (`if not args.prefetcher:`); a test for
        the GPU (`if args.cuda:`) is passed by the runs that matter, and a test of a value
        (`if t is not None`, `if cfg.MODE != FFCV`) is taken to hold on the usual path."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if parent is loop or type(parent) in SCOPE_TYPES:
                return True
            if type(parent) in (cst.If, cst.IfExp) and child is not parent.test:
                setting = switch_tested(parent.test)
                if setting is not None and not any(word in setting.lower() for word in ("cuda", "gpu")):
                    return False
        return True

    def _device_tested(self, test: cst.BaseExpression, depth: int = 0) -> str | None:
        """"cpu" or "cuda": the device `test` is true for (`device.type == "cuda"`,
        `device_type != "cpu"`, `torch.cuda.is_available()`, `device.startswith("cuda")`,
        `not` of one, an `and` of tests for one device, or a name bound only to such tests:
        `use_cuda_events = device.startswith("cuda") and torch.cuda.is_available()`), else
        None."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            device = self._device_tested(test.expression, depth)
            return {"cpu": "cuda", "cuda": "cpu"}.get(device or "")
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            devices = {self._device_tested(operand, depth) for operand in conjuncts(test)}
            return devices.pop() if len(devices) == 1 else None
        if isinstance(test, cst.Name) and depth < _NAME_DEPTH:
            values = self.scopes.bound_values(test)
            devices = {self._device_tested(value, depth + 1) for value in values}
            return devices.pop() if values and len(devices) == 1 else None
        if isinstance(test, cst.Call):
            if isinstance(test.func, cst.Attribute) and test.func.attr.value == "startswith":
                prefix = literal_value(test.args[0].value) if len(test.args) == 1 else None
                return prefix if prefix in ("cpu", "cuda") else None
            available = self.names.call_name(test) == "torch.cuda.is_available"
            return "cuda" if available else None
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return None
        operator = test.comparisons[0].operator
        if not isinstance(operator, (cst.Equal, cst.NotEqual)):
            return None
        literals = {literal_value(test.left), literal_value(test.comparisons[0].comparator)}
        device = next((name for name in ("cpu", "cuda") if name in literals), None)
        if device is None or isinstance(operator, cst.Equal):
            return device
        return "cuda" if device == "cpu" else "cpu"

    def initializes_once(self, node: cst.CSTNode) -> bool:
        """Whether `node` sits in a lazy initialisation of an attribute or a module global
        (`_initialized_once` of `self.x`, or of `X` that its function declares `global` or
        only reads): a call runs it the first time only; also after a builder's early
        return while the cache is built (`_after_built_cache_exit`). A local name (`if mask
        is None: mask = ...`, a parameter's default) is bound again on every call."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                return type(parent) is cst.FunctionDef and self._after_built_cache_exit(parent, node)
            if type(parent) is cst.If and child is parent.body:
                initialized = self._initialized_once(parent)
                if initialized is not None and (
                    initialized.startswith("self.") or self._module_global(initialized, parent)
                ):
                    return True
        return False

    def _after_built_cache_exit(self, function: cst.FunctionDef, node: cst.CSTNode) -> bool:
        """`node` follows, in `function`'s body, an early return while `self.x` is built and
        large enough, and the function then builds `self.x`: `if self.cos_cached is not None
        and x.shape[0] <= self.cos_cached.shape[0]: return` (Matcha-TTS' rotary
        `_build_cache`): the rest runs the first time and when an input outgrows the cache."""
        statements = statements_of(function.body)
        for position, statement in enumerate(statements):
            cache = _built_cache_exit(statement)
            if cache is None:
                continue
            later = statements[position + 1:]
            return any(self.index.contains(after, node) for after in later) and any(
                _sets(found, cache) for after in later for found in (after, *descendants(after))
            )
        return False

    def _module_global(self, name: str, node: cst.CSTNode) -> bool:
        """`name`, read at `node`, is a global of the module: its function declares it
        `global`, or does not bind it while the module's code does."""
        function = self.scopes.enclosing_function(node)
        if function is None or _declares_global(function, name):
            return True
        return not self.scopes.binds(function, name) and self.scopes.binds(None, name)

    def _initialized_once(self, branch: cst.If) -> str | None:
        """`x`, for `if x is None:` whose body assigns `x`, directly or in a method of the class it
        calls on `self` (`if self.engine is None: self._load_engine()`): after the first time
        it never runs again. Also with other conditions: `and` any, `or` tests of `x` only
        (`if self.buf is None or self.buf.size(0) != n:`, a cache rebuilt when the shape
        changes). And the test of a capacity, `if seq_len > self.max_seq_len_cached:`,
        whose body grows it: it runs when an input is longer than every one before. And a
        latch, `if not self.initialized:` whose body sets it (`self.initialized = True`, or
        `self.initialized.fill_(1)` for a buffer): a data-dependent initialisation on the
        first call. And a cache filled per key, `if i not in self.sr_u:` whose body stores
        `self.sr_u[i]`: it runs once for each key."""
        cache = _key_absence_tested(branch.test)
        if cache is not None:
            stored = any(
                type(node) is cst.AssignTarget
                and type(node.target) is cst.Subscript
                and dotted_name(node.target.value) == cache
                for node in descendants(branch.body)
            )
            return cache if stored else None
        name = _none_tested(branch.test) or _capacity_tested(branch.test) or _latch_tested(branch.test)
        if name is None:
            return None
        if any(_sets(node, name) for node in descendants(branch.body)):
            return name
        if "." not in name:
            return name if self._global_assigned_by_call(name, branch.body) else None
        cls = self.scopes.enclosing_class(branch) if name.startswith("self.") else None
        if cls is None:
            return None
        called = {
            node.func.attr.value
            for node in descendants(branch.body)
            if type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and dotted_name(node.func.value) == "self"
        }
        assigned = any(
            _sets(node, name) for method in methods_of(cls, called) for node in descendants(method.body)
        )
        return name if assigned else None

    def _global_assigned_by_call(self, name: str, body: cst.CSTNode) -> bool:
        """`body` calls a function of the module (`load_sru_mod()`) that declares `global
        name` and assigns it."""
        called = {
            node.func.value
            for node in descendants(body)
            if type(node) is cst.Call and type(node.func) is cst.Name
        }
        return any(
            function.name.value in called
            and self.scopes.enclosing_function(function) is None
            and self.scopes.enclosing_class(function) is None
            and _declares_global(function, name)
            and self.scopes.binds(function, name)
            for function in self.index.functions
        )

    def off_default_option(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs only when its object was built with a switch turned away from
        its default: `if self.batch_eval: ... else: node` in a class whose `__init__(self,
        ..., batch_eval=True)` stores `self.batch_eval = batch_eval` and nothing else assigns
        it (or the body of `if self.flag:` for a switch that defaults to `False`, or of `elif
        self.graph_pooling == "attention":` for an option that defaults to `"mean"`).
        Instances built with the defaults never run it."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) is cst.ClassDef:
                return False
            if type(parent) is not cst.If or child is parent.test:
                continue
            test, negated = parent.test, False
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, negated = test.expression, True
            default = self._constructor_default(test)
            if type(test) is cst.Comparison and len(test.comparisons) == 1:
                # `elif self.graph_pooling == "attention":` with `graph_pooling="mean"`
                held = self._constructor_literal(test.left)
                if held is not UNKNOWN:  # only then build a test of it to evaluate
                    tested = _value_with(test.with_changes(left=cst.Name("held")), "held", held)
                    default = tested if isinstance(tested, bool) else default
            given = none_compared(test)  # `self.remap is not None`: whether it was given
            if given is not None:
                attribute, negated = given[0], negated != (not given[1])
                if self._constructor_literal(attribute) is None:
                    default = False  # built without it, `self.remap` is None
            runs_when = (child is parent.body) != negated  # the value of `self.<attr>` it needs
            if default is not None and runs_when != default:
                return True
        return False

    def off_default_argument(self, node: cst.CSTNode, within: cst.CSTNode) -> bool:
        """Whether `node`, below `within`, runs only when a parameter of its function is
        given a value other than its literal default: the body of `if opt == "Adam":` (or
        the `else` of `if opt == "LBFGS":`) in `def fit(self, ..., opt="LBFGS")`, which never
        rebinds `opt`."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if parent is within or type(parent) in SCOPE_TYPES:
                return False
            if type(parent) is not cst.If or child is parent.test:
                continue
            test = parent.test
            if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
                continue
            if type(test.left) is not cst.Name or not self.scopes.holds_argument(test.left):
                continue
            param = parameter_named(self.scopes.enclosing_function(test), test.left.value)
            if param is None or param.default is None:
                continue
            held = _value_with(test, test.left.value, literal_value(param.default))
            if isinstance(held, bool) and held != (child is parent.body):
                return True
        return False

    def for_empty_input(self, node: cst.CSTNode) -> bool:
        """Whether `node` is in the body of an `if` for an input with nothing in it, or
        almost nothing: a size compared with 0 (`if len(targets) == 0:`, `if x.numel() ==
        0:`, `if boxes.shape[0] == 0:`, `if num_insts == 0:`, `if self.n_max_boxes == 0:`,
        `if not len(boxes):`) or kept below a literal of at most 3 (`if idx.shape[0] < 3:`):
        a degenerate batch, a fallback the usual step does not take."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if type(parent) is cst.If and child is parent.body and _tests_for_empty(parent.test):
                return True
        return False

    def never_enabled(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs only when a switch that nothing turns on is on: the body of
        `if self.gradient_checkpointing and self.training:` in a class that sets
        `self.gradient_checkpointing = False` (or `None`, `0`) and nothing else, where no code
        of the program that may run sets that attribute to another value (a model copied
        from a library, whose `enable` method nothing calls). Linted alone, a file's
        switches may be turned on elsewhere."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if type(parent) is cst.If and child is parent.body and any(
                self._off_switch(operand) for operand in conjuncts(parent.test)
            ):
                return True
        return False

    def _off_switch(self, test: cst.BaseExpression) -> bool:
        """`self.<attr>`, set only to off values in its class and turned on nowhere, or
        stored from a parameter of its `__init__`, off by default, that no code of the
        project builds the class with turned on (`self.with_cp = with_cp` with
        `with_cp=False`, `ProgramAnswers.never_built_with`), also by a project base class
        its own class does not override (`ProgramAnswers.inherits_switch`, and no stored
        switch of that name may be on: `switched_on`); or a library's checkpointing
        switch (`LIBRARY_SWITCHES`) that the file does not set, on a model
        (`self.model.transformer.grad_checkpointing` of an open_clip model; not on the run's
        settings: `args.gradient_checkpointing`, `self.config.grad_checkpointing`), where the
        project neither sets it nor names a method that turns it on."""
        if not isinstance(test, cst.Attribute):
            return False
        attribute = test.attr.value
        owner = dotted_name(test.value)
        if owner is None:
            return False
        cls = self.scopes.enclosing_class(test)
        values = [
            value for value in self.scopes.bound_values(test)
            if self.scopes.enclosing_class(value) is cls
        ] if owner == "self" else []
        if (
            not values
            and owner == "self"
            and cls is not None
            and self.project_inherits_switch(cls, attribute)  # a base class's constructor switch
        ):
            return not self.project_switches_on(attribute)
        if not values:
            return (
                attribute in LIBRARY_SWITCHES
                and not any(part.lower().endswith(_SETTINGS_SUFFIXES) for part in owner.split("."))
                and not self.project_switches_on(attribute)
            )
        if attribute in _TRAINING_FLAGS or self.project_switches_on(attribute):
            return False  # `nn.Module.train()` sets `training`
        if all(literal_value(value) in OFF_VALUES for value in values):
            return True
        stored = self.stored_switch(test)
        return stored is not None and self.project_never_builds_with(*stored)

    def stored_switch(self, attribute: cst.BaseExpression) -> tuple[cst.FunctionDef, str] | None:
        """(`__init__`, the parameter) when `self.<attr>` is a switch its constructor stores
        from a parameter off by default, and that stays off whenever the parameter is: left
        out, or passed `False`, `None` or `0` (`self.with_cp = with_cp`, `self.use_bn =
        bool(norm)`; not `self.use_ema = ema_decay is not None`, which `False` turns on)."""
        switch = self.constructor_switch(attribute)
        if switch is None:
            return None
        param, value = switch
        name = param.name.value
        init = self.scopes.enclosing_function(value)
        default = literal_value(param.default)
        if init is None or default not in OFF_VALUES:
            return None
        for off in (default, *OFF_VALUES):
            held = _value_with(value, name, off)
            if held is UNKNOWN or held:
                return None
        return init, name

    def predicate_guards(self, node: cst.CSTNode) -> list[str]:
        """The names of the calls whose result decides whether `node` runs, in its function:
        the test of an `if` whose body holds it (`if step_check(step, n):`, also as an
        operand of an `and`, or through a name bound to the call: `log = should_log(step);
        if log:`), and the `not name(...)` test of an early exit before it in an enclosing
        block (`if not self.metrics.should_log(self.step): return`). When such a function
        returns a periodic test of its argument (`ProgramAnswers.periodic_predicate`),
        `node` runs on few steps."""
        names: list[str] = []
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                break
            if type(parent) is cst.If and child is parent.body:
                for operand in conjuncts(parent.test):
                    names.extend(self._called_names(operand))
            statements = statements_of(parent)
            if child in statements:
                for earlier in statements[: statements.index(child)]:
                    if (
                        type(earlier) is cst.If
                        and _only_exits(earlier.body)
                        and isinstance(earlier.test, cst.UnaryOperation)
                        and isinstance(earlier.test.operator, cst.Not)
                    ):
                        names.extend(self._called_names(earlier.test.expression))
        return names

    def _called_names(self, test: cst.BaseExpression) -> list[str]:
        """`name` for a test `name(...)` or `obj.name(...)`, or for a name bound to one."""
        values = self.scopes.bound_values(test) if isinstance(test, cst.Name) else [test]
        return [
            name for value in values
            if isinstance(value, cst.Call) and (name := last_identifier(value.func)) is not None
        ]

    def required_parameters(self, node: cst.CSTNode) -> list[str]:
        """The parameters of `node`'s function, `None` or `False` by default or with no
        default, that a caller must pass, and not as `None` or `False`, for `node` to run:
        `node` is in the body of `if normals is not None:` (or `if normals:`, `if init is
        True:`, also as an operand of an `and`) or in the `else` of `if normals is None:` (or
        `if not normals:`), where `def chamfer(x, y, normals=None)`, or `def
        compute_loss(labels, output, validation_dataset)` that a training step calls with
        `None`."""
        return [name for name, given in self._parameter_tests(node) if given]

    def omitted_parameters(self, node: cst.CSTNode) -> list[str]:
        """The parameters of `node`'s function, `None` or `False` by default, that a caller
        must leave out for `node` to run: the body of `if x_mask is None:` (or `if not
        x_mask:`), or the `else` of `if x_mask is not None:`, a fallback for callers that
        pass none."""
        return [name for name, given in self._parameter_tests(node) if not given]

    def parameters_left_on(self, node: cst.CSTNode) -> list[str]:
        """The parameters of `node`'s function, `True` by default, that a caller must not
        pass as `None` or `False` for `node` to run: the `else` of `if not infer: return
        self.p_losses(...)` in `def forward(self, condition, gt_spec=None, infer=True)`,
        whose sampling a training step's `infer=False` never runs (so-vits-svc's diffusion
        decoder)."""
        function = self.scopes.enclosing_function(node)
        if function is None:
            return []
        on = {
            param.name.value
            for param in (*function.params.params, *function.params.kwonly_params)
            if param.default is not None and literal_value(param.default) is True
        }
        found: list[str] = []
        for name, given in self._tested_parameters(node, function):
            if given and name in on and name not in found:
                found.append(name)
        return found

    def _parameter_tests(self, node: cst.CSTNode) -> list[tuple[str, bool]]:
        """(parameter, whether it must be given) for each optional parameter of `node`'s
        function that an `if` (or a conditional expression: `x.item() if dim is None else
        x`) around `node` tests for presence or absence."""
        function = self.scopes.enclosing_function(node)
        if function is None:
            return []
        parameters = (*function.params.params, *function.params.kwonly_params)
        optional = {
            param.name.value
            for param in parameters
            if param.default is not None and literal_value(param.default) in (None, False)
        }
        # A parameter with no default may be passed `None` or `False`: tested for presence,
        # it must be given a value (`if validation_dataset:`); no caller can leave it out.
        without_default = {param.name.value for param in parameters if param.default is None}
        tests: list[tuple[str, bool]] = []
        for name, given in self._tested_parameters(node, function):
            if (name in optional or given and name in without_default) and (name, given) not in tests:
                tests.append((name, given))
        return tests

    def _tested_parameters(
        self, node: cst.CSTNode, function: cst.FunctionDef
    ) -> Iterator[tuple[str | None, bool]]:
        """(name, whether it must be given or true) for each name that an `if` (or a
        conditional expression) around `node`, in `function`, tests for presence or truth."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if parent is function:
                break
            if type(parent) is not cst.If and type(parent) is not cst.IfExp:
                continue
            if child is parent.body:
                operands = conjuncts(parent.test)
                yield from ((_presence_tested(test) or _true_tested(test), True) for test in operands)
                yield from ((_absence_tested(test), False) for test in operands)
            elif child is parent.orelse:
                yield _absence_tested(parent.test), True
                yield _presence_tested(parent.test), False

    def switch_default(self, switch: cst.BaseExpression) -> bool | None:
        """Whether a switch an `if` tests is on when its function or object is built with
        the defaults, or None when the module does not say: `self.<attr>` stored from an
        `__init__` parameter with a `True`/`False` default, or a parameter of the enclosing
        function that it never rebinds, by its literal default (`use_bn=False`, `norm=None`)
        or, without one, by what every call of the function in the module passes, a literal
        or a setting read with a literal default (`use_batchnorm=config.get("use_batchnorm",
        False)` in a `from_config` that builds `cls(...)`)."""
        if isinstance(switch, cst.Attribute):
            return self._constructor_default(switch)
        if not isinstance(switch, cst.Name):
            return None
        if not self.scopes.holds_argument(switch):
            return None
        function = self.scopes.enclosing_function(switch)
        param = parameter_named(function, switch.value)
        if param is not None and param.default is not None:
            return _truth_of_literal(param.default)
        passed = [
            bound_argument(call, switch.value, positional_parameters(function))
            for call in self.scopes.calls_of(function, self.index.calls)
        ]
        values = {
            _truth_of_literal(_setting_default(arg.value)) if isinstance(arg, cst.Arg) else None
            for arg in passed
        }
        return values.pop() if len(values) == 1 else None

    def _constructor_default(self, test: cst.BaseExpression) -> bool | None:
        """The `True`/`False` default of the `__init__` parameter that `self.<attr>` is only
        ever assigned from, or None."""
        default = self._constructor_literal(test)
        return default if isinstance(default, bool) else None

    def _constructor_literal(self, test: cst.BaseExpression) -> object:
        """What `self.<attr>` holds in an object built with the defaults, when it is only
        ever assigned, in `__init__`, one parameter's value or a test of it: the literal
        default (`True`, `None`, ...) of `self.remap = remap`, or the test's result with it
        (`False` for `self.use_ema = ema_decay is not None` with `ema_decay=None`, see
        `_value_with`); `UNKNOWN` when there is none."""
        switch = self.constructor_switch(test)
        if switch is None:
            return UNKNOWN
        param, value = switch
        return _value_with(value, param.name.value, literal_value(param.default))

    def constructor_switch(
        self, test: cst.BaseExpression
    ) -> tuple[cst.Param, cst.BaseExpression] | None:
        """(the `__init__` parameter, the value assigned) when `self.<attr>` is only ever
        assigned, in its class's `__init__`, a value computed from one parameter of it that
        has a default and nothing else of the function: `self.with_cp = with_cp`,
        `self.use_ema = ema_decay is not None`."""
        if not isinstance(test, cst.Attribute) or not isinstance(test.value, cst.Name):
            return None
        if test.value.value != "self":
            return None
        cls = self.scopes.enclosing_class(test)
        values = [
            value for value in self.scopes.bound_values(test)
            if self.scopes.enclosing_class(value) is cls
        ]
        if len(values) != 1:
            return None
        init = self.scopes.enclosing_function(values[0])
        if init is None or init.name.value != "__init__":
            return None
        read = {
            node.value for node in (values[0], *descendants(values[0]))
            if type(node) is cst.Name and self.scopes.is_parameter(node.value, init)
        }
        if len(read) != 1:
            return None
        name = read.pop()
        for param in (*init.params.params, *init.params.kwonly_params):
            if param.name.value == name and param.default is not None:
                return param, values[0]
        return None

    def evaluation_only(self, node: cst.CSTNode) -> bool:
        """Whether `node` sits in a branch of its function that runs only when not training
        (`if stage != sb.Stage.TRAIN:`, `if not self.training:`, see `is_evaluation_branch`):
        a step function shared by training and evaluation runs it on evaluation steps only."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if type(parent) is cst.If and is_evaluation_branch(parent, child):
                return True
        return False

    def under_main_guard(self, node: cst.CSTNode) -> bool:
        """Inside `if __name__ == "__main__":`, where spawned workers do not re-run it."""
        return under_main_guard(self.scopes, node)

    def in_compatibility_shim(self, node: cst.CSTNode) -> bool:
        """Inside an `except` that catches a missing API (`ImportError`, `AttributeError`,
        `TypeError`) or the `try` it guards (also a bare `except:` that defines the same name
        again, `_falls_back`), or under an `if`/conditional expression that
        tests the PyTorch version or `hasattr`: code that picks an API for old releases."""
        for parent, child in self.scopes.ancestors_with_child(node):
            kind = type(parent)
            if kind is cst.ExceptHandler:
                shim = child is parent.body and _catches_compatibility_error(parent)
            elif kind is cst.Try:
                shim = child is parent.body and any(
                    handler.type is not None and _catches_compatibility_error(handler)
                    or _falls_back(parent, handler)
                    for handler in parent.handlers
                )
            elif kind is cst.If or kind is cst.IfExp:
                test = cst.Module(body=[]).code_for_node(parent.test)
                shim = child is not parent.test and bool(_VERSION_TEST.search(test))
            else:
                shim = False
            if shim:
                return True
        return False

    def is_grad_disabling(self, expression: cst.BaseExpression) -> bool:
        """`torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`, or
        the project's own wrapper of one of them (`@smart_inference_mode()`)."""
        if isinstance(expression, cst.Call):
            name = self.names.call_name(expression)
            if name in _GRAD_DISABLING:
                return True
            if name == "torch.set_grad_enabled" and expression.args:
                value = expression.args[0].value
                return isinstance(value, cst.Name) and value.value == "False"
        elif self.names.qualified_name(expression) in _GRAD_DISABLING:
            return True
        return self.project_disables_grad(expression)

    def may_disable_grad(self, expression: cst.BaseExpression) -> bool:
        """`is_grad_disabling`, or a grad mode only known at run time:
        `torch.set_grad_enabled(<expression>)`, `ctx if c else torch.no_grad()`, or a name
        bound to a grad-disabling context manager (`ctx = torch.no_grad()`)."""
        if self.is_grad_disabling(expression):
            return True
        if (
            isinstance(expression, cst.Call)
            and expression.args
            and self.names.call_name(expression) == "torch.set_grad_enabled"
        ):
            value = expression.args[0].value
            return not (isinstance(value, cst.Name) and value.value == "True")
        if isinstance(expression, cst.IfExp):
            return self.may_disable_grad(expression.body) or self.may_disable_grad(expression.orelse)
        if isinstance(expression, (cst.Name, cst.Attribute)):
            return any(
                isinstance(value, (cst.Call, cst.IfExp)) and self.may_disable_grad(value)
                for value in self.scopes.bound_values(expression)
            )
        return False

    def decorated_grad_disabled(self, function: cst.FunctionDef) -> bool:
        return any(self.is_grad_disabling(d.decorator) for d in function.decorators)

    def grad_disabled(self, node: cst.CSTNode) -> bool:
        """Under `with torch.no_grad():` in the same function, or in a `@torch.no_grad()` def,
        or after a statement `torch.set_grad_enabled(False)` before it in its function that
        no `torch.set_grad_enabled(True)` follows (a dev loop after `model.eval();
        torch.set_grad_enabled(False)`)."""
        return self._under_grad_mode(node, self.is_grad_disabling)

    def grad_maybe_disabled(self, node: cst.CSTNode) -> bool:
        """`grad_disabled`, also counting grad modes only known at run time (`may_disable_grad`)."""
        return self._under_grad_mode(node, self.may_disable_grad)

    def _under_grad_mode(
        self, node: cst.CSTNode, disables: Callable[[cst.BaseExpression], bool]
    ) -> bool:
        in_own_function = True
        for parent, child in self.scopes.ancestors_with_child(node):
            kind = type(parent)
            if kind is cst.FunctionDef:
                if any(disables(d.decorator) for d in parent.decorators):
                    return True
                in_own_function = False
            elif kind is cst.Lambda or kind is cst.ClassDef:
                in_own_function = False
            elif not in_own_function:
                continue
            elif kind is cst.With and any(disables(item.item) for item in parent.items):
                return True
            else:
                switch = _last_grad_switch(parent, child)
                if switch is not None:  # the nearest switch before the node decides
                    return disables(switch)
        return False


# The calls that switch autograd on or off from the statement on (not as a `with` item).
_GRAD_SWITCHES = frozenset({"set_grad_enabled"})


def _last_grad_switch(block: cst.CSTNode, child: cst.CSTNode) -> cst.Call | None:
    """The last statement `torch.set_grad_enabled(...)` among the statements of `block`
    before `child`, or None."""
    statements = statements_of(block)
    if child not in statements:
        return None
    for statement in reversed(statements[: statements.index(child)]):
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in reversed(statement.body):
            value = small.value if type(small) is cst.Expr else None
            if type(value) is cst.Call and last_identifier(value.func) in _GRAD_SWITCHES:
                return value
    return None


def is_evaluation_branch(branch: cst.If, child: cst.CSTNode) -> bool:
    """Whether `child` of `branch` runs only when not training, by its test's own words: the
    body of `if stage != Stage.TRAIN:`, `if mode == "val":`, `if not self.training:`, or the
    `else` of `if stage == Stage.TRAIN:` / `if self.training:` / `if mode != "test":`, and the body of `if
    opt.test:` / `if args.eval_only:`, a setting for a run that evaluates instead of
    training."""
    if child is branch.body:
        return _tests_not_training(branch.test)
    return child is branch.orelse and (
        _tests_training(branch.test) or _excludes_an_evaluation_stage(branch.test)
    )


def _excludes_an_evaluation_stage(test: cst.BaseExpression) -> bool:
    """`mode != "test"`: its `else` runs for that evaluation stage only (CRSLab's shared
    `step(batch, stage, mode)`)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    comparison = test.comparisons[0]
    return isinstance(comparison.operator, cst.NotEqual) and _stage(comparison.comparator) == "eval"


def _tests_training(test: cst.BaseExpression) -> bool:
    """`self.training`, `stage == Stage.TRAIN`, `mode == "train"`, `is_train`."""
    if isinstance(test, (cst.Name, cst.Attribute)):
        return (last_identifier(test) or "").lower() in _TRAINING_FLAGS
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        return isinstance(comparison.operator, cst.Equal) and _stage(comparison.comparator) == "train"
    return False


def _tests_not_training(test: cst.BaseExpression) -> bool:
    """`not self.training`, `stage != Stage.TRAIN`, `stage == Stage.VALID`, `mode == "test"`,
    and a setting that asks for an evaluation run (`opt.test`, `args.eval_only`: a run that
    tests a checkpoint instead of training)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _tests_training(test.expression)
    if isinstance(test, cst.Attribute) and _tests_a_setting(test):
        mode = test.attr.value.lower().removesuffix("_only")
        return mode in _EVALUATION_STAGES or mode == "evaluate"
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        stage = _stage(comparison.comparator)
        if isinstance(comparison.operator, cst.NotEqual):
            return stage == "train"
        return isinstance(comparison.operator, cst.Equal) and stage == "eval"
    return False


def _stage(expression: cst.BaseExpression) -> str | None:
    """"train" or "eval" for a constant that names a stage: `Stage.TRAIN`, `"valid"`."""
    if isinstance(expression, cst.SimpleString) and isinstance(expression.evaluated_value, str):
        word = expression.evaluated_value
    elif isinstance(expression, cst.Attribute):
        word = expression.attr.value
    else:
        return None
    word = word.lower()
    if word in ("train", "training", "fit"):
        return "train"
    return "eval" if word in _EVALUATION_STAGES else None


def under_main_guard(scopes: Scopes, node: cst.CSTNode) -> bool:
    """Inside the module's `if __name__ == "__main__":` block."""
    return any(
        type(parent) is cst.If and child is parent.body and is_main_test(parent.test)
        for parent, child in scopes.ancestors_with_child(node)
    )


def is_main_test(test: cst.BaseExpression) -> bool:
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    has_name = any(isinstance(side, cst.Name) and side.value == "__name__" for side in sides)
    has_main = any(
        isinstance(side, cst.SimpleString) and side.evaluated_value == "__main__" for side in sides
    )
    return has_name and has_main and isinstance(test.comparisons[0].operator, cst.Equal)


def caught_errors(handler: cst.ExceptHandler) -> list[cst.BaseExpression]:
    """The exception types `handler` names: `RuntimeError`, both of `(KeyError, ValueError)`;
    none for a bare `except:`."""
    if handler.type is None:
        return []
    if isinstance(handler.type, cst.Tuple):
        return [element.value for element in handler.type.elements]
    return [handler.type]


def _falls_back(statement: cst.Try, handler: cst.ExceptHandler) -> bool:
    """A bare `except:` that defines again a name the `try` defines: a fallback for releases
    without the API (FlowFormer's `try: autocast = torch.cuda.amp.autocast` / `except: class
    autocast: ...`). A bare `except:` around other code is no shim."""
    return handler.type is None and bool(_names_defined(statement.body) & _names_defined(handler.body))


def _names_defined(block: cst.BaseSuite) -> set[str]:
    """The names a block's own statements bind: assigned, imported, or defined by `def` and
    `class`."""
    names: set[str] = set()
    for statement in statements_of(block):
        if isinstance(statement, (cst.ClassDef, cst.FunctionDef)):
            names.add(statement.name.value)
            continue
        for small in statement.body if type(statement) is cst.SimpleStatementLine else ():
            if type(small) is cst.Assign:
                names.update(name for target in small.targets for name in target_names(target.target))
            elif type(small) in (cst.Import, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    bound = dotted_name(alias.asname.name if alias.asname else alias.name) or ""
                    names.add(bound if alias.asname else bound.split(".")[0])  # `import a.b` binds `a`
    return names - {""}


def _catches_compatibility_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    return any(last_identifier(error) in _COMPATIBILITY_ERRORS for error in caught_errors(handler))


def loop_counter(loop: cst.For | cst.While, attributes: bool = False) -> str | None:
    """The name that counts a loop's iterations: `i` in `for i in range(n)` and in
    `for i, batch in enumerate(loader)` (with `attributes`, also `self.step` in `for
    self.step in range(n)`); None for other loops."""
    if not isinstance(loop, cst.For):
        return None
    return iteration_counter(loop.target, loop.iter, attributes)


def iteration_counter(
    target: cst.BaseExpression, iterated: cst.BaseExpression, attributes: bool = False
) -> str | None:
    """`loop_counter` of a `for target in iterated` loop or comprehension clause."""
    if not isinstance(iterated, cst.Call):
        return None
    function = iterated.func
    called = function.value if isinstance(function, cst.Name) else None
    if called == "enumerate" and isinstance(target, (cst.Tuple, cst.List)) and target.elements:
        target = target.elements[0].value
    elif called != "range":
        return None
    if attributes and isinstance(target, cst.Attribute):
        return dotted_name(target)
    return target.value if isinstance(target, cst.Name) else None


# The comparisons `_value_with` evaluates.
_COMPARISONS: dict[type, Callable[[object, object], object]] = {
    cst.Is: lambda a, b: a is b,
    cst.IsNot: lambda a, b: a is not b,
    cst.Equal: lambda a, b: a == b,
    cst.NotEqual: lambda a, b: a != b,
    cst.LessThan: lambda a, b: a < b,
    cst.LessThanEqual: lambda a, b: a <= b,
    cst.GreaterThan: lambda a, b: a > b,
    cst.GreaterThanEqual: lambda a, b: a >= b,
}


def _value_with(expression: cst.BaseExpression, name: str, value: object) -> object:
    """What `expression` gives when the name `name` holds `value` (a literal): the name
    itself, `bool(name)`, `not` of one of these, or a comparison of the name with a literal
    (`name is not None`, `name > 0`); `UNKNOWN` for anything else, or when `value` is."""
    if value is UNKNOWN:
        return UNKNOWN
    if type(expression) is cst.Name and expression.value == name:
        return value
    if (
        type(expression) is cst.Call
        and dotted_name(expression.func) == "bool"
        and len(expression.args) == 1
        and not expression.args[0].keyword
        and not expression.args[0].star
    ):
        inner = _value_with(expression.args[0].value, name, value)
        return UNKNOWN if inner is UNKNOWN else bool(inner)
    if type(expression) is cst.UnaryOperation and type(expression.operator) is cst.Not:
        inner = _value_with(expression.expression, name, value)
        return UNKNOWN if inner is UNKNOWN else not inner
    if type(expression) is cst.Comparison and len(expression.comparisons) == 1:
        comparison = expression.comparisons[0]
        compare = _COMPARISONS.get(type(comparison.operator))
        other = literal_value(comparison.comparator)
        if (
            compare is None
            or other is UNKNOWN
            or type(expression.left) is not cst.Name
            or expression.left.value != name
        ):
            return UNKNOWN
        try:
            return compare(value, other)
        except TypeError:  # `None > 0`
            return UNKNOWN
    return UNKNOWN


def _declares_global(function: cst.FunctionDef, name: str) -> bool:
    """`function` declares `global name` in its own body."""
    return any(
        type(node) is cst.Global and any(item.name.value == name for item in node.names)
        for node in descendants_in_scope(function.body)
    )


def _none_tested(test: cst.BaseExpression) -> str | None:
    """`x` in `x is None`, in an `and` with it as an operand, or in an `or` whose other
    operands read `x` (`x is None or x.size(0) != n`)."""
    if (
        type(test) is cst.Comparison
        and len(test.comparisons) == 1
        and type(test.comparisons[0].operator) is cst.Is
        and type(test.comparisons[0].comparator) is cst.Name
        and test.comparisons[0].comparator.value == "None"
    ):
        return dotted_name(test.left)
    if type(test) is not cst.BooleanOperation:
        return None
    left, right = _none_tested(test.left), _none_tested(test.right)
    if type(test.operator) is cst.And:
        return left or right
    name = left or right
    other = test.right if left else test.left
    reads = name is not None and any(
        dotted_name(node) == name for node in (other, *descendants(other))
    )
    return name if reads else None


def _key_absence_tested(test: cst.BaseExpression) -> str | None:
    """`self.sr_u` in `i not in self.sr_u`."""
    if (
        type(test) is not cst.Comparison
        or len(test.comparisons) != 1
        or type(test.comparisons[0].operator) is not cst.NotIn
    ):
        return None
    return dotted_name(test.comparisons[0].comparator)


def _latch_tested(test: cst.BaseExpression) -> str | None:
    """`self.x` in `not self.x`."""
    if type(test) is not cst.UnaryOperation or type(test.operator) is not cst.Not:
        return None
    name = dotted_name(test.expression)
    return name if name is not None and name.startswith("self.") else None


def _built_cache_exit(statement: cst.CSTNode) -> str | None:
    """`self.x` for `if self.x is not None and <tests that read self.x>: return`."""
    if type(statement) is not cst.If or statement.orelse is not None:
        return None
    body = statements_of(statement.body)
    if len(body) != 1 or not _returns_nothing(body[0]):
        return None
    tests = conjuncts(statement.test)
    for test in tests:
        compared = none_compared(test)
        cache = dotted_name(compared[0]) if compared is not None and compared[1] else None
        if cache is not None and cache.startswith("self.") and all(
            test is other or any(dotted_name(node) == cache for node in descendants(other))
            for other in tests
        ):
            return cache
    return None


def _returns_nothing(statement: cst.CSTNode) -> bool:
    """`return` (or `return None`) alone."""
    if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1:
        return False
    returned = statement.body[0]
    value = returned.value if type(returned) is cst.Return else None
    return type(returned) is cst.Return and (value is None or dotted_name(value) == "None")


def _sets(node: cst.CSTNode, name: str) -> bool:
    """`node` assigns `name` (`name = ...`) or fills it in place (`name.fill_(1)`,
    `name.data.fill_(1)`, `name.copy_(...)`)."""
    if type(node) is cst.AssignTarget:
        return dotted_name(node.target) == name
    if type(node) is not cst.Call or type(node.func) is not cst.Attribute:
        return False
    filled = dotted_name(node.func.value)
    return node.func.attr.value in ("fill_", "copy_") and filled in (name, f"{name}.data")


def _capacity_tested(test: cst.BaseExpression) -> str | None:
    """`self.x` in `n > self.x`, `n >= self.x`, `self.x < n` or `self.x <= n`."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        bound = dotted_name(right)
    elif isinstance(operator, (cst.LessThan, cst.LessThanEqual)):
        bound = dotted_name(test.left)
    else:
        return None
    return bound if bound is not None and bound.startswith("self.") else None


def _increment(node: cst.CSTNode) -> str | None:
    """The name `node` increments by an integer literal: `step += 1`, `i = i + 1`."""
    kind = type(node)  # asked of every node of a loop: by type, as in `index`
    if kind is cst.AugAssign and isinstance(node.operator, cst.AddAssign):
        target, step = node.target, node.value
    elif (
        kind is cst.Assign
        and len(node.targets) == 1
        and isinstance(node.value, cst.BinaryOperation)
        and isinstance(node.value.operator, cst.Add)
        and dotted_name(node.value.left) == dotted_name(node.targets[0].target)
    ):
        target, step = node.targets[0].target, node.value.right
    else:
        return None
    return dotted_name(target) if _is_count(step) else None


def _counted_from(expression: cst.BaseExpression) -> list[str | None]:
    """The names `expression` may count from: `name` in `name + 1`, `name - 1` (an integer
    literal offset), `name + nb * epoch` or `epoch * len(loader) + name` (an offset of names
    that holds through the loop: the iteration counted over all epochs) or `name // k` (the
    optimizer steps of an accumulating loop: each value holds for `k` iterations)."""
    if not isinstance(expression, cst.BinaryOperation):
        return []
    if isinstance(expression.operator, cst.FloorDivide):
        return [dotted_name(expression.left)]
    found = []
    if isinstance(expression.operator, (cst.Add, cst.Subtract)) and _is_offset(expression.right):
        found.append(dotted_name(expression.left))
    if isinstance(expression.operator, cst.Add) and _is_offset(expression.left):
        found.append(dotted_name(expression.right))
    return found


def _wraps_name(value: cst.BaseExpression, name: str) -> bool:
    """`tqdm(pbar, total=n)` for `pbar`: a call given the name itself first."""
    return (
        type(value) is cst.Call
        and bool(value.args)
        and value.args[0].keyword is None
        and dotted_name(value.args[0].value) == name
    )


def _is_offset(expression: cst.BaseExpression) -> bool:
    """An integer literal, a name or attribute, `len(...)`, or a sum or product of these:
    `1`, `start_iter`, `nb * epoch`, `epoch * len(loader)`."""
    if _is_count(expression) or isinstance(expression, (cst.Name, cst.Attribute)):
        return True
    if isinstance(expression, cst.Call):
        return dotted_name(expression.func) == "len"
    return (
        isinstance(expression, cst.BinaryOperation)
        and isinstance(expression.operator, (cst.Add, cst.Multiply))
        and _is_offset(expression.left)
        and _is_offset(expression.right)
    )


def _tests_all_but_few_counts(test: cst.BaseExpression, counters: frozenset[str]) -> bool:
    """`i != len(loader) - 1`: false on one iteration (`_tests_few_counts` of its `==`), so
    its `else` runs on that one."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    if not isinstance(target.operator, cst.NotEqual):
        return False
    equal = cst.Comparison(
        left=test.left, comparisons=[cst.ComparisonTarget(operator=cst.Equal(), comparator=target.comparator)]
    )
    return _tests_few_counts(equal, counters)


def _tests_few_counts(test: cst.BaseExpression, counters: frozenset[str]) -> bool:
    """`i == 0`, `i + 1 == len(loader)`: true on one iteration, since a counter never repeats;
    `i in thresholds`: true on the iterations a collection lists; `i < 5`, `step <= 4`,
    `5 > i`: true on a prefix of literal length. A chained comparison is the `and` of its
    pairs: `0 <= step <= 2` holds on few iterations, as `step <= 2` does."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) > 1:
        lefts = (test.left, *(target.comparator for target in test.comparisons[:-1]))
        return any(
            _tests_few_counts(cst.Comparison(left=left, comparisons=[target]), counters)
            for left, target in zip(lefts, test.comparisons)
        )
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    operator = test.comparisons[0].operator
    right = test.comparisons[0].comparator

    def is_counter(side: cst.BaseExpression) -> bool:
        if isinstance(side, cst.BinaryOperation) and isinstance(
            side.operator, (cst.Add, cst.Subtract)
        ):
            return is_counter(side.left) or is_counter(side.right)
        return dotted_name(side) in counters

    if isinstance(operator, cst.Equal):
        return is_counter(test.left) or is_counter(right)
    if isinstance(operator, cst.In):  # `i in refine_steps`: the iterations a collection lists
        return is_counter(test.left)
    if isinstance(operator, (cst.LessThan, cst.LessThanEqual)):
        return is_counter(test.left) and _is_count(right)
    if isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        return _is_count(test.left) and is_counter(right)
    return False


def none_compared(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool] | None:
    """(`x`, True) for `x is not None`, (`x`, False) for `x is None`."""
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
        return None
    comparison = test.comparisons[0]
    if not (type(comparison.comparator) is cst.Name and comparison.comparator.value == "None"):
        return None
    if type(comparison.operator) is cst.IsNot:
        return test.left, True
    if type(comparison.operator) is cst.Is:
        return test.left, False
    return None


def _tests_for_empty(test: cst.BaseExpression) -> bool:
    """`len(x) == 0`, `x.numel() == 0`, `x.shape[0] < 3`, `num_insts == 0`, `not len(x)`;
    an `or` of such tests, or an `and` with one."""
    if isinstance(test, cst.BooleanOperation):
        left, right = _tests_for_empty(test.left), _tests_for_empty(test.right)
        return left or right if isinstance(test.operator, cst.And) else left and right
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _is_size(test.expression)
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    [comparison] = test.comparisons
    bound = literal_value(comparison.comparator)
    if type(bound) is not int or not _is_size(test.left):
        return False
    if type(comparison.operator) in (cst.Equal, cst.LessThanEqual):
        return bound == 0 if type(comparison.operator) is cst.Equal else 0 <= bound < 3
    return type(comparison.operator) is cst.LessThan and 0 < bound <= 3


def _is_size(expression: cst.BaseExpression) -> bool:
    """`len(x)`, `x.numel()`, `x.nelement()`, `x.shape[0]`, `x.size(0)`, or a local or
    `self.` count by its name (`num_insts`, `self.n_max_boxes`; not `args.num_workers`)."""
    if type(expression) is cst.Call:
        return dotted_name(expression.func) == "len" or last_identifier(expression.func) in (
            "numel", "nelement", "size"
        )
    if type(expression) is cst.Subscript:
        return last_identifier(expression.value) == "shape"
    name = dotted_name(expression) or ""
    if name.count(".") > (1 if name.startswith("self.") else 0):
        return False
    return name.rsplit(".", 1)[-1].startswith(("num_", "n_"))


def _or_operands(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        yield from _or_operands(test.left)
        yield from _or_operands(test.right)
    else:
        yield test


def _parameters_of(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def _only_exits(body: cst.BaseSuite) -> bool:
    """A block that only leaves: `continue` or `return` (of anything)."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    if len(statements) != 1 or not isinstance(
        statements[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite)
    ):
        return False
    small = statements[0].body
    return len(small) == 1 and isinstance(small[0], (cst.Continue, cst.Return))


def _names_one_of(test: cst.BaseExpression, names: set[str]) -> bool:
    """`flag`, or an `and` with `flag` as an operand."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _names_one_of(test.left, names) or _names_one_of(test.right, names)
    return isinstance(test, cst.Name) and test.value in names


def _turns_on_debugging(test: cst.BaseExpression) -> bool:
    """`debug`, `args.debug_mode`, `not cfg.ignore_sanity_checks`, `args.profile`: true
    only in a debugging or profiling mode; also a debugging level compared with a literal so that the test holds only when the
    level is on (`opt.debug > 0`, `debug >= 1`, `debug == 2`, `debug != 0`, `debug is not
    None`)."""
    if isinstance(test, cst.Comparison):
        return _debug_level_on(test)
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    switch = last_identifier(test.expression if negated else test)
    if switch is None:
        return False
    switch = switch.lower()
    if not any(word in switch for word in _DEBUG_WORDS):
        return False
    return negated == any(word in switch for word in _NEGATING_WORDS)


def _debug_level_on(test: cst.Comparison) -> bool:
    """`opt.debug > 0`: a switch whose name says debug, compared with a literal by a test
    that only an "on" level (non-zero, true, not None) passes."""
    if len(test.comparisons) != 1 or not _turns_on_debugging(test.left):
        return False
    operator = type(test.comparisons[0].operator)
    value = literal_value(test.comparisons[0].comparator)
    if value is UNKNOWN:
        return False
    if operator in (cst.NotEqual, cst.IsNot):
        return not value
    if operator is cst.Equal:
        return bool(value)
    if not isinstance(value, (int, float)):
        return False
    return (operator is cst.GreaterThan and value >= 0) or (
        operator is cst.GreaterThanEqual and value >= 1
    )


def _tests_a_setting(test: cst.BaseExpression) -> bool:
    """`args.flag`, `self.config.level >= 1`, `cfg.x and cfg.y`: a test of the run's settings
    only (attributes of `args`, `config`, `cfg`, `opt`, `hparams`, also on `self`)."""
    if isinstance(test, cst.BooleanOperation):
        return _tests_a_setting(test.left) and _tests_a_setting(test.right)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return _tests_a_setting(test.left) and literal_value(test.comparisons[0].comparator) is not None
    return _setting_key(test) is not None


def _is_count(expression: cst.BaseExpression) -> bool:
    value = literal_value(expression)
    return isinstance(value, int) and not isinstance(value, bool)


def _setting_default(value: cst.BaseExpression) -> cst.BaseExpression:
    """The default of a setting read (`config.get("use_bn", False)` gives `False`), else `value`."""
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "get"
        and len(value.args) == 2
        and all(arg.keyword is None and not arg.star for arg in value.args)
    ):
        return value.args[1].value
    return value


def _truth_of_literal(value: cst.BaseExpression) -> bool | None:
    """Whether a literal is true (`False`, `None`, `0`, `""` are not), or None for no literal."""
    literal = literal_value(value)
    return None if literal is UNKNOWN else bool(literal)


def _narrows(value: cst.BaseExpression, name: str) -> bool:
    """`name and ...` or `... and name`: the test `name` held, made stricter."""
    return (
        isinstance(value, cst.BooleanOperation)
        and isinstance(value.operator, cst.And)
        and any(
            isinstance(operand, cst.Name) and operand.value == name
            for operand in (value.left, value.right)
        )
    )
