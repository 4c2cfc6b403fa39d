"""TPL5xx — memory and the autograd graph."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.arguments import UNKNOWN, bound_argument, literal_value
from torchperf_lint.facts.guards import caught_errors
from torchperf_lint.facts.index import SCOPE_TYPES, ScopeNode, descendants, statements_of
from torchperf_lint.facts.loops import LoopFacts, iterated_expression
from torchperf_lint.facts.names import dotted_name, last_identifier
from torchperf_lint.rules.base import Finding, NodeEdit, ProposedFix, Rule
from torchperf_lint.rules.edits import add_keyword

FAQ_HISTORY = "https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory"
CHECKPOINT_DOCS = "https://pytorch.org/docs/stable/checkpoint.html"
CUDA_MEMORY_DOCS = "https://pytorch.org/docs/stable/notes/cuda.html#memory-management"
BROADCAST_DOCS = "https://pytorch.org/docs/stable/notes/broadcasting.html"

# Methods that give back a tensor still attached to the graph of their receiver.
_GRAPH_KEEPING_METHODS = frozenset({
    "mean", "sum", "clone", "float", "double", "half", "squeeze", "unsqueeze", "view",
    "reshape", "flatten", "cpu", "to",
})
# Methods that cut the graph (or leave tensors behind altogether).
_DETACHING_METHODS = frozenset({"item", "detach", "detach_", "tolist", "numpy"})
_DETACHING_BUILTINS = frozenset({"builtins.float", "builtins.int"})
_GRADIENT_FUNCTIONS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})
_GRAD_OFF_SWITCHES = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})


def base_name(target: cst.BaseExpression) -> str | None:
    """The container a store writes into: `history` for `history[i]` or `history["a"][i]`."""
    while type(target) is cst.Subscript:
        target = target.value
    return dotted_name(target)


def without_parentheses(expression: cst.BaseExpression) -> cst.BaseExpression:
    return expression.with_changes(lpar=(), rpar=()) if expression.lpar else expression


def method_call(receiver: cst.BaseExpression, method: str) -> cst.Call:
    """`receiver.method()`, parenthesizing a receiver that needs it (`(a * b).detach()`)."""
    receiver = without_parentheses(receiver)
    if not isinstance(receiver, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        receiver = receiver.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(method)))


def next_statement(facts: FileFacts, statement: cst.BaseStatement) -> cst.BaseStatement | None:
    """The statement after `statement` in the same block, if any."""
    block = facts.index.parents.get(statement)
    body = getattr(block, "body", ())
    if not isinstance(body, (list, tuple)):
        return None
    for position, sibling in enumerate(body):
        if sibling is statement:
            return body[position + 1] if position + 1 < len(body) else None
    return None


def between(facts: FileFacts, node: cst.CSTNode, outer: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The ancestors of `node` strictly inside `outer`, nearest first."""
    for parent in facts.scopes.ancestors(node):
        if parent is outer:
            return
        yield parent


# --------------------------------------------------------------------------------------------
# TPL501


@dataclass(frozen=True)
class Store:
    """A statement that keeps a value across loop iterations: `losses.append(v)`, `t += v`."""

    statement: cst.BaseSmallStatement
    container: str
    value: cst.BaseExpression


def stores(facts: FileFacts) -> Iterator[Store]:
    """Every `c.append(v)` statement, `c += v`, `c = c + v` and `c[i] = v` of the module."""
    for call in facts.index.calls:
        statement = facts.index.parents.get(call)
        func = call.func
        if not (isinstance(statement, cst.Expr) and isinstance(func, cst.Attribute)):
            continue
        if func.attr.value != "append" or len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
            continue
        container = base_name(func.value)
        if container is not None:
            yield Store(statement, container, call.args[0].value)
    for assignment in facts.index.assigns:
        if isinstance(assignment, cst.AugAssign):
            container = base_name(assignment.target)
            if isinstance(assignment.operator, cst.AddAssign) and container is not None:
                yield Store(assignment, container, assignment.value)
        elif isinstance(assignment, cst.Assign) and len(assignment.targets) == 1:
            yield from _assignment_store(assignment)


def _assignment_store(assignment: cst.Assign) -> Iterator[Store]:
    target = assignment.targets[0].target
    value = assignment.value
    if isinstance(target, cst.Subscript):
        # `history[i] = v` keeps one value per index; `latest["loss"] = v` overwrites one slot.
        keys = [element.slice for element in target.slice]
        container = base_name(target)
        if container is not None and not all(
            isinstance(key, cst.Index) and literal_value(key.value) is not UNKNOWN for key in keys
        ):
            yield Store(assignment, container, value)
        return
    name = dotted_name(target)
    if name is None or not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add)):
        return
    if dotted_name(value.left) == name:
        yield Store(assignment, name, value.right)
    elif dotted_name(value.right) == name:
        yield Store(assignment, name, value.left)


