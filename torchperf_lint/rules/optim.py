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
from torchperf_lint.facts.index import descendants
from torchperf_lint.facts.loops import LoopFacts
from torchperf_lint.facts.names import dotted_name, root_name, target_names
from torchperf_lint.rules.base import Finding, NodeEdit, ProposedFix, Rule
from torchperf_lint.rules.edits import add_keyword, remove_keyword, replace_statement

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


# The smallest `weight_decay` that reads as an `AdamW` recipe's decoupled decay, not an L2
# penalty chosen for `Adam` (5e-4 in GCN and many reproduced papers).
_DECOUPLED_DECAY = 1e-2


def _decoupled_strength(facts: FileFacts, value: cst.BaseExpression) -> bool:
    """`value` is a number of at least `_DECOUPLED_DECAY`, or a name bound only to such."""
    values = facts.scopes.bound_values(value) if isinstance(value, cst.Name) else [value]
    numbers = [literal_value(v) for v in values]
    return bool(numbers) and all(
        isinstance(n, (int, float)) and not isinstance(n, bool) and n >= _DECOUPLED_DECAY
        for n in numbers
    )


class AdamWithWeightDecay(Rule):
    """`Adam` with `weight_decay` adds an L2 penalty to the gradients instead of decaying weights.

    ## What it does
    Checks for `torch.optim.Adam(...)` calls that pass a `weight_decay` of `1e-2` or more (by
    keyword or by position, as a number or a name bound to one), unless they also ask for
    decoupled decay (`decoupled_weight_decay=True`, which is what `AdamW` does). Such values
    are the decoupled decays of `AdamW` recipes (0.01–0.1); as an L2 penalty in `Adam` they
    are so strong that `AdamW` was almost surely meant.

    It stays silent for smaller values (`5e-4`, `1e-4`: a deliberate L2 penalty, as in the
    papers many graph and vision models reproduce), for values it cannot read (`args.wd`),
    and in test files.

    ## Why is this bad?
    Adam's `weight_decay` adds `w * param` to the gradient, which is then divided by Adam's
    running RMS: parameters with large gradients are barely regularised, and the decay
    interacts with the adaptive step size. `AdamW` decays the weights directly ("decoupled
    weight decay", Loshchilov & Hutter), which regularises as intended and usually converges
    faster and more stably at the same learning rate, so fewer epochs reach the same accuracy.
    The `torch.optim.AdamW` docs describe exactly this decoupled decay.

    ## Example
    ```python
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.05)
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
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
            if not isinstance(decay, cst.Arg) or not _decoupled_strength(facts, decay.value):
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
    `p.grad += ...`), assign it a tensor (`p.grad = torch.empty_like(p)`: gradients allocated
    on purpose, in a memory pool say) or read where it lives (`p.grad.data_ptr()`): those need
    the gradients to stay the same tensors from step to step.

    Test files are not checked.

    A `# noqa: TOR402` (TorchFix's code for the same check) silences it too.

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
        if _keeps_gradient_tensors(facts):
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


def _keeps_gradient_tensors(facts: FileFacts) -> bool:
    """Whether the module relies on `.grad` tensors that outlive a step: it updates one in
    place (`p.grad.add_(g)`, `p.grad += g`), allocates one itself (`p.grad =
    torch.empty_like(p)`, in a memory pool say), or reads where one lives
    (`p.grad.data_ptr()`)."""
    for attribute in facts.index.attributes:
        if attribute.attr.value != "grad":
            continue
        node: cst.CSTNode = attribute
        parent = facts.index.parents.get(node)
        if (
            isinstance(parent, cst.AssignTarget)
            and isinstance(assignment := facts.index.parents.get(parent), cst.Assign)
            and not (isinstance(assignment.value, cst.Name) and assignment.value.value == "None")
        ):
            return True
        if isinstance(parent, cst.Attribute) and parent.attr.value == "data":
            node, parent = parent, facts.index.parents.get(parent)
        if isinstance(parent, cst.Subscript) and parent.value is node:
            node, parent = parent, facts.index.parents.get(parent)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            method = parent.attr.value
            if method == "data_ptr" or (method.endswith("_") and not method.startswith("_")):
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
    with no CUDA use, a `torch-version` (configured, or the project's declared floor) whose
    optimizer has no fused kernel, and optimizers over `model.parameters()` of a model built
    here and never moved to a device.

    Test files are not checked.

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
        # An optimizer factory (`build_optimizer(cfg, model)` in `optim.py`) belongs to the
        # CUDA training program that imports it.
        in_cuda_program = self.options.target_device != "cpu" and facts.program.trains_on_cuda()
        if not (self.trains_on_cuda(facts) or in_cuda_program):
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

    Test files are not checked.

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
        with (
            ddp_model.no_sync()
            if not ((i + 1) % accumulation_steps == 0)
            else contextlib.nullcontext()
        ):
            loss = criterion(ddp_model(x), y) / accumulation_steps
            loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Fix safety
    Unsafe. Where the pattern is mechanical, the fix wraps the loop's statements up to the
    `backward` in `with (ddp_model.no_sync() if not <step condition> else
    contextlib.nullcontext()):` (importing `contextlib` when the module does not), so that
    only the micro-step that steps the optimizer all-reduces. The accumulated gradients are the
    same sums taken in another order: losses agree to rounding, which `torchperf-lint verify
    --nproc-per-node 2` checks. Mechanical means: the optimizer steps under one
    `if <condition>:` in the loop's own body, without `else`; every `backward` that runs on each
    iteration is a plain statement of that body before it; the model called there is bound to a
    `DistributedDataParallel(...)` in the same function; and the condition reads only names,
    attributes, constants, operators and `len()`, none of which the wrapped statements assign
    (the condition is evaluated before them). Anything else gets no fix. A DDP model must run
    the forward pass of every rank the same number of times between syncs: code that steps on
    a condition that differs between ranks was already wrong and stays so.

    ## References
    - PyTorch docs, [`DistributedDataParallel.no_sync`](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html#torch.nn.parallel.DistributedDataParallel.no_sync)
    """

    code = "TPL604"
    name = "ddp-accumulation-without-no-sync"
    message = "DDP all-reduces gradients on every accumulation micro-step; wrap them in `model.no_sync()`"
    default = False
    fix_applicability = Applicability.UNSAFE

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
                yield self.finding(every_iteration[0], self._fix(facts, loop, every_iteration))

    def _fix(
        self, facts: FileFacts, loop: LoopFacts, every_iteration: list[cst.Call]
    ) -> ProposedFix | None:
        guards = {facts.guards.periodic_guard(step, within=loop.node) for step in loop.step_calls}
        body = loop.node.body
        if len(guards) != 1 or not isinstance(body, cst.IndentedBlock):
            return None
        guard = guards.pop()
        statements = list(body.body)
        if guard not in statements or guard.orelse is not None or not _is_plain_test(guard.test):
            return None
        backward_rows = [_top_statement(facts, call, statements) for call in every_iteration]
        if any(
            row is None or not _is_plain_backward(statements[row], call)
            for row, call in zip(backward_rows, every_iteration)
        ):
            return None
        wrapped = statements[: max(backward_rows) + 1]
        if statements.index(guard) < len(wrapped) or _assigned_names(wrapped) & _read_names(
            guard.test
        ):
            return None
        model = _ddp_model_called(facts, wrapped)
        nullcontext, import_edit = _nullcontext_spelling(facts)
        if model is None or nullcontext is None:
            return None
        condition = self.code_of(facts, guard.test)
        if not isinstance(guard.test, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            condition = f"({condition})"
        header = cst.parse_statement(
            f"with (\n    {model}.no_sync()\n    if not {condition}\n"
            f"    else {nullcontext}()\n):\n    pass\n"
        )
        with_statement = header.with_changes(
            body=cst.IndentedBlock(body=[wrapped[0].with_changes(leading_lines=()), *wrapped[1:]]),
            leading_lines=wrapped[0].leading_lines,
        )
        new_loop = loop.node.with_changes(
            body=body.with_changes(body=[with_statement, *statements[len(wrapped) :]])
        )
        edits = (replace_statement(facts, loop.node, new_loop),)
        return ProposedFix(
            self.fix_applicability,
            f"Run the micro-steps that do not step the optimizer under `{model}.no_sync()`",
            (*import_edit, *edits),
        )


# What a mechanical TPL604 fix may find in the step condition: it is evaluated once more, before
# the statements it is moved above, so it must not call anything but `len`.
_PLAIN_TEST_NODES = (
    cst.Name,
    cst.Attribute,
    cst.Integer,
    cst.Float,
    cst.SimpleString,
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Comparison,
    cst.BooleanOperation,
    cst.Arg,
    cst.ComparisonTarget,
    cst.BaseBinaryOp,
    cst.BaseUnaryOp,
    cst.BaseCompOp,
    cst.BaseBooleanOp,
    cst.LeftParen,
    cst.RightParen,
    cst.BaseParenthesizableWhitespace,
    cst.Comma,
)


def _is_plain_test(test: cst.BaseExpression) -> bool:
    for node in (test, *descendants(test)):
        if isinstance(node, cst.Call):
            if not (isinstance(node.func, cst.Name) and node.func.value == "len"):
                return False
        elif not isinstance(node, _PLAIN_TEST_NODES):
            return False
    return True


def _read_names(test: cst.BaseExpression) -> set[str]:
    return {node.value for node in (test, *descendants(test)) if isinstance(node, cst.Name)}


def _assigned_names(statements: list[cst.BaseStatement]) -> set[str]:
    """The root names the statements assign (`x`, `self` for `self.step += 1`)."""
    targets: list[cst.BaseExpression] = []
    for statement in statements:
        for node in (statement, *descendants(statement)):
            if isinstance(
                node,
                (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.CompFor),
            ):
                targets.append(node.target)
            elif isinstance(node, cst.WithItem) and node.asname is not None:
                targets.append(node.asname.name)
            elif isinstance(node, cst.Del):
                targets.append(node.target)
    names: set[str] = set()
    for target in targets:
        names |= target_names(target) | ({root_name(target)} - {None})
        for element in descendants(target):
            if isinstance(element, cst.Name):
                names.add(element.value)
    return names


def _top_statement(
    facts: FileFacts, node: cst.CSTNode, statements: list[cst.BaseStatement]
) -> int | None:
    """The position in `statements` of the one holding `node`."""
    for ancestor in facts.scopes.ancestors(node):
        if ancestor in statements:
            return statements.index(ancestor)
    return None


def _is_plain_backward(statement: cst.BaseStatement, call: cst.Call) -> bool:
    """`loss.backward()` alone on its line."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and statement.body[0].value is call
    )


def _ddp_model_called(facts: FileFacts, statements: list[cst.BaseStatement]) -> str | None:
    """The one name, bound to `DistributedDataParallel(...)` in its function, that the
    statements call (the forward pass)."""
    models = set()
    for statement in statements:
        for node in descendants(statement):
            if not isinstance(node, cst.Call):
                continue
            name = dotted_name(node.func)
            values = facts.scopes.bound_values(node.func) if name else []
            if values and all(
                isinstance(value, cst.Call)
                and facts.names.call_name(value) == "torch.nn.parallel.DistributedDataParallel"
                and facts.scopes.enclosing_function(value) == facts.scopes.enclosing_function(node)
                for value in values
            ):
                models.add(name)
    return models.pop() if len(models) == 1 else None


def _nullcontext_spelling(facts: FileFacts) -> tuple[str | None, tuple[NodeEdit, ...]]:
    """How the module spells `contextlib.nullcontext`, and the edit importing `contextlib`
    when it does not import it yet (None when the name `contextlib` means something else)."""
    spelt = facts.names.module_level_name("contextlib.nullcontext")
    if spelt is not None:
        return spelt, ()
    module = facts.names.module_level_name("contextlib")
    if module is not None:
        return f"{module}.nullcontext", ()
    if "contextlib" in facts.names.aliases or "contextlib" in facts.names.local_definitions:
        return None, ()
    first = next(
        (
            statement
            for position, statement in enumerate(facts.module.body)
            if not _is_docstring(statement, position) and not _is_future_import(statement)
        ),
        None,
    )
    if first is None:
        return None, ()
    return "contextlib.nullcontext", (
        NodeEdit(first, f"import contextlib{facts.module.default_newline}", "insert_before"),
    )


def _is_docstring(statement: cst.BaseStatement, position: int) -> bool:
    return (
        position == 0
        and isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_future_import(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.ImportFrom)
        and dotted_name(statement.body[0].module or cst.Name("_")) == "__future__"
    )


RULES = (AdamWithWeightDecay, ZeroGradSetToNoneFalse, OptimizerNotFused, DdpAccumulationWithoutNoSync)
