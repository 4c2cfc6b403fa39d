"""TPL4xx — compilation."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.names import dotted_name
from torchperf_lint.rules.base import Finding, NodeEdit, ProposedFix, Rule

_COMPILERS = frozenset({"torch.compile", "torch._dynamo.optimize"})
_OPTIMIZER_PREFIX = "torch.optim."
_NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
_PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
_TORCHSCRIPT = frozenset({"torch.jit.script", "torch.jit.trace"})


def _compiles_anything(facts: FileFacts) -> bool:
    """`torch.compile` (or `torch._dynamo.optimize`) called or referenced, or `model.compile()`."""
    names = facts.names
    if any(names.qualified_name(attribute) in _COMPILERS for attribute in facts.index.attributes):
        return True
    return any(
        names.call_name(call) in _COMPILERS
        or (isinstance(call.func, cst.Attribute) and call.func.attr.value == "compile")
        for call in facts.index.calls
    )


def _trained_model(facts: FileFacts, optimizer: cst.Call) -> cst.BaseExpression | None:
    """`model` in `torch.optim.X(model.parameters(), ...)`."""
    if not optimizer.args or optimizer.args[0].keyword is not None or optimizer.args[0].star:
        return None
    params = optimizer.args[0].value
    if (
        isinstance(params, cst.Call)
        and isinstance(params.func, cst.Attribute)
        and params.func.attr.value in _PARAMETER_METHODS
        and dotted_name(params.func.value) is not None
    ):
        return params.func.value
    return None


def _construction(facts: FileFacts, model: cst.BaseExpression) -> cst.Call | None:
    """The first call bound to `model` that is not a method of the model itself
    (`model = Net()`, not `model = model.to(device)`)."""
    name = dotted_name(model)
    for value in facts.scopes.bound_values(model):
        if not isinstance(value, cst.Call):
            continue
        receiver = value.func.value if isinstance(value.func, cst.Attribute) else None
        if receiver is not None and dotted_name(receiver) == name:
            continue
        return value
    return None


def _statement_of(facts: FileFacts, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
    for parent in facts.scopes.ancestors(node):
        if isinstance(parent, cst.SimpleStatementLine):
            return parent
        if isinstance(parent, cst.BaseCompoundStatement):
            return None
    return None


class ModelNotCompiled(Rule):
    """A training module never compiles its model with `torch.compile`.

    ## What it does
    Checks for modules that build a model, an optimizer over its parameters
    (`torch.optim.X(model.parameters(), ...)`) and a training loop, and never call
    `torch.compile` (nor `model.compile()`). The model's construction is reported. Test files
    are left alone.

    ## Why is this bad?
    `torch.compile` fuses element-wise operations into fewer kernels and cuts Python
    overhead; on recent GPUs training steps often get 1.3-2x faster for a one-line change.

    ## Example
    ```python
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters())

    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    model = Net().cuda()
    model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters())

    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Fix safety
    Unsafe: the fix inserts `model = torch.compile(model)` after the model is built, just
    before the optimizer is (so after any `.to(device)` in between). Compilation takes time at
    the first steps and again on every new input shape, some models do not compile, and the
    compiled model's `state_dict()` keys gain an `_orig_mod.` prefix, which breaks checkpoints
    loaded or saved by key. The fix is offered when the model and the optimizer are built in
    the same block and the module imports `torch`.

    ## References
    - PyTorch docs, [torch.compile](https://pytorch.org/docs/stable/generated/torch.compile.html)
      and the [introduction to torch.compile](https://pytorch.org/tutorials/intermediate/torch_compile_tutorial.html)
    - PyTorch Performance Tuning Guide, [Fuse operations](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#fuse-operations)
      (`torch.compile` fuses kernels)
    """

    code = "TPL401"
    name = "model-not-compiled"
    message = "The model is trained without `torch.compile`; compile it with `model = torch.compile(model)`"
    default = False
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if not facts.loops.training_loops or _compiles_anything(facts):
            return
        reported: set[cst.Call] = set()
        for optimizer in facts.index.calls:
            name = facts.names.call_name(optimizer) or ""
            if not name.startswith(_OPTIMIZER_PREFIX) or name.startswith(_NOT_OPTIMIZERS):
                continue
            model = _trained_model(facts, optimizer)
            construction = None if model is None else _construction(facts, model)
            if construction is None or construction in reported:
                continue
            reported.add(construction)
            yield self.finding(construction, self._fix(facts, model, construction, optimizer))

    def _fix(
        self, facts: FileFacts, model: cst.BaseExpression, construction: cst.Call, optimizer: cst.Call
    ) -> ProposedFix | None:
        torch = facts.names.module_level_name("torch")
        built = _statement_of(facts, construction)
        anchor = _statement_of(facts, optimizer)
        if torch is None or built is None or anchor is None:
            return None
        if facts.index.parents.get(built) is not facts.index.parents.get(anchor):
            return None
        target = facts.code(model)
        indentation = "".join(facts.indents(anchor))
        line = f"{target} = {torch}.compile({target})\n{indentation}"
        return ProposedFix(
            Applicability.UNSAFE,
            f"Compile the model: `{target} = {torch}.compile({target})`",
            (NodeEdit(anchor.body[0], line, "insert_before"),),
        )


class TorchscriptForSpeed(Rule):
    """TorchScript (`torch.jit.script` / `torch.jit.trace`) used where `torch.compile` is the tool.

    ## What it does
    Checks for `torch.jit.script(...)` and `torch.jit.trace(...)` calls, and `@torch.jit.script`
    decorators, outside test files (where scripting usually checks that a model stays
    exportable).

    ## Why is this bad?
    TorchScript is in maintenance mode. For speed, `torch.compile` optimises the same Python
    code with far fewer restrictions and better kernels; for deployment without Python,
    `torch.export` is the supported path.

    ## Example
    ```python
    model = torch.jit.script(Net())
    ```

    ## Use instead
    ```python
    model = torch.compile(Net())              # for speed
    program = torch.export.export(net, (x,))  # for deployment
    ```

    ## Fix safety
    There is no automatic fix: which replacement fits depends on why TorchScript is used.

    ## References
    - PyTorch docs, [TorchScript](https://pytorch.org/docs/stable/jit.html) (maintenance
      mode), [torch.compile](https://pytorch.org/docs/stable/generated/torch.compile.html),
      [torch.export](https://pytorch.org/docs/stable/export.html)
    - PyTorch docs, [`torch.jit.script`](https://pytorch.org/docs/stable/generated/torch.jit.script.html):
      "TorchScript is deprecated, please use `torch.compile` instead."
    """

    code = "TPL402"
    name = "torchscript-for-speed"
    message = "TorchScript is in maintenance mode; use `torch.compile` for speed, `torch.export` for deployment"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.index.calls:
            if facts.names.call_name(call) in _TORCHSCRIPT:
                yield self.finding(call)
        for function in facts.index.functions:
            for decorator in function.decorators:
                if facts.names.qualified_name(decorator.decorator) in _TORCHSCRIPT:
                    yield self.finding(decorator.decorator)


RULES = (ModelNotCompiled, TorchscriptForSpeed)
