"""TPL2xx — host-device synchronization."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.loops import LoopFacts
from torchperf_lint.facts.names import last_identifier
from torchperf_lint.facts.tensors import is_elementwise_comparison
from torchperf_lint.rules.base import Finding, Rule

# Tensor methods that copy a value to the host, so the host waits for the GPU to produce it.
_SYNCING_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
# Libraries whose results live in host memory.
_HOST_LIBRARIES = ("numpy.", "math.")
# Tensor factories: without `device=` they build the tensor in host memory.
_FACTORIES = frozenset({
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange",
    "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm",
})
# Builtins that convert a tensor to a Python value (`Tensor.__float__` and friends read it).
_CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})
# Builtins that format their argument: formatting a tensor reads its values.
_FORMATTERS = frozenset({"builtins.str", "builtins.repr", "builtins.format"})
# Module methods: `.cpu()` followed by one of these moved a module, not a tensor.
_MODULE_METHODS = frozenset({
    "parameters", "named_parameters", "buffers", "state_dict", "modules", "children", "eval",
    "train", "load_state_dict",
})
# Methods whose result an `if` reads as a Python bool: a reduction or an element-wise predicate.
_TRUTH_TESTED_METHODS = frozenset({
    "any", "all", "isnan", "isinf", "isfinite", "eq", "ne", "gt", "lt", "ge", "le", "equal",
    "allclose", "isclose", "sum", "mean", "max", "min", "norm", "abs",
})
# Operations whose output size depends on the data, so the host reads a count from the GPU.
_DATA_DEPENDENT_METHODS = frozenset({"nonzero", "masked_select", "unique"})
_DATA_DEPENDENT_FUNCTIONS = frozenset({"torch.nonzero", "torch.masked_select", "torch.unique"})
# Element-wise predicates and logical operations whose result is a boolean mask.
_MASK_METHODS = frozenset({
    "bool", "isnan", "isinf", "isfinite", "eq", "ne", "gt", "lt", "ge", "le", "logical_not",
    "logical_and", "logical_or", "logical_xor",
})
_MASK_FUNCTIONS = frozenset(f"torch.{method}" for method in _MASK_METHODS - {"bool"})


@dataclass(frozen=True)
class HostSync:
    """One place where the host waits for the device: the node to report and what it is."""

    node: cst.CSTNode
    description: str


def device_runs_on_cuda(rule: Rule, facts: FileFacts) -> bool:
    """`target-device` says so, or (when it is "auto") the module uses CUDA.

    Without a GPU nothing is queued, so reading a value costs no wait.
    """
    if rule.options.target_device == "auto":
        return facts.uses_cuda
    return rule.options.target_device == "cuda"


def is_tensor_value(facts: FileFacts, expression: cst.BaseExpression) -> bool:
    """A tensor expression; a name only when every value bound to it is one.

    `loss = loss.item()` rebinds a tensor name to a float: `float(loss)` after it reads no
    device value, and the bindings do not say which one a given line sees.
    """
    if isinstance(expression, cst.Name):
        values = facts.scopes.bound_values(expression)
        if not all(facts.tensors.is_tensor(value) for value in values):
            return False
    return facts.tensors.is_tensor(expression)


def may_be_device_tensor(facts: FileFacts, receiver: cst.BaseExpression) -> bool:
    """Whether a `.item()`-style call on `receiver` may read a device tensor.

    Known host values (`is_host_value`) and the raw batches a DataLoader loop yields are not.
    """
    return not is_host_value(facts, receiver) and not is_loader_batch(facts, receiver)


def is_host_value(facts: FileFacts, expression: cst.BaseExpression, depth: int = 0) -> bool:
    """A value known to live in host memory, so reading it waits for nothing.

    Literals, NumPy and `math` results, values already copied out (`x.cpu()`, `t.tolist()`),
    tensors built without `device=` (`torch.randperm(n)`), and names bound only to these.
    """
    if isinstance(expression, (cst.BaseNumber, cst.BaseString, cst.List, cst.Tuple, cst.Dict)):
        return True
    if isinstance(expression, cst.Call):
        qualified = facts.names.call_name(expression)
        if qualified is not None:
            if qualified.startswith(_HOST_LIBRARIES):
                return True
            factory = qualified.removeprefix("torch.")
            return factory in _FACTORIES and not any(
                (arg.keyword is not None and arg.keyword.value == "device") or arg.star == "**"
                for arg in expression.args
            )
        return last_identifier(expression.func) in _SYNCING_METHODS
    if isinstance(expression, cst.Name) and depth == 0:
        values = facts.scopes.bound_values(expression)
        return bool(values) and all(is_host_value(facts, value, depth + 1) for value in values)
    return False


def is_loader_batch(facts: FileFacts, expression: cst.BaseExpression) -> bool:
    """A name a DataLoader loop binds (`for x, y in loader`) and its function never assigns.

    A DataLoader yields host tensors; reading one costs no device wait. A batch moved with
    `x, y = x.cuda(), y.cuda()` or `x = x.to(device)` is assigned, so it may be on the device.
    """
    root = expression
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    if not isinstance(root, cst.Name):
        return False
    yielded = any(
        loop.iterates_dataloader
        and isinstance(loop.node, cst.For)
        and root.value in _target_names(loop.node.target)
        for loop in facts.loops.enclosing_loops(root)
    )
    return yielded and not _is_assigned(facts, root)


def _is_assigned(facts: FileFacts, name: cst.Name) -> bool:
    """Whether an assignment in `name`'s function (or module) binds it, also by unpacking."""
    function = facts.scopes.enclosing_function(name)
    for assignment in facts.index.assigns:
        if facts.scopes.enclosing_function(assignment) is not function:
            continue
        targets = (
            [target.target for target in assignment.targets]
            if isinstance(assignment, cst.Assign)
            else [assignment.target]
        )
        if any(name.value in _target_names(target) for target in targets):
            return True
    return False


