"""Where a training step waits for the device anyway, and where it waits next.

A read of a device value costs a wait only where the step would not wait anyway: next to the
inf check of an enabled gradient scaler, all along an L-BFGS step that evaluates a closure,
or right before the next blocking copy of the batch or barrier of the ranks, which waits for
the same work. The per-iteration rules ask these questions before reporting a wait.
"""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

import libcst as cst

from torchperf_lint.facts.amp import AutocastFacts
from torchperf_lint.facts.arguments import UNKNOWN, bound_argument, literal_value, parameter_named
from torchperf_lint.facts.dataloaders import DataLoaders
from torchperf_lint.facts.guards import Guards
from torchperf_lint.facts.index import SyntaxIndex, descendants
from torchperf_lint.facts.loops import LoopFacts, LoopNode, Loops, iterated_expression
from torchperf_lint.facts.names import NameResolver, dotted_name, last_identifier, root_name
from torchperf_lint.facts.program import ProgramAnswers
from torchperf_lint.facts.scopes import Scopes
from torchperf_lint.facts.steps import Steps
from torchperf_lint.facts.syncs import BARRIER_METHODS, HostSyncs, receiver_of_chain
from torchperf_lint.facts.tensors import TENSOR_FACTORIES, TensorExpressions

# How the words of the name of a call that prepares data on the host begin (`tokenizer(text)`,
# `image_processor(images)`; not `is_main_process()`).
_DATA_PREPARATION_WORDS = ("token", "processor", "encode", "transform", "augment", "collate")


# The calls that build a tensor from the values they are given.
_TENSOR_CONSTRUCTORS = frozenset({"torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.from_numpy"})


# What a training step calls around its gradient scaler's step whose work the scaler's
# wait covers or that queues none: the scaler's and the optimizer's upkeep, the clipping
# of the unscaled gradients, a meter's update.
_STEP_UPKEEP = frozenset({
    "update", "zero_grad", "step", "unscale_", "clip_grad_norm_", "clip_grad_value_",
})


class NextWait(NamedTuple):
    """What makes the host wait for the device next in a training step
    (`StepWaits.next_after`): a blocking copy of host data to the device (`kind` "copy"), or
    of a tensor a factory has just made on the host ("upload": `torch.zeros(*shape).to(device)`), the
    loader whose batches Accelerate copies with its blocking default ("accelerate"), or a
    barrier of the ranks ("barrier")."""

    node: cst.CSTNode
    kind: str


