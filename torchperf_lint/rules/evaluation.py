"""TPL7xx — evaluation."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from functools import cached_property

import libcst as cst

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.arguments import literal_value
from torchperf_lint.facts.index import (
    COMPREHENSION_TYPES,
    LOOP_TYPES,
    SCOPE_TYPES,
    Loop,
    methods_of,
)
from torchperf_lint.facts.names import dotted_name, last_identifier, root_name, target_names
from torchperf_lint.rules.base import PYTORCH_0_4, Finding, NodeEdit, ProposedFix, Rule

NO_GRAD_DOCS = "https://pytorch.org/docs/stable/generated/torch.no_grad.html"
INFERENCE_MODE_DOCS = "https://pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html"

# Calls that need autograd to record: whoever makes them is computing gradients on purpose
# (training, adversarial examples, saliency maps), even with the model in eval mode.
_GRADIENT_FUNCTIONS = ("torch.autograd.grad", "torch.autograd.backward", "torch.autograd.functional.")
_GRAD_ENABLING = frozenset({"torch.enable_grad"})


class FunctionCalls:
    """The calls each function of a module makes, and which of them run the gradient machinery."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.order = {call: position for position, call in enumerate(facts.index.calls)}
        # Calls in each function's own body (nested defs excluded), None for module level.
        self.own: dict[cst.FunctionDef | None, list[cst.Call]] = defaultdict(list)
        # Calls anywhere inside each function, nested defs included (an LBFGS closure).
        self.inside: dict[cst.FunctionDef | None, list[cst.Call]] = defaultdict(list)
        # Calls by the name they call: `name(...)`, and `obj.name(...)`.
        self._by_name: dict[str, list[cst.Call]] = defaultdict(list)
        self._by_method: dict[str, list[cst.Call]] = defaultdict(list)
        for call in facts.index.calls:
            function = facts.scopes.enclosing_function(call)
            self.own[function].append(call)
            for enclosing in facts.scopes.enclosing_functions(call):
                self.inside[enclosing].append(call)
            if isinstance(call.func, cst.Name):
                self._by_name[call.func.value].append(call)
            elif isinstance(call.func, cst.Attribute):
                self._by_method[call.func.attr.value].append(call)

    def computes_gradients(self, function: cst.FunctionDef | None) -> bool:
        """Whether `function` (or module-level code, for None) calls backward, steps an
        optimizer, asks autograd for gradients, or switches gradients on for some tensor."""
        calls = self.inside[function] if function is not None else self.own[None]
        return any(self.needs_gradients(call) for call in calls)

    def needs_gradients(self, call: cst.Call) -> bool:
        """Whether `call` runs the gradient machinery, itself or through a function of the
        module that does (`hvp(loss, model.weight, v)`)."""
        return self._asks_for_gradients(call) or (
            isinstance(call.func, cst.Name) and call.func.value in self._gradient_helpers
        )

    @cached_property
    def _gradient_helpers(self) -> frozenset[str]:
        """The functions of the module that differentiate themselves (`def hvp(y, w, v): ...
        autograd.grad(y, w, create_graph=True)`): a call of one computes gradients too."""
        return frozenset(
            function.name.value
            for function in self.facts.index.functions
            if any(self._differentiates(call) for call in self.inside[function])
        )

    def _differentiates(self, call: cst.Call) -> bool:
        """`loss.backward()`, `torch.autograd.grad(...)`."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "backward":
            return True
        return (self.facts.names.call_name(call) or "").startswith(_GRADIENT_FUNCTIONS)

    def _asks_for_gradients(self, call: cst.Call) -> bool:
        """Differentiates, steps an optimizer (also through timm's `NativeScaler`,
        `loss_scaler(loss, optimizer)`, which runs the backward too), or switches gradients on
        (`requires_grad_()`, `torch.enable_grad()`, `requires_grad=flag`)."""
        if self._differentiates(call) or self.facts.loops.is_scaler_step(call):
            return True
        func = call.func
        if isinstance(func, cst.Attribute):
            if func.attr.value == "requires_grad_":
                return True
            if func.attr.value == "step" and self.facts.loops.is_optimizer_or_scaler(func.value):
                return True
        name = self.facts.names.call_name(call) or ""
        if name in _GRAD_ENABLING:
            return True
        if name == "torch.set_grad_enabled":
            return not (call.args and literal_value(call.args[0].value) is False)
        return any(
            arg.keyword is not None
            and arg.keyword.value == "requires_grad"
            and literal_value(arg.value) is not False
            for arg in call.args
        )

    def evaluation_loop(self, node: cst.CSTNode, after: cst.Call) -> Loop | None:
        """The loop that evaluates at `node`, after the `.eval()` call `after`: the outermost
        loop around `node` in its function that does not hold `after` and computes no
        gradients in its body (no backward, no optimizer step). None when there is none:
        `node` runs in no loop, or in a training loop."""
        facts = self.facts
        loops = []
        for parent in facts.scopes.ancestors(node):
            if type(parent) in SCOPE_TYPES:
                break
            if type(parent) in LOOP_TYPES and not facts.scopes.within_same_scope(after, parent):
                loops.append(parent)
        if not loops:
            return None
        outermost = loops[-1]
        trains = any(
            self.needs_gradients(call)
            for call in self.inside_loop(outermost)
        )
        return None if trains else outermost

    def inside_loop(self, loop: Loop) -> list[cst.Call]:
        """The calls in `loop`'s own function scope (nested `def`s excluded)."""
        function = self.facts.scopes.enclosing_function(loop)
        return [call for call in self.own[function] if self.facts.scopes.within_same_scope(call, loop)]

    def call_sites(self, function: cst.FunctionDef) -> list[cst.Call]:
        """Calls of `function` in this module: `name(...)`, or `obj.name(...)` for a method."""
        name = function.name.value
        is_method = self.facts.scopes.enclosing_class(function) is not None and (
            self.facts.scopes.enclosing_function(function) is None
        )
        return list((self._by_method if is_method else self._by_name).get(name, ()))

    def called_while_training(self, function: cst.FunctionDef) -> bool:
        """Whether some call of `function` runs on every step of a training loop: its outputs
        may be part of the step (a teacher model, a frozen feature extractor). A call once per
        epoch, or under a periodic guard, is an evaluation and stays reported. So is a call
        outside any loop of a function that computes gradients (a `train_step` helper)."""
        for site in self.call_sites(function):
            loop = self.facts.loops.nearest_loop(site)
            if loop is None:
                if self.computes_gradients(self.facts.scopes.enclosing_function(site)):
                    return True
            elif loop.is_training and self.facts.guards.periodic_guard(site, loop.node) is None:
                return True
        return False

    def always_called_without_grad(
        self, function: cst.FunctionDef, seen: frozenset[cst.FunctionDef] = frozenset()
    ) -> bool:
        """Whether every call of `function` in the module (there is at least one) runs with
        gradients off: under `no_grad`, or in a function itself always called that way."""
        sites = self.call_sites(function)
        if not sites or function in seen:
            return False
        seen = seen | {function}
        for site in sites:
            if self.facts.guards.grad_maybe_disabled(site):
                continue
            caller = self.facts.scopes.enclosing_function(site)
            if caller is None or not self.always_called_without_grad(caller, seen):
                return False
        return True