def _target_names(target: cst.BaseExpression) -> set[str]:
    """The names an assignment or `for` target binds: `x`, `(i, (x, y))`, `[a, *rest]`."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _target_names(element.value)}
    return set()


class HostSyncs:
    """The places a module reads device values on the host (TPL201, TPL202)."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.tensors = facts.tensors

    def sites(self) -> list[HostSync]:
        """Every sync in the module, a chain of syncs (`x.cpu().numpy()`) counted once."""
        found = [site for call in self.facts.index.calls if (site := self._call_sync(call))]
        found.extend(
            HostSync(operand, "A tensor used as a condition")
            for test in self._truth_tests()
            for operand in _truth_operands(test)
            if self._reads_tensor_truth(operand)
        )
        return outermost(self.facts, found)

    def _call_sync(self, call: cst.Call) -> HostSync | None:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SYNCING_METHODS:
            if self._moves_a_module(call) or not may_be_device_tensor(self.facts, func.value):
                return None
            if self._feeds_an_environment(call):
                return None
            return HostSync(call, f"`.{func.attr.value}()`")
        qualified = self.facts.names.call_name(call)
        if qualified in _CONVERSIONS and self._first_argument_is_tensor(call):
            if self._feeds_an_environment(call):
                return None
            return HostSync(call, f"`{qualified.removeprefix('builtins.')}()` of a tensor")
        if qualified == "builtins.print" and any(self._formats_tensor(a.value) for a in call.args):
            return HostSync(call, "`print` of a tensor")
        return None

    def _feeds_an_environment(self, call: cst.Call) -> bool:
        """`env.step(action.item())`, or `action = q.argmax().item()` then `env.step(action)`.

        A simulator on the host needs the value now: that read is the algorithm, not overhead.
        """
        statement: cst.CSTNode = call
        for parent in self.facts.scopes.ancestors(call):
            if isinstance(parent, cst.Call) and self._is_environment_step(parent):
                return True
            if isinstance(parent, (cst.BaseSmallStatement, cst.BaseStatement)):
                statement = parent
                break
        if not (
            isinstance(statement, cst.Assign)
            and statement.value is call
            and len(statement.targets) == 1
            and isinstance(statement.targets[0].target, cst.Name)
        ):
            return False
        name = statement.targets[0].target.value
        loop = self.facts.loops.loop_of_call(call)
        return loop is not None and any(
            self._is_environment_step(other)
            and any(isinstance(a.value, cst.Name) and a.value.value == name for a in other.args)
            for other in loop.own_calls
        )

    def _is_environment_step(self, call: cst.Call) -> bool:
        """`env.step(action)`, `plateau.step(metric)`: a `.step()` given a value to use on the
        host, on something that is not an optimizer or a scaler."""
        func = call.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == "step"
            and bool(call.args)
            and not self.facts.loops.is_optimizer_or_scaler(func.value)
        )

    def _moves_a_module(self, call: cst.Call) -> bool:
        """`model.cpu()`, `m.cpu().parameters()`: moving a module's weights, not reading values."""
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else call.func
        if self.tensors.is_module_reference(receiver):
            return True
        parent = self.facts.index.parents.get(call)
        return isinstance(parent, cst.Attribute) and parent.attr.value in _MODULE_METHODS

    def _first_argument_is_tensor(self, call: cst.Call) -> bool:
        first = call.args[0] if call.args else None
        return first is not None and first.star == "" and self._reads_device(first.value)

    def _reads_device(self, expression: cst.BaseExpression) -> bool:
        """A tensor expression that may live on the device: `int(torch.randint(4, (1,)))`
        converts a host tensor and waits for nothing."""
        return is_tensor_value(self.facts, expression) and may_be_device_tensor(
            self.facts, expression
        )

    def _formats_tensor(self, expression: cst.BaseExpression) -> bool:
        """`loss`, `f"{loss:.3f}"`, `str(loss)`, `"{}".format(loss)`, `"%f" % loss`."""
        if isinstance(expression, cst.FormattedString):
            return any(
                isinstance(part, cst.FormattedStringExpression)
                and self._reads_device(part.expression)
                for part in expression.parts
            )
        if isinstance(expression, cst.Call):
            qualified = self.facts.names.call_name(expression)
            if qualified in _FORMATTERS:
                return self._first_argument_is_tensor(expression)
            func = expression.func
            if isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(
                func.value, cst.BaseString
            ):
                return any(self._reads_device(arg.value) for arg in expression.args)
        if isinstance(expression, cst.BinaryOperation):
            if isinstance(expression.operator, cst.Modulo) and isinstance(
                expression.left, cst.BaseString
            ):
                right = expression.right
                values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
                return any(self._reads_device(value) for value in values)
            if isinstance(expression.operator, cst.Add):
                return self._formats_tensor(expression.left) or self._formats_tensor(
                    expression.right
                )
            return False
        return self._reads_device(expression)

    def _truth_tests(self) -> Iterator[cst.BaseExpression]:
        """The tests of every `if`, `elif`, `while`, conditional expression and `assert`."""
        for node in self.facts.index.parents:
            if isinstance(node, (cst.If, cst.While, cst.IfExp, cst.Assert)):
                yield node.test

    def _reads_tensor_truth(self, operand: cst.BaseExpression) -> bool:
        """`torch.isnan(loss).any()`, `loss > best`: the `if` must read the value on the host.

        Only calls and names are trusted as tensors here; an attribute such as
        `model.training` is a Python flag far too often.
        """
        if isinstance(operand, cst.Comparison):
            if not self.tensors.is_tensor(operand):  # `x is None`, `k in batch`, plain numbers
                return False
            sides = (operand.left, *(c.comparator for c in operand.comparisons))
            return any(
                (isinstance(side, cst.Name) and self._reads_device(side))
                or self._is_tensor_predicate(side)
                for side in sides
            )
        return self._is_tensor_predicate(operand)

    def _is_tensor_predicate(self, expression: cst.BaseExpression) -> bool:
        """`torch.isnan(loss)`, `mask.any()`, `x.norm()`: a predicate or reduction of a tensor.

        Judged by the callee's name, so that `torch.compiler.is_compiling()` and other
        `torch.*` helpers returning Python values are not mistaken for tensors.
        """
        return (
            isinstance(expression, cst.Call)
            and last_identifier(expression.func) in _TRUTH_TESTED_METHODS
            and self._reads_device(expression)
        )


