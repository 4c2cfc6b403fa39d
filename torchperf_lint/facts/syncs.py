"""Where the host waits for the device (RULES.md TPL2xx, TPL801).

Two kinds of place are collected once per file: reads of a value that may live on the device
(`.item()`, `float(t)`, `print(t)`, a tensor used as a condition), and operations whose output
size depends on the data (`nonzero`, boolean-mask indexing), where the host must read a count.
Both lean towards *not a sync* when unsure, since they feed rules that report syncs.
`always_waits` is the opposite lean, for rules that stay silent once the host has waited.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import libcst as cst

from torchperf_lint.facts.arguments import (
    SIGNATURES,
    UNKNOWN,
    argument_value,
    bound_argument,
    literal_value,
)
from torchperf_lint.facts.devices import is_accelerator_target, is_cpu_device, is_dtype
from torchperf_lint.facts.guards import CLOCKS, conjuncts, none_compared, switch_tested
from torchperf_lint.facts.index import (
    SCOPE_TYPES,
    ScopeNode,
    SyntaxIndex,
    children,
    descendants,
    statements_of,
)
from torchperf_lint.facts.loops import LoopFacts, Loops, unwrapped_iterable
from torchperf_lint.facts.names import (
    NameResolver,
    dotted_name,
    last_identifier,
    root_name,
    target_names,
)
from torchperf_lint.facts.scopes import Scopes
from torchperf_lint.facts.tensors import TENSOR_FACTORIES, TensorExpressions, is_none

# Tensor methods that copy a value to the host, so the host waits for the GPU to produce it.
READING_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
# The reads that copy a whole tensor back, not one number.
_ARRAY_COPIES = READING_METHODS - {"item"}
# Methods that hold the host until every rank reaches them (`dist.barrier()`, Fabric's and
# Lightning's `barrier()`, `accelerator.wait_for_everyone()`).
BARRIER_METHODS = frozenset({"barrier", "wait_for_everyone"})
# Calls that make the host wait whatever they are called on: explicit synchronisation, the
# reads above, and distributed barriers, which wait for the collective's kernels too.
WAITING_METHODS = READING_METHODS | frozenset({
    "synchronize", "elapsed_time", "block_until_ready", "wait_device_ops",
}) | BARRIER_METHODS
# The legacy constructors (`torch.Tensor(obs)`, `torch.LongTensor(ids)`): like a factory
# without `device=`, they build in host memory (`torch.cuda.FloatTensor` does not).
_LEGACY_CONSTRUCTORS = frozenset({
    "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
    "IntTensor", "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor",
})
# A comment that says its line waits for the device on purpose: `# sync`, `# synchronization`,
# `# force a sync`.
_SYNCHRONIZES = re.compile(r"#\s*(?:force\s+(?:a\s+)?)?sync(?:hroni[sz](?:e|es|ation))?\b", re.IGNORECASE)
# Tensors read from a file or a buffer (`torch.from_file(path, False, 256)`): in host memory
# unless built with `device=`.
_FILE_READS = frozenset({"from_file", "frombuffer"})
# Libraries whose results live in host memory.
_HOST_LIBRARIES = ("numpy.", "math.")
# Methods that may put their result on a device (`.to()` unless it only converts).
_DEVICE_MOVES = frozenset({"cuda", "to", "type_as", "to_device"})
# How many names deep a host value is followed (`b = a[0]`, `c = b.sum()`).
_MAX_HOST_DEPTH = 4
# Builtins that convert a tensor to a Python value (`Tensor.__float__` and friends read it).
_CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})
# Builtins that make a host value into another holding the same values.
_HOST_CONVERSIONS = _CONVERSIONS | frozenset({"builtins.list", "builtins.tuple"})
# Methods through which a host copy stays the values a consumer is handed: NumPy's and the
# tensor's conversions and reshapes (`q.argmax(1).cpu().numpy().clip(lo, hi)`).
_HOST_VALUE_STEPS = frozenset({
    "numpy", "tolist", "item", "clip", "clamp", "astype", "reshape", "view", "squeeze",
    "unsqueeze", "flatten", "ravel", "copy", "round", "long", "int", "float", "double",
    "tobytes",
})
# Calls that decode host bytes into a Python object: a device buffer read for one carries an
# object (pickled, sent to or gathered from other ranks), not a result.
# Operations whose output size depends on the values: the host reads it before it can
# allocate the result (`nonzero`, `unique`, `masked_select`), a wait like `.item()`.
_DATA_DEPENDENT_SIZES = frozenset({
    "nonzero", "argwhere", "unique", "unique_consecutive", "masked_select",
})
# The calls that give a prioritized replay buffer its new priorities, kept on the host.
_PRIORITY_UPDATES = frozenset({"update_priorities", "update_priority", "update_errors"})
_STREAM_CONTEXTS = frozenset({"torch.cuda.stream", "torch.cuda.StreamContext"})
_GATHERS = frozenset({"torch.distributed.all_gather", "torch.distributed.gather"})
_ELEMENT_COUNTS = frozenset({"numel", "len"})
_BYTE_DECODERS = frozenset({"builtins.bytes", "builtins.bytearray", "pickle.loads"})
# `math` functions of a number, which read a one-element tensor as `float(t)` does.
_MATH_TESTS = frozenset({"math.isnan", "math.isinf", "math.isfinite"})
# `GradScaler` methods that read the scale with `.item()` while the scaler is enabled.
_SCALE_READS = frozenset({"get_scale", "state_dict"})
_GRAD_SCALERS = ("torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.amp.grad_scaler.")
# `range(n)` converts its bounds with `__index__`, which reads a tensor's value as `int()` does.
_RANGE = "builtins.range"
# Builtins that format their argument: formatting a tensor reads its values.
_FORMATTERS = frozenset({"builtins.str", "builtins.repr", "builtins.format"})
# Calls that format what they are given for display: a progress bar's postfix or description,
# and the logging levels that are emitted by default.
_FORMATTING_SINKS = frozenset({
    "set_postfix", "set_postfix_str", "set_description", "set_description_str",
})
_LOGGING_METHODS = frozenset({"info", "warning", "warn", "error", "critical", "exception"})
# A tensor's sizes (`x.size(-1)`, `x.shape[0]`, `x.numel()`): Python ints, read from the
# tensor's metadata on the host, without waiting for the device.
_SIZES = frozenset({"size", "shape", "dim", "ndim", "ndimension", "numel", "nelement"})
# NumPy functions that return an array of indices or values (not a scalar); `choice` and
# `randint` only with a size (`np.random.randint(0, n, size=b)`).
_NUMPY_ARRAYS = frozenset({
    "numpy.arange", "numpy.array", "numpy.asarray", "numpy.argsort", "numpy.flatnonzero",
    "numpy.concatenate", "numpy.random.permutation",
})
# NumPy array methods that return an array.
_NUMPY_ARRAY_METHODS = frozenset({"reshape", "ravel", "flatten", "copy", "astype", "squeeze"})
_NUMPY_SIZED_ARRAYS = {
    "numpy.random.choice": ("a", "size"), "numpy.random.randint": ("low", "high", "size"),
}
# Calls after which PyTorch's factories may build tensors on a GPU, `device=` or not.
_DEFAULT_DEVICE_SETTERS = frozenset({"torch.set_default_tensor_type", "torch.set_default_device"})
# Tensor methods whose result lives where their tensor does.
_DEVICE_KEEPING_METHODS = frozenset({
    "reshape", "view", "flatten", "permute", "transpose", "contiguous", "detach", "clone",
    "squeeze", "unsqueeze", "expand", "long", "float", "half", "bfloat16", "int", "bool",
})
# Operations that reshape, combine or convert tensors: little work queued on the device.
_LIGHT_OPERATIONS = frozenset({
    "cat", "stack", "view", "reshape", "flatten", "unsqueeze", "squeeze", "transpose",
    "permute", "contiguous", "float", "long", "bool", "int", "half", "detach", "clone",
    "size", "len", "range", "chunk", "split", "expand", "repeat", "max", "argmax", "eq", "sum",
    "mean", "numel", "dim", "empty_like",
})
# Tensor methods whose result stays on its tensor's device (`x.float()`, `x.view(n, -1)`).
_KEEP_DEVICE = frozenset({
    "float", "double", "long", "int", "half", "bool", "detach", "clone", "contiguous", "view",
    "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose",
})
# Methods that only keep records on the host: a list's, a dict's, a logger's, a progress
# bar's.
_HOST_BOOKKEEPING = frozenset({
    "append", "extend", "info", "warning", "debug", "set_postfix", "set_description", "write",
    "flush", "add_scalar", "add_scalars", "items", "keys", "values", "get", "setdefault",
})
# Tests of a few values, which queue a kernel or two: `torch.isnan(loss).any()`.
_VALUE_TESTS = frozenset({
    "isnan", "isinf", "isfinite", "any", "all", "abs", "min", "logical_or", "logical_and",
    "logical_not",
})
# PyTorch's elementwise criteria, as functions (`F.l1_loss`) and as the modules that call
# them (`nn.L1Loss()`): a loss of tensors already computed queues a kernel or two.
_ELEMENTWISE_LOSSES = frozenset({
    "l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "cross_entropy", "nll_loss", "kl_div",
})
_ELEMENTWISE_LOSS_MODULES = frozenset({
    "L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
    "CrossEntropyLoss", "NLLLoss", "KLDivLoss",
})
# Host solvers that need their input now: SciPy's optimizers and graph algorithms.
_HOST_SOLVERS = ("scipy.optimize.", "scipy.sparse.csgraph.")
# The legacy autograd wrapper, which keeps its tensor where it is (`Variable(x.cpu())`).
_VARIABLE = "torch.autograd.Variable"
# Contexts whose entry queues nothing on the device.
_QUIET_CONTEXTS = frozenset({
    "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "autocast", "nullcontext",
})
# A gather whose index is in host memory, and how to stop its index copy from waiting (a
# read's advice depends on the rule that reports it).
_INDEXING = "Indexing a device tensor with a host-memory index"
_INDEX_ADVICE = "build the index on the device (`torch.randperm(n, device=device)`)"
# How to stop an explicit synchronize from waiting on every step.
_SYNCHRONIZE_ADVICE = "remove it, or synchronize only where a clock reads the time it bounds"
# For a synchronize before the clock read of a timer the training loop restarts.
_STEP_TIMER_ADVICE = (
    "remove it: the loop's restarted timer measures the average step time without it (time"
    " single steps with CUDA events)"
)
# Calls that show or save an image or a video frame (`cv2.imshow`, a GIF writer's
# `append_data`, `writer.add_image`): a frame copied to the host for one of them is the
# program's output, not a wait to remove.
_OUTPUT_SINKS = frozenset({
    "imshow", "imwrite", "imsave", "mimsave", "mimwrite", "append_data", "add_image",
    "add_images", "add_video", "save_image", "fromarray", "write_video",
})
# What a copy of a model's weights goes through before `.cpu()` (`w.detach().clone().cpu()`),
# and the words that name weights (`weights`, `state_dict()`, `TensorDict.from_module(m)`).
_WEIGHT_COPY_STEPS = frozenset({
    "detach", "clone", "contiguous", "float", "half", "bfloat16", "items", "values",
})
_WEIGHT_WORDS = ("weights", "state_dict", "from_module", "parameters")
# Module methods: `.cpu()` followed by one of these moved a module, not a tensor.
_MODULE_METHODS = frozenset({
    "parameters", "named_parameters", "buffers", "state_dict", "modules", "children", "eval",
    "train", "load_state_dict",
})
# Methods whose result an `if` reads as a Python bool: a reduction or an element-wise predicate.
_TRUTH_TESTED_METHODS = frozenset({
    "any", "all", "isnan", "isinf", "isfinite", "eq", "ne", "gt", "lt", "ge", "le", "equal",
    "allclose", "isclose", "sum", "mean", "max", "min", "norm", "abs", "logical_or",
    "logical_and", "logical_not", "logical_xor",
})
# Operations whose output size depends on the data, so the host reads a count from the GPU.
_DATA_DEPENDENT_METHODS = frozenset({"nonzero", "masked_select", "unique"})
_DATA_DEPENDENT_FUNCTIONS = frozenset({"torch.nonzero", "torch.masked_select", "torch.unique"})
# `torch.distributed.rpc` calls that run a function in another process: what `rpc_sync`
# returns, and what the future of `rpc_async` gives to `wait()`, was computed there and is
# received in host memory (RPC sends CUDA tensors only through a device map).
_RPC_SYNC_CALLS = frozenset({"torch.distributed.rpc.rpc_sync"})
_RPC_ASYNC_CALLS = frozenset({"torch.distributed.rpc.rpc_async"})


@dataclass(frozen=True)
class HostSync:
    """One place where the host waits for the device: the node to report and what it is."""

    node: cst.CSTNode
    description: str
    # The other reads a site of several stands for (the rest of its statement, or of a run of
    # statements in a row), in source order.
    others: tuple[HostSync, ...] = ()
    # How to stop waiting there, when it is not by reading the value less often.
    advice: str | None = None

    @property
    def part(self) -> str:
        """The description as an item of a list: `a tensor used as a condition`, `` `.item()` ``."""
        part = self.description.removesuffix(", an explicit wait,")
        part = part.removesuffix(", which formats it,")
        return part[:1].lower() + part[1:]


def _picks_an_action(function_name: str) -> bool:
    """`get_action`, `select_action`, `act`: a reinforcement-learning agent's choice."""
    name = function_name.lower().strip("_")
    return name == "act" or name.endswith("_action") or name.startswith("act_")


def _is_name_or_own_attribute(expression: cst.BaseExpression) -> bool:
    """`loss` or `self.num_updates`."""
    return isinstance(expression, cst.Name) or (
        isinstance(expression, cst.Attribute)
        and isinstance(expression.value, cst.Name)
        and expression.value.value == "self"
    )