class StepWaits:
    """Where the steps of one module wait for the device whatever a read does."""

    def __init__(
        self,
        index: SyntaxIndex,
        scopes: Scopes,
        names: NameResolver,
        loops: Loops,
        guards: Guards,
        dataloaders: DataLoaders,
        tensors: TensorExpressions,
        host_syncs: HostSyncs,
        autocast: AutocastFacts,
        program: ProgramAnswers,
        steps: Steps,
    ) -> None:
        self.index = index
        self.scopes = scopes
        self.names = names
        self.loops = loops
        self.guards = guards
        self.dataloaders = dataloaders
        self.tensors = tensors
        self.host_syncs = host_syncs
        self.autocast = autocast
        self.program = program
        self.steps = steps

    def anyway(self, node: cst.CSTNode) -> bool:
        """The step waits for the device next to `node` whatever the code does with it: at
        its gradient scaler's step (`beside_the_scaler`), or all along an optimizer
        step that evaluates a closure (`steps_with_a_closure`), whose own reads decide its
        line search (`_in_a_line_search`)."""
        return (
            self.beside_the_scaler(node)
            or self.steps_with_a_closure(node)
            or self._in_a_line_search(node)
        )

    def _in_a_line_search(self, node: cst.CSTNode) -> bool:
        """In the `step(self, closure)` of an optimizer class that evaluates the closure
        (`loss = float(closure())`: a copy of `torch.optim.LBFGS`, whose line search and
        tolerances decide on the host how many evaluations the step makes)."""
        function = self.scopes.enclosing_function(node)
        if function is None or function.name.value != "step" or self.scopes.enclosing_class(node) is None:
            return False
        if parameter_named(function, "closure") is None:
            return False
        return any(
            dotted_name(call.func) == "closure"
            for call in self.index.inside(self.index.calls, function)
        )

    def steps_with_a_closure(self, node: cst.CSTNode) -> bool:
        """A loop around `node` (or its function) steps an L-BFGS optimizer with a closure
        (`optimizer.step(closure)`: its step evaluates the closure and reads the loss, the
        gradients' norms and its tolerances on the host many times), in a usual
        run: under no `if` on a setting, and under `if opt == "LBFGS":` only where `opt`
        defaults to `"LBFGS"` (pykan's `fit`). Every read of such a step waits for nothing
        the step did not already wait for."""
        function = self.scopes.enclosing_function(node)
        around = self.loops.enclosing_loops(node)
        regions = [loop.node for loop in around]
        if function is not None:
            regions.append(function)
        # A step in another loop of the function (an Adam phase before an L-BFGS one) is not
        # this step.
        innermost = {loop.node for loop in around} | {None}
        return any(
            type(call.func) is cst.Attribute
            and call.func.attr.value == "step"
            and len(call.args) == 1
            and self._is_a_closure(call.args[0].value, function)
            and self._is_lbfgs(call.func.value)
            and self._innermost_loop(call) in innermost
            and self.guards.runs_on_every_iteration(call, region)
            and not self.guards.off_default_argument(call, region)
            for region in regions
            for call in self.index.inside(self.index.calls, region)
            if self.scopes.enclosing_function(call) is function
        )

    def _innermost_loop(self, node: cst.CSTNode) -> LoopNode | None:
        """The innermost loop of its function whose body holds `node`, or None."""
        return next((loop.node for loop in self.loops.enclosing_loops(node)), None)

    def _is_lbfgs(self, optimizer: cst.BaseExpression) -> bool:
        """`optimizer` is bound to an L-BFGS (`torch.optim.LBFGS(...)`, or a project's copy
        of it: `LBFGS(params, line_search_fn="strong_wolfe")`), if only on some paths."""
        return any(
            type(value) is cst.Call and "lbfgs" in (last_identifier(value.func) or "").lower()
            for value in self.scopes.bound_values(optimizer)
        )

    def _is_a_closure(self, value: cst.BaseExpression, function: cst.FunctionDef | None) -> bool:
        """A lambda, or the name of a function defined in `function` (`def closure():
        ...`) or bound to a lambda there."""
        if type(value) is cst.Lambda:
            return True
        if type(value) is not cst.Name:
            return False
        return any(
            type(defined) is cst.FunctionDef and defined.name.value == value.value
            and self.scopes.enclosing_function(defined) is function
            for defined in self.index.functions
        ) or any(type(bound) is cst.Lambda for bound in self.scopes.bound_values(value))

    def beside_the_scaler(self, node: cst.CSTNode) -> bool:
        """A gradient scaler reads its inf check on the host next to `node` in the same step,
        with nothing but the step's upkeep between them (`_STEP_UPKEEP`: `scaler.update()`,
        `optimizer.zero_grad()`, `scaler.unscale_(optimizer)` and `clip_grad_norm_`, a
        meter's `update`), so no backward: `scaler.step(optimizer)` of a `GradScaler` the module
        builds enabled (also a `loss_scaler(loss, optimizer)` helper, timm's and MAE's
        `NativeScaler`, before `node`: it runs the backward itself), in the same function
        and the same iteration of its innermost loop, on every iteration of a usual run. The
        host waits there for the same backward anyway, so a read right before or after it
        waits for little more (the optimizer's kernels). Not with a fused optimizer
        (`fused=True`), whose step takes the inf check on the device. Apex's dynamic loss
        scaling reads its overflow flag at the end of `with amp.scale_loss(loss, optimizer)
        as scaled_loss:` (`_apex_scale_loss`), before `node`, in the same way."""
        function = self.scopes.enclosing_function(node)  # None at a script's top level
        loops = self.loops.enclosing_loops(node)
        region = loops[0].node if loops else function
        if region is None or not (self._syncing_scaler or self._apex_dynamic_scaling):
            return False
        innermost = self._innermost_loop(node)
        calls = [
            call for call in self.index.inside(self.index.calls, region)
            if self.scopes.enclosing_function(call) is function
            and self._innermost_loop(call) is innermost
        ]
        order = self.index.preorder
        position = order[node]
        for call in calls:
            scaled = self._apex_scale_loss(call)
            helper = self._syncing_scaler and self.loops.is_scaler_step(call)
            if not (helper or scaled or self._syncing_scaler and self._steps_a_grad_scaler(call)):
                continue
            if (helper or scaled) and order[call] > position:
                continue  # the helper's own backward comes between
            # The wait: the call, or the end of the `with` block whose exit reads the flag.
            wait = self.index.subtree_end[scaled] if scaled is not None else order[call]
            if scaled is not None and wait > position:
                continue  # inside the block, before its backward ends
            if (
                not (self.guards.runs_on_every_iteration(call, region) or self.steps.taken_by_every_run(call))
                or self.guards.periodic_guard(call, within=region) is not None
                or loops and self.guards.sparse_guard(call, region) is not None
            ):
                continue  # `if (i + 1) % accumulation == 0: scaler.step(optimizer)`
            low, high = sorted((wait, position))
            between = [
                other for other in calls
                if low < order[other] < high and not self.steps.left_off_by_settings(other)
            ]
            upkeep = [other for other in between if last_identifier(other.func) in _STEP_UPKEEP]
            if all(
                self.index.contains(other, node)  # the read's own statement
                or any(self.index.contains(kept, other) for kept in upkeep)
                for other in between
            ):
                return True
        return False

    @cached_property
    def _syncing_scaler(self) -> bool:
        """The module builds gradient scalers, each enabled (no `enabled=`, or `True`), and
        no fused optimizer."""
        scalers = self.autocast.scalers
        return bool(scalers) and all(scaler.enabled is True for scaler in scalers) and not any(
            arg.keyword is not None and arg.keyword.value == "fused"
            and not (type(arg.value) is cst.Name and arg.value.value == "False")
            for call in self.index.calls
            for arg in call.args
        )

    @cached_property
    def _apex_dynamic_scaling(self) -> bool:
        """The module sets up Apex's mixed precision with dynamic loss scaling:
        `amp.initialize(model, optimizer, opt_level="O1")` (also "O2", whose default scaling is
        dynamic, or `loss_scale="dynamic"`), and no call of it asks for anything else."""
        setups = [
            call for call in self.index.calls
            if self.names.call_name(call) == "apex.amp.initialize"
        ]
        return bool(setups) and all(_scales_dynamically(call) for call in setups)

    def _apex_scale_loss(self, call: cst.Call) -> cst.With | None:
        """The `with` statement of `with amp.scale_loss(loss, optimizer) as scaled_loss:`, when
        `call` is its `amp.scale_loss(...)` and the module scales dynamically: its exit
        unscales the gradients and reads the overflow flag with `.item()`."""
        if not self._apex_dynamic_scaling or self.names.call_name(call) != "apex.amp.scale_loss":
            return None
        item = self.index.parents.get(call)
        statement = self.index.parents.get(item) if type(item) is cst.WithItem else None
        return statement if type(statement) is cst.With else None

    def _steps_a_grad_scaler(self, call: cst.Call) -> bool:
        """`scaler.step(optimizer)`, `self.grad_scaler.step(self.optimizer)`."""
        func = call.func
        return (
            type(func) is cst.Attribute
            and func.attr.value == "step"
            and bool(call.args)
            and "scaler" in (last_identifier(func.value) or "").lower()
        )

    def next_after(self, loop: LoopFacts, node: cst.CSTNode) -> list[NextWait]:
        """The waits for the device that the host reaches next after `node` in the body of
        `loop`, before any further backward (an optimizer step on the way queues little, and
        the wait after it waits for it too: a read between `loss.backward()` and
        `optimizer.step()` is one wait with the next step's blocking copy), going on from the
        start of the next iteration, in that order: barriers of the ranks (`dist.barrier()`,
        `accelerator.wait_for_everyone()`, Lightning's `self.barrier()`, a project's
        `synchronize()` helper), then the first blocking copy: a blocking move
        (`is_blocking_move`: `x.cuda()`, `x.to(device)` without `non_blocking=True`) of the
        batch (`HostSyncs.copies_a_batch`), of the next item of an iterator (`region =
        next(region_iter)`) or of other host memory (`torch.cat([image0,
        image1]).to(device)`), or, at the start of the iteration, the loop's iterable when it
        is a loader Accelerate prepared, which copies with its default, blocking copies, or a
        call of a project helper that starts by copying the batch it is given that way
        (`prepare_model_inputs(args, batch, device)`), or a lambda mapped over the batch
        that copies each item (`map(lambda x: x.float().to(device), batch)`). Each
        waits for all the work queued before it. No copy when the host prepares data on the
        way (`tokenizer(text, return_tensors="pt").to(device)`): that work would overlap the
        device's if nothing waited before it. A copy that not every iteration of a usual run
        reaches (`if not args.prefetcher:`) does not count, nor does a barrier under any
        `if` of the loop's body (`if step % eval_interval == 0: ...; fabric.barrier()`)."""
        order = self.index.preorder
        updates = set(loop.backward_calls + loop.step_helper_calls)
        calls = sorted(loop.own_calls, key=order.__getitem__)
        position = order[node]
        later = [call for call in calls if order[call] > position]
        earlier = [call for call in calls if order[call] <= position]
        iterated = iterated_expression(loop.node)
        barriers: list[NextWait] = []
        for call in (*later, None, *earlier):
            if call is None:  # the next iteration starts
                if iterated is not None and self.dataloaders.copied_blocking_by_accelerate(iterated):
                    return [*barriers, NextWait(iterated, "accelerate")]
                continue
            if call in updates or _prepares_data(call):
                return barriers
            if not self.guards.runs_on_every_iteration(call, loop.node):
                continue  # `if not args.prefetcher:`, off in a default run
            if self._is_barrier(call):
                if not self.guards.under_condition(call, within=loop.node):
                    barriers.append(NextWait(call, "barrier"))  # not after a periodic evaluation
            elif self._uploads_data(call, loop) and not self._copies_a_constant(call):
                receiver_calls = [node for node in descendants(call.func) if type(node) is cst.Call]
                if any(map(_prepares_data, receiver_calls)):
                    return barriers
                # `torch.zeros(*shape).to(device)`: a tensor made on the host, not the batch.
                return [*barriers, NextWait(call, "upload" if self._copies_a_new_tensor(call) else "copy")]
            elif self._uploads_the_batch_first(call):
                return [*barriers, NextWait(call, "copy")]
            elif (mapped := self._copy_mapped_over_the_batch(call, loop)) is not None:
                return [*barriers, NextWait(mapped, "copy")]
        return barriers

    def _copies_a_new_tensor(self, move: cst.Call) -> bool:
        """The move copies what a PyTorch factory has just made on the host
        (`torch.zeros(*prediction.shape).to(prediction.device)`)."""
        made = move.func.value if isinstance(move.func, cst.Attribute) else None
        return isinstance(made, cst.Call) and (
            (self.names.call_name(made) or "").removeprefix("torch.") in TENSOR_FACTORIES
        )

    def _copy_mapped_over_the_batch(self, call: cst.Call, loop: LoopFacts) -> cst.Call | None:
        """The blocking move of `map(lambda x: x.float().to(device), batch)`, a lambda
        mapped over the loop's batch that copies each of its items; None for any other
        call."""
        if self.names.call_name(call) != "builtins.map" or len(call.args) != 2:
            return None
        function, mapped = call.args[0].value, call.args[1].value
        if type(function) is not cst.Lambda or root_name(mapped) not in loop.target_names:
            return None
        parameters = {param.name.value for param in function.params.params}
        return next(
            (
                node for node in (function.body, *descendants(function.body))
                if type(node) is cst.Call
                and self.host_syncs.is_blocking_move(node)
                and root_name(receiver_of_chain(node.func.value)) in parameters
            ),
            None,
        )

    def _uploads_the_batch_first(self, call: cst.Call) -> bool:
        """`call` runs a project helper that starts by copying what it is given with a
        blocking copy (`ProgramAnswers.uploads_first`), and gives it the loop's batch:
        `prepare_model_inputs(args, batch, device)`."""
        uploaded = self.program.uploads_first(call)
        if uploaded is None:
            return False
        argument = bound_argument(call, *uploaded)
        return isinstance(argument, cst.Arg) and self.host_syncs.is_loader_batch(argument.value)

    def _is_barrier(self, call: cst.Call) -> bool:
        """`dist.barrier()`, `accelerator.wait_for_everyone()`, `self.barrier()` of a
        Lightning strategy or Fabric, or a project's helper named for it (`synchronize()`
        after `from utils.dist import synchronize`, which calls `dist.barrier()`); not
        `torch.cuda.synchronize()`, an explicit wait reported on its own."""
        name = last_identifier(call.func)
        if name in BARRIER_METHODS:
            return True
        qualified = self.names.call_name(call) or ""
        return name == "synchronize" and not qualified.startswith("torch.")

    def _copies_a_constant(self, call: cst.Call) -> bool:
        """`torch.as_tensor(IMAGENET_DEFAULT_MEAN).to(device)`: a copy of numbers written in
        the source, or of a constant the module imports (`from timm.data.constants import
        IMAGENET_DEFAULT_MEAN`) or binds at its top level to numbers: a few bytes, not data."""
        copied = call.func.value
        if type(copied) is cst.Call and self.names.call_name(copied) in _TENSOR_CONSTRUCTORS:
            if not copied.args:
                return False
            copied = copied.args[0].value
        if type(copied) is not cst.Name:
            return _numbers(copied)
        if any(self.scopes.binds(function, copied.value) for function in self.scopes.enclosing_functions(call)):
            return False
        values = self.scopes.bound_values(copied)
        if values:
            return all(map(_numbers, values))
        return (self.names.qualified_name(copied) or copied.value) != copied.value  # imported

    def _uploads_data(self, call: cst.Call, loop: LoopFacts) -> bool:
        if not self.host_syncs.is_blocking_move(call):
            return False
        if self.host_syncs.copies_a_batch(call, loop) or self.host_syncs.uploads_and_waits(call):
            return True
        copied = call.func.value
        item_of = self.tensors.iterated_for_item(copied) if type(copied) is cst.Name else None
        if item_of is not None:  # `t` of `[t.to(device) for t in region[1:]]`
            copied = item_of
        while isinstance(copied, (cst.Attribute, cst.Subscript)):
            copied = copied.value
        values = [  # not what this copy makes: `region = [t.to(device) for t in region]`
            value
            for value in (self.scopes.bound_values(copied) if type(copied) is cst.Name else [])
            if not self.index.contains(value, call)
        ]
        return bool(values) and all(
            type(value) is cst.Call and dotted_name(value.func) == "next" for value in values
        )