def _truth_operands(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The operands an `if` converts to bool: through `not`, `and`, `or` and parentheses."""
    if isinstance(test, cst.BooleanOperation):
        yield from _truth_operands(test.left)
        yield from _truth_operands(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _truth_operands(test.expression)
    else:
        yield test


def _nearest_loop(facts: FileFacts, node: cst.CSTNode) -> LoopFacts | None:
    if isinstance(node, cst.Call):
        return facts.loops.loop_of_call(node)
    return facts.loops.nearest_loop(node)




def outermost(facts: FileFacts, sites: list[HostSync]) -> list[HostSync]:
    """Drops the sites inside another site of the same statement: a chain is one finding."""
    nodes = {site.node for site in sites}

    def inside_another(node: cst.CSTNode) -> bool:
        for parent in facts.scopes.ancestors(node):
            if isinstance(parent, (cst.BaseStatement, cst.BaseSmallStatement)):
                return False
            if parent in nodes:
                return True
        return False

    return [site for site in sites if not inside_another(site.node)]


class DataDependentShapes:
    """Operations whose output size depends on the values (TPL203): the host must read a count."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.tensors = facts.tensors

    def sites(self) -> list[HostSync]:
        found = [site for call in self.facts.index.calls if (site := self._call_site(call))]
        found.extend(
            HostSync(subscript, "boolean-mask indexing")
            for subscript in self.facts.index.subscripts
            if self._is_mask_read(subscript)
        )
        return outermost(self.facts, found)

    def _call_site(self, call: cst.Call) -> HostSync | None:
        qualified = self.facts.names.call_name(call)
        if qualified in _DATA_DEPENDENT_FUNCTIONS:
            return HostSync(call, f"`{qualified}`")
        func = call.func
        if (
            qualified is None
            and isinstance(func, cst.Attribute)
            and func.attr.value in _DATA_DEPENDENT_METHODS
            and may_be_device_tensor(self.facts, func.value)
        ):
            return HostSync(call, f"`.{func.attr.value}()`")
        return None

    def _is_mask_read(self, subscript: cst.Subscript) -> bool:
        """`t[t > 0]`, `t[mask]`: a tensor indexed by one boolean mask, read (not assigned).

        Assigning a scalar through a mask (`t[mask] = 0`) runs as `masked_fill_` without a
        sync; assignments are left alone, since the value's shape is rarely known.
        """
        parent = self.facts.index.parents.get(subscript)
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or (
            isinstance(parent, cst.AugAssign) and parent.target is subscript
        ):
            return False
        if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
            return False
        index = subscript.slice[0].slice.value
        return is_tensor_value(self.facts, subscript.value) and self._is_mask(index)

    def _is_mask(self, expression: cst.BaseExpression, depth: int = 0) -> bool:
        """An element-wise comparison, a predicate such as `torch.isnan(x)` or `x.bool()`, `~m`,
        `m & n`, a name bound to one, or a name that says it is one (`mask`, `valid_mask`)."""
        if depth > 3:
            return False
        if isinstance(expression, cst.Comparison):
            return is_elementwise_comparison(expression)
        if isinstance(expression, cst.Call):
            qualified = self.facts.names.call_name(expression)
            if qualified is not None:
                return qualified in _MASK_FUNCTIONS
            method = last_identifier(expression.func)
            return isinstance(expression.func, cst.Attribute) and method in _MASK_METHODS
        if isinstance(expression, cst.UnaryOperation) and isinstance(
            expression.operator, cst.BitInvert
        ):
            return self._is_mask(expression.expression, depth + 1)
        if isinstance(expression, cst.BinaryOperation) and isinstance(
            expression.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)
        ):
            return self._is_mask(expression.left, depth + 1) or self._is_mask(
                expression.right, depth + 1
            )
        if isinstance(expression, cst.Name):
            if expression.value.lower().endswith("mask"):
                return True
            return any(
                self._is_mask(value, depth + 1)
                for value in self.facts.scopes.bound_values(expression)
            )
        return False


