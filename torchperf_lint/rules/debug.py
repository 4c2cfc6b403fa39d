"""TPL8xx — measurement and debugging left on."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.arguments import MISSING, UNKNOWN, argument_value, literal_value
from torchperf_lint.facts.guards import CLOCKS
from torchperf_lint.facts.index import descendants
from torchperf_lint.facts.names import dotted_name, last_identifier
from torchperf_lint.rules.base import Finding, NodeEdit, ProposedFix, Rule

CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool", "builtins.print"})
# PyTorch calls that copy tensors to the host, so the host waits for the kernels producing them.
_HOST_COPIES = frozenset({"torch.save"})
# `nn.Module` methods that set a mode flag on the module and its children.
_MODE_SWITCHES = frozenset({"train", "eval"})

ANOMALY_SWITCHES = frozenset({
    "torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly",
})
ANOMALY_CONTEXTS = frozenset({
    "torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly",
})
GRADIENT_CHECKS = frozenset({
    "torch.autograd.gradcheck", "torch.autograd.gradgradcheck",
    "torch.autograd.gradcheck.gradcheck", "torch.autograd.gradcheck.gradgradcheck",
})
PROFILERS = frozenset({
    "torch.profiler.profile", "torch.autograd.profiler.profile", "torch.autograd.profiler.emit_nvtx",
})


class ExecutionOrder:
    """Orders nodes of one module by when they finish running (operands before operators).

    The index's parent map is filled in pre-order; a node finishes after everything in its
    subtree, so `(last descendant, -pre-order)` sorts `model(x)` before `model(x).item()`.
    """

    def __init__(self, facts: FileFacts) -> None:
        self.parents = facts.index.parents
        self.preorder = facts.index.preorder
        self.subtree_end = facts.index.subtree_end
        # The calls and binary operations (what may run inside a timed interval), in pre-order.
        self._operations = sorted(
            [*facts.index.calls, *facts.index.binary_operations], key=self.preorder.__getitem__
        )
        self._operation_positions = [self.preorder[node] for node in self._operations]

    def finish(self, node: cst.CSTNode) -> tuple[int, int]:
        return self.subtree_end[node], -self.preorder[node]

    def between(self, node: cst.CSTNode, start: cst.CSTNode, end: cst.CSTNode) -> bool:
        """`node` runs after `start` finished and before `end` is read."""
        return self.preorder[node] > self.subtree_end[start] and self.finish(node) < self.finish(end)

    def operations_between(self, start: cst.CSTNode, end: cst.CSTNode) -> list[cst.CSTNode]:
        """The calls and binary operations that run after `start` finished and before `end`
        is read (`between`), in pre-order: only those that start after `start`'s subtree and
        before the end of `end`'s are looked at, not every one of the module."""
        first = bisect_right(self._operation_positions, self.subtree_end[start])
        last = bisect_right(self._operation_positions, self.subtree_end[end])
        return [node for node in self._operations[first:last] if self.between(node, start, end)]


@dataclass(frozen=True)
class TimedInterval:
    """`start = clock()` ... `clock() - start`: the two clock reads and the start's name."""

    start: cst.Call
    end: cst.Call
    start_name: cst.BaseExpression