def _is_format_string(expression: cst.BaseExpression) -> bool:
    """A string literal, or one built from literals: `"%11s" * 2 + "%11.4g" * 5`."""
    if isinstance(expression, cst.BaseString):
        return True
    if isinstance(expression, cst.BinaryOperation) and isinstance(
        expression.operator, (cst.Add, cst.Multiply)
    ):
        return _is_format_string(expression.left) or _is_format_string(expression.right)
    return False


def _switches_a_module(value: cst.BaseExpression) -> bool:
    """`copy.deepcopy(model).eval().requires_grad_(False)`: a chain through `.eval()`, which
    only modules have."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if value.func.attr.value == "eval" and not value.args:
            return True
        value = value.func.value
    return False


class HostSyncs:
    """The places a module makes the host wait for the device."""

    def __init__(
        self,
        index: SyntaxIndex,
        scopes: Scopes,
        names: NameResolver,
        tensors: TensorExpressions,
        loops: Loops,
        receives_tensor: Callable[[cst.FunctionDef, str], bool] = lambda function, name: False,
        receives_host_values: Callable[[cst.FunctionDef, str], bool] = lambda function, name: False,
    ) -> None:
        self.index = index
        self.scopes = scopes
        self.names = names
        self.tensors = tensors
        self.loops = loops
        # Whether the program's callers pass a function's parameter a device tensor.
        self.receives_tensor = receives_tensor
        # Whether every caller passes a function's parameter a value in host memory.
        self.receives_host_values = receives_host_values
        # Per function of the module: whether it only keeps records on the host (`_host_helper`).
        self._host_helpers: dict[cst.FunctionDef, bool] = {}

    @cached_property
    def device_reads(self) -> list[HostSync]:
        """Every statement that reads device values, with what it reads: a chain of reads
        (`x.cpu().numpy()`) counts once, a statement with several reads (a dict of seven
        `.item()`s) is one site that names them all, and a read right after an explicit
        `synchronize()` waits for nothing (the synchronize is the site)."""
        found = [site for call in self.index.calls if (site := self._call_sync(call))]
        found.extend(
            HostSync(node, "Formatting a tensor into a string")
            for node in (
                *self.index.formatted_strings, *self.index.calls, *self.index.binary_operations
            )
            if self._string_of_tensor(node)
        )
        found.extend(
            HostSync(operand, "A tensor used as a condition")
            for test, asserted in self._truth_tests()
            for operand in _truth_operands(test)
            if self._reads_tensor_truth(operand, asserted)
        )
        found.extend(
            HostSync(bound, "A tensor used as a slice bound")
            for subscript in self.index.subscripts
            for bound in _slice_bounds(subscript)
            if self._bound_reads_device(bound)
        )
        found.extend(
            HostSync(subscript, _INDEXING, advice=_INDEX_ADVICE) for subscript in self._host_indexes
        )
        found.extend(
            HostSync(call, f"`{self.names.call_name(call)}()`, an explicit wait,", advice=advice)
            for call in self._explicit_synchronizations
            if (advice := self._synchronize_advice(call)) is not None
        )
        # What empties the queue when it runs: not an assert's message (computed only when
        # it fails), nor a read on a side stream (which waits for that stream alone).
        waits = [
            site for site in self._outermost(found)
            if not self._in_assert_message(site.node) and not self._on_a_side_stream(site.node)
        ]
        found = [
            site for site in waits
            if not self._after_synchronize(site)
            and not self._before_a_timing_synchronize(site)
            and not self.in_display_loop(site.node)
            and not self._reads_gathered_sizes(site.node)
            and not self._feeds_replay_priorities(site.node)
            and not self._said_to_synchronize(site.node)
        ]
        sites = self._one_per_index(self._per_statement(found))
        return self._folded_after_reads(sites, {site.node for site in waits})

    def _said_to_synchronize(self, node: cst.CSTNode) -> bool:
        """On a line whose comment, at its end or on the line above, says it synchronizes
        (`loss_item = loss.item()  # synchronization` before a benchmark reads its clock): a
        wait its author wrote on purpose."""
        line = self._line_of(node)
        if type(line) is not cst.SimpleStatementLine:
            return False
        comments = [line.trailing_whitespace.comment, *(
            empty.comment for empty in line.leading_lines[-1:]
        )]
        return any(
            comment is not None and _SYNCHRONIZES.match(comment.value) for comment in comments
        )

    def _on_a_side_stream(self, node: cst.CSTNode) -> bool:
        """In a `with torch.cuda.stream(side):` block: the copy is queued on that stream and
        the host waits for it alone, not for the work queued on the default stream."""
        for parent in self.scopes.ancestors(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if type(parent) is cst.With and any(
                type(item.item) is cst.Call and self.names.call_name(item.item) in _STREAM_CONTEXTS
                for item in parent.items
            ):
                return True
        return False

    def _feeds_replay_priorities(self, node: cst.CSTNode) -> bool:
        """A read of the values prioritized experience replay keeps on the host, the
        algorithm's own: passed to a replay buffer's `update_priorities(indices, td.cpu())`
        (also through a name its function passes there), or put in the list a caller asked
        for with an optional argument (`if errors_out is not None: ... errors_out.append(e)`,
        a DQN loss's TD errors)."""
        statement = None
        for parent in self.scopes.ancestors(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if type(parent) is cst.Call and last_identifier(parent.func) in _PRIORITY_UPDATES:
                return True
            if statement is None and isinstance(parent, cst.BaseSmallStatement):
                statement = parent
                if self._passed_to_a_priority_update(statement):
                    return True
            if type(parent) is cst.If and self._fills_a_requested_list(parent):
                return True
        return False

    def _passed_to_a_priority_update(self, statement: cst.BaseSmallStatement) -> bool:
        """`priorities = td.abs().cpu().numpy()` whose name its function passes to
        `update_priorities`."""
        if type(statement) is not cst.Assign or len(statement.targets) != 1:
            return False
        target = statement.targets[0].target
        if type(target) is not cst.Name:
            return False
        return (self.scopes.enclosing_function(statement), target.value) in self._passed_as_priorities

    @cached_property
    def _passed_as_priorities(self) -> frozenset[tuple[cst.FunctionDef | None, str]]:
        """The names each function passes to a priority update (`update_priorities(idx, p)`)."""
        return frozenset(
            (self.scopes.enclosing_function(call), arg.value.value)
            for call in self.index.calls
            if last_identifier(call.func) in _PRIORITY_UPDATES
            for arg in call.args
            if type(arg.value) is cst.Name
        )

    def _fills_a_requested_list(self, branch: cst.If) -> bool:
        """`if errors_out is not None:` on an optional parameter of the function, whose body
        puts values in it (`errors_out.append(e)`, `.extend`)."""
        compared = none_compared(branch.test)
        if compared is None or type(compared[0]) is not cst.Name or not compared[1]:
            return False
        name = compared[0].value
        if not self.scopes.is_parameter(name, self.scopes.enclosing_function(branch)):
            return False
        return any(
            type(call.func) is cst.Attribute
            and call.func.attr.value in ("append", "extend")
            and dotted_name(call.func.value) == name
            for call in descendants(branch.body)
            if type(call) is cst.Call
        )

    def _in_assert_message(self, node: cst.CSTNode) -> bool:
        """In the message of an `assert`, which is computed only when the assertion fails."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) is cst.Assert:
                return child is parent.msg
            if type(parent) in SCOPE_TYPES:
                return False
        return False

    def in_display_loop(self, node: cst.CSTNode) -> bool:
        """In a loop that shows or saves a frame it copies to the host on every iteration
        (`display_loops`): it waits for the device by design, so other reads in it (the loss
        it logs) add next to nothing."""
        return any(loop.node in self.display_loops for loop in self.loops.enclosing_loops(node))

    @cached_property
    def display_loops(self) -> frozenset[cst.For | cst.While]:
        """Loops that copy a frame to the host for an output sink on every iteration:
        `cv2.imshow("opt", result.cpu().numpy())`, or `frame = (x.cpu().numpy() * 255)`
        then `writer.append_data(frame)`, outside any `if` of the loop's body."""
        loops = set()
        for loop in self.loops.all:
            for call in loop.own_calls:
                if self._shows_a_frame(call) and not any(
                    type(parent) is cst.If for parent in self._ancestors_below(call, loop.node)
                ):
                    loops.add(loop.node)
                    break
        return frozenset(loops)

    def _ancestors_below(self, node: cst.CSTNode, top: cst.CSTNode) -> Iterator[cst.CSTNode]:
        for parent in self.scopes.ancestors(node):
            if parent is top:
                return
            yield parent

    def _shows_a_frame(self, call: cst.Call) -> bool:
        """An output sink given a host copy of a device tensor, or a name bound to one in
        the same function (`frame = (x.cpu().numpy() * 255).astype(np.uint8)`)."""
        if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in _OUTPUT_SINKS:
            return False
        for argument in call.args:
            for node in (argument.value, *descendants(argument.value)):
                if self._copies_to_host(node):
                    return True
                if isinstance(node, cst.Name) and any(
                    any(self._copies_to_host(part) for part in (value, *descendants(value)))
                    for value in self.scopes.bound_values(node)
                ):
                    return True
        return False

    def _copies_to_host(self, node: cst.CSTNode) -> bool:
        return (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("cpu", "numpy")
            and self.may_be_device_tensor(node.func.value)
        )

    def _feeds_an_output(self, call: cst.Call) -> bool:
        """A read whose host copy an output sink shows or saves (`display_loops`)."""
        return any(
            isinstance(parent, cst.Call) and self._shows_a_frame(parent)
            for parent in self.scopes.ancestors(call)
        ) or any(
            # The sink first: few calls are one, and naming the read walks the arguments.
            self._shows_a_frame(other) and self._names_value_of(other, call)
            for loop in self.loops.enclosing_loops(call)
            for other in loop.own_calls
        )

    def _names_value_of(self, sink: cst.Call, read: cst.Call) -> bool:
        """Whether an argument of `sink` names a value that `read` is part of."""
        return any(
            isinstance(node, cst.Name)
            and any(read is value or read in descendants(value) for value in self.scopes.bound_values(node))
            for argument in sink.args
            for node in (argument.value, *descendants(argument.value))
        )

    @cached_property
    def _explicit_synchronizations(self) -> list[cst.Call]:
        """`torch.cuda.synchronize()` and any other backend's (`torch.mps.synchronize()`)."""
        return [
            call for call in self.index.calls
            if (name := self.names.call_name(call) or "").startswith("torch.")
            and name.endswith(".synchronize")
        ]

    def _next_to_a_clock(self, call: cst.Call) -> bool:
        """The statement after the synchronize (or before it) reads a clock, a wall clock or
        the time between two CUDA events (`start.elapsed_time(end)`, which needs `end` to have
        completed), or starts or stops a timer object (`fw_timer.toc()`, whose method reads the
        clock), or ends the block of a timer's `with` but for host work (`with Timer("step"):`,
        whose exit reads the clock): it bounds a timed interval, a measurement rather than a stray wait. A
        synchronize next to `start.record()` of a CUDA event opens such an interval, also
        with the events' creation between them. A
        synchronize alone in a branch of an `if` (`if device.type == "cuda":
        torch.cuda.synchronize() elif ...:`), also in nested ones (`if args.synchronize_step:
        if device.type == "cuda": ...`), is judged by the statements around the outermost
        such `if`."""
        parents = self.index.parents
        line = self._line_of(call)
        while True:
            block = parents.get(line)
            lines = statements_of(block)
            if line not in lines:
                return False
            branch = parents.get(block)
            if len(lines) != 1 or not isinstance(branch, (cst.If, cst.Else)):
                break
            while isinstance(parents.get(branch), cst.If):  # an `elif` or `else` branch
                branch = parents[branch]
            if not isinstance(branch, cst.If):
                break
            line = branch
        position = lines.index(line)
        around = parents.get(block)
        if type(around) is cst.With and all(map(self._queues_nothing, lines[position + 1:])) and any(
            "timer" in (last_identifier(item.item.func if type(item.item) is cst.Call else item.item) or "").lower()
            for item in around.items
        ):
            return True  # the end of `with Timer("step"):`, whose exit reads the clock, but a print
        neighbours = lines[max(position - 1, 0):position] + self._up_to_work(lines[position + 1:])
        return any(
            isinstance(node, cst.Call)
            and (
                self.names.call_name(node) in CLOCKS
                or last_identifier(node.func) == "elapsed_time"
                or self._records_an_event(node)
                or _starts_or_stops_a_timer(node)
            )
            for neighbour in neighbours
            for node in descendants(neighbour)
        )

    def _up_to_work(self, lines: list[cst.CSTNode]) -> list[cst.CSTNode]:
        """The first of `lines` that queues work, with those before it that queue none (three
        in all at most): creating the CUDA events (`start = torch.cuda.Event(...)`) before
        `start.record()`, or counting the step (`num_updates += 1`) before the clock read,
        comes between a synchronize and the interval it bounds."""
        taken = []
        for line in lines[:3]:
            taken.append(line)
            if type(line) is not cst.SimpleStatementLine or not self._queues_nothing(line):
                break  # work, or a block that may run anything (`if step % log_freq == 0:`)
        return taken

    def _synchronize_advice(self, call: cst.Call) -> str | None:
        """How to stop an explicit synchronize from waiting, or None for one that bounds a
        timed interval (`_next_to_a_clock`) but for a training step's restarted timer."""
        if not self._next_to_a_clock(call):
            return _SYNCHRONIZE_ADVICE
        return _STEP_TIMER_ADVICE if self._times_each_training_step(call) else None

    def _times_each_training_step(self, call: cst.Call) -> bool:
        """The synchronize, in a training loop, comes right before the clock read of a timer
        that the loop restarts after that read (`torch.cuda.synchronize()`, then
        `batch_time.update(time.time() - end)`, then `end = time.time()`): the interval runs
        from one iteration to the next, and such a rolling timer measures the throughput
        without it (the full launch queue throttles the host), so it waits on every step for
        a number that was right already. A region timed inside the iteration (`start =
        time.perf_counter()` before a forward) needs it."""
        loop = self.loops.nearest_loop(call)
        line = self._line_of(call)
        lines = statements_of(self.index.parents.get(line))
        if loop is None or not loop.is_training or line not in lines:
            return False
        following = self._up_to_work(lines[lines.index(line) + 1:])
        order = self.index.preorder
        return any(
            type(node) is cst.BinaryOperation
            and type(node.operator) is cst.Subtract
            and type(node.right) is cst.Name
            and (restarts := [
                value for value in self.scopes.bound_values(node.right)
                if self.index.contains(loop.node, value)
            ])
            # Restarted after it is read: the interval runs from one iteration to the next.
            and all(
                type(value) is cst.Call
                and self.names.call_name(value) in CLOCKS
                and order[value] > order[node]
                for value in restarts
            )
            and any(
                type(read) is cst.Call and self.names.call_name(read) in CLOCKS
                for read in (node.left, *descendants(node.left))
            )
            for statement in following
            for node in descendants(statement)
        )

    def _records_an_event(self, call: cst.Call) -> bool:
        """`start.record()` of a name bound to a `torch.cuda.Event` (or a backend's): the
        event marks one end of an interval that `elapsed_time` measures."""
        return (
            isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "record"
            and any(
                isinstance(value, cst.Call)
                and (name := self.names.call_name(value) or "").startswith("torch.")
                and name.endswith(".Event")
                for value in self.scopes.bound_values(call.func.value)
            )
        )

    def _after_synchronize(self, site: HostSync) -> bool:
        """A read in a statement that follows an explicit synchronize, with no device work
        queued between them: the values it reads are ready. Statements that queue work and
        read it back at once (`hist = label_hist.mean().item()`) leave nothing queued, and a
        read in the body of an `if` on a plain flag (`if args.use_flex:`) or of a `with` on
        host values (`with open(path) as f:`) follows what comes before it."""
        synchronizations = set(self._explicit_synchronizations)
        if not synchronizations or site.node in synchronizations:
            return False
        for previous in self._statements_run_before(site.node):
            calls = [node for node in descendants(previous) if isinstance(node, cst.Call)]
            if any(call in synchronizations for call in calls):
                return True
            if any(self.tensors.is_tensor(call) for call in calls) and not self._reads_back(calls):
                return False
        return False

    @cached_property
    def timing_synchronizations(self) -> frozenset[cst.Call]:
        """The explicit synchronizes that bound a timed interval, as a measurement
        (`_synchronize_advice` gives them none)."""
        return frozenset(
            call for call in self._explicit_synchronizations
            if self._synchronize_advice(call) is None
        )

    def _before_a_timing_synchronize(self, site: HostSync) -> bool:
        """A read in a statement that a synchronize bounding a timed interval follows in
        the same block, with no device work queued between them (`train_loss =
        loss.item()`, then `torch.cuda.synchronize(); end = time.time()`): the synchronize
        stays, as the measurement it is, and waits for the same work."""
        timing = self.timing_synchronizations
        line = self._line_of(site.node)
        lines = statements_of(self.index.parents.get(line))
        if not timing or line not in lines:
            return False
        for later in lines[lines.index(line) + 1:]:
            if type(later) is not cst.SimpleStatementLine:
                return False  # a branch may not synchronize (`if step % log_every == 0:`)
            calls = [node for node in descendants(later) if type(node) is cst.Call]
            if any(call in timing for call in calls):
                return True
            if any(self.tensors.is_tensor(call) for call in calls) and not self._reads_back(calls):
                return False
        return False

    def _statements_run_before(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """The statements that run right before the line of `node` on every path to it, the
        latest first: those before it in its block, then, from the body of an `if` on a
        plain flag or of a `with` on host values (`_host_block_around`), those before that
        block."""
        line = self._line_of(node)
        while line is not None:
            yield from reversed(self._statements_before(line))
            line = self._host_block_around(line)

    def _read_just_before(self, node: cst.CSTNode, waits: set[cst.CSTNode]) -> cst.CSTNode | None:
        """The wait of an earlier statement that `node` follows with no device work queued
        between them (`train_err += loss.item()`, then `with torch.no_grad(): avg +=
        loss.item()`; `if torch.isnan(loss): continue`, then `loss.item()`): a wait of that
        statement itself, or of its test, which runs whenever it does, not of a branch; or of
        the first statement of a loop's body (`for k, v in metrics.items(): metrics[k] =
        v.item()`, then `loss.item()`: the loop logs at least one metric). Host
        work may come between (`iters = epoch * len(loader) + i`, a logger's call), and reads
        with the little work they read back; any other call may queue work and ends the
        search. A read whose own statement queues more than light work (`q_net(obs).argmax()
        .item()`, `clip_grad_norm_(params, c).item()`: any call but a light one in what it
        reads) waits for that work, and follows nothing."""
        line = self._line_of(node)
        if line is None or not all(
            self._light_or_host(call)
            or not self.tensors.is_tensor(call) and not self.index.contains(node, call)
            for part in _header_of(line)
            for call in (part, *descendants(part))
            if type(call) is cst.Call and not _reads_on_its_own(call)
        ):
            return None
        for previous in self._statements_run_before(node):
            read = next(
                (wait for wait in _run_whenever_it_does(previous) if wait in waits), None
            )
            calls = [
                call for call in descendants(previous)
                if type(call) is cst.Call and not (read is not None and self.index.contains(read, call))
            ]
            if not self._queue_nothing(calls):
                return None
            if read is not None:
                return read
        return None

    def _queue_nothing(self, calls: list[cst.Call]) -> bool:
        """Whether `calls` (of a statement) queue no device work that is left waiting: each
        is host bookkeeping (`len(loader)`, `losses.append(v)`, `logger.info(...)`), a light
        operation (`_LIGHT_OPERATIONS`), a context that queues nothing, or part of a read
        (`pred.argmax(1).tolist()`)."""
        readers = [call for call in calls if _reads_on_its_own(call)]
        return all(
            self._light_or_host(call) or any(self.index.contains(reader, call) for reader in readers)
            for call in calls
        )

    def _light_or_host(self, call: cst.Call) -> bool:
        """A light operation (`_LIGHT_OPERATIONS`, also a conversion to a dtype: `x.to(torch.
        float32)`), a context that queues nothing, or host bookkeeping: a builtin
        (`len(loader)`), the clock, `math`, a list's, a dict's, a logger's or a progress
        bar's method; also one of PyTorch's elementwise criteria (`_elementwise_loss`) and a
        logging helper of the module (`_host_helper`)."""
        name = last_identifier(call.func) or ""
        qualified = self.names.call_name(call) or ""
        return (
            name in _LIGHT_OPERATIONS | _QUIET_CONTEXTS | _HOST_BOOKKEEPING | _VALUE_TESTS
            or name == "to" and len(call.args) == 1 and is_dtype(call.args[0].value, self.names)
            or qualified.startswith(("builtins.", "time.", "math."))
            or self._elementwise_loss(call, qualified)
            or self._host_helper(call)
        )

    def _host_helper(self, call: cst.Call) -> bool:
        """A call of a function of this module (`log_value(...)`), or of a method of the
        caller's class on `self` (`self.add_summary(writer, name, value)`), whose own calls
        are all host bookkeeping or light work (`_light_or_host`, helpers of its own
        included): a logging helper that adds a value to a dict and a writer."""
        called = self.scopes.functions_called(call, self.scopes.enclosing_function(call), ("self",))
        if len(called) != 1:
            return False
        helper = called[0]
        if helper not in self._host_helpers:
            self._host_helpers[helper] = False  # a helper that calls itself is none
            self._host_helpers[helper] = all(
                self._light_or_host(inner) for inner in self.index.inside(self.index.calls, helper)
            )
        return self._host_helpers[helper]

    def _elementwise_loss(self, call: cst.Call, qualified: str) -> bool:
        """One of PyTorch's elementwise criteria: `F.l1_loss(a, b)`, or a call of a name or
        attribute bound only to its module (`self.l1_loss(pred * m, frames * m)` after
        `self.l1_loss = nn.L1Loss()`)."""
        if qualified.startswith("torch.nn.functional."):
            return qualified.rpartition(".")[2] in _ELEMENTWISE_LOSSES
        built = [
            self.names.call_name(value) or "" if type(value) is cst.Call else ""
            for value in self.scopes.bound_values(call.func)
        ]
        return bool(built) and all(
            name.startswith("torch.nn.") and name.rpartition(".")[2] in _ELEMENTWISE_LOSS_MODULES
            for name in built
        )

    def _folded_after_reads(self, sites: list[HostSync], waits: set[cst.CSTNode]) -> list[HostSync]:
        """The sites, each read that follows another wait of the step with no device work
        queued between them (`_read_just_before`) folded into that wait's site as one of its
        reads: the first wait emptied the queue, so the later one waits for nothing and goes
        with the same fix. One that follows a wait reported nowhere (a read whose comment
        says it synchronizes on purpose, one that feeds prioritized replay) waits for nothing
        more and is dropped."""
        order = self.index.preorder
        holders: dict[cst.CSTNode, HostSync] = {}  # each wait, and the site that reports it
        folded: dict[int, list[HostSync]] = {}  # by the `id` of the site that takes them
        dropped: set[int] = set()
        for site in sorted(sites, key=lambda site: order[site.node]):
            earlier = self._read_just_before(site.node, waits)
            holder = site if earlier is None else holders.get(earlier)
            if holder is None:
                dropped.add(id(site))
                continue
            if holder is not site:
                dropped.add(id(site))
                folded.setdefault(id(holder), []).extend((site, *site.others))
            for part in (site, *site.others):
                holders[part.node] = holder
        return [
            replace(site, others=(*site.others, *folded[id(site)])) if id(site) in folded else site
            for site in sites
            if id(site) not in dropped
        ]

    def _reads_back(self, calls: list[cst.Call]) -> bool:
        """Every call of a statement that makes a tensor is part of what a host read reads
        (`label_hist.mean().item()`, `Counter(pred.argmax(1).tolist())`): the work it
        queues is done when it ends."""
        receivers = [
            call.func.value
            for call in calls
            if type(call.func) is cst.Attribute and call.func.attr.value in READING_METHODS
        ]
        return bool(receivers) and all(
            any(self.index.contains(receiver, call) or call.func.value is receiver for receiver in receivers)
            for call in calls
            if self.tensors.is_tensor(call)
        )

    def _host_block_around(self, line: cst.CSTNode) -> cst.If | cst.With | None:
        """The `if` whose body or `else` holds `line`, when its test queues no device work
        (`if args.use_flex:`; for a branch of an `elif` chain, the chain's first `if`, when
        none of its tests does), or the `with` whose body holds it, when its items queue none
        (`with open(log_file, "a") as f:`)."""
        parents = self.index.parents
        block = parents.get(line)
        around = parents.get(block)
        if type(around) is cst.Else:  # to the `if` whose `else` it is
            around = parents.get(around)
        if type(around) is cst.If and self._queues_nothing(around.test):
            # An `elif` runs after the tests above it: up to the first `if` of the chain.
            while type(above := parents.get(around)) is cst.If and above.orelse is around:
                if not self._queues_nothing(above.test):
                    return None
                around = above
            return around
        if type(around) is cst.With and all(self._queues_nothing(item.item) for item in around.items):
            return around
        return None

    def _queues_nothing(self, expression: cst.CSTNode) -> bool:
        """Whether `expression` calls nothing that makes a tensor (`args.use_flex`,
        `open(path)`)."""
        calls = [node for node in (expression, *descendants(expression)) if type(node) is cst.Call]
        return not any(self.tensors.is_tensor(call) for call in calls)

    def _statements_before(self, line: cst.CSTNode | None) -> list[cst.CSTNode]:
        """The statements before `line` in its block, in order (none when it is in no
        block's list of statements)."""
        lines = statements_of(self.index.parents.get(line))
        return lines[: lines.index(line)] if line in lines else []

    def _line_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The statement line (or compound statement) `node` is part of."""
        for parent in self.scopes.ancestors(node):
            if isinstance(parent, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return parent
        return None

    def _per_statement(self, sites: list[HostSync]) -> list[HostSync]:
        """One site per statement, at its first read, naming every read in it; and one per run
        of statement lines in a row that each read (`d = out["d"].mean().item()`, then the
        same for `g`, `r1`, ...): one fix, stacking the values and reading them once, at the
        run's first read."""
        branches = self._branches_tested_by_a_read(sites)
        grouped: dict[cst.CSTNode | None, list[HostSync]] = {}
        for site in sites:
            branch = self._branch_holding(site.node, branches)
            grouped.setdefault(branch or self._statement_of(site.node), []).append(site)
        order = self.index.preorder
        for branch in branches:
            if branch in grouped:  # the test's reads first: the site is the test
                grouped[branch].sort(
                    key=lambda site: (not self._in_test_of(site.node, branch), order[site.node])
                )
        placed = [(self._line_of(group[0].node), group) for group in grouped.values()]
        by_line: dict[cst.CSTNode, list[list[HostSync]]] = {}
        for line, group in placed:
            if type(line) is cst.SimpleStatementLine:
                by_line.setdefault(line, []).append(group)
        merged = []
        in_a_run: set[int] = set()  # the groups a run gathered (by `id`)
        for line, group in placed:
            if line in branches and not all(self._in_test_of(site.node, line) for site in group):
                in_else = line.orelse is not None and any(
                    self.index.contains(line.orelse, site.node) for site in group
                )
                guarded = "branches" if in_else else "branch"
                merged.append(self._merged([group], f"A test and the {guarded} it guards"))
                continue
            if line not in by_line:
                merged.append(self._merged([group]))
                continue
            run = self._run_from(self._run_anchor(line, by_line), by_line)
            if run and group is run[0] and id(group) not in in_a_run:
                merged.append(self._merged(run))  # the run's first read gathers the others
                in_a_run.update(map(id, run))
        return merged

    def _run_members(
        self,
        line: cst.CSTNode,
        by_line: dict[cst.CSTNode, list[list[HostSync]]],
        after_a_read: bool = False,
    ) -> list[list[HostSync]] | None:
        """The reads `line` adds to a run of reads: its own, or, for an `if` on a plain flag
        without `else` (`if grad_norm is not None:`; after a read of the run, also a switch:
        `if log:`), those of a body whose statements each read or queue little work; None
        when it adds none. A switch decides whether its reads run at all: a run does not
        start with them."""
        if line in by_line:
            return by_line[line]
        if type(line) is not cst.If or line.orelse is not None:
            return None
        if not (self._tests_a_local_for_none(line) or after_a_read and self._tests_a_switch(line)):
            return None
        members: list[list[HostSync]] = []
        for statement in statements_of(line.body):
            if statement in by_line:
                members.extend(by_line[statement])
            elif not self.queues_little(statement):
                return None
        return members or None

    def _tests_a_local_for_none(self, branch: cst.If) -> bool:
        """`if grad_norm is not None:` (or `is None`) of a name its function binds, not a
        parameter: a value of this step, not a switch that decides whether the branch runs
        on every step."""
        compared = none_compared(branch.test)
        if compared is None:
            return False
        name = compared[0]
        function = self.scopes.enclosing_function(branch)
        return (
            type(name) is cst.Name
            and function is not None
            and not self.scopes.is_parameter(name.value, function)
            and bool(self.scopes.bound_values(name))
        )

    @staticmethod
    def _tests_a_switch(branch: cst.If) -> bool:
        """`if log:`, `if not args.quiet:`, `if logger is not None:`: a test of a name or an
        attribute, which decides whether the branch runs, the same way on every step."""
        test = branch.test
        negated = type(test) is cst.UnaryOperation and type(test.operator) is cst.Not
        compared = none_compared(test.expression if negated else test)
        return switch_tested(compared[0] if compared is not None else test) is not None

    def _run_anchor(
        self, line: cst.CSTNode, by_line: dict[cst.CSTNode, list[list[HostSync]]]
    ) -> cst.CSTNode:
        """The statement of the outermost block that holds `line` as a member of a run: the
        `if` on a flag whose body it is in, when that `if` is a member itself."""
        branch = self.index.parents.get(self.index.parents.get(line))
        while type(branch) is cst.If and self._run_members(branch, by_line) is not None:
            line, branch = branch, self.index.parents.get(self.index.parents.get(branch))
        return line

    def _run_from(
        self, anchor: cst.CSTNode, by_line: dict[cst.CSTNode, list[list[HostSync]]]
    ) -> list[list[HostSync]]:
        """The reads of the run that starts at `anchor`, in order: statements that read, with
        statements that queue little work between them (`_light`: `_, pred = out.max(1)`,
        `n += y.size(0)`); empty when an earlier read of the block starts the run."""
        lines = statements_of(self.index.parents.get(anchor))
        position = next(i for i, statement in enumerate(lines) if statement is anchor)
        for previous in reversed(lines[:position]):
            if self._run_members(previous, by_line) is not None:
                return []
            # A switch's reads join a run that an earlier read starts: look past them.
            if not self.queues_little(previous) and self._run_members(previous, by_line, True) is None:
                break
        run: list[list[HostSync]] = []
        for line in lines[position:]:
            members = self._run_members(line, by_line, after_a_read=bool(run))
            if members is not None:
                run.extend(members)
            elif not self.queues_little(line):
                break
        return run

    def queues_little(self, line: cst.CSTNode) -> bool:
        """A simple statement of `_light` work (not an early exit, which the reads after it
        may not share)."""
        return type(line) is cst.SimpleStatementLine and self._light(line)

    def _branches_tested_by_a_read(self, sites: list[HostSync]) -> set[cst.If]:
        """The `if` statements whose test is itself a read (`if torch.min(y) < -1:`)."""
        return {
            parent
            for site in sites
            for parent in self.scopes.ancestors(site.node)
            if type(parent) is cst.If and self._in_test_of(site.node, parent)
        }

    def _in_test_of(self, node: cst.CSTNode, branch: cst.If) -> bool:
        return self.index.contains(branch.test, node)

    def _branch_holding(self, node: cst.CSTNode, branches: set[cst.If]) -> cst.If | None:
        """The outermost of `branches` with `node` in one of its branches: a read there runs
        only when the test's read holds (`print(torch.min(y))` under `if torch.min(y) < -1:`)
        or right after it (`return stat.item()` in the `else` of `if stat.item() == -1:`),
        and is part of the test's site."""
        outermost = None
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                break
            if type(parent) is cst.If and child is not parent.test and parent in branches:
                outermost = parent
        return outermost

    @staticmethod
    def _merged(run: list[list[HostSync]], what: str = "") -> HostSync:
        """The site of the statements of `run` (in source order within each statement's
        group), at the first read of the first; `what` names them, if not one statement or a
        run of them."""
        if len(run) == 1 and len(run[0]) == 1:
            return run[0][0]
        sites = [site for group in run for site in group]
        counts = Counter(site.part for site in sites)
        kinds = ", ".join(
            f"{count} × {description}" if count > 1 else description
            for description, count in counts.items()
        )
        what = what or ("One statement" if len(run) == 1 else f"A run of {len(run)} statements")
        advice = {site.advice for site in sites}
        return HostSync(
            sites[0].node,
            f"{what} with {len(sites)} host syncs ({kinds})",
            tuple(sites[1:]),
            advice.pop() if len(advice) == 1 else None,
        )

    def _statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost statement holding `node` (for a compound statement, only its header:
        the test of an `if`, the iterable of a `for`)."""
        for parent in self.scopes.ancestors(node):
            if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return parent
        return None

    @cached_property
    def data_dependent_shapes(self) -> list[HostSync]:
        """Operations whose output size depends on the values: the host must read a count."""
        found = [site for call in self.index.calls if (site := self._shape_sync(call))]
        found.extend(
            HostSync(subscript, "boolean-mask indexing")
            for subscript in self.index.subscripts
            if self._is_mask_read(subscript)
        )
        return self._outermost(found)

    @staticmethod
    def always_waits(call: cst.Call) -> bool:
        """`torch.cuda.synchronize()`, `event.elapsed_time(...)`, `dist.barrier()`, `x.item()`,
        or any call whose name says it synchronises: the host waits, whatever the receiver."""
        identifier = last_identifier(call.func) or ""
        return identifier in WAITING_METHODS or "sync" in identifier.lower()

    def is_blocking_move(self, call: cst.Call) -> bool:
        """`x.to(device)` or `x.cuda()` to an accelerator without `non_blocking=`: a copy from
        host memory that PyTorch follows with a synchronisation of the stream."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda"):
            return False
        signature = SIGNATURES["Tensor.cuda" if func.attr.value == "cuda" else "Tensor.to"]
        non_blocking = bound_argument(call, "non_blocking", signature)
        if non_blocking is UNKNOWN or non_blocking is not None:
            return False
        if func.attr.value == "cuda":
            return True
        device = bound_argument(call, "device", signature)
        if not isinstance(device, cst.Arg):
            return False
        return is_accelerator_target(device.value, self.names, self.scopes)

    def uploads_and_waits(self, call: cst.Call) -> bool:
        """A blocking move (`is_blocking_move`) of a value in host memory (`x_train =
        torch.from_numpy(x).to(device)`): the host waits until the stream has run all
        the work queued before it, and the copy."""
        return self.is_blocking_move(call) and not self.may_be_device_tensor(call.func.value)

    def wait_just_before(self, move: cst.Call) -> cst.CSTNode | None:
        """The node that has just made the host wait for the device when `move`
        (`x.to(device)`) runs, with little queued since, or None: a read of a device value
        in what it moves (`torch.zeros(batch[-1].item() + 1).to(device)`), or, when the rest
        of `move`'s statement is light (`torch.cat([torch.zeros(n, 1).cuda(), x], 1)`), an
        earlier statement, past statements that only queue elementwise and reshaping work
        (`logits = torch.cat([pos, neg], 1)`, `_light`), that waits (`_wait_in`). At the
        start of a branch or a `with` block the search goes on to its header and to the
        statements before it, as the host ran them just before: the test of `if
        mask.any():` waits, `if n > limit:` and `with torch.no_grad():` queue nothing. It
        stops at the start of a loop's body or a function's. The copy of `move` then waits
        for little but itself."""
        for node in descendants(move.func):
            if type(node) is cst.Call and self._call_sync(node) is not None:
                return node
        line = self._line_moving(move)
        while line is not None:
            for previous in reversed(self._statements_before(line)):
                wait = self._wait_in(previous)
                if wait is not None:
                    return wait
                if not self._light(previous):
                    return None
            opened = self._opened_by(line)
            if opened is None:
                return None
            if type(opened) is cst.If:
                wait = self._read_in_test(opened.test)
                if wait is not None:
                    return wait
            if not _only_light_calls(opened.test if type(opened) is cst.If else opened.items):
                return None
            line = opened
        return None

    def wait_just_after(self, move: cst.Call) -> cst.CSTNode | None:
        """The node that makes the host wait for the device right after `move`, in a
        statement otherwise light, with little queued between them (`_light` statements): a
        later statement of the block that waits (`_wait_in`: `labels =
        labels[~mask].view(n, -1)` after `mask = torch.eye(n, dtype=torch.bool).to(device)`),
        other than an upload. What `move` waits for, the host would wait for there anyway."""
        line = self._line_moving(move)
        if line is None:
            return None
        lines = statements_of(self.index.parents.get(line))
        for following in lines[lines.index(line) + 1:]:
            wait = self._wait_in(following)
            if wait is not None:
                # An upload computes its source on the host first (a tokenizer's ids), work
                # that the move makes wait for the device.
                return None if type(wait) is cst.Call and self.uploads_and_waits(wait) else wait
            if not self._light(following):
                return None
        return None

    def _line_moving(self, move: cst.Call) -> cst.SimpleStatementLine | None:
        """The line of one statement that holds `move` and, besides it, only light calls
        (`mask = m.to(d)`, `x = torch.cat([x, torch.zeros(n).to(x)], -1)`), or None."""
        line = self._line_of(move)
        if type(line) is not cst.SimpleStatementLine or len(line.body) != 1:
            return None
        if all(
            self.index.contains(move, call) or (last_identifier(call.func) or "") in _LIGHT_OPERATIONS
            for call in self.index.inside(self.index.calls, line)
        ):
            return line
        return None

    def _opened_by(self, line: cst.CSTNode) -> cst.If | cst.With | None:
        """The `if` (also through `else` and `elif`) or `with` statement whose block `line`
        is in, or None (a loop's body, a function's, the module)."""
        parent = self.index.parents.get(line)
        if type(parent) in (cst.IndentedBlock, cst.SimpleStatementSuite):
            parent = self.index.parents.get(parent)
        if type(parent) is cst.Else:
            parent = self.index.parents.get(parent)
        return parent if type(parent) in (cst.If, cst.With) else None

    def _wait_in(self, line: cst.CSTNode) -> cst.CSTNode | None:
        """The first wait in a simple statement: a blocking upload of host memory, a host
        read or a synchronize, a gather by a boolean mask (`negatives =
        sim[~labels.bool()].view(n, -1)`, `ids[mask.nonzero(as_tuple=True)] = k`), an
        operation whose output size depends on the data, which the host must read
        (`labels.unique()`, `x.masked_select(m)`), or an `assert` of a tensor
        (`assert (idx >= 0).all().item()`, `assert mask.any()`); or the test of an early
        exit that reads a device value (`if torch.isnan(x).any(): raise ...`)."""
        if type(line) is cst.If and line.orelse is None and _only_leaves(line.body):
            return self._read_in_test(line.test)  # `if torch.isnan(x).any(): raise ...`
        if type(line) is not cst.SimpleStatementLine:
            return None
        for statement in line.body:
            if type(statement) is cst.Assert:
                wait = self._read_in_test(statement.test, asserted=True)
                if wait is not None:
                    return wait
        return next(
            (
                node for node in _always_evaluated(line)
                if (
                    type(node) is cst.Call
                    and (
                        self.uploads_and_waits(node)
                        or self._call_sync(node) is not None
                        or node in self._explicit_synchronizations
                        or (
                            last_identifier(node.func) in _DATA_DEPENDENT_SIZES
                            and self.may_be_device_tensor(node)
                        )
                    )
                )
                or (type(node) is cst.Subscript and self._is_mask_read(node))
            ),
            None,
        )

    def _read_in_test(self, test: cst.BaseExpression, asserted: bool = False) -> cst.CSTNode | None:
        """The first operand of a test that reads a tensor's truth on the host (`if
        found_inf:`, `assert mask.any()`), or a host read called in it (`.item()`)."""
        for operand in _truth_operands(test):
            if self._reads_tensor_truth(operand, asserted):
                return operand
        return next(
            (
                node for node in (test, *descendants(test))
                if type(node) is cst.Call and self._call_sync(node) is not None
            ),
            None,
        )

    def _light(self, line: cst.CSTNode) -> bool:
        """A simple statement whose calls only reshape, combine or scale tensors
        (`torch.cat`, `.view`, `.float()`), which queue little work on the device, an
        early exit from the block (`if n == 0: continue`), or an `if` whose test and
        branches are light (`if gt.numel() == 0: pos = gt.view(-1, 9) else: pos =
        gt[idx]`)."""
        if type(line) is cst.If:
            if line.orelse is None and _only_leaves(line.body):
                return _only_light_calls(line.test)
            return _only_light_calls(line.test) and all(
                self._light(statement) for statement in _branch_statements(line)
            )
        return type(line) is cst.SimpleStatementLine and _only_light_calls(line)

    def may_be_device_tensor(self, receiver: cst.BaseExpression) -> bool:
        """Whether a `.item()`-style call on `receiver` may read a device tensor.

        Known host values (`is_host_value`) and the raw batches a DataLoader loop yields are not.
        """
        return (
            not self.is_host_value(receiver)
            and not self.is_loader_batch(receiver)
            and not self._converted_if_tensor(receiver)
        )

    def _converted_if_tensor(self, receiver: cst.BaseExpression) -> bool:
        """`if isinstance(v, torch.Tensor): v = v.item()` on a parameter or a loop's value: a
        helper that accepts numbers or tensors and reads only what its callers choose to pass
        (a metric logger's `update(**kwargs)` given `loss.item()` reads nothing more). It
        reads a device value when the program shows a caller passing that parameter a tensor
        (`metric_logger.update(class_acc=class_acc)`)."""
        if not (isinstance(receiver, cst.Name) and self._bound_elsewhere(receiver)):
            return False
        guarded = False
        for parent in self.scopes.ancestors(receiver):
            if isinstance(parent, ScopeNode):
                break
            if isinstance(parent, cst.If) and self._tests_is_tensor(parent.test, receiver.value):
                guarded = True
        if not guarded:
            return False
        function = self.scopes.enclosing_function(receiver)
        parameter = self._parameter_behind(receiver, function)
        return function is None or parameter is None or not self.receives_tensor(function, parameter)

    def _parameter_behind(self, name: cst.Name, function: cst.FunctionDef | None) -> str | None:
        """The parameter `name` is, or the one a loop around it iterates
        (`for k, v in kwargs.items():` gives `kwargs` for `v`)."""
        if self.scopes.is_parameter(name.value, function):
            return name.value
        for loop in self.loops.enclosing_loops(name):
            if name.value not in loop.target_names or not isinstance(loop.node, cst.For):
                continue
            iterated = loop.node.iter
            while isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Attribute):
                iterated = iterated.func.value  # `kwargs.items()`
            if isinstance(iterated, cst.Name) and self.scopes.is_parameter(iterated.value, function):
                return iterated.value
        return None

    def _tests_is_tensor(self, test: cst.BaseExpression, name: str) -> bool:
        return self._tests_type(test, name, "torch.Tensor")

    def _tests_type(self, test: cst.BaseExpression, name: str, qualified: str) -> bool:
        """`isinstance(name, cls)` with `cls` the class `qualified` names."""
        tested = self.names.isinstance_test(test)
        return (
            tested is not None
            and tested[0] == name
            and self.names.qualified_name(tested[1]) == qualified
        )

    def is_host_value(
        self, expression: cst.BaseExpression, depth: int = 0, containers: bool = True
    ) -> bool:
        """A value known to live in host memory, so reading it waits for nothing.

        Literals, NumPy and `math` results, values already copied out (`x.cpu()`, `t.tolist()`),
        tensors built without `device=` or on the CPU (`torch.randperm(n)`, `torch.from_file(path)`,
        `torch.randint(0, n, (1,), device="cpu")`), what a tokenizer or processor
        returns (`tokenizer(texts, return_tensors="pt")`: host tensors until moved), what RPC
        received from another process (`rref.to_here()`, `rpc.rpc_sync(...)`), and what
        is computed from a host tensor without moving it (`x.cpu().sum(dim=1)`, `row[mask]`,
        `.to(torch.long)`); a name whose reaching assignment is one of these
        (`ids = input_ids.detach().cpu()`, even for a parameter rebound so), or bound only to
        these, a loop's name for the items of a host tensor (`for row in ids_cpu:`), and the
        parts of what a process pool returned (`for name, seq in pool.map(load, paths):`).
        `containers=False` excludes literal lists, tuples and dicts, whose items may be device
        tensors (`{"loss": loss}["loss"]`).
        """
        if isinstance(expression, (cst.BaseNumber, cst.BaseString)):
            return True
        if isinstance(expression, (cst.List, cst.Tuple, cst.Dict)):
            return containers
        if isinstance(expression, cst.Subscript):
            return self.is_host_value(expression.value, depth, containers=False)
        if isinstance(expression, cst.BinaryOperation):
            return self.is_host_value(expression.left, depth, False) and self.is_host_value(
                expression.right, depth, False
            )
        if isinstance(expression, cst.Comparison):
            return self.is_host_value(expression.left, depth, False) and all(
                self.is_host_value(target.comparator, depth, False)
                for target in expression.comparisons
            )
        if isinstance(expression, cst.Call):
            return self._returns_host_value(expression, depth)
        if isinstance(expression, cst.Attribute) and expression.attr.value in _SIZES:
            return True  # `x.shape`, `x.ndim`: Python ints, also for a device tensor
        if isinstance(expression, cst.Attribute) and depth < _MAX_HOST_DEPTH:
            return self._host_attribute(expression, depth, containers)
        if isinstance(expression, cst.Name) and depth < _MAX_HOST_DEPTH:
            sources = self.tensors.reaching_sources(expression)
            if sources is not None:
                # `next_obs, next_done = torch.Tensor(o), torch.Tensor(d)` (host tensors), then
                # `for i, d in enumerate(next_done):` (their items); `batch = None` at the top
                # of an iteration that then loads one holds no tensor.
                return any(not is_none(source) for source, _ in sources) and all(
                    self.is_host_value(source, depth + 1, containers and not is_item)
                    or self.is_loader_batch(source)  # `for r_id, cam in zip(ref_ids, cams):`
                    or is_none(source)
                    for source, is_item in sources
                )
            # `for row in ids_cpu:`; also a part of an unpacked item (`for name, seq in
            # loaded:` over what a process pool returned).
            item_of = self.tensors.iterated_for(expression) or self.tensors.iterated_for_item(
                expression
            )
            if item_of is not None:
                return self.is_host_value(item_of, depth + 1, containers=False)
            if self.scopes.holds_argument(expression):
                function = self.scopes.enclosing_function(expression)
                # `def _mask_tokens(self, input_ids)`, given a batch before its copy.
                return function is not None and self.receives_host_values(function, expression.value)
            if self._bound_elsewhere(expression):
                return False
            values = self.scopes.bound_values(expression)
            if self._host_tensor_updated_in_place(values):
                return True
            return bool(values) and all(
                self.is_host_value(value, depth + 1, containers) for value in values
            )
        return False

    def _next_loader_batch(self, call: cst.Call) -> bool:
        """`next(batches)` or `batches.__next__()` of an iterator over a DataLoader (`batches
        = iter(train_loader)`, `unlabeled_dataloader.__iter__()`): a batch as the loader
        yields it, in host memory until it is copied."""
        func = call.func
        if dotted_name(func) == "next" and call.args:
            iterator = call.args[0].value
        elif type(func) is cst.Attribute and func.attr.value == "__next__" and not call.args:
            iterator = func.value
        else:
            return False
        if not isinstance(iterator, (cst.Name, cst.Attribute)):
            return False
        # `unlabeled_iter = None` on the paths without unlabeled data.
        values = [value for value in self.scopes.bound_values(iterator) if not is_none(value)]
        return bool(values) and all(
            type(value) is cst.Call
            and (
                dotted_name(value.func) == "iter" and len(value.args) == 1
                or type(value.func) is cst.Attribute and value.func.attr.value == "__iter__"
            )
            and "loader" in (last_identifier(
                value.args[0].value if value.args else value.func.value
            ) or "").lower()
            for value in values
        )

    def _host_attribute(self, attribute: cst.Attribute, depth: int, containers: bool) -> bool:
        """`self.train_idx` when the module binds it only to host values (`self.train_idx =
        torch.from_numpy(split)`; `self.train_idx = self.train_idx` keeps it): a tensor an
        object holds stays where it was built, as `.cuda()` of a module moves only its
        parameters and buffers (`self.register_buffer("decay", torch.tensor(0.999))` is not
        one)."""
        name = dotted_name(attribute)
        if name is None:
            return False
        if not name.startswith("self."):
            return self._held_by_a_host_container(attribute)
        bound = self.scopes.bound_values(attribute)
        values = [value for value in bound if dotted_name(value) != name]
        if any(type(self.index.parents.get(value)) is cst.Arg for value in values):
            return False  # registered as a buffer
        return bool(values) and all(
            self.is_host_value(value, depth + 1, containers) for value in values
        )

    def _held_by_a_host_container(self, attribute: cst.Attribute) -> bool:
        """`dataset.train_idx` in a function that copies other tensors of the same object to
        the device piece by piece (`dataset.x[nodes].float().to(device)`) and never moves
        the object itself (`dataset.to(device)`, `dataset = dataset.cuda()`): the object
        keeps its tensors in host memory (DeepGCNs' `OGBNDataset`)."""
        holder = attribute.value
        if type(holder) is not cst.Name:
            return False
        function = self.scopes.enclosing_function(attribute)
        if function is not None and self.scopes.bound_values(holder):
            return False  # rebound in the function: not one object throughout
        copies_a_part = False
        for call in self.index.inside(self.index.calls, function) if function else ():
            func = call.func
            if type(func) is not cst.Attribute or func.attr.value not in ("to", "cuda"):
                continue
            moved = receiver_of_chain(func.value)
            if type(moved) is cst.Name and moved.value == holder.value:
                return False  # the object itself moves
            if type(moved) is cst.Attribute and type(moved.value) is cst.Name and (
                moved.value.value == holder.value
            ):
                copies_a_part = True
        return copies_a_part

    def _host_tensor_updated_in_place(self, values: list[cst.BaseExpression]) -> bool:
        """A name bound only to tensors built in host memory and then updated with augmented
        assignments (`tokens = torch.tensor(0); tokens += (labels != -100).sum()`): an in-place
        update keeps the tensor where it is (or raises), whatever is added. A Python number
        updated so (`total = 0.0; total += loss`) becomes what is added, and is not one."""
        built = [value for value in values if not self.scopes.is_augmented(value)]
        return len(built) < len(values) and bool(built) and all(
            self._builds_host_tensor(value) for value in built
        )

    def _builds_host_tensor(self, value: cst.BaseExpression) -> bool:
        """A tensor factory called without `device=` (`torch.zeros(3)`), or `x.cpu()`."""
        if not isinstance(value, cst.Call):
            return False
        if isinstance(value.func, cst.Attribute) and value.func.attr.value == "cpu":
            return True
        qualified = self.names.call_name(value)
        return (
            qualified is not None
            and qualified.removeprefix("torch.") in TENSOR_FACTORIES
            and qualified.startswith("torch.")
            and self._returns_host_value(value, 0)
        )

    def _returns_host_value(self, call: cst.Call, depth: int) -> bool:
        qualified = self.names.call_name(call)
        if qualified is not None:
            if qualified.startswith(_HOST_LIBRARIES):
                return True
            factory = qualified.removeprefix("torch.")
            # `device="cpu"` builds in host memory too.
            moved = any(
                (
                    arg.keyword is not None
                    and arg.keyword.value == "device"
                    and not is_cpu_device(arg.value, self.names, self.scopes)
                )
                or arg.star == "**"
                for arg in call.args
            )
            if factory in TENSOR_FACTORIES or factory in _LEGACY_CONSTRUCTORS or factory in _FILE_READS:
                return not moved
            computes_here = "." not in factory or qualified == _VARIABLE
            if qualified.startswith("torch.") and computes_here and call.args and not moved:
                # `torch.unsqueeze(x.cpu(), 0)`, `torch.cat([a.cpu(), b.cpu()])`,
                # `Variable(x.cpu())`: on the host when what it computes from is.
                return self._host_operands(call.args[0].value, depth)
        if any(arg.keyword is not None and arg.keyword.value == "return_tensors" for arg in call.args):
            return True  # a tokenizer's or processor's encoding, in host memory
        if self._received_over_rpc(call) or self._returned_by_worker_processes(call):
            return True
        if self._next_loader_batch(call):
            return True
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        method = func.attr.value
        if method in READING_METHODS or method in _SIZES or self._copies_to_cpu(call):
            return True
        if method in _DEVICE_MOVES and not (method == "to" and self._converts_only(call)):
            return False
        # A tensor method of a host tensor computes in host memory.
        return qualified is None and self.is_host_value(func.value, depth, containers=False)

    def _returned_by_worker_processes(self, call: cst.Call) -> bool:
        """`pool.map(load, paths)` (also `imap`, `starmap`, ...) of a process pool
        (`multiprocessing.Pool`, PyTorch's, `ProcessPoolExecutor`, also bound by `with Pool(8)
        as pool:`): what the workers return comes back pickled, in host memory."""
        func = call.func
        if type(func) is not cst.Attribute or func.attr.value not in _POOL_MAPS:
            return False
        pool = func.value
        entered = [  # `with Pool(8) as pool:` around the call
            item.item
            for block in self.scopes.ancestors(call)
            if type(block) is cst.With
            for item in block.items
            if item.asname is not None
            and type(item.asname.name) is cst.Name
            and type(pool) is cst.Name
            and item.asname.name.value == pool.value
        ]
        return any(
            type(value) is cst.Call and self.names.call_name(value) in _PROCESS_POOLS
            for value in (*entered, *self.scopes.bound_values(pool))
        )

    def copies_back(self, call: cst.Call) -> bool:
        """`call` copies a value that is not known to be in host memory back to the host as
        an array (`out.cpu()`, `emb.to("cpu").numpy()`, `pred.tolist()`), not as one number
        (`.item()`), whether or not its receiver is known to be a tensor: the outputs an
        evaluation or an embedding pass keeps of each batch, for work on the host."""
        func = call.func
        if type(func) is not cst.Attribute:
            return False
        if func.attr.value not in _ARRAY_COPIES and not self._copies_to_cpu(call):
            return False
        receiver = func.value
        while type(receiver) is cst.Call and type(receiver.func) is cst.Attribute and (
            receiver.func.attr.value in READING_METHODS or self._copies_to_cpu(receiver)
        ):
            receiver = receiver.func.value  # `x.cpu().numpy()`: what `x.cpu()` copied
        return not self.is_host_value(receiver)

    def _copies_to_cpu(self, call: cst.Call) -> bool:
        """`x.to("cpu")`, `x.to(device="cpu")`, `x.to(torch.device("cpu"), non_blocking=True)`."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "to" or not call.args:
            return False
        target = next(
            (
                arg.value for arg in call.args
                if arg.keyword is None or arg.keyword.value == "device"
            ),
            None,
        )
        return target is not None and is_cpu_device(target, self.names, self.scopes)

    def _host_operands(self, expression: cst.BaseExpression, depth: int) -> bool:
        """A host tensor, or a list or tuple of host tensors only (also one a comprehension
        builds: `[rref.to_here() for rref in rrefs]`)."""
        if isinstance(expression, (cst.List, cst.Tuple)):
            return bool(expression.elements) and all(
                self.is_host_value(element.value, depth, containers=False)
                for element in expression.elements
            )
        if isinstance(expression, (cst.ListComp, cst.GeneratorExp)):
            return self.is_host_value(expression.elt, depth, containers=False)
        if isinstance(expression, cst.Name) and self._collects_host_values(expression, depth):
            return True
        return self.is_host_value(expression, depth, containers=False)

    def _collects_host_values(self, name: cst.Name, depth: int) -> bool:
        """`feats` bound to an empty list that its function fills with host values only:
        `feats = []`, then `feats.append(feat.cpu())` in a loop (`torch.cat(feats)`)."""
        sources = self.tensors.reaching_sources(name)
        if not sources or depth >= _MAX_HOST_DEPTH or not all(
            type(source) is cst.List and not source.elements and not is_item
            for source, is_item in sources
        ):
            return False
        appended = self._appended.get((self.scopes.enclosing_function(name), name.value), [])
        return bool(appended) and all(
            self.is_host_value(value, depth + 1, containers=False) for value in appended
        )

    @cached_property
    def _appended(self) -> dict[tuple[cst.FunctionDef | None, str], list[cst.BaseExpression]]:
        """Per (function, list name), what `name.append(value)` calls there append."""
        found: dict[tuple[cst.FunctionDef | None, str], list[cst.BaseExpression]] = {}
        for call in self.index.calls:
            func = call.func
            if (
                type(func) is cst.Attribute
                and func.attr.value == "append"
                and type(func.value) is cst.Name
                and len(call.args) == 1
            ):
                key = (self.scopes.enclosing_function(call), func.value.value)
                found.setdefault(key, []).append(call.args[0].value)
        return found

    def _received_over_rpc(self, call: cst.Call) -> bool:
        """`rpc.rpc_sync(worker, fn)`, `rref.to_here()` of a remote reference, or `fut.wait()`
        of a future `rpc.rpc_async(worker, fn)` gave (`fut` bound to it only)."""
        if self.names.call_name(call) in _RPC_SYNC_CALLS:
            return True
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        if func.attr.value == "to_here":
            return True
        if func.attr.value != "wait":
            return False
        futures = (
            self.scopes.bound_values(func.value)
            if isinstance(func.value, cst.Name)
            else [func.value]
        )
        return bool(futures) and all(
            isinstance(future, cst.Call) and self.names.call_name(future) in _RPC_ASYNC_CALLS
            for future in futures
        )

    def _converts_only(self, call: cst.Call) -> bool:
        """`.to(torch.long)`, `.to(dtype=...)`: a conversion that moves nothing."""
        return bool(call.args) and all(
            (arg.keyword is not None and arg.keyword.value == "dtype")
            or (arg.keyword is None and is_dtype(arg.value, self.names))
            for arg in call.args
        )

    def _bound_elsewhere(self, name: cst.Name) -> bool:
        """Whether `name` is also bound by what no assignment shows: a parameter of its function
        or the target of a loop around it (`for k, v in ...: v = v.item()` reads a tensor first).
        """
        if self.scopes.is_parameter(name.value, self.scopes.enclosing_function(name)):
            return True
        return any(name.value in loop.target_names for loop in self.loops.enclosing_loops(name))

    def is_loader_batch(self, expression: cst.BaseExpression) -> bool:
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
            loop.iterates_dataloader and root.value in loop.target_names
            for loop in self.loops.enclosing_loops(root)
        )
        return yielded and not self._is_assigned(root)

    def copies_a_batch(self, call: cst.Call, loop: LoopFacts) -> bool:
        """`x.to(device)` of what `loop` yields (`for x, y in loader`, `batch =
        next(data_iter)`), of an item of it (`[t.to(device) for t in batch]`), or of the next
        item of an iterator (`x = next(looper).to(device)`)."""
        copied = call.func.value
        if type(copied) is cst.Call and dotted_name(copied.func) == "next":
            return True
        while isinstance(copied, (cst.Attribute, cst.Subscript)):
            copied = copied.value
        if not isinstance(copied, cst.Name):
            return False
        if copied.value in loop.target_names:
            return True
        iterated = self.tensors.iterated_for_item(copied)
        return iterated is not None and root_name(iterated) in loop.target_names

    def _is_assigned(self, name: cst.Name) -> bool:
        """Whether an assignment in `name`'s function (or module) binds it, also by unpacking,
        other than to a conversion of itself that keeps it where it is (`batch_y =
        batch_y.float()`)."""
        function = self.scopes.enclosing_function(name)
        for assignment in self.index.assigns:
            if self.scopes.enclosing_function(assignment) is not function:
                continue
            targets = (
                [target.target for target in assignment.targets]
                if isinstance(assignment, cst.Assign)
                else [assignment.target]
            )
            if any(name.value in target_names(target) for target in targets) and not (
                type(assignment) is cst.Assign and _converts_in_place(assignment.value, name.value)
            ):
                return True
        return False

    def _outermost(self, sites: list[HostSync]) -> list[HostSync]:
        """Drops the sites inside another site of the same statement: a chain is one finding."""
        nodes = {site.node for site in sites}

        def inside_another(node: cst.CSTNode) -> bool:
            for parent in self.scopes.ancestors(node):
                if isinstance(parent, (cst.BaseStatement, cst.BaseSmallStatement)):
                    return False
                if parent in nodes:
                    return True
            return False

        return [site for site in sites if not inside_another(site.node)]

    # Reads of device values ---------------------------------------------------------------

    def _call_sync(self, call: cst.Call) -> HostSync | None:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in READING_METHODS:
            if func.attr.value == "numpy" and not _forces_a_copy(call):
                return None  # a bare `.numpy()` raises on a device tensor: its tensor is on the host
            if self._moves_a_module(call) or not self.may_be_device_tensor(func.value):
                return None
            if (
                self._feeds_an_environment(call)
                or self._reaches_a_consumer(call, self._host_solvers)
                or self._feeds_an_output(call)
                or self._decodes_an_object(call, func.value)
                or self._encoded_as_text(call)
            ):
                return None
            if func.attr.value == "cpu" and self._copies_weights(func.value):
                return None
            return HostSync(call, f"`.{func.attr.value}()`")
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in _SCALE_READS
            and self._is_grad_scaler(func.value)
        ):
            return HostSync(call, f"`GradScaler.{func.attr.value}()`, which reads the scale,")
        qualified = self.names.call_name(call)
        if qualified in _CONVERSIONS and self._first_argument_is_tensor(call):
            if self._feeds_an_environment(call) or self._decodes_an_object(
                call, call.args[0].value
            ):
                return None
            return HostSync(call, f"`{qualified.removeprefix('builtins.')}()` of a tensor")
        if qualified in _MATH_TESTS and self._first_argument_is_tensor(call):
            return HostSync(call, f"`{qualified}()` of a tensor")
        if qualified == _RANGE and any(
            not a.star and self._reads_device(a.value) for a in call.args
        ):
            return HostSync(call, "`range()` of a tensor")
        if qualified == "builtins.print" and any(self._formats_tensor(a.value) for a in call.args):
            return HostSync(call, "`print` of a tensor")
        if qualified in ("builtins.min", "builtins.max") and len(call.args) >= 2 and any(
            _is_name_or_own_attribute(a.value) and self._reads_device(a.value) for a in call.args
        ):
            # `min(self.decay, x)` compares with `<`: `bool()` of a tensor.
            return HostSync(call, f"`{qualified.removeprefix('builtins.')}()` comparing tensors")
        sink = self._formatting_sink(call)
        if sink is not None and any(
            self._reads_device(a.value) and not _is_string(a.value) for a in call.args
        ):
            return HostSync(call, f"A tensor passed to `{sink}`, which formats it,")
        return None

    def _encoded_as_text(self, call: cst.Call) -> bool:
        """`tokenizer(smiles[0].tolist(), return_tensors="pt")`: a `.tolist()` handed to a
        tokenizer's or processor's encoding, which takes text, so what it lists is strings
        (a NumPy array of them), not a tensor's numbers."""
        argument = self.index.parents.get(call)
        encoding = self.index.parents.get(argument) if type(argument) is cst.Arg else None
        return (
            type(encoding) is cst.Call
            and call.func.attr.value == "tolist"
            and any(arg.keyword is not None and arg.keyword.value == "return_tensors" for arg in encoding.args)
        )

    def _is_grad_scaler(self, receiver: cst.BaseExpression) -> bool:
        """A name or `self.attr` bound only to `GradScaler(...)` constructions that may be
        enabled (not `enabled=False`)."""
        values = self.scopes.bound_values(receiver)
        return bool(values) and all(
            isinstance(value, cst.Call)
            and (self.names.call_name(value) or "").startswith(_GRAD_SCALERS)
            and argument_value(value, "enabled", ()) is not False
            for value in values
        )

    def _formatting_sink(self, call: cst.Call) -> str | None:
        """`pbar.set_postfix`, `logger.info`, `logging.warning`: a call that formats its
        arguments for display, or None."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        if method in _FORMATTING_SINKS:
            return method
        if method in _LOGGING_METHODS:
            receiver = (self.names.qualified_name(func.value) or last_identifier(func.value) or "")
            if receiver == "logging" or "log" in receiver.lower().rsplit(".", 1)[-1]:
                return f"{last_identifier(func.value)}.{method}"
        return None

    def _feeds_an_environment(self, call: cst.Call) -> bool:
        """`env.step(action.item())`, `actions = q.argmax(1).cpu().numpy()` then
        `envs.step(actions)` (also from one branch of an `if` whose other branch samples a
        random action), or any read in a function that picks an agent's action (`get_action`,
        `select_action`, `act`), whose caller hands it to the environment.

        A simulator on the host needs the value now: that read is the algorithm, not overhead.
        """
        function = self.scopes.enclosing_function(call)
        if function is not None and _picks_an_action(function.name.value):
            return True
        for parent in self.scopes.ancestors(call):
            if isinstance(parent, cst.Call) and self._is_environment_step(parent):
                return True
            if isinstance(parent, (cst.BaseSmallStatement, cst.BaseStatement)):
                break
        return self._reaches_a_consumer(call, self._environment_steps)

    @cached_property
    def _host_solvers(self) -> frozenset[cst.Call]:
        """The module's calls of SciPy's solvers and graph algorithms
        (`linear_sum_assignment(cost)`, DETR's Hungarian matching): they run on the host and
        need their input now, so the read that makes it is the algorithm, not overhead."""
        return frozenset(
            call for call in self.index.calls
            if (self.names.call_name(call) or "").startswith(_HOST_SOLVERS)
        )

    @cached_property
    def _environment_steps(self) -> frozenset[cst.Call]:
        """The module's `env.step(action)` calls (`_is_environment_step`)."""
        return frozenset(call for call in self.index.calls if self._is_environment_step(call))

    def _reaches_a_consumer(self, read: cst.Call, consumers: frozenset[cst.Call]) -> bool:
        """Whether the host value `read` gives, as it stays through NumPy's conversions and
        indexing (`_HOST_VALUE_STEPS`: `q.argmax(1).cpu().numpy().clip(lo, hi)`), is an
        argument of one of `consumers`, or is bound to a name that reaches such an argument
        before anything binds the name again (`actions = ...`, then `envs.step(actions)`)."""
        if not consumers:
            return False
        value = self._host_value_of(read)
        parent = self.index.parents.get(value)
        if type(parent) is cst.Arg:
            return self.index.parents[parent] in consumers
        if not (
            type(parent) is cst.Assign
            and len(parent.targets) == 1
            and type(parent.targets[0].target) is cst.Name
        ):
            return False
        binding = parent.targets[0]
        name = binding.target.value
        function = self.scopes.enclosing_function(read)
        for consumer in consumers:
            if self.scopes.enclosing_function(consumer) is not function:
                continue
            for argument in consumer.args:
                passed = self._host_root(argument.value)
                if type(passed) is cst.Name and passed.value != name:
                    passed = self._split_from(passed, name)
                if type(passed) is not cst.Name or passed.value != name:
                    continue
                reaching = self.scopes.reaching_bindings(passed)
                if reaching is None or binding in reaching:
                    return True  # a binding it cannot follow is given the benefit of the doubt
        return False

    def _split_from(self, item: cst.Name, name: str) -> cst.BaseExpression:
        """What a comprehension or loop over `name`, or over its parts, binds `item` to reads:
        `C` for `c` in `[solve(c[i]) for i, c in enumerate(C.split(sizes, -1))]`; else
        `item`."""
        for target, iterated in self.tensors.iterations_around(item):
            if item.value not in target_names(target):
                continue
            source = unwrapped_iterable(iterated)
            while type(source) is cst.Call and type(source.func) is cst.Attribute and (
                source.func.attr.value in ("split", "chunk", "unbind")
            ):
                source = source.func.value
            if type(source) is cst.Name and source.value == name:
                return source
        return item

    def _host_value_of(self, read: cst.Call) -> cst.BaseExpression:
        """The outermost expression around `read` that is its value made into a host array:
        through `_HOST_VALUE_STEPS` methods, indexing, and NumPy functions or Python
        conversions of it (`np.clip(x.cpu().numpy(), lo, hi)`, `int(x.item())`)."""
        parents = self.index.parents
        node: cst.BaseExpression = read
        while True:
            parent = parents.get(node)
            kind = type(parent)
            if kind is cst.Attribute and parent.attr.value in _HOST_VALUE_STEPS:
                call = parents.get(parent)
                if type(call) is not cst.Call or call.func is not parent:
                    return node
                node = call
            elif kind is cst.Subscript and parent.value is node:
                node = parent
            elif kind is cst.Arg and not parent.keyword and not parent.star:
                call = parents[parent]
                qualified = self.names.call_name(call) or ""
                if call.args[0] is not parent or not (
                    qualified.startswith("numpy.") or qualified in _HOST_CONVERSIONS
                ):
                    return node
                node = call
            else:
                return node

    @staticmethod
    def _host_root(expression: cst.BaseExpression) -> cst.BaseExpression:
        """`actions` for `actions`, `actions.astype(int)` or `actions[0]`: what an argument is
        made from through `_HOST_VALUE_STEPS` and indexing."""
        while True:
            if type(expression) is cst.Subscript:
                expression = expression.value
            elif (
                type(expression) is cst.Call
                and type(expression.func) is cst.Attribute
                and expression.func.attr.value in _HOST_VALUE_STEPS
            ):
                expression = expression.func.value
            else:
                return expression

    def _decodes_an_object(self, read: cst.Call, receiver: cst.BaseExpression) -> bool:
        """`pickle.loads(bytes(buffer[2:n + 2].tolist()))`: the read carries a Python object
        through a device byte buffer (pickled, then gathered from other ranks), and decoding
        it is the algorithm, not a result read early. So is every other read of that buffer
        in its function (`n = buffer[0].item()`, the header that sizes the slice decoded)."""
        if self._reaches_a_consumer(read, self._byte_decodings):
            return True
        buffer = root_name(receiver)
        return buffer is not None and (
            (self.scopes.enclosing_function(read), buffer) in self._decoded_buffers
        )

    def _reads_gathered_sizes(self, node: cst.CSTNode) -> bool:
        """A read of the buffer sizes that ranks gather before sending Python objects through
        tensors (`_gathered_sizes`), or of their items: `[int(size.item()) for size in
        size_list]`, `if local_size != max_size:`. The sizes pad and slice the buffers the
        decoding needs: reading them is the algorithm."""
        sizes = self._gathered_sizes
        if not sizes:
            return False
        function = self.scopes.enclosing_function(node)
        for name in (node, *descendants(node)):
            if type(name) is not cst.Name:
                continue
            item_of = self.tensors.iterated_for(name)
            for read in (name, item_of):
                if type(read) is cst.Name and (function, read.value) in sizes:
                    return True
        return False

    @cached_property
    def _gathered_sizes(self) -> frozenset[tuple[cst.FunctionDef | None, str]]:
        """(function, name) of the size tensors a gather exchanges in a module that decodes
        gathered bytes (`pickle.loads`): `dist.all_gather(size_list, local_size)` with
        `local_size = torch.tensor([tensor.numel()], device=...)`, both names."""
        if not self._byte_decodings:
            return frozenset()
        found = set()
        for call in self.index.calls:
            if self.names.call_name(call) not in _GATHERS or len(call.args) < 2:
                continue
            gathered, sent = call.args[0].value, call.args[1].value
            if type(gathered) is not cst.Name or type(sent) is not cst.Name:
                continue
            if any(_counts_elements(value) for value in self.scopes.bound_values(sent)):
                function = self.scopes.enclosing_function(call)
                found.update({(function, gathered.value), (function, sent.value)})
        return frozenset(found)

    @cached_property
    def _decoded_buffers(self) -> frozenset[tuple[cst.FunctionDef | None, str]]:
        """(function, name) of the buffers a read there hands to a decoder (`_decodes_an_object`)."""
        return frozenset(
            (self.scopes.enclosing_function(call), buffer)
            for call in self.index.calls
            if type(call.func) is cst.Attribute
            and call.func.attr.value in READING_METHODS
            and (buffer := root_name(call.func.value)) is not None
            and self._reaches_a_consumer(call, self._byte_decodings)
        )

    @cached_property
    def _byte_decodings(self) -> frozenset[cst.Call]:
        """`bytes(values)`, `bytearray(values)`, `pickle.loads(data)`."""
        return frozenset(
            call for call in self.index.calls if self.names.call_name(call) in _BYTE_DECODERS
        )

    def _is_environment_step(self, call: cst.Call) -> bool:
        """`env.step(action)`, `plateau.step(metric)`: a `.step()` given a value to use on the
        host, on something that is not an optimizer or a scaler."""
        func = call.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == "step"
            and bool(call.args)
            and not self.loops.is_optimizer_or_scaler(func.value)
        )

    def _moves_a_module(self, call: cst.Call) -> bool:
        """`model.cpu()`, `m.cpu().parameters()`: moving a module's weights, not reading values.
        Also a name bound to a module's copy switched to a mode (`value =
        copy.deepcopy(value).eval()`), or tested to be a module around the call (`if
        isinstance(value, torch.nn.Module): data[key] = value.cpu()`)."""
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else call.func
        if self.tensors.is_module_reference(receiver):
            return True
        parent = self.index.parents.get(call)
        if isinstance(parent, cst.Attribute) and parent.attr.value in _MODULE_METHODS:
            return True
        return isinstance(receiver, cst.Name) and (
            any(_switches_a_module(value) for value in self.scopes.bound_values(receiver))
            or self._tested_to_be_a_module(call, receiver.value)
        )

    def _tested_to_be_a_module(self, node: cst.CSTNode, name: str) -> bool:
        """`node` is in the body of `if isinstance(name, torch.nn.Module):` in its function."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if type(parent) is cst.If and child is parent.body and any(
                self._tests_type(test, name, "torch.nn.Module") for test in conjuncts(parent.test)
            ):
                return True
        return False

    def _copies_weights(self, receiver: cst.BaseExpression, depth: int = 0) -> bool:
        """A model's weights copied to host memory to be sent elsewhere (another process, an
        inference server, a checkpoint): `{k: v.cpu() for k, v in model.state_dict().items()}`,
        `TensorDict.from_module(policy).data.detach().clone().cpu()`, `weights.cpu()`. The
        copy is what the program needs, not a result read early."""
        while True:
            if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
                if receiver.func.attr.value not in _WEIGHT_COPY_STEPS:
                    break
                receiver = receiver.func.value
            elif isinstance(receiver, cst.Subscript) or (
                isinstance(receiver, cst.Attribute) and receiver.attr.value == "data"
            ):
                receiver = receiver.value
            else:
                break
        named = receiver.func if isinstance(receiver, cst.Call) else receiver
        if any(word in (last_identifier(named) or "").lower() for word in _WEIGHT_WORDS):
            return True
        if not isinstance(receiver, cst.Name) or depth >= 2:
            return False
        values = self.scopes.bound_values(receiver) or [
            iterated
            for target, iterated in self.tensors.iterations_around(receiver)
            if receiver.value in target_names(target)
        ]
        return bool(values) and all(self._copies_weights(value, depth + 1) for value in values)

    def _first_argument_is_tensor(self, call: cst.Call) -> bool:
        """`math.isnan(loss)` of a device tensor, also of a parameter the callers pass one
        (`def check_nan_losses(loss): if math.isnan(loss): raise ...`)."""
        first = call.args[0] if call.args else None
        if first is None or first.star != "":
            return False
        value = first.value
        if type(value) is cst.Name and self.scopes.holds_argument(value):
            function = self.scopes.enclosing_function(value)
            return function is not None and self.receives_tensor(function, value.value)
        return self._reads_device(value)

    def _reads_device(self, expression: cst.BaseExpression) -> bool:
        """A tensor expression that may live on the device: `int(torch.randint(4, (1,)))`
        converts a host tensor and waits for nothing."""
        return self.tensors.is_definitely_tensor(expression) and self.may_be_device_tensor(
            expression
        )

    def _bound_reads_device(self, bound: cst.BaseExpression) -> bool:
        """A slice bound that converts a device tensor to an int. In arithmetic, only its
        tensor operands may: `i + block_size` with `i` an item of a host tensor (`for i in
        ix`, `ix = torch.randint(n, (b,))`) and an int reads nothing."""
        if type(bound) is cst.BinaryOperation:
            return any(
                self._bound_reads_device(operand)
                for operand in (bound.left, bound.right)
                if self.tensors.is_tensor(operand)
            )
        return self._reads_device(bound)

    def _formats_tensor(self, expression: cst.BaseExpression) -> bool:
        """`loss`, or a string made from it: `f"{loss:.3f}"`, `str(loss)`, `"%f" % loss`."""
        if isinstance(expression, cst.BinaryOperation) and isinstance(expression.operator, cst.Add):
            return self._formats_tensor(expression.left) or self._formats_tensor(expression.right)
        return self._string_of_tensor(expression) or self._reads_device(expression)

    def _string_of_tensor(self, node: cst.CSTNode) -> bool:
        """A string made from a device tensor, whatever receives it (`print`, `logger.info`,
        a progress bar): `f"{loss:.3f}"`, `str(loss)`, `"{}".format(loss)`, `"%f" % loss`."""
        if isinstance(node, cst.FormattedString):
            return any(
                isinstance(part, cst.FormattedStringExpression)
                and self._reads_device(part.expression)
                for part in node.parts
            )
        if isinstance(node, cst.Call):
            qualified = self.names.call_name(node)
            if qualified in _FORMATTERS:
                return self._first_argument_is_tensor(node)
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(
                func.value, cst.BaseString
            ):
                return any(self._reads_device(arg.value) for arg in node.args)
            return False
        if (
            isinstance(node, cst.BinaryOperation)
            and isinstance(node.operator, cst.Modulo)
            and _is_format_string(node.left)
        ):
            right = node.right
            # `"%g %g" % (*losses, n)`: a starred tensor is formatted element by element.
            values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
            return any(self._reads_device(value) for value in values)
        return False

    def _truth_tests(self) -> Iterator[tuple[cst.BaseExpression, bool]]:
        """The tests of every `if`, `elif`, `while`, conditional expression and `assert`, each
        with whether it is an `assert`'s."""
        for node in self.index.conditions:
            test = _unlatched_test(node) if type(node) is cst.If else node.test
            yield test, isinstance(node, cst.Assert)

    def _reads_tensor_truth(self, operand: cst.BaseExpression, asserted: bool = False) -> bool:
        """`torch.isnan(loss).any()`, `loss > best`, `found_inf`: the `if` must read the value
        on the host; an `assert` reads any tensor expression it is given.

        Only calls, names and a module's own attributes bound only to tensors (a buffer:
        `self.register_buffer("num_updates", torch.tensor(0))`) are trusted as tensors here;
        another attribute such as `model.training` is a Python flag far too often.
        """
        if isinstance(operand, cst.Comparison):
            if not self.tensors.is_tensor(operand):  # `x is None`, `k in batch`, plain numbers
                return False
            if any(is_none(c.comparator) for c in operand.comparisons):
                return False  # `p_model == None` gives Python's `False`: nothing is read
            sides = (operand.left, *(c.comparator for c in operand.comparisons))
            return any(
                (_is_name_or_own_attribute(side) and self._reads_device(side))
                or self._is_tensor_predicate(side)
                for side in sides
            )
        if isinstance(operand, cst.Name) or (asserted and isinstance(operand, cst.Call)):
            return self._reads_device(operand)
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

    # Data-dependent output sizes ----------------------------------------------------------

    def _shape_sync(self, call: cst.Call) -> HostSync | None:
        qualified = self.names.call_name(call)
        if qualified in _DATA_DEPENDENT_FUNCTIONS:
            return HostSync(call, f"`{qualified}`")
        func = call.func
        if (
            qualified is None
            and isinstance(func, cst.Attribute)
            and func.attr.value in _DATA_DEPENDENT_METHODS
            and self.may_be_device_tensor(func.value)
        ):
            return HostSync(call, f"`.{func.attr.value}()`")
        return None

    # Indexing a device tensor with a host array ---------------------------------------------

    @cached_property
    def _host_indexes(self) -> dict[cst.Subscript, cst.BaseExpression]:
        """Each gather from a device tensor with an index in host memory, with that index
        (`_host_index_of`)."""
        found = {}
        for subscript in self.index.subscripts:
            index = self._host_index_of(subscript)
            if index is not None:
                found[subscript] = index
        return found

    def _host_index_of(self, subscript: cst.Subscript) -> cst.BaseExpression | None:
        """`mb_inds` in `b_obs[mb_inds]`, with `mb_inds = b_inds[start:end]` of `b_inds =
        np.arange(n)`, and `b_obs` made on the device: PyTorch copies the index to the device
        from pageable memory, a blocking copy that waits for every kernel queued before it (as
        for a NumPy array, for a host tensor such as `torch.randperm(n)[i:i + b]`)."""
        candidates = [
            element.slice.value for element in subscript.slice
            if type(element.slice) is cst.Index
            and type(element.slice.value) in (cst.Name, cst.Subscript, cst.Call)
        ]
        if not candidates or not self._placed_on_device(subscript.value):
            return None
        return next((index for index in candidates if self._is_host_array(index)), None)

    def _one_per_index(self, sites: list[HostSync]) -> list[HostSync]:
        """The sites of a loop body that only index device tensors with the same host-memory
        index (`b_obs[mb_inds]`, then `b_logprobs[mb_inds]`, ...) are one site, at the
        first: one fix, building that index on the device."""
        groups: dict[tuple[cst.CSTNode | None, str], list[HostSync]] = {}
        kept: list[HostSync | tuple[cst.CSTNode | None, str]] = []
        for site in sites:
            indexes = {self._index_name(gather.node) for gather in (site, *site.others)}
            if len(indexes) != 1 or None in indexes:
                kept.append(site)
                continue
            loops = self.loops.enclosing_loops(site.node)
            key = (loops[0].node if loops else None, indexes.pop())
            if key not in groups:
                kept.append(key)
            groups.setdefault(key, []).append(site)
        merged = []
        for item in kept:
            if isinstance(item, HostSync):
                merged.append(item)
                continue
            gathers = [gather for site in groups[item] for gather in (site, *site.others)]
            count = len(gathers)
            times = "a device tensor" if count == 1 else f"device tensors {count} times"
            merged.append(HostSync(
                gathers[0].node,
                f"Indexing {times} with the host-memory index `{item[1]}`",
                tuple(gathers[1:]),
                _INDEX_ADVICE,
            ))
        return merged

    def _index_name(self, node: cst.CSTNode) -> str | None:
        """The name of the host-memory index of a gather: `mb_inds` in `b_obs[mb_inds]`, also
        `perm` in `x[perm[i:i + b]]`; None for any other site."""
        index = self._host_indexes.get(node)
        while isinstance(index, cst.Subscript):
            index = index.value
        return index.value if isinstance(index, cst.Name) else None

    def _is_host_array(self, expression: cst.BaseExpression) -> bool:
        """An array of positions or a mask in host memory: a NumPy array, or a host tensor
        (unless the module makes the factories build on a GPU:
        `torch.set_default_tensor_type("torch.cuda.FloatTensor")`)."""
        return self._is_numpy_array(expression) or (
            not self._sets_default_device
            and self.tensors.is_definitely_tensor(expression)
            and self.is_host_value(expression)
        )

    @cached_property
    def _sets_default_device(self) -> bool:
        return any(
            self.names.call_name(call) in _DEFAULT_DEVICE_SETTERS for call in self.index.calls
        )

    def _is_numpy_array(self, expression: cst.BaseExpression, depth: int = 0) -> bool:
        """An array NumPy made (`np.arange(n)`, `np.random.permutation(n)`), a slice or a
        reshaped copy of one (`b_inds[start:end]`, `flat[:, envs].ravel()`), or a name bound
        only to these."""
        if isinstance(expression, cst.Call):
            qualified = self.names.call_name(expression)
            if qualified in _NUMPY_ARRAYS:
                return True
            func = expression.func
            if qualified is None and isinstance(func, cst.Attribute):
                return func.attr.value in _NUMPY_ARRAY_METHODS and self._is_numpy_array(
                    func.value, depth
                )
            signature = _NUMPY_SIZED_ARRAYS.get(qualified or "")
            return signature is not None and isinstance(
                bound_argument(expression, "size", signature), cst.Arg
            )
        if isinstance(expression, cst.Subscript):
            # A slice, or an array of positions, selects an array; an integer, one element.
            return all(
                isinstance(e.slice, cst.Slice) or self._is_numpy_array(e.slice.value, depth)
                for e in expression.slice
            ) and self._is_numpy_array(expression.value, depth)
        return isinstance(expression, cst.Name) and self._name_bound_to(
            expression, depth, self._is_numpy_array
        )

    def _placed_on_device(self, expression: cst.BaseExpression, depth: int = 0) -> bool:
        """A tensor the code shows on the device: moved there (`.to(device)`, `.cuda()`),
        made there (`torch.zeros(n, device=device)`), a view, conversion or part of one
        (`obs.reshape(-1)`, `b_actions.long()`, `x[i]`), or a name bound only to these."""
        if isinstance(expression, cst.Subscript):
            return self._placed_on_device(expression.value, depth)
        if isinstance(expression, cst.Call):
            func = expression.func
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method == "cuda":
                    return True
                if method == "to":
                    return not (self._converts_only(expression) or self._copies_to_cpu(expression))
                if method in _DEVICE_KEEPING_METHODS:
                    return self._placed_on_device(func.value, depth)
            qualified = self.names.call_name(expression)
            device = bound_argument(expression, "device")
            return (
                qualified is not None
                and qualified.startswith("torch.")
                and qualified.removeprefix("torch.") in TENSOR_FACTORIES
                and isinstance(device, cst.Arg)
                and not is_cpu_device(device.value, self.names, self.scopes)
            )
        return isinstance(expression, cst.Name) and self._name_bound_to(
            expression, depth, self._placed_on_device
        )

    def _name_bound_to(
        self,
        name: cst.Name,
        depth: int,
        holds: Callable[[cst.BaseExpression, int], bool],
    ) -> bool:
        """Whether every value that reaches this use of `name` (or, where that is not known,
        every value bound to it) `holds`."""
        if depth >= _MAX_HOST_DEPTH:
            return False
        sources = self.tensors.reaching_sources(name)
        if sources is not None:
            return bool(sources) and all(
                not is_item and holds(source, depth + 1) for source, is_item in sources
            )
        if self._bound_elsewhere(name):
            return False
        values = self.scopes.bound_values(name)
        return bool(values) and all(holds(value, depth + 1) for value in values)

    def _is_mask_read(self, subscript: cst.Subscript) -> bool:
        """`t[t > 0]`, `t[mask]`: a tensor indexed by one boolean mask, read (not assigned).

        Assigning a scalar through a mask (`t[mask] = 0`) runs as `masked_fill_` without a
        sync; assignments are left alone, since the value's shape is rarely known.
        """
        parent = self.index.parents.get(subscript)
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or (
            isinstance(parent, cst.AugAssign) and parent.target is subscript
        ):
            return False
        if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
            return False
        index = subscript.slice[0].slice.value
        return self.tensors.is_definitely_tensor(subscript.value) and self.tensors.is_mask(index)