class _PerIterationRule(Rule):
    """Reports the sites that run on every iteration of the loops a subclass selects, in a
    module whose tensors live on a CUDA device (elsewhere nothing is queued to wait for)."""

    def sites(self, facts: FileFacts) -> list[HostSync]:
        raise NotImplementedError

    def selects(self, facts: FileFacts, loop: LoopFacts) -> bool:
        raise NotImplementedError

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        # Tests read values on purpose (`assert loss < previous`) and their speed is no one's goal.
        if facts.is_test_file or not device_runs_on_cuda(self, facts):
            return
        for site in self.sites(facts):
            loop = _nearest_loop(facts, site.node)
            if loop is None or not self.selects(facts, loop):
                continue
            if facts.guards.sparse_guard(site.node, loop.node) is None:
                yield self.finding(site.node, what=site.description)


class SyncInTrainingLoop(_PerIterationRule):
    """The host waits for the GPU on every training step (`.item()`, `.cpu()`, `float(loss)`, ...).

    ## What it does
    In a module that uses CUDA (or with `target-device = "cuda"`), checks for host syncs that
    run on every iteration of a training loop: `.item()`, `.tolist()`, `.cpu()`, `.numpy()`,
    `float(t)` / `int(t)` / `bool(t)` of a tensor, `print` of a tensor (also through f-strings,
    `str()`, `format` and `%`), and a tensor used as a condition (`if torch.isnan(loss):`,
    `if loss < best:`), which is `bool(t)` written implicitly. A chain such as
    `x.cpu().numpy()` is one finding.

    It stays silent on calls that do not run on every step: under a periodic guard
    (`if step % log_every == 0:`, also `if last_batch or step % n == 0:`) or a test of the
    loop's own counter (`if i == 0:`, `if i + 1 == len(loader):`); on calls after the loop or
    outside any training loop; on calls in a loop nested inside the training loop or in a
    function defined in it (each call is judged by its nearest loop). It is also silent where
    the read waits for nothing or is the algorithm itself: host tensors (the batches a
    DataLoader yields before they are moved, tensors built without `device=`, NumPy values),
    values handed to an environment (`env.step(action.item())`), CPU-only modules (or
    `target-device = "cpu"`), and test files, which read values on purpose. A flag or rank
    guard (`if rank == 0:`, `if args.verbose:`) still runs on every step and is reported.

    ## Why is this bad?
    CUDA work is asynchronous: the host queues kernels and runs ahead, preparing the next
    batch while the GPU computes. Reading a value on the host (`loss.item()`) makes the host
    wait until every queued kernel has finished, then the GPU idles while the host launches
    the next step. One sync per step removes the overlap between host and device for the whole
    run; with small models or fast GPUs that is a large share of the step time.

    Every sync in the step has to go for the overlap to return, so each one is reported. That
    includes a `loss.item()` after `scaler.step(optimizer)`: `GradScaler` reads its inf check
    on the host with most optimizers, but the `.item()` still waits for the optimizer's
    kernels, and it is the only sync left with a fused optimizer (`fused=True`), which takes
    the check on the device. A tensor used as an `if` condition (`if torch.isnan(loss): ...`)
    is reported too: the `if` must know the value, so it is `bool(t)` on every step. Check it
    every N steps instead, or keep the decision on the device (`torch.where`, or skip the
    update with a `GradScaler`, which already ignores steps with non-finite gradients).

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total_loss += loss.item()
    ```

    ## Use instead
    ```python
    total_loss = torch.zeros((), device="cuda")
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total_loss += loss.detach()
        if step % log_every == 0:
            print(f"step {step}: loss {total_loss.item() / (step + 1):.4f}")
    ```

    Accumulate on the device with `.detach()` (which also frees the autograd graph, see
    TPL501) and read the value every N steps or once after the loop. For progress bars, update
    the postfix under the same periodic guard.

    ## Fix safety
    There is no automatic fix: where to accumulate and how often to read depends on what the
    code does with the value.

    The sources disagree here, and this rule follows the device-side accumulation:
    - PyTorch's FAQ ("My model reports 'cuda runtime error(2): out of memory'") suggests
      `total_loss += float(loss)` so the history does not keep the graph alive. That fixes
      the memory leak but syncs on every step, which this rule reports.
    - Seed document 001 (tip 2) says to always store `loss.item()` for the same reason; seed
      document 000 ("불필요한 CPU-GPU 왕복 피하기") shows that `.item()` on every step is a
      GPU-to-CPU round trip and accumulates on the GPU instead.
    `loss.detach()` gives both: the graph is freed and nothing waits for the GPU.

    ## References
    - PyTorch docs, [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    - PyTorch Performance Tuning Guide, "Avoid unnecessary CPU-GPU synchronization"
    - PyTorch FAQ, [My model reports "cuda runtime error(2): out of memory"](https://pytorch.org/docs/stable/notes/faq.html)
    - `torch.cuda.set_sync_debug_mode`, which reports these syncs at run time
    - Seed document 000, "성능 최적화 팁", section "불필요한 CPU-GPU 왕복 피하기"
    - Seed document 001, "PyTorch 모델 훈련 속도를 획기적으로 높이는 7가지 최적화 기법", tip 2
    """

    code = "TPL201"
    name = "sync-in-training-loop"
    message = (
        "{what} on every training step makes the host wait for the GPU; accumulate on the "
        "device with `.detach()` and read it every N steps"
    )
    default = True

    def sites(self, facts: FileFacts) -> list[HostSync]:
        return HostSyncs(facts).sites()

    def selects(self, facts: FileFacts, loop: LoopFacts) -> bool:
        return loop.is_training