def grad_mode_spelling(facts: FileFacts, mode: str) -> str | None:
    """How this module can spell `torch.<mode>` with its module-level imports, or None."""
    torch_name = facts.names.module_level_name("torch")
    if torch_name is not None:
        return f"{torch_name}.{mode}"
    return facts.names.module_level_name(f"torch.{mode}")


def _runs_in_training(facts: FileFacts, function: cst.FunctionDef) -> bool:
    """`forward` and the other methods of an `nn.Module`: they run inside training steps,
    where a submodule is often kept in eval mode (frozen batch norm) while it still trains."""
    if function.name.value == "forward":
        return True
    owner = facts.scopes.enclosing_class(function)
    return owner is not None and any(
        (facts.names.qualified_name(base.value) or "").startswith("torch.nn.") for base in owner.bases
    )


def _program_runs_in_training(facts: FileFacts, function: cst.FunctionDef) -> bool:
    """A training loop elsewhere in the program runs `function` on every step (a teacher
    model's forward feeding the loss)."""
    witness = facts.steps.witness(function)
    return witness is not None and witness.kind == "train"


def _repeated(facts: FileFacts, call: cst.Call) -> bool:
    """`call` runs in a loop or a comprehension of its scope, on a model the loop does not
    bind anew on each iteration: `for name in specification: net = build(name); net.eval();
    net(x)` runs each model it builds once, a self-check of the configurations."""
    for parent in facts.scopes.ancestors(call):
        if type(parent) in SCOPE_TYPES:
            return False
        if type(parent) in COMPREHENSION_TYPES:
            return True
        if type(parent) in LOOP_TYPES:
            return not _bound_each_iteration(facts, call, parent)
    return False