def _run_whenever_it_does(line: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes of a statement line that run whenever it does (`_always_evaluated`): all of
    a simple statement line, the test of an `if`, and the first statement of a `for` loop's
    body (taken to run at least once) when it is a simple one."""
    if type(line) is cst.SimpleStatementLine:
        yield line
        yield from _always_evaluated(line)
    elif type(line) is cst.If:
        yield line.test
        yield from _always_evaluated(line.test)
    elif type(line) is cst.For and line.orelse is None:
        first = statements_of(line.body)[:1]
        if first and type(first[0]) is cst.SimpleStatementLine:
            yield from _always_evaluated(first[0])


def _header_of(line: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """What runs of a statement line before its body: the test of an `if` or a `while`, the
    iterable of a `for`, the items of a `with`; all of a simple statement line."""
    if type(line) in (cst.If, cst.While):
        return [line.test]
    if type(line) is cst.For:
        return [line.iter]
    if type(line) is cst.With:
        return line.items
    return [line]


def _reads_on_its_own(call: cst.Call) -> bool:
    """`.item()`, `.cpu()`, `.tolist()`, `.numpy()`: a read, whatever it reads."""
    return type(call.func) is cst.Attribute and call.func.attr.value in READING_METHODS


def _only_leaves(body: cst.BaseSuite) -> bool:
    """A block that only leaves its loop or function: `continue`, `break`, `return`,
    `raise`."""
    statements = statements_of(body)
    if len(statements) == 1 and type(statements[0]) is cst.SimpleStatementLine:
        statements = list(statements[0].body)
    return len(statements) == 1 and isinstance(
        statements[0], (cst.Continue, cst.Break, cst.Return, cst.Raise)
    )


def _always_evaluated(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes below `node` that run whenever it does, in source order: not the branches
    of a conditional expression (`x.cpu() if offload else x`, only its test), the right
    operand of `and` or `or` (`use_queue or not torch.all(q == 0)`), nor the body of a
    `lambda`."""
    pending = list(reversed(_evaluated_first(node)))
    while pending:
        child = pending.pop()
        yield child
        pending.extend(reversed(_evaluated_first(child)))


def _evaluated_first(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of `node` that run whenever it does (`_always_evaluated`)."""
    if type(node) is cst.IfExp:
        return [node.test]
    if type(node) is cst.BooleanOperation:
        return [node.left]
    if type(node) is cst.Lambda:
        return []
    return children(node)


def _branch_statements(branch: cst.If) -> list[cst.CSTNode]:
    """The statements of an `if`'s body and of its `else` (an `elif` is one statement)."""
    statements = list(statements_of(branch.body))
    if type(branch.orelse) is cst.Else:
        statements.extend(statements_of(branch.orelse.body))
    elif branch.orelse is not None:
        statements.append(branch.orelse)
    return statements


def _only_light_calls(node: cst.CSTNode | Sequence[cst.CSTNode]) -> bool:
    """Every call in `node` (or in each of a sequence of nodes: a `with`'s items) only
    reshapes, combines or converts tensors, or enters a context that queues nothing
    (`torch.no_grad()`, `autocast()`)."""
    nodes = node if isinstance(node, Sequence) else [node]
    return all(
        (last_identifier(call.func) or "") in _LIGHT_OPERATIONS | _QUIET_CONTEXTS
        for top in nodes
        for call in (top, *descendants(top))
        if type(call) is cst.Call
    )


def _forces_a_copy(call: cst.Call) -> bool:
    """`t.numpy(force=True)`, which copies a device tensor to the host first."""
    return any(
        arg.keyword is not None and arg.keyword.value == "force"
        and not (isinstance(arg.value, cst.Name) and arg.value.value == "False")
        for arg in call.args
    )


def _is_string(expression: cst.BaseExpression) -> bool:
    """A string literal or one formatted with `%` (`"%.3f" % loss` is a string, not a tensor)."""
    if isinstance(expression, cst.BinaryOperation) and isinstance(expression.operator, cst.Modulo):
        return isinstance(expression.left, cst.BaseString)
    return isinstance(expression, cst.BaseString)


def _unlatched_test(branch: cst.If) -> cst.BaseExpression:
    """The test of `branch`, less what a latch cuts short: in `if use_queue or not
    torch.all(queue[-1] == 0):` whose body sets `use_queue = True`, the right operand runs
    only until the flag is set, on the first steps."""
    test = branch.test
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.Or:
        flag = dotted_name(test.left)
        if flag is not None and any(
            type(small) is cst.Assign
            and literal_value(small.value) is True
            and any(dotted_name(target.target) == flag for target in small.targets)
            for line in statements_of(branch.body)
            if type(line) is cst.SimpleStatementLine
            for small in line.body
        ):
            return test.left
    return test


def _truth_operands(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The operands an `if` converts to bool: through `not`, `and`, `or` and parentheses."""
    if isinstance(test, cst.BooleanOperation):
        yield from _truth_operands(test.left)
        yield from _truth_operands(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _truth_operands(test.expression)
    else:
        yield test


def _slice_bounds(subscript: cst.Subscript) -> Iterator[cst.BaseExpression]:
    """The bounds and steps of `subscript`'s slices (`a` and `b` in `x[i, :, a:b]`): Python
    converts each to an int, so a tensor there is read on the host (an index tensor,
    `x[ids]`, is not: indexing with it runs on the device)."""
    for element in subscript.slice:
        if isinstance(element.slice, cst.Slice):
            for bound in (element.slice.lower, element.slice.upper, element.slice.step):
                if bound is not None:
                    yield bound


def _counts_elements(value: cst.BaseExpression) -> bool:
    """`torch.tensor([buffer.numel()])`, `torch.IntTensor([len(encoded)])`: a value built from
    an element count."""
    return any(
        type(node) is cst.Call and last_identifier(node.func) in _ELEMENT_COUNTS
        for node in descendants(value)
    )


# What starting or stopping a timer object is called: `timer.tic()`, `fw_timer.toc()`,
# `self.timer.start()`, `step_timer.stop()`.
_TIMER_METHODS = frozenset({"tic", "toc", "start", "stop", "lap", "pause", "resume"})


# Process pools, and their methods that return what the worker processes computed.
_PROCESS_POOLS = frozenset({
    "multiprocessing.Pool", "multiprocessing.pool.Pool", "torch.multiprocessing.Pool",
    "concurrent.futures.ProcessPoolExecutor",
})
_POOL_MAPS = frozenset({"map", "imap", "imap_unordered", "starmap"})


def receiver_of_chain(expression: cst.BaseExpression) -> cst.BaseExpression:
    """What a chain of method calls and subscripts starts from: `dataset.x` for
    `dataset.x[nodes].float()`."""
    while True:
        if type(expression) is cst.Call and type(expression.func) is cst.Attribute:
            expression = expression.func.value
        elif type(expression) is cst.Subscript:
            expression = expression.value
        else:
            return expression


def _starts_or_stops_a_timer(call: cst.Call) -> bool:
    """`fw_timer.toc()`: a timer method, on an object whose name says it is a timer."""
    func = call.func
    return (
        type(func) is cst.Attribute
        and func.attr.value in _TIMER_METHODS
        and "timer" in (last_identifier(func.value) or "").lower()
    )


def _converts_in_place(value: cst.BaseExpression, name: str) -> bool:
    """`value` is `name` through methods that keep it on its device (`name.float()`,
    `name.view(b, -1).long()`)."""
    while type(value) is cst.Call and type(value.func) is cst.Attribute:
        if value.func.attr.value not in _KEEP_DEVICE:
            return False
        value = value.func.value
    return type(value) is cst.Name and value.value == name