class CudaTimingWithoutSync(Rule):
    """Wall-clock timing of CUDA work that ends without waiting for the GPU.

    ## What it does
    Checks for an interval timed with `time.time()`, `time.perf_counter()` or
    `time.monotonic()` that contains CUDA work (a call of a model object or a `torch.*`
    call, `backward`, an optimizer step) and whose end is read with no synchronisation after
    that work: `torch.cuda.synchronize()` (or any backend's, such as `torch.mps.synchronize()`),
    `event.synchronize()`, a host sync such as `.item()` or `.cpu()` on a result,
    `torch.save`, which copies the tensors to the host, or a blocking copy of host memory to
    the GPU (`torch.from_numpy(x).to(device)` without `non_blocking=True`), which PyTorch
    follows with a synchronisation of the stream. A wait is never counted as work, and a
    method whose name merely contains "model" (`self.build_model(cfg)`) is not a model call.
    Nor is work on tensors known to be in host memory: what `torch.distributed.rpc` received
    from another process (`rref.to_here()`, `rpc.rpc_sync(...)`, `fut.wait()` of an
    `rpc.rpc_async` future), whose remote work is complete, what a process pool's workers
    return (`pool.map(load, paths)`: a dataset loading its files in parallel), and what is
    computed from it
    (`torch.stack` of the received values), or what an object holds when every value it is
    given is built in host memory (a data module's `self.train_idx =
    torch.from_numpy(split)` and its `self.train_idx.share_memory_()`: a timed dataset read,
    not GPU work; a registered buffer moves with its module and counts); nor is switching a module's mode
    (`policy.train()`, `model.eval()`), which queues nothing and waits for nothing, so an
    evaluation rollout timed up to `policy.train()` is timed up to the rollout's own waits.
    Nor is an interval in the CPU branch of a device dispatch (`elif device_type == "cpu":`
    of a timer that uses CUDA events on its CUDA branch, the `else` of `if device.type ==
    "cuda":` or of `if torch.cuda.is_available():`, also of a name bound to such tests,
    `use_cuda_events = device.startswith("cuda") and torch.cuda.is_available()`): CPU work
    runs synchronously. Nor is the call of a model that its function builds and never moves,
    on inputs in host memory (`net = ShuffleV2(num_classes=100)`, `x = torch.randn(2, 3,
    32, 32)`, then `net(x)`: a model file's `__main__` smoke test, which runs on the CPU).
    Reported at the clock read that ends the interval.

    Not reported: rolling timers of a training or DataLoader loop (`t1 = time.time();
    dt = t1 - t0; t0 = t1`, `end = time.time()` at the end of each iteration) and per-iteration
    timers restarted in the same loop: over many iterations the full launch queue throttles
    the host, and they measure throughput correctly. Work that runs inside a training loop
    is not counted either (timing a whole training run is off by one queue's worth, which does
    not matter), nor are calls of your own functions that may synchronise inside.

    Test files are not checked.

    ## Why is this bad?
    CUDA kernels run asynchronously: `model(x)` returns as soon as the kernels are queued.
    Without a synchronisation before the end read, the interval measures how long Python took
    to *launch* the work, not how long the GPU took to run it, and the numbers are too small
    by anything up to the whole run.

    ## Example
    ```python
    start = time.perf_counter()
    for _ in range(100):
        out = model(x)
    elapsed = time.perf_counter() - start
    ```

    ## Use instead
    ```python
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(100):
        out = model(x)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    ```
    or `torch.utils.benchmark.Timer(...).timeit(100)`, which synchronises and warms up for you.

    ## Fix safety
    No fix: where to synchronise, and whether to warm up first, depends on what is measured.

    ## References
    - PyTorch docs, [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    - PyTorch docs, [torch.utils.benchmark](https://pytorch.org/docs/stable/benchmark_utils.html)
    - PyTorch tutorial, [PyTorch Benchmark](https://pytorch.org/tutorials/recipes/recipes/benchmark.html):
      `torch.utils.benchmark.Timer` runs warm-ups and synchronises CUDA for you
    """

    code = "TPL801"
    name = "cuda-timing-without-sync"
    message = "Timed interval ends without `torch.cuda.synchronize()`: it measures kernel launches, not GPU time"
    default = True

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if not any(facts.names.call_name(call) in CLOCKS for call in facts.index.calls):
            return
        if not self.runs_on_cuda(facts):
            return
        order = ExecutionOrder(facts)
        reported: set[cst.Call] = set()
        for interval in self._intervals(facts, order):
            if interval.end not in reported and self._unsynchronised(facts, order, interval):
                reported.add(interval.end)
                yield self.finding(interval.end)

    def _clock_reads(self, facts: FileFacts, expression: cst.BaseExpression) -> list[cst.Call]:
        """The clock calls `expression` is, or the name it reads is bound to."""
        if isinstance(expression, cst.Call):
            return [expression] if facts.names.call_name(expression) in CLOCKS else []
        return [
            value for value in facts.scopes.bound_values(expression)
            if isinstance(value, cst.Call) and facts.names.call_name(value) in CLOCKS
        ]

    def _intervals(self, facts: FileFacts, order: ExecutionOrder) -> Iterator[TimedInterval]:
        for operation in facts.index.binary_operations:
            if not isinstance(operation.operator, cst.Subtract):
                continue
            if not isinstance(operation.right, (cst.Name, cst.Attribute)):
                continue
            function = facts.scopes.enclosing_function(operation)
            ends = [
                read for read in self._clock_reads(facts, operation.left)
                if order.finish(read) < order.finish(operation)
                and facts.scopes.enclosing_function(read) is function
            ]
            starts = self._clock_reads(facts, operation.right)
            if not ends or not starts:
                continue
            end = max(ends, key=order.finish)
            earlier = [
                start for start in starts
                if order.finish(start) < order.finish(end)
                and facts.scopes.enclosing_function(start) is function
            ]
            if earlier:
                yield TimedInterval(max(earlier, key=order.finish), end, operation.right)

    def _unsynchronised(self, facts: FileFacts, order: ExecutionOrder, interval: TimedInterval) -> bool:
        if facts.guards.cpu_branch(interval.end):
            return False
        end_loops = facts.loops.enclosing_loops(interval.end)
        start_loops = facts.loops.enclosing_loops(interval.start)
        nested_only = False
        if end_loops:
            loop = end_loops[0]
            rebinds_start = any(
                facts.index.contains(loop.node, value) for value in facts.scopes.bound_values(interval.start_name)
            )
            if not rebinds_start or loop.is_hot or not start_loops or start_loops[0] is not loop:
                # Cumulative or rolling timers of a loop: over many iterations they measure
                # throughput. Only a complete loop inside the interval is a benchmark.
                return False
            nested_only = True
        elif start_loops:
            return False
        function = facts.scopes.enclosing_function(interval.end)
        last_work: tuple[int, int] | None = None
        last_sync: tuple[int, int] | None = None
        for node in order.operations_between(interval.start, interval.end):
            if facts.scopes.enclosing_function(node) is not function:
                continue
            inner_loops = [
                loop for loop in facts.loops.enclosing_loops(node)
                if order.between(loop.node, interval.start, interval.end)
            ]
            if self._switches_mode(facts, node):
                continue
            # A wait is never work: `torch.mps.synchronize()` queues nothing for the clock.
            if not self._waits(facts, node) and self._is_cuda_work(facts, node):
                if any(loop.is_hot for loop in inner_loops) or (nested_only and not inner_loops):
                    continue
                last_work = max(last_work or order.finish(node), order.finish(node))
            elif self._may_synchronise(facts, node):
                last_sync = max(last_sync or order.finish(node), order.finish(node))
        return last_work is not None and (last_sync is None or last_sync < last_work)

    def _is_cuda_work(self, facts: FileFacts, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BinaryOperation):
            return isinstance(node.operator, cst.MatrixMultiply) and self._is_device_tensor(
                facts, node
            )
        if not isinstance(node, cst.Call):
            return False
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        if method == "backward":
            return True
        if method == "step" and facts.loops.is_optimizer_or_scaler(node.func.value):
            return True
        if facts.tensors.is_module_call(node):
            return not self._host_model_call(facts, node)
        return self._is_device_tensor(facts, node)

    @staticmethod
    def _host_model_call(facts: FileFacts, call: cst.Call) -> bool:
        """`net(x)` where `net` is only bound to a construction in its scope (`net =
        ShuffleV2(num_classes=100)`), nothing there moves it (`net.cuda()`, `net.to(device)`)
        and every argument is in host memory (`x = torch.randn(2, 3, 32, 32)`): a model file's
        `__main__` smoke test, which runs on the CPU."""
        if type(call.func) is not cst.Name:
            return False
        bindings = facts.scopes.bound_values(call.func)
        if not bindings or not all(
            type(value) is cst.Call and not _moves(value) for value in bindings
        ):
            return False
        scope = facts.scopes.enclosing_function(call)
        if any(
            _moves(other) and dotted_name(other.func.value) == call.func.value
            and facts.scopes.enclosing_function(other) is scope
            for other in facts.index.calls
        ):
            return False
        return all(
            literal_value(arg.value) is not UNKNOWN
            or facts.host_syncs.is_host_value(arg.value, containers=False)
            for arg in call.args
        )

    @staticmethod
    def _is_device_tensor(facts: FileFacts, node: cst.BaseExpression) -> bool:
        """A tensor not known to be in host memory (`torch.stack` of what RPC received is)."""
        return facts.tensors.is_tensor(node) and not facts.host_syncs.is_host_value(node)

    @staticmethod
    def _switches_mode(facts: FileFacts, node: cst.CSTNode) -> bool:
        """`policy.train()`, `model.eval()`: a module's mode flag is set, nothing is queued or read."""
        return (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _MODE_SWITCHES
            and facts.tensors.is_module_reference(node.func.value)
        )

    @staticmethod
    def _waits(facts: FileFacts, node: cst.CSTNode) -> bool:
        """A call that always makes the host wait: any `synchronize()`, a host read, a barrier,
        `torch.save` (which copies the tensors to the host), or a blocking copy of host
        memory to the device (`torch.from_numpy(x).to(device)`)."""
        return isinstance(node, cst.Call) and (
            facts.host_syncs.always_waits(node)
            or facts.names.call_name(node) in _HOST_COPIES
            or facts.host_syncs.uploads_and_waits(node)
        )

    def _may_synchronise(self, facts: FileFacts, node: cst.CSTNode) -> bool:
        """A call that waits for the device, or code this rule cannot see into (the user's own
        functions and methods), which may read a result: when in doubt, assume it synchronises."""
        if not isinstance(node, cst.Call):
            return False
        if self._waits(facts, node):
            return True
        if facts.tensors.is_module_call(node) or last_identifier(node.func) == "backward":
            return False
        qualified = facts.names.call_name(node)
        if qualified is None:
            # `x.to(device)` copies from pageable memory wait for the queue as well.
            return not (isinstance(node.func, cst.Attribute) and facts.tensors.is_tensor(node.func.value))
        if qualified.startswith("torch."):
            return False
        passes_tensor = any(facts.tensors.is_tensor(arg.value) for arg in node.args)
        formats = any(isinstance(arg.value, cst.FormattedString) for arg in node.args)
        return passes_tensor or (qualified in CONVERSIONS and formats)