class SyncInEvalLoop(_PerIterationRule):
    """The host waits for the GPU on every evaluation batch (`.item()`, `.cpu()`, ...).

    ## What it does
    Checks for the same host syncs as TPL201 (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`,
    `float(t)`/`int(t)`/`bool(t)`, `print` of a tensor, a tensor used as a condition) on
    every iteration of an evaluation loop: a loop over a `DataLoader` that calls a model and
    has no backward or optimizer step. Periodic guards, calls after the loop and CPU-only
    modules are silent, as for TPL201.

    ## Why is this bad?
    Each sync stops the host from queueing the next batch's forward pass while the GPU is
    busy, so the GPU idles between batches. Evaluation runs are usually short, which is why
    this rule is opt-in; on large validation sets the idle time adds up.

    ## Example
    ```python
    with torch.no_grad():
        for x, y in val_loader:
            logits = model(x.cuda())
            correct += (logits.argmax(1) == y.cuda()).sum().item()
    ```

    ## Use instead
    ```python
    correct = torch.zeros((), dtype=torch.long, device="cuda")
    with torch.no_grad():
        for x, y in val_loader:
            logits = model(x.cuda())
            correct += (logits.argmax(1) == y.cuda()).sum()
    accuracy = correct.item() / len(val_loader.dataset)
    ```

    ## Fix safety
    There is no automatic fix. Collect predictions on the device (`torch.cat` once after the
    loop) and move them to the host once.

    ## References
    - PyTorch docs, [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    - PyTorch Performance Tuning Guide, "Avoid unnecessary CPU-GPU synchronization"
    - Seed document 000, "성능 최적화 팁", section "불필요한 CPU-GPU 왕복 피하기"
    """

    code = "TPL202"
    name = "sync-in-eval-loop"
    message = (
        "{what} on every evaluation batch makes the host wait for the GPU; accumulate on the "
        "device and read it once after the loop"
    )
    default = False

    def sites(self, facts: FileFacts) -> list[HostSync]:
        return HostSyncs(facts).sites()

    def selects(self, facts: FileFacts, loop: LoopFacts) -> bool:
        return (
            loop.iterates_dataloader
            and not loop.is_training
            and any(facts.tensors.is_module_call(call) for call in loop.own_calls)
        )