class GraphTracker:
    """Which values carry an autograd graph, and which names feed a backward pass."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts

    @cached_property
    def feeding_backward(self) -> set[tuple[cst.FunctionDef | None, str]]:
        """(function, name) pairs whose value reaches a `.backward()` or `autograd.grad`.

        `total = total + l` then `total.backward()` is gradient accumulation, not a leak, and
        so is `losses.append(l)` then `torch.stack(losses).sum().backward()` or
        `loss = sum(losses); loss.backward()`.
        """
        facts = self.facts
        feeding: set[tuple[cst.FunctionDef | None, str]] = set()
        for call in facts.index.calls:
            is_backward = last_identifier(call.func) == "backward" and isinstance(call.func, cst.Attribute)
            # `loss_scaler(loss, optimizer)`: a NativeScaler runs the backward pass itself.
            backpropagates = is_backward or facts.loops.is_scaler_step(call)
            if not backpropagates and facts.names.call_name(call) not in _GRADIENT_FUNCTIONS:
                continue
            function = facts.scopes.enclosing_function(call)
            feeding.update((function, name) for name in _names_in(call))
        changed = True
        while changed:
            changed = False
            for assignment in facts.index.assigns:
                if assignment.value is None:
                    continue
                function = facts.scopes.enclosing_function(assignment)
                targets = (
                    [t.target for t in assignment.targets]
                    if isinstance(assignment, cst.Assign)
                    else [assignment.target]
                )
                if not any((function, base_name(t)) in feeding for t in targets):
                    continue
                for name in _names_in(assignment.value):
                    if (function, name) not in feeding:
                        feeding.add((function, name))
                        changed = True
        return feeding

    @cached_property
    def read_as_numpy(self) -> set[tuple[cst.FunctionDef | None, str]]:
        """(function, name) pairs the function reads with `.numpy()` and no `.detach()` on
        the way (`mu.cpu().numpy()`): that raises on a tensor that requires grad, so what the
        name holds carries no graph (the model's parameters are frozen where the program
        runs)."""
        facts = self.facts
        read: set[tuple[cst.FunctionDef | None, str]] = set()
        for call in facts.index.calls:
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "numpy"):
                continue
            receiver = func.value
            while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
                if receiver.func.attr.value in ("detach", "detach_"):
                    break
                receiver = receiver.func.value
            name = dotted_name(receiver)
            if name is not None:
                read.add((facts.scopes.enclosing_function(call), name))
        return read

    def carries_graph(self, value: cst.BaseExpression, loop: LoopFacts, depth: int = 0) -> bool:
        """Whether `value` is a tensor that still holds the graph that computed it."""
        facts = self.facts
        if depth > 4:
            return False
        if isinstance(value, cst.BinaryOperation):
            return self.carries_graph(value.left, loop, depth + 1) or self.carries_graph(
                value.right, loop, depth + 1
            )
        if isinstance(value, cst.Call):
            if facts.tensors.is_module_call(value):
                frozen = dotted_name(value.func) in facts.models.frozen
                return not (
                    frozen
                    or facts.guards.grad_disabled(value)
                    or self._criterion_of_detached_values(value, loop, depth)
                )
            func = value.func
            if isinstance(func, cst.Attribute) and func.attr.value in _GRAPH_KEEPING_METHODS:
                return self.carries_graph(func.value, loop, depth + 1)
            return False
        if not isinstance(value, (cst.Name, cst.Attribute)):
            return False
        bindings = self._bindings_seen_by(value, loop)
        if any(self.is_detached(binding) for binding in bindings):
            return False
        reaching = facts.scopes.reaching_values(value) if type(value) is cst.Name else None
        if reaching and all(self._numpy_value(binding) for binding in reaching):
            return False  # `loss = np.mean(losses)` right before it is stored: a host value
        name = dotted_name(value)
        if loop.is_training and (loop.function, name) in facts.tensors.backwarded:
            return True
        return any(self.carries_graph(binding, loop, depth + 1) for binding in bindings)

    def _criterion_of_detached_values(self, call: cst.Call, loop: LoopFacts, depth: int) -> bool:
        """A criterion (`criterion`, `loss_fn`: a module whose name says it computes a loss,
        which holds no parameters) given only values without a graph: detached ones
        (`criterion(pred.detach().cpu(), true.detach().cpu())`), or a prediction computed with
        autograd off (`with torch.no_grad(): logits = model(batch).logits`, then
        `loss_fct(logits[:, :-1].float().view(-1, v), labels.view(-1))`) beside targets not
        known to carry one: it records no graph."""
        identifier = (last_identifier(call.func) or "").lower()
        if not ("criterion" in identifier or "loss" in identifier) or not call.args:
            return False
        if any(arg.star for arg in call.args):
            return False
        prediction, *targets = (arg.value for arg in call.args)
        return (
            self.is_detached(prediction) or self._computed_without_grad(prediction, loop)
        ) and all(
            self.is_detached(target) or not self.carries_graph(target, loop, depth + 1)
            for target in targets
        )

    def _computed_without_grad(self, value: cst.BaseExpression, loop: LoopFacts, depth: int = 0) -> bool:
        """A model's output computed under `torch.no_grad()` (or a frozen model's), through
        the names it is bound to, its indexing, attributes and the methods that keep a graph
        (`logits[:, :-1, :].contiguous().float()`)."""
        facts = self.facts
        while True:
            if isinstance(value, cst.Subscript):
                value = value.value
            elif isinstance(value, cst.Call) and facts.tensors.is_module_call(value):
                return dotted_name(value.func) in facts.models.frozen or facts.guards.grad_disabled(value)
            elif (
                isinstance(value, cst.Call)
                and isinstance(value.func, cst.Attribute)
                and value.func.attr.value in _GRAPH_KEEPING_METHODS | {"contiguous"}
            ):
                value = value.func.value
            elif isinstance(value, cst.Attribute) and isinstance(value.value, cst.Call):
                value = value.value  # `model(batch).logits`
            else:
                break
        if not isinstance(value, cst.Name) or depth > 3:
            return False
        bindings = self._bindings_seen_by(value, loop)
        return bool(bindings) and all(
            self.is_detached(binding) or self._computed_without_grad(binding, loop, depth + 1)
            for binding in bindings
        )

    def _numpy_value(self, value: cst.BaseExpression) -> bool:
        """A value NumPy computes (`np.mean([...])`), which holds no graph."""
        return type(value) is cst.Call and (self.facts.names.call_name(value) or "").startswith(
            "numpy."
        )

    def _bindings_seen_by(self, name: cst.BaseExpression, loop: LoopFacts) -> list[cst.BaseExpression]:
        """The values bound to `name` in the loop's body, or else anywhere in its function."""
        every = self.facts.scopes.bound_values(name)
        in_loop = [value for value in every if self.facts.scopes.within_same_scope(value, loop.node)]
        return in_loop or every

    def is_detached(self, value: cst.BaseExpression) -> bool:
        """`loss.item()`, `loss.detach().cpu()`, `float(loss)`, `loss.data`."""
        node = value
        while isinstance(node, (cst.Call, cst.Attribute, cst.Subscript)):
            if isinstance(node, cst.Call):
                if self.facts.names.call_name(node) in _DETACHING_BUILTINS:
                    return True
                node = node.func
            elif isinstance(node, cst.Attribute):
                if node.attr.value in _DETACHING_METHODS or node.attr.value == "data":
                    return True
                node = node.value
            else:
                node = node.value
        return False


def _names_in(node: cst.CSTNode) -> set[str]:
    """Every dotted name read in `node`: `total`, `self.losses`, `losses` in `sum(losses)`."""
    found: set[str] = set()
    for child in (node, *descendants(node)):
        if type(child) is cst.Name:  # every node: by type, as in `index`
            found.add(child.value)
        elif type(child) is cst.Attribute and (name := dotted_name(child)) is not None:
            found.add(name)
    return found


