"""TPL6xx — optimizer and step."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.arguments import (
    MISSING,
    SIGNATURES,
    argument_value,
    bound_argument,
    literal_value,
)
from torchperf_lint.facts.names import dotted_name
from torchperf_lint.rules.base import Finding, NodeEdit, ProposedFix, Rule
from torchperf_lint.rules.edits import add_keyword, remove_keyword

OPTIM_DOCS = "https://pytorch.org/docs/stable/optim.html"

# The oldest PyTorch whose optimizer accepts `fused=True`.
FUSED_SINCE = {
    "torch.optim.Adam": (1, 13),
    "torch.optim.AdamW": (2, 0),
    "torch.optim.SGD": (2, 3),
}
# Attributes that switch DDP's gradient all-reduce off for a micro-step: `model.no_sync()`, the
# flag it sets (`model.require_backward_grad_sync = ...`), and Accelerate's
# `accelerator.accumulate(model)`, which calls `no_sync` itself.
_SYNC_SKIPPING_ATTRIBUTES = frozenset({"no_sync", "require_backward_grad_sync", "accumulate"})


def optimizer_constructions(facts: FileFacts, classes: frozenset[str]) -> Iterator[tuple[cst.Call, str]]:
    """Calls constructing one of the `torch.optim` classes named in `classes`, with that name."""
    for call in facts.index.calls:
        name = facts.names.call_name(call)
        if name in classes:
            yield call, name


class AdamWithWeightDecay(Rule):
    """`Adam` with `weight_decay` adds an L2 penalty to the gradients instead of decaying weights.

    ## What it does
    Checks for `torch.optim.Adam(...)` calls that pass a `weight_decay` other than the literal
    `0` (by keyword or by position), unless they also ask for decoupled decay
    (`decoupled_weight_decay=True`, which is what `AdamW` does).

    ## Why is this bad?
    Adam's `weight_decay` adds `w * param` to the gradient, which is then divided by Adam's
    running RMS: parameters with large gradients are barely regularised, and the decay
    interacts with the adaptive step size. `AdamW` decays the weights directly ("decoupled
    weight decay", Loshchilov & Hutter), which regularises as intended and usually converges
    faster and more stably at the same learning rate, so fewer epochs reach the same accuracy.
    The `torch.optim.AdamW` docs describe exactly this decoupled decay.

    ## Example
    ```python
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    ```

    ## Fix safety
    Unsafe: decoupled decay changes the training dynamics, and the best `weight_decay` for
    `AdamW` is usually larger than for `Adam` (the values are not equivalent). The fix keeps
    the existing `weight_decay` argument explicit, because `AdamW`'s default (`1e-2`) differs
    from `Adam`'s (`0`). When `Adam` was imported by name (`from torch.optim import Adam`),
    `AdamW` is added to that import (or spelt `torch.optim.AdamW` when the name `AdamW` is
    already taken); with no way to name it, no fix is offered.

    ## References
    - PyTorch docs, [`torch.optim.AdamW`](https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html)
      and [`torch.optim.Adam`](https://pytorch.org/docs/stable/generated/torch.optim.Adam.html)
    - Loshchilov & Hutter, [Decoupled Weight Decay Regularization](https://arxiv.org/abs/1711.05101)
      (ICLR 2019)
    """

    code = "TPL601"
    name = "adam-with-weight-decay"
    message = "`Adam` with `weight_decay` couples the decay with the adaptive step; use `AdamW`"
    default = True
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        signature = SIGNATURES["torch.optim.Adam"]
        for call, _ in optimizer_constructions(facts, frozenset({"torch.optim.Adam"})):
            decay = bound_argument(call, "weight_decay", signature)
            if not isinstance(decay, cst.Arg) or literal_value(decay.value) == 0:
                continue
            if argument_value(call, "decoupled_weight_decay") not in (MISSING, False):
                continue  # Decoupled already (what AdamW does), or decided at run time.
            yield self.finding(call, self._fix(facts, call))

    def _fix(self, facts: FileFacts, call: cst.Call) -> ProposedFix | None:
        message = "Use `AdamW`, keeping the `weight_decay` value"
        func = call.func
        # AdamW is Adam with decoupled decay and takes no `decoupled_weight_decay` argument.
        args = remove_keyword(call, "decoupled_weight_decay").args
        if isinstance(func, cst.Attribute) and facts.names.qualified_name(func.value) == "torch.optim":
            adamw = func.with_changes(attr=cst.Name("AdamW"))
            return self.replace(facts, call, call.with_changes(func=adamw, args=args), message)
        if not isinstance(func, cst.Name):
            return None
        if facts.names.module_level_name("torch.optim.AdamW") == "AdamW":
            adamw_call = call.with_changes(func=cst.Name("AdamW"), args=args)
            return self.replace(facts, call, adamw_call, message)
        adam_import = _module_level_import_of(facts, func.value, "torch.optim")
        if adam_import is not None and _name_is_free(facts, "AdamW"):
            adamw_call = call.with_changes(func=cst.Name("AdamW"), args=args)
            names = [*adam_import.names, cst.ImportAlias(cst.Name("AdamW"))]
            last = adam_import.names[-1]
            names[-2] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            names[-1] = names[-1].with_changes(comma=last.comma)
            new_import = adam_import.with_changes(names=names)
            return ProposedFix(
                self.fix_applicability,
                message,
                (
                    NodeEdit(adam_import, self.code_of(facts, new_import, at=adam_import)),
                    NodeEdit(call, self.code_of(facts, adamw_call, at=call)),
                ),
            )
        torch_name = facts.names.module_level_name("torch")
        if torch_name is None:
            return None
        qualified = _attribute_chain(torch_name, "optim", "AdamW")
        return self.replace(facts, call, call.with_changes(func=qualified, args=args), message)


def _name_is_free(facts: FileFacts, name: str) -> bool:
    """Whether nothing in the module imports, defines or assigns `name`."""
    if name in facts.names.aliases or name in facts.names.local_definitions:
        return False
    return not any(
        isinstance(assignment, cst.Assign)
        and any(isinstance(t.target, cst.Name) and t.target.value == name for t in assignment.targets)
        for assignment in facts.index.assigns
    )


def _module_level_import_of(facts: FileFacts, bound: str, module: str) -> cst.ImportFrom | None:
    """The single module-level `from <module> import ...` that binds `bound`, if there is one."""
    found = [
        statement
        for statement in facts.index.imports
        if isinstance(statement, cst.ImportFrom)
        and isinstance(statement.names, (list, tuple))
        and statement.module is not None
        and not statement.relative
        and dotted_name(statement.module) == module
        and facts.scopes.enclosing_function(statement) is None
        and facts.scopes.enclosing_class(statement) is None
        and any(_bound_name(alias) == bound for alias in statement.names)
    ]
    return found[0] if len(found) == 1 else None


def _bound_name(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return dotted_name(alias.name)


def _attribute_chain(*parts: str) -> cst.BaseExpression:
    """`a.b.c` as a node."""
    node: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


class ZeroGradSetToNoneFalse(Rule):
    """`zero_grad(set_to_none=False)` writes zeros into every gradient instead of freeing it.

    ## What it does
    Checks for `.zero_grad(set_to_none=False)` (also `.zero_grad(False)`) on an optimizer or a
    module. It stays silent in modules that write into `.grad` in place (`p.grad.add_(...)`,
    `p.grad += ...`): those need the gradients to exist as tensors.

    ## Why is this bad?
    With `set_to_none=False`, `zero_grad` launches a memset for every parameter's gradient each
    step, and the next backward then accumulates into the zeroed tensors (a read-modify-write)
    instead of simply writing fresh gradients. `set_to_none=True`, the default since PyTorch
    2.0, skips both and lowers peak memory between steps.

    ## Example
    ```python
    optimizer.zero_grad(set_to_none=False)
    ```

    ## Use instead
    ```python
    optimizer.zero_grad()
    ```

    ## Fix safety
    Unsafe: afterwards, parameters that took no part in the backward pass have `grad is None`
    instead of a zero tensor. Code that reads `.grad` directly (clipping helpers written by
    hand, logging of gradient norms) must handle `None`; optimizers already skip such
    parameters, which also changes momentum and weight-decay updates for them.

    ## References
    - PyTorch docs, [`torch.optim.Optimizer.zero_grad`](https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
    - PyTorch Performance Tuning Guide, [Use parameter.grad = None instead of model.zero_grad() or optimizer.zero_grad()](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#use-parameter-grad-none-instead-of-model-zero-grad-or-optimizer-zero-grad)
    """

    code = "TPL602"
    name = "zero-grad-set-to-none-false"
    message = "`zero_grad(set_to_none=False)` zero-fills every gradient; use `zero_grad()`"
    default = True
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if _writes_into_grad_in_place(facts):
            return
        for call in facts.index.calls:
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "zero_grad"):
                continue
            argument = bound_argument(call, "set_to_none", SIGNATURES["zero_grad"])
            if not isinstance(argument, cst.Arg) or literal_value(argument.value) is not False:
                continue
            if argument.keyword is not None:
                new_call = remove_keyword(call, "set_to_none")
            elif len(call.args) == 1:
                new_call = call.with_changes(args=())
            else:
                continue  # Not PyTorch's `zero_grad(set_to_none)`: it takes one argument.
            yield self.finding(call, self.replace(facts, call, new_call, "Drop `set_to_none=False`"))


def _writes_into_grad_in_place(facts: FileFacts) -> bool:
    """Whether the module updates some `.grad` in place (`p.grad.add_(g)`, `p.grad += g`)."""
    for attribute in facts.index.attributes:
        if attribute.attr.value != "grad":
            continue
        node: cst.CSTNode = attribute
        parent = facts.index.parents.get(node)
        if isinstance(parent, cst.Attribute) and parent.attr.value == "data":
            node, parent = parent, facts.index.parents.get(parent)
        if isinstance(parent, cst.Subscript) and parent.value is node:
            node, parent = parent, facts.index.parents.get(parent)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            method = parent.attr.value
            if method.endswith("_") and not method.startswith("_"):
                return True
        if isinstance(parent, cst.AugAssign) and parent.target is node:
            return True
    return False


class OptimizerNotFused(Rule):
    """`Adam`/`AdamW`/`SGD` on CUDA without `fused=True` launches many small kernels per step.

    ## What it does
    In a module that trains on CUDA, checks for `torch.optim.Adam`, `AdamW` and `SGD`
    constructions that pass neither `fused=` nor `foreach=`. An explicit `fused=False` or
    `foreach=...` is a decision and is left alone, as are calls that unpack `**kwargs`, modules
    with no CUDA use, configured PyTorch versions whose optimizer has no fused kernel, and
    optimizers over `model.parameters()` of a model built here and never moved to a device.

    ## Why is this bad?
    The default (`foreach`) implementation still launches a handful of kernels per group of
    parameters for every step; the fused implementation updates all parameters in one kernel
    per group of tensors, which matters for models with many small parameters.

    ## Example
    ```python
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)

    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Fix safety
    Unsafe: `fused=True` requires every parameter to be a floating-point CUDA tensor (it
    raises for CPU-offloaded parameters), and the fused kernel may round differently.

    ## References
    - PyTorch docs, [`torch.optim`: algorithms and implementations](https://pytorch.org/docs/stable/optim.html#algorithms)
    - PyTorch docs, [`torch.optim.AdamW`](https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html) (`fused`)
    """

    code = "TPL603"
    name = "optimizer-not-fused"
    message = "Optimizer on CUDA without `fused=True` launches many kernels per step; pass `fused=True`"
    default = False
    fix_applicability = Applicability.UNSAFE
    gains_only_on_cuda = True

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if not self.trains_on_cuda(facts):
            return
        for call, name in optimizer_constructions(facts, frozenset(FUSED_SINCE)):
            if self.options.torch_version < FUSED_SINCE[name]:
                continue
            if any(
                argument_value(call, keyword) is not MISSING
                for keyword in ("fused", "foreach", "differentiable")
            ):
                continue
            if _parameters_stay_on_host(facts, call):
                continue
            new_call = add_keyword(call, "fused", cst.Name("True"))
            yield self.finding(call, self.replace(facts, call, new_call, "Pass `fused=True`"))


def _parameters_stay_on_host(facts: FileFacts, optimizer: cst.Call) -> bool:
    """`Opt(model.parameters())` where `model` is built in this module and never moved:
    a CPU model (a parameter server, a CPU-side copy), for which `fused=True` is no help."""
    if not optimizer.args or not isinstance(optimizer.args[0].value, cst.Call):
        return False
    parameters = optimizer.args[0].value.func
    if not (isinstance(parameters, cst.Attribute) and parameters.attr.value == "parameters"):
        return False
    owner = dotted_name(parameters.value)
    values = facts.scopes.bound_values(parameters.value)
    if owner is None or not values:
        return False
    if not all(isinstance(value, cst.Call) and not _moves(value) for value in values):
        return False
    return not any(
        _moves(call) and dotted_name(call.func.value) == owner for call in facts.index.calls
    )


def _moves(call: cst.Call) -> bool:
    """`x.to(...)`, `x.cuda()`, `x.to_empty(...)`, or a chain or wrapper containing one."""
    func = call.func
    if isinstance(func, cst.Attribute):
        if func.attr.value in ("to", "cuda", "to_empty"):
            return True
        if isinstance(func.value, cst.Call) and _moves(func.value):
            return True
    return any(isinstance(arg.value, cst.Call) and _moves(arg.value) for arg in call.args)


class DdpAccumulationWithoutNoSync(Rule):
    """Gradient accumulation with DDP all-reduces the gradients on every micro-step.

    ## What it does
    In a module that wraps a model in `DistributedDataParallel`, checks for training loops
    that call `backward` on every iteration but step the optimizer only under a periodic guard
    (`if (i + 1) % accumulation_steps == 0:`), when nothing in the module skips the gradient
    synchronisation (`model.no_sync()`, `require_backward_grad_sync`, Accelerate's
    `accelerator.accumulate(model)`). The finding is reported at the `backward` call.

    ## Why is this bad?
    Every DDP `backward` all-reduces all gradients across processes. During accumulation only
    the last micro-step's all-reduce is needed: the others move the full gradient volume over
    the network for nothing, which can dominate the step time on multi-node jobs.

    ## Example
    ```python
    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp_model = DDP(model.cuda(), device_ids=[local_rank])
    for i, (x, y) in enumerate(loader):
        loss = criterion(ddp_model(x), y) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    import contextlib
    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp_model = DDP(model.cuda(), device_ids=[local_rank])
    for i, (x, y) in enumerate(loader):
        sync = (i + 1) % accumulation_steps == 0
        with contextlib.nullcontext() if sync else ddp_model.no_sync():
            loss = criterion(ddp_model(x), y) / accumulation_steps
            loss.backward()
        if sync:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Fix safety
    No fix: the forward pass must move under `no_sync()` too, and which steps synchronise is
    the user's choice.

    ## References
    - PyTorch docs, [`DistributedDataParallel.no_sync`](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html#torch.nn.parallel.DistributedDataParallel.no_sync)
    """

    code = "TPL604"
    name = "ddp-accumulation-without-no-sync"
    message = "DDP all-reduces gradients on every accumulation micro-step; wrap them in `model.no_sync()`"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if not any(
            facts.names.call_name(call) == "torch.nn.parallel.DistributedDataParallel"
            for call in facts.index.calls
        ):
            return
        if any(a.attr.value in _SYNC_SKIPPING_ATTRIBUTES for a in facts.index.attributes):
            return
        for loop in facts.loops.training_loops:
            if not loop.step_calls or not all(
                facts.guards.periodic_guard(step, within=loop.node) for step in loop.step_calls
            ):
                continue
            every_iteration = [
                call
                for call in loop.backward_calls
                if facts.guards.periodic_guard(call, within=loop.node) is None
            ]
            if every_iteration:
                yield self.finding(every_iteration[0])


RULES = (AdamWithWeightDecay, ZeroGradSetToNoneFalse, OptimizerNotFused, DdpAccumulationWithoutNoSync)