class DataDependentShapeInLoop(_PerIterationRule):
    """An operation whose output size depends on the data runs on every training step.

    ## What it does
    In a module that uses CUDA, checks for `.nonzero()` / `torch.nonzero`,
    `torch.masked_select`, `torch.unique` and boolean-mask reads (`t[t > 0]`, `t[mask]`) on
    every iteration of a training loop. Periodic guards, code outside training loops and
    assignments through a mask are silent (`t[mask] = 0` with a scalar runs as
    `masked_fill_`, without a sync).

    ## Why is this bad?
    The size of the result is only known once the GPU has counted the selected elements, and
    the host needs that size to allocate the output. So each of these operations is a host
    sync, with the same cost as an `.item()` (see TPL201), and it also gives tensors of a
    different shape every step, which defeats CUDA graphs and makes `torch.compile` break the
    graph or recompile.

    ## Example
    ```python
    for x, y in loader:
        logits = model(x.cuda())
        valid = y.cuda() != IGNORE
        loss = criterion(logits[valid], y.cuda()[valid])
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        logits = model(x.cuda())
        loss = criterion(logits, y.cuda())  # criterion = nn.CrossEntropyLoss(ignore_index=IGNORE)
        loss.backward()
        optimizer.step()
    ```

    Keep shapes fixed: `ignore_index`, `torch.where(mask, x, 0)`, `x.masked_fill(~mask, 0)`,
    or multiply by the mask and divide by `mask.sum()`.

    ## Fix safety
    There is no automatic fix: the fixed-shape version depends on what consumes the result.

    ## References
    - PyTorch docs, [`torch.cuda.set_sync_debug_mode`](https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html) (which lists `nonzero` among the syncing operations)
    - PyTorch docs, [`torch.nonzero`](https://pytorch.org/docs/stable/generated/torch.nonzero.html) ("requires a host-device synchronization" on CUDA)
    - Seed document 000, "성능 최적화 팁", section "불필요한 CPU-GPU 왕복 피하기"
    """

    code = "TPL203"
    name = "data-dependent-shape-in-loop"
    message = (
        "{what} in a training loop makes the host wait for the GPU to learn the output size; "
        "keep shapes fixed (`torch.where`, `masked_fill`, `ignore_index`)"
    )
    default = False

    def sites(self, facts: FileFacts) -> list[HostSync]:
        return DataDependentShapes(facts).sites()

    def selects(self, facts: FileFacts, loop: LoopFacts) -> bool:
        return loop.is_training