def _moves(call: cst.Call) -> bool:
    """`net.cuda()`, `net.to(device)`: a move to a device (or any other `.to`)."""
    return type(call.func) is cst.Attribute and call.func.attr.value in ("cuda", "to")


def _has_multiline_string(node: cst.CSTNode, facts: FileFacts) -> bool:
    strings = (
        child for child in (node, *descendants(node))
        if isinstance(child, (cst.SimpleString, cst.FormattedString))
    )
    return any("\n" in facts.code(string) for string in strings)


class DebugApiEnabled(Rule):
    """Autograd anomaly detection or gradient checking left in training code.

    ## What it does
    Checks for `torch.autograd.set_detect_anomaly(True)`, `with torch.autograd.detect_anomaly():`
    and `torch.autograd.gradcheck`/`gradgradcheck` outside test files. Calls under a flag
    (`if args.detect_anomaly:`) and `set_detect_anomaly(False)` are not reported, nor a
    gradient check in a module that trains nothing, outside code that runs every step (a
    custom operator's self-test script, `DCNv2/test.py`: a test by another name).

    ## Why is this bad?
    Anomaly detection records a Python traceback for every autograd node in the forward pass
    and checks every backward output for NaN, which synchronises with the GPU; training runs
    many times slower. `gradcheck` evaluates the function with finite differences in double
    precision: a test, not something to run on every start of a training script.

    ## Example
    ```python
    torch.autograd.set_detect_anomaly(True)
    for x, y in loader:
        ...
    ```

    ## Use instead
    ```python
    if args.detect_anomaly:
        torch.autograd.set_detect_anomaly(True)
    ```

    ## Fix safety
    Unsafe: the fix removes the call (or the `with` line, keeping its body), so a NaN that
    anomaly detection would have pinpointed now surfaces later, without its forward traceback.
    No fix is offered when removal would leave code that depends on the call's result.

    ## References
    - PyTorch docs, [Anomaly detection](https://pytorch.org/docs/stable/autograd.html#anomaly-detection)
      ("This mode should be enabled only for debugging as the different tests will slow down your program execution.")
    - PyTorch Performance Tuning Guide, [Disable debugging APIs](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#disable-debugging-apis)
    """

    code = "TPL802"
    name = "debug-api-enabled"
    message = "Debugging API `{api}` slows every step; remove it or put it behind a debug flag"
    default = True
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.index.calls:
            qualified = facts.names.call_name(call)
            if qualified in ANOMALY_SWITCHES:
                if argument_value(call, "mode", ("mode", "check_nan")) is not True:
                    continue
            elif qualified in GRADIENT_CHECKS:
                if not (facts.loops.training_loops or facts.steps.runs_per_step(call)):
                    continue
            elif qualified not in ANOMALY_CONTEXTS:
                continue
            if facts.guards.under_flag(call):
                continue
            api = qualified.rsplit(".", 1)[-1]
            yield self.finding(call, self._removal(facts, call), api=api)

    def _removal(self, facts: FileFacts, call: cst.Call) -> ProposedFix | None:
        parent = facts.index.parents.get(call)
        if isinstance(parent, cst.WithItem):
            return self._unwrap(facts, parent)
        if not isinstance(parent, cst.Expr):
            return None  # the result is used (`assert gradcheck(...)`, `ok = ...`)
        line = facts.index.parents.get(parent)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        block = facts.index.parents.get(line)
        message = "Remove the debugging call"
        if isinstance(block, cst.IndentedBlock) and len(block.body) == 1:
            return ProposedFix(Applicability.UNSAFE, message, (NodeEdit(line, "pass"),))
        return ProposedFix(Applicability.UNSAFE, message, (NodeEdit(line, mode="delete_lines"),))

    def _unwrap(self, facts: FileFacts, item: cst.WithItem) -> ProposedFix | None:
        """Replace `with detect_anomaly(): body` by the body, one level less indented."""
        statement = facts.index.parents.get(item)
        if not isinstance(statement, cst.With) or len(statement.items) != 1 or item.asname is not None:
            return None
        if _has_multiline_string(statement.body, facts):
            return None  # re-indenting would change the string's text
        body = statement.body
        if isinstance(body, cst.SimpleStatementSuite):
            # Each small statement renders with its own `;`; the line's comment stays in place.
            content = "".join(facts.code(small) for small in body.body).strip()
        else:
            text = "".join(facts.code(line) for line in body.body).rstrip("\n")
            indentation = "".join(facts.indents(statement))
            first, *rest = text.split("\n")
            content = "\n".join([first, *(indentation + line if line else line for line in rest)])
        return ProposedFix(
            Applicability.UNSAFE, "Remove the anomaly-detection context, keeping its body",
            (NodeEdit(statement, content),),
        )