def _scales_dynamically(setup: cst.Call) -> bool:
    """`amp.initialize(...)` enabled, at an optimization level whose loss scale is dynamic by
    default ("O1", the default, or "O2") and with no other `loss_scale`, or with
    `loss_scale="dynamic"`."""
    enabled = bound_argument(setup, "enabled", _APEX_INITIALIZE)
    level = bound_argument(setup, "opt_level", _APEX_INITIALIZE)
    scale = bound_argument(setup, "loss_scale", _APEX_INITIALIZE)
    if any(argument is UNKNOWN for argument in (enabled, level, scale)):
        return False
    if enabled is not None and literal_value(enabled.value) is not True:
        return False
    if scale is not None:
        return literal_value(scale.value) == "dynamic"
    return level is None or literal_value(level.value) in ("O1", "O2")


# The parameters of `apex.amp.initialize`, in order.
_APEX_INITIALIZE = (
    "models", "optimizers", "enabled", "opt_level", "cast_model_type", "patch_torch_functions",
    "keep_batchnorm_fp32", "master_weights", "loss_scale",
)


def _numbers(expression: cst.BaseExpression) -> bool:
    """A number, or a list or tuple of numbers, written in the source (`(0.485, 0.456, 0.406)`)."""
    if isinstance(expression, (cst.List, cst.Tuple)):
        return bool(expression.elements) and all(_numbers(element.value) for element in expression.elements)
    if type(expression) is cst.UnaryOperation:
        expression = expression.expression
    return isinstance(expression, cst.BaseNumber)



def _prepares_data(call: cst.Call) -> bool:
    """A call that prepares data on the host by its name: a tokenizer's, a processor's, an
    encoder's, a transform's or a collate function's (`tokenizer(text)`, `processor(images)`)."""
    words = (last_identifier(call.func) or "").lower().split("_")
    return any(word.startswith(_DATA_PREPARATION_WORDS) for word in words)