def _bound_each_iteration(facts: FileFacts, call: cst.Call, loop: cst.For | cst.While) -> bool:
    """The model `call` runs is bound on each iteration of `loop`, before the call: its
    every reaching binding is in the loop (`net = ...` in the body, `for net in models:`)."""
    model = call.func.value if _calls_forward(call) else call.func
    if type(model) is not cst.Name:
        return False
    bindings = facts.scopes.reaching_bindings(model)
    return bool(bindings) and all(facts.index.contains(loop, binding) for binding in bindings)


def _calls_forward(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "forward"


def _runs_through_own_method(facts: FileFacts, call: cst.Call, receiver: str) -> bool:
    """`self._predict_batch(X)` after `self.network.eval()`, where `_predict_batch`, a method
    of the same class, calls `self.network(X)` with gradients on (TabNet's `_predict_epoch`)."""
    func = call.func
    if not (
        receiver.startswith("self.")
        and isinstance(func, cst.Attribute)
        and dotted_name(func.value) == "self"
    ):
        return False
    cls = facts.scopes.enclosing_class(call)
    return cls is not None and any(
        _runs(node, receiver) and not facts.guards.grad_maybe_disabled(node)
        for method in methods_of(cls, (func.attr.value,))
        for node in facts.index.inside(facts.index.calls, method)
    )


def _ends_stretch(call: cst.Call, receiver: str) -> bool:
    """`receiver.train()` or `receiver.train(True)`, which ends the stretch in eval mode, or
    `receiver.eval()` again, which starts the next one (its finding holds the calls after it)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ("train", "eval")):
        return False
    if dotted_name(func.value) != receiver:
        return False
    if func.attr.value == "eval":
        return not call.args
    return not call.args or literal_value(call.args[0].value) is not False


def _runs(call: cst.Call, receiver: str) -> bool:
    """`receiver(...)` or `receiver.forward(...)`."""
    func = call.func.value if _calls_forward(call) else call.func
    return dotted_name(func) == receiver


class EvalWithoutNoGrad(Rule):
    """The model runs in eval mode with autograd still recording.

    ## What it does
    Checks for a `model.eval()` call followed, in the same function (or at module level), by
    calls of that model in a loop (`model(x)`, `model.forward(x)`, or a method of the same
    class that calls it with gradients on: `self._predict_batch(X)` running
    `self.network(X)` after `self.network.eval()`; a lone forward pass, a dry
    run or a demo's one prediction, runs once, and so does each model of a loop that builds
    a new one on every iteration: `for name in specs: net = build(name); net.eval();
    net(x)`) that run with gradients on: not under
    `with torch.no_grad():` / `torch.inference_mode()`, not in a function decorated with
    either (or nested in one), not after a statement `torch.set_grad_enabled(False)` that
    no `torch.set_grad_enabled(True)` follows, and not in a helper that every caller in the
    module calls under `no_grad`. Only the calls between `eval()` and the next `model.train()` count (or the next
    `model.eval()`, whose finding they are).

    Where the same function (or module-level script, or notebook) computes gradients (it
    calls `backward`, steps an optimizer, also through timm's `NativeScaler`,
    `loss_scaler(loss, optimizer)`, calls `torch.autograd.grad`, or switches gradients
    on with `requires_grad_()` or `torch.enable_grad()`), only the calls in an evaluation loop
    count: a loop after `eval()` whose body computes no gradients, itself or through a function
    of the module that does (`hvp(loss, model.weight, v)` with `def hvp(y, w, v): ...
    torch.autograd.grad(y, w, create_graph=True)`: the loop differentiates the model's
    output, and `eval()` only switches dropout and batch norm). A frozen model in eval mode
    inside a training step, or an adversarial attack, needs autograd and is left alone. So are
    `forward` and other `nn.Module` methods, helpers without an evaluation loop of their own
    called from a function that computes gradients (a teacher's forward in a training step),
    and models frozen with `requires_grad_(False)`, also down a chain
    (`sampler.eval().requires_grad_(False).to(device)`): they record no graph. Test files are not
    checked: a test's single forward pass is not where time goes, nor is a project whose every
    allowed PyTorch is older than 0.4 (`torch==0.3.0`), which has no `torch.no_grad()` (its
    evaluation wraps inputs in `Variable(x, volatile=True)`). Where one decorator fixes
    every `.eval()` of a function (`encoder.eval(); decoder.eval()` in `test()`), the
    function gets one finding, at the first, and the others are its related locations.

    ## Why is this bad?
    `eval()` only changes how dropout and batch normalization behave; it does not stop autograd.
    Every forward pass still records the graph and keeps every intermediate activation alive
    until the outputs are freed, which costs time and a lot of memory, and often forces a
    smaller evaluation batch than the GPU could run.

    ## Example
    ```python
    def evaluate(model, loader):
        model.eval()
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum()
    ```

    ## Use instead
    ```python
    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum()
    ```

    ## Fix safety
    Unsafe: any gradient-dependent code in the function stops working, and returned tensors no
    longer carry a graph. The fix decorates the function with `@torch.no_grad()`, spelt with
    the module's own name for `torch`; at module level, and in a function that also trains, it
    wraps the evaluation loop in `with torch.no_grad():` (when one loop holds every reported
    call). Without an import of `torch` (or of `no_grad`) at module level, or
    for an `async def`, no fix is offered.

    ## References
    - PyTorch docs, [`torch.no_grad`](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
      and [`Module.eval`](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval)
      ("This is different from `torch.no_grad`")
    - PyTorch docs, [Locally disabling gradient computation](https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation)
    - PyTorch Performance Tuning Guide, [Disable gradient calculation for validation or inference](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#disable-gradient-calculation-for-validation-or-inference)
    """

    code = "TPL701"
    name = "eval-without-no-grad"
    message = "`.eval()` does not turn off autograd; run the model under `torch.no_grad()`"
    default = True
    fix_applicability = Applicability.UNSAFE
    fix_needs_torch = PYTORCH_0_4

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        reported = list(self._reported(facts))
        # A function whose fix is one decorator gets one finding, at its first `.eval()`; the
        # others of the function are places of that finding.
        decorated: dict[cst.FunctionDef, list[cst.Call]] = {}
        for call, fix in reported:
            function = _decorated_function(fix)
            if function is not None:
                decorated.setdefault(function, []).append(call)
        for call, fix in reported:
            function = _decorated_function(fix)
            if function is None:
                yield self.finding(call, fix)
                continue
            first, *others = decorated[function]
            if call is first:
                note = "also in eval mode here; the same decorator covers it"
                yield self.finding(call, fix, also_at=tuple((other, note) for other in others))

    def _reported(self, facts: FileFacts) -> Iterator[tuple[cst.Call, ProposedFix | None]]:
        """Each `.eval()` the rule reports, with its fix."""
        calls = None
        for call in facts.index.calls:
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "eval") or call.args:
                continue
            receiver = dotted_name(func.value)
            if receiver is None:
                continue
            calls = calls or FunctionCalls(facts)
            function = facts.scopes.enclosing_function(call)
            recording = [
                run
                for run in self._runs_in_eval_mode(facts, calls, call, receiver, function)
                if not facts.guards.grad_maybe_disabled(run)
            ]
            trains = calls.computes_gradients(function)
            # A lone forward pass (a dry run, a demo's one prediction, a check after
            # training) runs once; the evaluation loop is what costs.
            recording = [run for run in recording if _repeated(facts, run)]
            if trains:
                # The same scope trains: only evaluation loops after `.eval()` are judged.
                recording = [run for run in recording if calls.evaluation_loop(run, call)]
            if not recording:
                continue  # Nothing records.
            if receiver in facts.models.frozen:
                continue  # No parameter records a graph.
            # A loop of its own that evaluates marks an evaluation function, even when a
            # function that trains calls it (once, after its training loop).
            evaluates = trains or any(calls.evaluation_loop(run, call) for run in recording)
            if function is not None and (
                _runs_in_training(facts, function)
                or calls.always_called_without_grad(function)
                or facts.program.always_called_without_grad(function)
                or (not evaluates and calls.called_while_training(function))
                or (not evaluates and _program_runs_in_training(facts, function))
            ):
                continue
            yield call, self._fix(facts, call, function, recording, trains)

    @staticmethod
    def _runs_in_eval_mode(
        facts: FileFacts,
        calls: FunctionCalls,
        eval_call: cst.Call,
        receiver: str,
        function: cst.FunctionDef | None,
    ) -> list[cst.Call]:
        """Calls of the model after `eval_call` and before its next `.train()`, same scope,
        also through a method of the same class that calls it with gradients on."""
        start = calls.order[eval_call]
        runs = []
        for call in calls.own[function]:
            if calls.order[call] <= start:
                continue
            if _ends_stretch(call, receiver):
                break
            if _runs(call, receiver) or _runs_through_own_method(facts, call, receiver):
                runs.append(call)
        return runs

    def _fix(
        self,
        facts: FileFacts,
        eval_call: cst.Call,
        function: cst.FunctionDef | None,
        recording: list[cst.Call],
        trains: bool,
    ) -> ProposedFix | None:
        no_grad = grad_mode_spelling(facts, "no_grad")
        if no_grad is None:
            return None
        if function is not None and not trains:
            if function.asynchronous is not None:
                return None  # The context would not stay active across `await`s.
            # The decorator goes right above `def`, under any others (`@staticmethod`).
            decorator = f"@{no_grad}()\n{''.join(facts.indents(function))}"
            return ProposedFix(
                self.fix_applicability,
                f"Decorate `{function.name.value}` with `@{no_grad}()`",
                (NodeEdit(function, decorator, mode="insert_before"),),
            )
        loop = self._single_loop_around(facts, eval_call, recording)
        if loop is None:
            return None
        return ProposedFix(
            self.fix_applicability,
            f"Run the loop under `with {no_grad}():`",
            (wrap_in_with(facts, loop, f"{no_grad}()"),),
        )

    @staticmethod
    def _single_loop_around(
        facts: FileFacts, eval_call: cst.Call, recording: list[cst.Call]
    ) -> cst.For | cst.While | None:
        """The one outermost loop of `eval_call`'s scope, not containing `eval_call`, that
        holds every recording run."""
        function = facts.scopes.enclosing_function(eval_call)
        outermost = set()
        for run in recording:
            loops = [
                parent
                for parent in facts.scopes.ancestors(run)
                if isinstance(parent, Loop)
                and not facts.scopes.within_same_scope(eval_call, parent)
            ]
            if not loops or facts.scopes.enclosing_function(loops[-1]) is not function:
                return None
            if facts.scopes.enclosing_class(loops[-1]) is not facts.scopes.enclosing_class(eval_call):
                return None
            outermost.add(loops[-1])
        return outermost.pop() if len(outermost) == 1 else None


def wrap_in_with(facts: FileFacts, statement: cst.BaseStatement, context: str) -> NodeEdit:
    """An edit that puts `statement` in `with <context>:`, indenting it one level more."""
    wrapped = cst.With(
        items=[cst.WithItem(cst.parse_expression(context))],
        body=cst.IndentedBlock(body=[statement.with_changes(leading_lines=())]),
    )
    text = facts.code(wrapped, at=statement)
    # The edit starts where the statement does, after its indentation, and ends with its
    # last line's text, before the line break.
    text = text.removeprefix("".join(facts.indents(statement)))
    return NodeEdit(statement, text.removesuffix(facts.module.default_newline))


class NoGradInsteadOfInferenceMode(Rule):
    """`torch.no_grad()` around pure inference, where `torch.inference_mode()` does less work.

    ## What it does
    Checks for `with torch.no_grad():` blocks and `@torch.no_grad()` functions that run a
    model and do nothing else autograd could care about: no in-place updates (`p.copy_(...)`,
    EMA weights), no stores into attributes or subscripts, in a function that computes no
    gradients. Unless the module trains nowhere at all, the function must also put the model
    in eval mode (an evaluation function), because tensors made under `inference_mode` cannot
    later enter a training graph. In a function (or a script) that also trains, a block is
    judged by its own loop: it is reported when it holds, or sits in, an evaluation loop that
    follows `.eval()` and computes no gradients. Modules that use `torch.compile`,
    constructors (`__init__`, where a forward pass probes shapes once) and test files are left
    alone.

    ## Why is this bad?
    `no_grad` only stops graph recording. `inference_mode` also skips the version counters and
    view tracking of every tensor it creates, which removes a little more overhead from each
    operation — noticeable for models made of many small kernels.

    ## Example
    ```python
    with torch.no_grad():
        predictions = model(batch)
    ```

    ## Use instead
    ```python
    with torch.inference_mode():
        predictions = model(batch)
    ```

    ## Fix safety
    Unsafe: tensors created under `inference_mode` cannot be saved for backward or modified in
    place outside it, so a result that later feeds training raises at run time.

    ## References
    - PyTorch docs, [`torch.inference_mode`](https://pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html)
    - PyTorch docs, [Inference mode](https://pytorch.org/docs/stable/notes/autograd.html#inference-mode)
    - PyTorch Performance Tuning Guide, [Disable gradient calculation for validation or inference](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#disable-gradient-calculation-for-validation-or-inference)
      recommends `torch.no_grad()` for validation; the `inference_mode` docs go further where it
      is allowed, and this rule only asks for it in pure inference
    """

    code = "TPL702"
    name = "no-grad-instead-of-inference-mode"
    message = "`torch.no_grad()` around pure inference; `torch.inference_mode()` is faster"
    default = False
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if any(
            facts.names.call_name(call) == "torch.compile" for call in facts.index.calls
        ):
            return
        calls = FunctionCalls(facts)
        module_trains = any(
            calls.computes_gradients(function) for function in (None, *facts.index.functions)
        )
        for expression, body, function in self._no_grad_regions(facts):
            if calls.computes_gradients(function) and not self._evaluates(facts, calls, body, function):
                continue  # The scope trains; only its evaluation loops are judged.
            if function is not None and function.name.value == "__init__":
                continue  # A forward pass in a constructor probes shapes once.
            if module_trains and not facts.loops.calls_eval(function):
                continue
            if not self._pure_inference(facts, body) or self._results_mutated_later(
                facts, calls, body, function
            ):
                continue
            yield self.finding(expression, self._fix(facts, expression))

    @staticmethod
    def _no_grad_regions(
        facts: FileFacts,
    ) -> Iterator[tuple[cst.BaseExpression, cst.BaseSuite, cst.FunctionDef | None]]:
        """(the `no_grad` expression, the code it covers, the function it is in)."""
        for statement in facts.index.withs:
            for item in statement.items:
                if _is_no_grad(facts, item.item):
                    yield item.item, statement.body, facts.scopes.enclosing_function(statement)
        for function in facts.index.functions:
            for decorator in function.decorators:
                if _is_no_grad(facts, decorator.decorator):
                    yield decorator.decorator, function.body, function

    @staticmethod
    def _evaluates(
        facts: FileFacts, calls: FunctionCalls, body: cst.BaseSuite, function: cst.FunctionDef | None
    ) -> bool:
        """The region runs a model in an evaluation loop (one that computes no gradients) after
        an `.eval()` call of its scope: `for x in val_loader:` inside it, or around it."""
        evals = [
            call for call in calls.own[function]
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "eval" and not call.args
        ]
        return any(
            calls.order[eval_call] < calls.order[run] and calls.evaluation_loop(run, eval_call)
            for run in calls.own[function]
            if facts.scopes.within_same_scope(run, body) and facts.tensors.is_module_call(run)
            for eval_call in evals
        )

    @staticmethod
    def _pure_inference(facts: FileFacts, body: cst.BaseSuite) -> bool:
        """Runs a model, mutates nothing in place, stores into no attribute or subscript."""
        inside = [
            call for call in facts.index.inside(facts.index.calls, body)
            if facts.scopes.within_same_scope(call, body)
        ]
        runs_model = any(facts.tensors.is_module_call(call) for call in inside)
        mutates = any(_is_in_place_method(last_identifier(call.func) or "") for call in inside)
        stores = any(
            facts.scopes.within_same_scope(assignment, body)
            and any(
                isinstance(target, (cst.Attribute, cst.Subscript))
                for target in _assignment_targets(assignment)
            )
            for assignment in facts.index.inside(facts.index.assigns, body)
        )
        return runs_model and not mutates and not stores

    @staticmethod
    def _results_mutated_later(
        facts: FileFacts, calls: FunctionCalls, body: cst.BaseSuite, function: cst.FunctionDef | None
    ) -> bool:
        """Whether a name bound in `body` is updated in place after it (`out += 1`,
        `out.clamp_(0)`, `out[i] = 0`): inference tensors cannot be, outside inference mode."""
        bound = {
            name
            for assignment in facts.index.inside(facts.index.assigns, body)
            if facts.scopes.within_same_scope(assignment, body)
            for target in _assignment_targets(assignment)
            for name in target_names(target)
        }
        if not bound:
            return False
        for call in calls.own[function]:
            func = call.func
            if (
                isinstance(func, cst.Attribute)
                and _is_in_place_method(func.attr.value)
                and root_name(func.value) in bound
                and not facts.scopes.within_same_scope(call, body)
            ):
                return True
        for assignment in facts.index.assigns:
            if facts.scopes.within_same_scope(assignment, body):
                continue
            if facts.scopes.enclosing_function(assignment) is not function:
                continue
            for target in _assignment_targets(assignment):
                in_place = isinstance(assignment, cst.AugAssign) or isinstance(target, cst.Subscript)
                if in_place and root_name(target) in bound:
                    return True
        return False

    def _fix(self, facts: FileFacts, expression: cst.BaseExpression) -> ProposedFix | None:
        func = expression.func if isinstance(expression, cst.Call) else expression
        message = "Use `torch.inference_mode()`"
        if isinstance(func, cst.Attribute):
            return self.replace(facts, func.attr, cst.Name("inference_mode"), message)
        spelling = grad_mode_spelling(facts, "inference_mode")
        if spelling is None:
            return None
        return self.replace(facts, func, cst.parse_expression(spelling), message)


def _is_no_grad(facts: FileFacts, expression: cst.BaseExpression) -> bool:
    func = expression.func if isinstance(expression, cst.Call) else expression
    if isinstance(expression, cst.Call) and expression.args:
        return False
    if facts.names.qualified_name(func) != "torch.no_grad":
        return False
    # `torch.no_grad` and `torch.autograd.no_grad` have an `inference_mode` beside them.
    return not isinstance(func, cst.Attribute) or facts.names.qualified_name(func.value) in (
        "torch",
        "torch.autograd",
    )


def _assignment_targets(
    assignment: cst.Assign | cst.AnnAssign | cst.AugAssign,
) -> list[cst.BaseExpression]:
    if isinstance(assignment, cst.Assign):
        return [target.target for target in assignment.targets]
    return [assignment.target]


def _is_in_place_method(name: str) -> bool:
    """PyTorch's in-place naming: `add_`, `copy_`, `nn.init.normal_` (not `__call__`)."""
    return name.endswith("_") and not name.startswith("_")


def _decorated_function(fix: ProposedFix | None) -> cst.FunctionDef | None:
    """The function a fix decorates with `@torch.no_grad()`, or None for another fix."""
    if fix is None or len(fix.edits) != 1 or fix.edits[0].mode != "insert_before":
        return None
    node = fix.edits[0].node
    return node if type(node) is cst.FunctionDef else None


RULES = (EvalWithoutNoGrad, NoGradInsteadOfInferenceMode)