class LossGraphRetained(Rule):
    """A loss (or model output) with its autograd graph is kept across loop iterations.

    ## What it does
    Checks for training loops, and evaluation loops that run with autograd on, that store a
    loss or a model output without `.detach()` or `.item()` in something that outlives the
    iteration: `losses.append(loss)`, `total_loss += loss`, `history[i] = loss`. The stored
    value must be a tensor that carries a graph: a model or criterion output computed with
    autograd on, a value later backpropagated, or arithmetic and graph-keeping methods
    (`.mean()`, `.cpu()`, `.to(...)`) on one.

    It stays silent on detached values (`.item()`, `.detach()`, `float(...)`, `.data`),
    a name the store reads after rebinding it to a NumPy value (`loss = np.mean(read)`,
    though `loss.backward()` ran on its earlier value), stores made with autograd off (`with torch.no_grad(): total_loss += loss`),
    predictions that cut the graph (`.argmax(...)`, comparisons), outputs computed under
    `no_grad` or by a model frozen with `requires_grad_(False)` (its parameters record no
    graph), a criterion's output from detached values only (`criterion(pred.detach().cpu(),
    true.detach().cpu())`) or from a prediction computed under `no_grad` (`with
    torch.no_grad(): logits = model(batch).logits`, then `loss_fct(logits[:, :-1].float(),
    labels)`: a perplexity evaluation), containers the function later reads with `.numpy()` and no `.detach()`
    (`mu.cpu().numpy()`, which raises on a tensor that requires grad: the code runs only
    without a graph), accumulation that is itself backpropagated (`loss = loss + l` then
    `loss.backward()`, or a `loss_scaler(loss, optimizer)` helper), containers rebound in
    the iteration (`loss = a` then `loss = loss + b`), a loss that the iteration itself
    backpropagates into a container the loop, or a loop around it, resets, if only on some
    iterations (`running_loss += loss; loss.backward()` with `running_loss = 0` after each
    optimizer step, also with `accelerator.backward(loss)` or `scaler.scale(loss).backward()`,
    or `losses = []` at the top of a step whose loop over sub-networks
    appends and backpropagates each loss: backward freed what the graphs saved, and they
    live for a few micro-batches), and
    test files. The same accumulation never reset (`total_loss += loss` across the run, the
    PyTorch FAQ's example) is reported even after `loss.backward()`: the graph nodes pile up.

    ## Why is this bad?
    A tensor computed with autograd on keeps a reference to the graph that produced it. Stored
    across iterations, every iteration's graph (and, in an evaluation loop without `no_grad`,
    every activation saved for the backward pass) stays alive: memory grows with the number of
    steps until the run slows down or runs out of memory. Accumulation that is itself
    backpropagated (`loss = loss + l`, then `loss.backward()`) is gradient accumulation and is
    not reported.

    ## Example
    ```python
    total_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```

    ## Use instead
    ```python
    total_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss.detach()
    print(float(total_loss))
    ```

    ## Fix safety
    Unsafe: the fix stores `loss.detach()`. Code that later backpropagates through the stored
    values (in another function) would stop computing their gradients.

    The sources disagree on the remedy. PyTorch's FAQ replaces `total_loss += loss`, which
    keeps every graph alive, with `total_loss += float(loss)`, which waits for the GPU on every
    step (TPL201; the Performance Tuning Guide lists `.item()` among the syncs to avoid). We follow the device-side accumulation with `.detach()`: no sync and no graph.

    ## References
    - PyTorch FAQ, [Don't accumulate history across your training loop](https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory)
    - PyTorch docs, [`Tensor.detach`](https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    - PyTorch Performance Tuning Guide, [Avoid unnecessary CPU-GPU synchronization](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#avoid-unnecessary-cpu-gpu-synchronization)
    """

    code = "TPL501"
    name = "loss-graph-retained"
    message = "Loss stored across iterations keeps its autograd graph alive; store `.detach()`"
    default = True
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        graphs = GraphTracker(facts)
        recording: dict[cst.CSTNode, bool] = {}
        grad_off = _GradOff(facts)
        rebinding = _rebinding_assignments(facts)
        for store in stores(facts):
            loop = facts.loops.nearest_loop(store.statement)
            if loop is None:
                continue
            if loop.node not in recording:
                recording[loop.node] = self._records_graphs(facts, loop, grad_off)
            if not recording[loop.node]:
                continue
            resets = rebinding.get(store.container, ())
            if _reset_every_iteration(facts, store, loop, resets) or _backpropagated_until_reset(
                facts, store, loop, resets
            ):
                continue
            if (loop.function, store.container) in graphs.feeding_backward:
                continue
            if (loop.function, store.container) in graphs.read_as_numpy:
                continue  # `.numpy()` raises on a tensor that requires grad: there is no graph
            if facts.guards.grad_disabled(store.statement):
                continue  # `with torch.no_grad(): total += loss`: the sum records no graph
            if not facts.tensors.is_tensor(store.value) or not graphs.carries_graph(store.value, loop):
                continue
            fix = self.replace(
                facts, store.value, method_call(store.value, "detach"), "Store the detached value"
            )
            yield self.finding(store.statement, fix)

    def _records_graphs(self, facts: FileFacts, loop: LoopFacts, grad_off: _GradOff) -> bool:
        """A training loop, or an evaluation loop that runs with autograd on."""
        if loop.is_training:
            return True
        if not (loop.iterates_dataloader or facts.loops.calls_eval(loop.function)):
            return False
        return not (
            facts.guards.grad_disabled(loop.node)
            or grad_off.called_with_grad_disabled(loop.function)
            or grad_off.switched_off
        )