class ProfilerLeftOn(Rule):
    """A profiler wraps a whole training loop.

    ## What it does
    Checks for `torch.profiler.profile(...)`, `torch.autograd.profiler.profile(...)` and
    `torch.autograd.profiler.emit_nvtx(...)` used as a `with` around a training loop.
    Not reported: profilers with a `schedule=` (they record a few steps and then idle, as
    the PyTorch docs recommend), a non-literal `enabled=`, or a `with` under a flag.

    Test files are not checked.

    ## Why is this bad?
    While it records, the profiler hooks every operator call and keeps every event in memory:
    each step is slower, and a long run's trace grows without bound.

    ## Example
    ```python
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for x, y in loader:
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    with torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3)) as prof:
        for x, y in loader:
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            prof.step()
    ```

    ## Fix safety
    No fix: the profile may be the point of the script; only the author knows.

    ## References
    - PyTorch docs, [torch.profiler](https://pytorch.org/docs/stable/profiler.html) (`schedule`)
    - PyTorch Performance Tuning Guide, [Disable debugging APIs](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#disable-debugging-apis)
    """

    code = "TPL803"
    name = "profiler-left-on"
    message = "Profiler records the whole training loop; use a `schedule=` or profile a few steps only"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for statement in facts.index.withs:
            for item in statement.items:
                call = item.item
                if not isinstance(call, cst.Call) or facts.names.call_name(call) not in PROFILERS:
                    continue
                schedule = argument_value(call, "schedule")
                enabled = argument_value(call, "enabled")
                if (schedule is not MISSING and schedule is not None) or enabled not in (MISSING, True):
                    continue
                if facts.guards.under_flag(call) or not self._wraps_training(facts, statement):
                    continue
                yield self.finding(call)

    @staticmethod
    def _wraps_training(facts: FileFacts, statement: cst.With) -> bool:
        return any(
            facts.scopes.within_same_scope(loop.node, statement) for loop in facts.loops.training_loops
        )


RULES = (CudaTimingWithoutSync, DebugApiEnabled, ProfilerLeftOn)