class PythonLoopOverTensorElements(Rule):
    """A Python `for` loop walks a tensor element by element.

    ## What it does
    Checks for `for i in range(len(t))`, `range(t.shape[k])` and `range(t.size(k))` over a
    tensor expression `t` whose body indexes tensors with `i` (`t[i]`, `out[i] = ...`,
    `t[:, i]`). Training, evaluation and DataLoader loops, bodies that call a model or a
    criterion, and loops over Python lists are not reported.

    ## Why is this bad?
    Each `t[i]` is a separate operation: a kernel launch on the GPU (and a sync when the
    element is read on the host), a dispatcher round trip on the CPU. A loop over ten thousand
    elements launches tens of thousands of tiny kernels that a single vectorised operation
    would replace.

    ## Example
    ```python
    for i in range(len(scores)):
        scores[i] = scores[i] * weights[i]
    ```

    ## Use instead
    ```python
    scores = scores * weights
    ```

    ## Fix safety
    There is no automatic fix: vectorising a loop body is a rewrite only its author can
    check.

    ## References
    - PyTorch docs, [Broadcasting semantics](https://pytorch.org/docs/stable/notes/broadcasting.html)
    - PyTorch docs, [Tensor indexing](https://pytorch.org/docs/stable/tensor_view.html)
    - Seed document 000, "성능 최적화 팁", section "CPU vs GPU 성능 비교" (small operations
      do not pay for the launch)
    """

    code = "TPL204"
    name = "python-loop-over-tensor-elements"
    message = (
        "Python loop over the elements of a tensor runs one tiny operation per element; "
        "vectorise it"
    )
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for loop in facts.loops.all:
            node = loop.node
            if not isinstance(node, cst.For) or not isinstance(node.target, cst.Name):
                continue
            if loop.is_hot or not self._ranges_over_tensor(facts, node.iter):
                continue
            body_calls = [c for c in facts.index.calls if facts.scopes.within_same_scope(c, node.body)]
            if any(facts.tensors.is_module_call(call) for call in body_calls):
                continue
            if self._indexes_tensor_with(facts, node, node.target.value):
                yield self.finding(node)

    def _ranges_over_tensor(self, facts: FileFacts, iterated: cst.BaseExpression) -> bool:
        """`range(len(t))`, `range(t.shape[k])`, `range(t.size(k))`, also with a start."""
        if not isinstance(iterated, cst.Call) or not 1 <= len(iterated.args) <= 2:
            return False
        if facts.names.call_name(iterated) != "builtins.range" or any(
            arg.star or arg.keyword for arg in iterated.args
        ):
            return False
        stop = iterated.args[-1].value
        if isinstance(stop, cst.Call) and facts.names.call_name(stop) == "builtins.len":
            sized = stop.args[0].value if len(stop.args) == 1 else None
        elif isinstance(stop, cst.Subscript) and isinstance(stop.value, cst.Attribute):
            sized = stop.value.value if stop.value.attr.value == "shape" else None
        elif isinstance(stop, cst.Call) and isinstance(stop.func, cst.Attribute) and stop.args:
            sized = stop.func.value if stop.func.attr.value == "size" else None
        else:
            sized = None
        return sized is not None and is_tensor_value(facts, sized)

    def _indexes_tensor_with(self, facts: FileFacts, loop: cst.For, variable: str) -> bool:
        """A subscript in the loop body whose index is the loop variable, of a tensor."""
        for subscript in facts.index.subscripts:
            if not facts.scopes.within_same_scope(subscript, loop.body):
                continue
            indices = [
                element.slice.value
                for element in subscript.slice
                if isinstance(element.slice, cst.Index)
            ]
            uses_variable = any(
                isinstance(index, cst.Name) and index.value == variable for index in indices
            )
            if uses_variable and is_tensor_value(facts, subscript.value):
                return True
        return False


RULES = (SyncInTrainingLoop, SyncInEvalLoop, DataDependentShapeInLoop, PythonLoopOverTensorElements)