class _GradOff:
    """Where a module turns autograd off around its functions, each asked about once: every
    loop of a function asks the same question about every call of the module."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self._called: dict[cst.FunctionDef, bool] = {}
        self._calls_by_identifier: dict[str, list[cst.Call]] = {}
        for call in facts.index.calls:
            identifier = last_identifier(call.func)
            if identifier is not None:
                self._calls_by_identifier.setdefault(identifier, []).append(call)

    def called_with_grad_disabled(self, function: cst.FunctionDef | None) -> bool:
        """`evaluate()` is a `def` that some caller in the module runs under `torch.no_grad()`,
        or that every caller elsewhere in the program runs with autograd off."""
        if function is None:
            return False
        if function not in self._called:
            facts = self.facts
            self._called[function] = facts.program.always_called_without_grad(function) or any(
                facts.guards.grad_disabled(call)
                for call in self._calls_by_identifier.get(function.name.value, ())
            )
        return self._called[function]

    @cached_property
    def switched_off(self) -> bool:
        """`torch.set_grad_enabled(False)` as a statement: autograd is off from there on."""
        facts = self.facts
        return any(
            facts.names.call_name(call) in _GRAD_OFF_SWITCHES
            and isinstance(facts.index.parents.get(call), cst.Expr)
            and call.args and literal_value(call.args[0].value) is False
            for call in facts.index.calls
        )


def _rebinding_assignments(facts: FileFacts) -> dict[str, list[cst.Assign]]:
    """The `=` assignments of the module by the dotted names they bind."""
    found: dict[str, list[cst.Assign]] = {}
    for assignment in facts.index.assigns:
        if isinstance(assignment, cst.Assign):
            for name in {dotted_name(t.target) for t in assignment.targets} - {None}:
                found.setdefault(name, []).append(assignment)
    return found


def _resets_in_loop(
    facts: FileFacts, store: Store, loop: LoopFacts, rebinding: Sequence[cst.Assign]
) -> Iterator[cst.Assign]:
    """The assignments of `rebinding` (those to the container) in `loop`'s own scope that
    reset the container rather than accumulate into it (`total = total + x` is no reset)."""
    for assignment in rebinding:
        if (
            assignment is not store.statement
            and facts.scopes.within_same_scope(assignment, loop.node)
            and store.container not in _names_in(assignment.value)
        ):
            yield assignment


def _reset_every_iteration(
    facts: FileFacts, store: Store, loop: LoopFacts, rebinding: Sequence[cst.Assign]
) -> bool:
    """The container is reset in the loop so that it lives for one iteration: unconditionally,
    or earlier in the same block as the store (`loss = a` then `loss = loss + b` in one
    branch)."""
    block = facts.index.parents.get(facts.index.parents.get(store.statement))
    for assignment in _resets_in_loop(facts, store, loop, rebinding):
        line = facts.index.parents.get(assignment)
        if facts.index.parents.get(line) is block and _precedes(block, line, store.statement, facts):
            return True
        if not any(isinstance(p, (cst.If, cst.Try, ScopeNode)) for p in between(facts, assignment, loop.node)):
            return True
    return False


def _backpropagated_until_reset(
    facts: FileFacts, store: Store, loop: LoopFacts, rebinding: Sequence[cst.Assign]
) -> bool:
    """The stored value is backpropagated in the loop (`current_loss.backward()`), which frees
    what its graph saved, and the container is reset in the loop, if only on some iterations
    (`running_loss = 0` after each optimizer step of a gradient-accumulation loop), or in a
    loop around it (`losses = []` at the top of each step, then a loop over sub-networks that
    appends and backpropagates each loss): it holds the bare graphs of a few micro-batches,
    never a growing history."""
    stored = dotted_name(store.value)
    if stored is None or not any(_backpropagates(call, stored) for call in loop.backward_calls):
        return False
    return any(
        next(_resets_in_loop(facts, store, around, rebinding), None) is not None
        for around in facts.loops.enclosing_loops(store.statement)
    )


def _backpropagates(call: cst.Call, name: str) -> bool:
    """Whether the backward call `call` backpropagates the value `name` holds:
    `loss.backward()`, `scaler.scale(loss).backward()`, or a framework's
    `accelerator.backward(loss)`."""
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    if type(receiver) is cst.Call and receiver.args:
        receiver = receiver.args[0].value  # `scaler.scale(loss)`
    passed = call.args[0].value if call.args and call.args[0].keyword is None else None
    return any(
        expression is not None and dotted_name(expression) == name
        for expression in (receiver, passed)
    )


def _precedes(block: cst.CSTNode, line: cst.CSTNode, statement: cst.CSTNode, facts: FileFacts) -> bool:
    """`line` comes before the line holding `statement` in `block`."""
    lines = list(getattr(block, "body", ()))
    holder = facts.index.parents.get(statement)
    return line in lines and holder in lines and lines.index(line) < lines.index(holder)


# --------------------------------------------------------------------------------------------
# TPL502

# The release whose checkpoint functions warn when `use_reentrant=` is left out, and the
# one that added the argument.
WARNS_SINCE = (2, 1, 0)
USE_REENTRANT_SINCE = (1, 11)
# The checkpoint functions and their positional parameters up to `use_reentrant`
# (`checkpoint` takes it by keyword only).
CHECKPOINT_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "torch.utils.checkpoint.checkpoint": (),
    "torch.utils.checkpoint.checkpoint_sequential": ("functions", "segments", "input", "use_reentrant"),
}


# Keywords `checkpoint` takes itself; any other keyword is forwarded to the checkpointed
# function, which only the non-reentrant variant supports.
_CHECKPOINT_KEYWORDS = frozenset({
    "use_reentrant", "preserve_rng_state", "context_fn", "determinism_check", "debug",
    "functions", "segments", "input",
})


class CheckpointUseReentrant(Rule):
    """Activation checkpointing without an explicit `use_reentrant=`.

    ## What it does
    Checks for `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)` calls
    that do not pass `use_reentrant=`. Calls that unpack `**kwargs` (which may carry it) and
    compatibility shims are left alone: code inside `except TypeError`/`ImportError`/
    `AttributeError` (or the `try` it guards), or under an `if` that tests the PyTorch
    version or `hasattr`, where older releases without the argument are served. Code the
    program never runs is left alone too: a branch that needs a switch nothing turns on
    (`if self.gradient_checkpointing and self.training:` in a model copied from a library,
    which sets `self.gradient_checkpointing = False` while no code of the project that may
    run sets it to anything else; Hugging Face's hook `_set_gradient_checkpointing(module,
    value)` sets it only when the project calls `gradient_checkpointing_enable()` or
    `enable_gradient_checkpointing()`, or the hook itself; a copy of the library's own
    methods does not count, nor its `PreTrainedModel.__init__`, which calls
    `gradient_checkpointing_enable()` only under `if getattr(self.config,
    "gradient_checkpointing", False):`, for a config that no code of the project turns
    on), the same switch of a library's
    model, which the library builds off (`if self.model.transformer.grad_checkpointing:` on an
    open_clip or timm model, on only after `set_grad_checkpointing()`; Hugging Face's
    `gradient_checkpointing`, on only after `gradient_checkpointing_enable()`; a test of the
    run's settings, `args.grad_checkpointing`, is still reported), a branch on a parameter off by
    default that no caller turns on (`if checkpoint_activations:` in `BertEncoder.forward(...,
    checkpoint_activations=False)`, whose callers leave it out, pass `False`, or pass on a
    parameter of their own that none of theirs turns on), a branch on a switch a constructor
    stores from such a parameter (`if self.with_cp and x.requires_grad:` after `self.with_cp
    = with_cp` in `__init__(..., with_cp=False)`, also in a subclass) that no code of the
    project builds its class with on: no call or config dict (`dict(type="ResNet",
    with_cp=True)`, `{"with_cp": True}`, in a config file without PyTorch code too) passes
    that keyword a value that may be true, no code sets the attribute, and no construction
    passes it by position or passes on a switch that may be on (`Block(dim,
    with_cp=self.with_cp)`), and functions nothing can call (no file of the project, tests
    included, names them, no decorator registers them, and they override no method of a
    framework class other than `nn.Module`'s). Test files are not checked: a test that
    checkpoints a toy block (a compiler's test of how `checkpoint` is traced, a reference
    model's) trains nothing, and pytest already shows the warning. Nothing is reported
    where the code runs only on PyTorch releases older than 2.1, which do not warn and whose default is the reentrant variant
    the code was written with: a project that pins or caps `torch` there (`torch==1.13.1`,
    see TPL301), or whose every program imports a module PyTorch 2.0 removed (`from
    torch._six import inf` in the `utils.py` every entry point imports) or one only
    ColossalAI's releases for PyTorch 1 have (`colossalai.gemini`, see TPL301).

    A constructor's switch needs no construction the linker resolves, unlike a function's
    parameter (whose function, with no caller in the project, is reported: it is an API
    called by position from outside): a registry builds a class from a config's keywords,
    which the project's files show. A library's classes are judged the same way, as its
    methods that no file names are: the project's own code, its tests, examples and configs
    included, is the evidence of what runs. A library whose tests or configs build
    `BasicBlock(64, 64, with_cp=True)` keeps the finding; one that leaves the switch to its
    users' own code, to YAML or JSON settings (not read), or to a command line unpacked into
    the constructor (`Net(**vars(args))` after `add_argument("--with_cp")`), does not.

    A `# noqa: TOR003` (TorchFix's code for the same check) silences it too.

    ## Why is this bad?
    Without the argument PyTorch warns on every call and, for backward compatibility, uses the
    reentrant variant. The reentrant variant recomputes the whole segment inside its own
    backward call: it does not support `torch.autograd.grad`, keyword arguments or inputs
    that do not require gradients (their parameters silently get no gradient), and it cannot
    stop recomputation early. The non-reentrant variant is what the PyTorch docs recommend.

    ## Example
    ```python
    from torch.utils.checkpoint import checkpoint

    out = checkpoint(block, x)
    ```

    ## Use instead
    ```python
    out = checkpoint(block, x, use_reentrant=False)
    ```

    ## Fix safety
    Unsafe: the fix adds `use_reentrant=False`. The two variants behave differently in rare
    cases (a segment that mutates global state, or inputs detached on purpose). No fix is
    offered where the call passes keyword arguments on to the checkpointed function: the
    variants treat them differently, so which one the code was written for is not known;
    nor where the oldest PyTorch the code must run on (`torch-version`, or the project's
    declared floor) predates the argument, added in 1.11.

    ## References
    - PyTorch docs, [torch.utils.checkpoint](https://pytorch.org/docs/stable/checkpoint.html)
    - PyTorch Performance Tuning Guide, [Checkpoint intermediate buffers](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#checkpoint-intermediate-buffers)
    """

    code = "TPL502"
    name = "checkpoint-use-reentrant"
    message = "Checkpoint call without `use_reentrant=`; pass `use_reentrant=False`"
    default = True
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        calls = [
            call
            for call in facts.index.calls
            if (signature := CHECKPOINT_FUNCTIONS.get(facts.names.call_name(call) or "")) is not None
            and bound_argument(call, "use_reentrant", signature) is None
        ]
        below = self.torch_below(facts) if calls else None
        if below is not None and below <= WARNS_SINCE:
            return  # no release the code runs on warns, or has another default
        for call in calls:
            if facts.guards.in_compatibility_shim(call) or facts.steps.never_runs(call):
                continue
            fix = None
            if self.options.torch_version >= USE_REENTRANT_SINCE and not any(
                arg.keyword is not None and arg.keyword.value not in _CHECKPOINT_KEYWORDS
                for arg in call.args
            ):
                new_call = add_keyword(call, "use_reentrant", cst.Name("False"))
                fix = self.replace(facts, call, new_call, "Pass `use_reentrant=False`")
            yield self.finding(call, fix)


# --------------------------------------------------------------------------------------------
# TPL503

EMPTY_CACHE = frozenset({"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"})


class EmptyCacheInLoop(Rule):
    """`torch.cuda.empty_cache()` on every iteration of a hot loop.

    ## What it does
    Checks for `torch.cuda.empty_cache()` in code that runs on every training step: inside
    a training loop, in `forward`, or in a framework's per-step hook (`training_step`). It
    stays silent in loops that train nothing and in evaluation steps (an inference script's
    per-image loop, a validation, a quantization pass over a model's layers: each input may
    need a different amount of memory, and a release between them is a deliberate guard
    against fragmentation, paid per input rather than per training step), and when the call
    runs only every N steps
    (`if step % n == 0:`, `if step < 5:`, `if i in refine_steps:`, or a test of the
    counter another method's loop keeps: `if self.iteration_step == self.first_step:` under
    `for self.iteration_step in range(...)`), once per epoch, outside
    loops, once in a lazy initialisation (`if self.engine is None: self._build_engine();
    torch.cuda.empty_cache()`), in a conditional block that offloads tensors to host memory
    (`if self.cpu_cache: feat = feat.cpu(); torch.cuda.empty_cache()`, a mode that saves
    device memory on purpose), only on an error path (in an `except` handler, the out-of-memory recovery pattern,
    or a branch that ends in `raise`), in the body of a `try` whose handler catches
    out-of-memory errors (`except RuntimeError:`, `except Exception:` or `torch.cuda.OutOfMemoryError`, then a
    retry with a smaller batch: the cache is freed before each attempt on purpose), or only when the caller opts in (`if clear_cache:` on
    a parameter that defaults to `False`) or the run's settings do (`if
    self.args.enable_sleep_mode:`, `if args.empty_unused_memory_level >= 1:`): trading speed
    for memory on purpose, or handing the memory to another allocator. A bare flag parameter
    (`if low_memory:`) is still reported. Test files are not checked.

    ## Why is this bad?
    `empty_cache()` synchronizes with the device and hands the caching allocator's free blocks
    back to the driver. The next iteration needs the same memory again and must get it with
    slow `cudaMalloc` calls instead of reusing the cache. It never makes more memory available
    to PyTorch itself; it only helps other processes sharing the GPU.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    Unsafe: the fix deletes the call. A process that shares the GPU with others may rely on
    the released memory.

    ## References
    - PyTorch docs, [CUDA memory management](https://pytorch.org/docs/stable/notes/cuda.html#memory-management)
    - PyTorch docs, [`torch.cuda.empty_cache`](https://pytorch.org/docs/stable/generated/torch.cuda.empty_cache.html)
    """

    code = "TPL503"
    name = "empty-cache-in-loop"
    message = "`torch.cuda.empty_cache()` in a hot loop frees the allocator cache every step; remove it"
    default = True
    fix_applicability = Applicability.UNSAFE
    gains_only_on_cuda = True

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        flagged = [
            call for call in facts.index.calls
            if facts.names.call_name(call) in EMPTY_CACHE
            and facts.steps.runs_per_step(call)
            and not _releases_between_inputs(facts, call)
            and not facts.guards.under_opt_in(call)
            and not _offloads_beside(facts, call)
            and not _retries_out_of_memory(facts, call)
        ]
        deleted = {facts.index.parents.get(call) for call in flagged}
        for call in flagged:
            yield self.finding(call, self._deletion(facts, call, deleted))

    def _deletion(self, facts: FileFacts, call: cst.Call, deleted: set) -> ProposedFix | None:
        """Delete the call's line; a block left empty keeps a `pass` in its first statement."""
        expression = facts.index.parents.get(call)
        line = facts.index.parents.get(expression)
        if not isinstance(expression, cst.Expr) or len(getattr(line, "body", ())) != 1:
            return None
        block = facts.index.parents.get(line)
        if isinstance(line, cst.SimpleStatementSuite):
            edit = NodeEdit(expression, "pass")
        else:
            statements = [s.body[0] if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 else s for s in block.body]
            emptied = all(statement in deleted for statement in statements)
            edit = NodeEdit(expression, "pass") if emptied and statements[0] is expression else NodeEdit(
                expression, mode="delete_lines"
            )
        return ProposedFix(self.fix_applicability, "Remove the call", (edit,))


# What an out-of-memory retry catches: `torch.cuda.OutOfMemoryError` is a `RuntimeError`,
# and an `Exception`: a fallback for any failure of the attempt (CodeFormer's per-face
# restoration, which keeps the input face when the network fails) covers it too.
_OUT_OF_MEMORY_ERRORS = frozenset({
    "builtins.RuntimeError", "torch.cuda.OutOfMemoryError", "torch.OutOfMemoryError",
    "torch.cuda.memory.OutOfMemoryError", "builtins.Exception", "builtins.BaseException",
})


def _releases_between_inputs(facts: FileFacts, call: cst.Call) -> bool:
    """The call runs on every iteration of loops that train nothing, or of an evaluation
    step: an inference script's per-image loop, a validation, a quantization pass over a
    model's layers, where each input (a full-resolution image, a layer's weights) may need a
    different amount of memory and the release between them is a deliberate guard against
    fragmentation, paid once per input rather than per training step."""
    function = facts.scopes.enclosing_function(call)
    if function is not None and (
        facts.steps.is_forward(function) or facts.program.runs_every_forward(function)
    ):
        return False  # a model's forward runs in every training step too
    step = facts.steps.step_of(call)
    if step is not None:
        return step.kind != "train"
    loops = facts.loops.enclosing_loops(call)
    return bool(loops) and not any(loop.is_training for loop in loops)


def _retries_out_of_memory(facts: FileFacts, call: cst.Call) -> bool:
    """In the body of a `try` whose handler catches out-of-memory errors (`except
    RuntimeError:` then a smaller batch): the recovery pattern, which frees the cache before
    each attempt on purpose."""
    for parent, child in facts.scopes.ancestors_with_child(call):
        if type(parent) in SCOPE_TYPES:
            return False
        if type(parent) is cst.Try and child is parent.body and any(
            facts.names.qualified_name(caught) in _OUT_OF_MEMORY_ERRORS
            for handler in parent.handlers
            for caught in caught_errors(handler)
        ):
            return True
    return False


def _offloads_beside(facts: FileFacts, call: cst.Call) -> bool:
    """`call` runs under a condition (`if self.cpu_cache:`) and a statement of its block moves a
    tensor to host memory in place of the device copy (`feat = feat.cpu()`, `feats[k][-1] =
    feats[k][-1].cpu()`, `feat = self.extract(x).cpu()`): a mode that offloads activations
    to save device memory, whose `empty_cache()` hands the freed blocks back on purpose."""
    if not facts.guards.under_flag(call):
        return False
    expression = facts.index.parents.get(call)
    line = facts.index.parents.get(expression)
    block = facts.index.parents.get(line)
    for statement in statements_of(block):
        if type(statement) is not cst.SimpleStatementLine:
            continue  # not what a nested block does
        for small in statement.body:
            value = getattr(small, "value", None)
            if type(small) is not cst.Assign or type(value) is not cst.Call:
                continue
            func = value.func
            if type(func) is not cst.Attribute or func.attr.value != "cpu":
                continue
            receiver = facts.module.code_for_node(func.value)
            if type(func.value) is cst.Call or any(
                facts.module.code_for_node(target.target) == receiver for target in small.targets
            ):
                return True
    return False


# --------------------------------------------------------------------------------------------
# TPL504


class RetainGraphInLoop(Rule):
    """`.backward(retain_graph=True)` in a training loop that backpropagates only once.

    ## What it does
    Checks for `.backward(retain_graph=True)` in a training loop whose body (nested loops
    included) calls backward only once per iteration, over a loop that builds a new graph
    every iteration (it iterates a `DataLoader` or calls the model).

    Test files are not checked.

    ## Why is this bad?
    `retain_graph=True` keeps every buffer the backward pass needs alive after it ran, so the
    next backward over the same graph can reuse them. With one backward per iteration nothing
    reuses them: the memory is held until the graph is dropped, and the peak grows. It often
    hides a real bug: a hidden state carried between iterations without `.detach()`, which
    makes every step backpropagate through all the previous ones.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward(retain_graph=True)
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    No fix: when the argument was added to silence "Trying to backward through the graph a
    second time", the real fix is detaching the state carried across iterations.

    ## References
    - PyTorch docs, [`Tensor.backward`](https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html)
    - PyTorch docs, [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    """

    code = "TPL504"
    name = "retain-graph-in-loop"
    message = "`retain_graph=True` with one backward per iteration holds the graph's buffers; drop it"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for loop in facts.loops.training_loops:
            backwards = [
                call for call in facts.index.inside(facts.index.calls, loop.node)
                if facts.scopes.within_same_scope(call, loop.node)
                and (
                    (isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward")
                    or facts.names.call_name(call) in _GRADIENT_FUNCTIONS
                )
            ]
            if len(backwards) != 1 or backwards[0] not in loop.backward_calls:
                continue
            if any(self._runs_model(facts, outer) for outer in facts.loops.enclosing_loops(loop.node)):
                continue  # A graph built once per outer iteration is reused by every inner one.
            retain = bound_argument(backwards[0], "retain_graph")
            if not isinstance(retain, cst.Arg) or literal_value(retain.value) is not True:
                continue
            if loop.iterates_dataloader or self._runs_model(facts, loop):
                yield self.finding(backwards[0])

    @staticmethod
    def _runs_model(facts: FileFacts, loop: LoopFacts) -> bool:
        return any(facts.tensors.is_module_call(call) for call in loop.own_calls)


# --------------------------------------------------------------------------------------------
# TPL505

CONCATENATIONS = frozenset({
    "torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.vstack", "torch.hstack",
})


class TensorGrownInLoop(Rule):
    """A tensor grown by concatenating onto itself in a loop (quadratic copying).

    ## What it does
    Checks for `x = torch.cat([x, y])` (and `concat`, `stack`, `vstack`, `hstack`) inside a
    loop whose trip count grows with the data, where the assigned name is also an element of
    the sequence and the loop reads `x` nowhere else (a loop that uses the grown tensor, such
    as a DenseNet block or autoregressive decoding, needs it every iteration). The loop must
    run on every step or be a step loop itself: a loop over a `DataLoader` or a training loop,
    or, in code that runs every step (`forward`, a training step), a loop over a tensor or
    to a tensor's size (`for t in range(x.size(1))`).

    It stays silent on loops over a fixed collection (heads, encoders, config entries,
    beams, `range(3)`), which copy a bounded amount; on targets that are attributes of the
    loop variable (`m.buffer = torch.cat([m.buffer, x])` grows a different tensor each
    time); on code that runs once; and in test files.

    ## Why is this bad?
    Every concatenation allocates a new tensor and copies everything gathered so far: N
    iterations copy O(N²) elements and churn the allocator. Appending to a Python list and
    concatenating once after the loop copies every element once.

    ## Example
    ```python
    preds = torch.empty(0)
    for x, _ in loader:
        preds = torch.cat([preds, model(x)])
    ```

    ## Use instead
    ```python
    preds_parts = [torch.empty(0)]
    for x, _ in loader:
        preds_parts.append(model(x))
    preds = torch.cat(preds_parts)
    ```

    ## Fix safety
    Display-only: the rewrite is shown but never applied, since the code after the loop may
    need the tensor in a particular form and the list's name may clash with another one.

    ## References
    - PyTorch docs, [`torch.cat`](https://pytorch.org/docs/stable/generated/torch.cat.html)
    """

    code = "TPL505"
    name = "tensor-grown-in-loop"
    message = "Tensor grown with `torch.cat` in a loop copies everything each iteration; append to a list and concatenate once"
    default = True
    fix_applicability = Applicability.DISPLAY_ONLY

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for assignment in facts.index.assigns:
            growth = self._growth(facts, assignment)
            if growth is None:
                continue
            loop, target, call, others = growth
            if not _grows_with_the_data(facts, loop) or root_name_of(target) in loop.target_names:
                continue  # a fixed collection (heads, config entries), or a different tensor each time
            if _read_elsewhere(loop.node, target, assignment):
                continue
            if not facts.steps.runs_per_step(assignment):
                continue
            yield self.finding(assignment, self._suggestion(facts, assignment, loop, target, call, others))

    def _growth(self, facts: FileFacts, assignment: cst.CSTNode):
        """(loop, name, call, other elements) for `x = torch.cat([x, ...])` in a loop."""
        if not (isinstance(assignment, cst.Assign) and len(assignment.targets) == 1):
            return None
        call = assignment.value
        target = dotted_name(assignment.targets[0].target)
        if target is None or not isinstance(call, cst.Call):
            return None
        if facts.names.call_name(call) not in CONCATENATIONS:
            return None
        sequence = bound_argument(call, "tensors", ("tensors",))
        if not isinstance(sequence, cst.Arg) or not isinstance(sequence.value, (cst.List, cst.Tuple)):
            return None
        elements = [element.value for element in sequence.value.elements]
        if not any(dotted_name(element) == target for element in elements):
            return None
        if any(target in _names_in(e) for e in elements if dotted_name(e) != target):
            return None  # `x = torch.cat([x, layer(x)])`: each iteration consumes the whole `x`.
        loop = facts.loops.nearest_loop(assignment)
        if loop is None:
            return None
        return loop, target, call, elements

    def _suggestion(self, facts, assignment, loop, target, call, elements) -> ProposedFix | None:
        """`x_parts = [x]` before the loop, `x_parts.append(y)` in it, one `cat` after it."""
        after = next_statement(facts, loop.node)
        statement = facts.index.parents.get(assignment)
        if (
            "." in target or after is None or dotted_name(elements[0]) != target
            or any(dotted_name(e) == target for e in elements[1:]) or len(getattr(statement, "body", ())) != 1
            or facts.index.parents.get(statement) is not loop.node.body
        ):
            return None
        parts = f"{target}_parts"
        indent = "".join(facts.indents(loop.node))
        rest = [facts.code(without_parentheses(e), at=assignment) for e in elements[1:]]
        grow = f"{parts}.append({rest[0]})" if len(rest) == 1 else f"{parts}.extend([{', '.join(rest)}])"
        join_args = [parts] + [facts.code(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for arg in call.args[1:]]
        join = f"{target} = {facts.code(call.func)}({', '.join(join_args)})"
        return ProposedFix(
            self.fix_applicability,
            f"Append to `{parts}` in the loop and concatenate once after it",
            (
                NodeEdit(loop.node, f"{parts} = [{target}]\n{indent}", "insert_before"),
                NodeEdit(assignment, grow),
                NodeEdit(after, f"{join}\n{indent}", "insert_before"),
            ),
        )


def _grows_with_the_data(facts: FileFacts, loop: LoopFacts) -> bool:
    """A loop whose trip count grows with the data: over a DataLoader or training steps,
    over a tensor (`for row in x`, `x.split(k)`), or to a tensor's size
    (`range(x.size(1))`); not over a fixed collection (heads, encoders, config entries)."""
    if loop.is_hot:
        return True
    iterated = iterated_expression(loop.node)
    if iterated is None:
        return False
    if isinstance(iterated, cst.Call) and facts.names.call_name(iterated) == "builtins.range":
        return bool(iterated.args) and facts.tensors.is_tensor_size(iterated.args[-1].value)
    return facts.tensors.is_definitely_tensor(iterated)


def root_name_of(dotted: str) -> str:
    """`m` for `m.buffer`."""
    return dotted.split(".", 1)[0]


def _read_elsewhere(loop: cst.CSTNode, target: str, assignment: cst.CSTNode) -> bool:
    """Whether the loop mentions `target` outside `assignment`, besides `target is None` tests."""
    found = False

    def none_test(test: cst.BaseExpression) -> type[cst.BaseCompOp] | None:
        """`cst.Is` for `target is None`, `cst.IsNot` for `target is not None`."""
        if not (isinstance(test, cst.Comparison) and dotted_name(test.left) == target):
            return None
        if len(test.comparisons) != 1 or literal_value(test.comparisons[0].comparator) is not None:
            return None
        return type(test.comparisons[0].operator)

    class Reader(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> bool:
            return node is not assignment

        def visit_If(self, node: cst.If) -> bool:
            # `if x is None: x = out` starts the tensor on the first iteration: only the
            # branch taken once `x` exists can read it.
            kind = none_test(node.test)
            if kind not in (cst.Is, cst.IsNot):
                return True
            grown_branch = node.orelse if kind is cst.Is else node.body
            if grown_branch is not None:
                grown_branch.visit(self)
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            nonlocal found
            found = found or dotted_name(node) == target
            return True

        def visit_Name(self, node: cst.Name) -> bool:
            nonlocal found
            found = found or node.value == target
            return False

    loop.visit(Reader())
    return found


# --------------------------------------------------------------------------------------------
# TPL506


class RequiresGradTypo(Rule):
    """`param.require_grad = ...`: a typo of `requires_grad` that freezes nothing.

    ## What it does
    Checks for assignments to the attribute `require_grad` on parameters and tensors (a loop
    variable over `.parameters()` / `.named_parameters()`, a tensor expression, or a layer's
    `.weight`/`.bias`), unless a class in the file defines its own `require_grad`. Not
    reported: `require_grad = False` on a tensor a factory has just built without
    `requires_grad=True` (`pe = torch.zeros(n, d).float()` then `pe.require_grad = False`, for
    a buffer or a frozen `nn.Parameter(pe, requires_grad=False)`): it never required
    gradients, so the misspelt line changes nothing. `require_grad = True` on one is
    reported: the tensor still requires no gradient.

    Test files are checked too: the typo freezes nothing there either.

    A `# noqa: TOR002` (TorchFix's code for the same check) silences it too.

    ## Why is this bad?
    Python lets you set any attribute on a tensor, so the misspelt name is silently stored and
    `requires_grad` keeps its value: the "frozen" parameters still get gradients, the backward
    pass does all the work for them, and the optimizer keeps updating them (and a tensor
    meant to require gradients gets none).

    ## Example
    ```python
    for param in model.backbone.parameters():
        param.require_grad = False
    ```

    ## Use instead
    ```python
    for param in model.backbone.parameters():
        param.requires_grad = False
    ```

    ## Fix safety
    Unsafe: renaming changes which parameters train — that is the intent, but it changes the
    results of the run.

    ## References
    - PyTorch docs, [Excluding subgraphs from backward](https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation)
    - PyTorch docs, [`Tensor.requires_grad`](https://pytorch.org/docs/stable/generated/torch.Tensor.requires_grad.html)
    """

    code = "TPL506"
    name = "requires-grad-typo"
    message = "`require_grad` is a typo of `requires_grad`: {consequence}"
    default = True
    fix_applicability = Applicability.UNSAFE
    checks_test_files = True

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if _defines_require_grad(facts):
            return
        for assignment in facts.index.assigns:
            targets = (
                [t.target for t in assignment.targets]
                if isinstance(assignment, cst.Assign)
                else [assignment.target]
            )
            for target in _flattened(targets):
                if not (isinstance(target, cst.Attribute) and target.attr.value == "require_grad"):
                    continue
                if not _is_parameter_or_tensor(facts, target.value):
                    continue
                value = literal_value(assignment.value) if assignment.value is not None else UNKNOWN
                if value is False and facts.tensors.built_without_grad(target.value):
                    continue  # a fresh tensor that never required gradients: nothing to freeze
                fix = ProposedFix(
                    self.fix_applicability, "Rename to `requires_grad`",
                    (NodeEdit(target.attr, "requires_grad"),),
                )
                consequence = _TYPO_CONSEQUENCES.get(value, "`requires_grad` keeps its value")
                yield self.finding(target, fix, consequence=consequence)


# What the misspelt assignment leaves as it was, by the value assigned.
_TYPO_CONSEQUENCES = {
    False: "the parameter is not frozen",
    True: "the tensor still requires no gradient",
}


def _flattened(targets: list[cst.BaseExpression]) -> Iterator[cst.BaseExpression]:
    for target in targets:
        if type(target) is cst.Tuple or type(target) is cst.List:
            yield from _flattened([element.value for element in target.elements])
        else:
            yield target


def _defines_require_grad(facts: FileFacts) -> bool:
    """A class of the file has a `require_grad` method, class attribute or `self.` attribute."""
    for function in facts.index.functions:
        if function.name.value == "require_grad" and facts.scopes.enclosing_class(function):
            return True
    for assignment in facts.index.assigns:
        targets = (
            [t.target for t in assignment.targets] if isinstance(assignment, cst.Assign) else [assignment.target]
        )
        for target in _flattened(targets):
            name = dotted_name(target)
            if name in ("require_grad", "self.require_grad") and facts.scopes.enclosing_class(assignment):
                return True
    return False


def _is_parameter_or_tensor(facts: FileFacts, receiver: cst.BaseExpression) -> bool:
    if isinstance(receiver, cst.Attribute) and receiver.attr.value in ("weight", "bias"):
        return True
    if isinstance(receiver, cst.Name) and _iterates_parameters(facts, receiver):
        return True
    return facts.tensors.is_tensor(receiver)


def _iterates_parameters(facts: FileFacts, name: cst.Name) -> bool:
    """`name` is the variable of an enclosing `for` over `.parameters()`/`.named_parameters()`."""
    for parent in facts.scopes.ancestors(name):
        if isinstance(parent, ScopeNode):
            return False
        if isinstance(parent, cst.For) and name.value in _names_in(parent.target):
            return bool(_names_in(parent.iter) & {"parameters", "named_parameters"})
    return False


# --------------------------------------------------------------------------------------------
# TPL507

_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)


class RepeatInsteadOfBroadcast(Rule):
    """A `.repeat()`/`torch.tile()` copy used where broadcasting would do.

    ## What it does
    Checks for `.repeat(...)`, `torch.tile(...)` and `.expand(...).contiguous()` used directly
    as an operand of `+ - * / **` with another tensor expression, when the repeated tensor
    visibly has the size-1 dimensions broadcasting needs (`.unsqueeze(...)`, `x[:, None]`,
    `.view(..., 1, ...)`), or it is an `.expand(...)`, in code that runs on every step (a
    training or DataLoader loop, `forward`, a framework's per-step hook). Code that runs once
    and test files are not checked.

    ## Why is this bad?
    `repeat` and `tile` allocate and fill a full-size copy, and `.contiguous()` turns a free
    `expand` view into one. Element-wise operators broadcast size-1 dimensions themselves
    without materialising anything, so the copy costs memory bandwidth and allocations for
    nothing.

    ## Example
    ```python
    class Scorer(nn.Module):
        def forward(self, x, n):
            queries = torch.matmul(x, self.w_query)
            keys = torch.matmul(x.mean(1), self.w_key)
            return queries * keys.unsqueeze(1).repeat(1, n, 1)
    ```

    ## Use instead
    ```python
    class Scorer(nn.Module):
        def forward(self, x, n):
            queries = torch.matmul(x, self.w_query)
            keys = torch.matmul(x.mean(1), self.w_key)
            return queries * keys.unsqueeze(1)
    ```

    ## Fix safety
    Display-only: broadcasting gives the same result only when the shapes line up as
    expected, which only the author can confirm.

    ## References
    - PyTorch docs, [Broadcasting semantics](https://pytorch.org/docs/stable/notes/broadcasting.html)
    - PyTorch docs, [`Tensor.expand`](https://pytorch.org/docs/stable/generated/torch.Tensor.expand.html)
    """

    code = "TPL507"
    name = "repeat-instead-of-broadcast"
    message = "`repeat`/`tile` copy used in arithmetic; rely on broadcasting instead"
    default = False
    fix_applicability = Applicability.DISPLAY_ONLY

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for operation in facts.index.binary_operations:
            if not isinstance(operation.operator, _ARITHMETIC):
                continue
            for operand, other in ((operation.left, operation.right), (operation.right, operation.left)):
                source = self._copied_view(facts, operand)
                if source is None or not facts.tensors.is_tensor(other):
                    continue
                if not facts.steps.runs_per_step(operation):
                    continue
                fix = ProposedFix(
                    self.fix_applicability, "Drop the copy and rely on broadcasting",
                    (NodeEdit(operand, self.code_of(facts, source, at=operand)),),
                )
                yield self.finding(operand, fix)

    def _copied_view(self, facts: FileFacts, operand: cst.BaseExpression) -> cst.BaseExpression | None:
        """What `operand` copies, when broadcasting it would give the same result."""
        if not isinstance(operand, cst.Call):
            return None
        func = operand.func
        if isinstance(func, cst.Attribute) and func.attr.value == "contiguous" and not operand.args:
            inner = func.value
            if isinstance(inner, cst.Call) and last_identifier(inner.func) == "expand" and isinstance(inner.func, cst.Attribute):
                return inner if facts.tensors.is_tensor(inner.func.value) else None
            return None
        if isinstance(func, cst.Attribute) and func.attr.value == "repeat":
            source = func.value
        elif facts.names.call_name(operand) == "torch.tile" and operand.args:
            source = operand.args[0].value
        else:
            return None
        if not _has_unit_dimension(source):
            return None
        # NumPy arrays also have `.repeat` (with `repeat_interleave`'s meaning), but no `unsqueeze`.
        is_unsqueeze = isinstance(source, cst.Call) and last_identifier(source.func) == "unsqueeze"
        return source if is_unsqueeze or facts.tensors.is_tensor(source) else None


def _has_unit_dimension(source: cst.BaseExpression) -> bool:
    """`x.unsqueeze(k)`, `torch.unsqueeze(x, k)`, `x[:, None]`, `x.view(n, 1, d)`."""
    if isinstance(source, cst.Subscript):
        return any(
            isinstance(element.slice, cst.Index)
            and isinstance(element.slice.value, cst.Name) and element.slice.value.value == "None"
            for element in source.slice
        )
    if not isinstance(source, cst.Call):
        return False
    method = last_identifier(source.func)
    if method == "unsqueeze":
        return True
    if method in ("view", "reshape"):
        return any(isinstance(arg.value, cst.Integer) and literal_value(arg.value) == 1 for arg in source.args)
    return False


RULES = (
    LossGraphRetained,
    CheckpointUseReentrant,
    EmptyCacheInLoop,
    RetainGraphInLoop,
    TensorGrownInLoop,
    RequiresGradTypo,
    RepeatInsteadOfBroadcast,
)
