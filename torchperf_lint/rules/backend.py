"""TPL9xx — backend and hardware settings."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.arguments import MISSING, SIGNATURES, argument_value, bound_argument
from torchperf_lint.facts.index import ScopeNode, descendants, methods_of
from torchperf_lint.facts.models import BiasReads
from torchperf_lint.facts.names import dotted_name
from torchperf_lint.facts.scopes import single_assignment
from torchperf_lint.rules.base import Finding, ProposedFix, Rule
from torchperf_lint.rules.edits import set_keyword

TUNING_GUIDE = "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"

CONVOLUTIONS = frozenset(
    f"torch.nn.{kind}{dims}d" for kind in ("Conv", "ConvTranspose", "LazyConv", "LazyConvTranspose")
    for dims in (1, 2, 3)
)
LINEARS = frozenset({"torch.nn.Linear", "torch.nn.LazyLinear"})
BATCH_NORMS = frozenset({
    "torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d", "torch.nn.SyncBatchNorm",
    "torch.nn.LazyBatchNorm1d", "torch.nn.LazyBatchNorm2d", "torch.nn.LazyBatchNorm3d",
})
# A Linear's output is (batch, features): only the 1-d BatchNorm normalises each feature.
FEATURE_BATCH_NORMS = frozenset({"torch.nn.BatchNorm1d", "torch.nn.LazyBatchNorm1d", "torch.nn.SyncBatchNorm"})
SEQUENTIAL = "torch.nn.Sequential"
CUDNN_BENCHMARK = "torch.backends.cudnn.benchmark"
CUDNN_DETERMINISTIC = "torch.backends.cudnn.deterministic"


def is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def assigned_settings(facts: FileFacts) -> Iterator[tuple[cst.Assign, str, cst.BaseExpression]]:
    """`(assignment, qualified target, value)` for assignments to PyTorch attributes
    (`torch.backends.cudnn.benchmark = True`, also through `from torch.backends import cudnn`)."""
    for assignment in facts.index.assigns:
        if not isinstance(assignment, cst.Assign):
            continue
        for target in assignment.targets:
            if isinstance(target.target, cst.Attribute):
                qualified = facts.names.qualified_name(target.target)
                if qualified is not None and qualified.startswith("torch."):
                    yield assignment, qualified, assignment.value


def uses_autocast(facts: FileFacts) -> bool:
    """Some autocast region of the module may be enabled (the module uses AMP)."""
    return any(autocast.may_be_enabled for autocast in facts.autocast.calls)


def layer_constructions(facts: FileFacts, layer_names: frozenset[str]) -> Iterator[cst.Call]:
    for call in facts.index.calls:
        if facts.names.call_name(call) in layer_names:
            yield call


def bias_cancelled_by_norm(
    facts: FileFacts, layer_names: frozenset[str], norm_names: frozenset[str]
) -> Iterator[tuple[cst.Call, cst.Call]]:
    """Layer constructions with a default bias (not an explicit `bias=True`, a decision)
    whose output goes straight into a BatchNorm, each with the first such BatchNorm.

    Recognised: adjacent arguments of an `nn.Sequential(...)` literal; `self.bn(self.conv(x))`;
    and `out = self.conv(x)` directly followed by `out = self.bn(out)` (the conv output is
    then used by nothing else). BatchNorm subtracts the per-channel batch mean, so a
    per-channel constant added just before it has no effect on the output.
    """
    reported: set[cst.Call] = set()

    def construction(expression: cst.BaseExpression, names: frozenset[str], cls: cst.ClassDef | None):
        """The one construction of `names` that `expression` (a call or `self.x`) holds."""
        if isinstance(expression, cst.Call):
            return expression if facts.names.call_name(expression) in names else None
        name = dotted_name(expression)
        if cls is None or name is None or not name.startswith("self."):
            return None
        values = [v for v in facts.scopes.bound_values(expression) if facts.scopes.enclosing_class(v) is cls]
        if len(values) != 1 or not isinstance(values[0], cst.Call):
            return None
        return values[0] if facts.names.call_name(values[0]) in names else None

    def has_bias(layer: cst.Call) -> bool:
        signature = SIGNATURES.get(facts.names.call_name(layer) or "", ())
        # An explicit `bias=True` is a decision (a port that mirrors a reference model's
        # layers), as an explicit `num_workers=0` is for TPL101.
        return argument_value(layer, "bias", signature) is MISSING

    def candidates() -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression, cst.ClassDef | None]]:
        for call in facts.index.calls:
            if facts.names.call_name(call) == SEQUENTIAL:
                positional = [arg.value for arg in call.args if arg.keyword is None]
                if any(arg.star for arg in call.args):
                    continue
                for layer, norm in zip(positional, positional[1:]):
                    yield layer, norm, None
            elif len(call.args) == 1 and not call.args[0].keyword and not call.args[0].star:
                inner = call.args[0].value
                if isinstance(inner, cst.Call):
                    yield inner.func, call.func, facts.scopes.enclosing_class(call)
        for layer, norm, cls in _consecutive_layer_statements(facts):
            yield layer, norm, cls
        for layers in _layer_lists(facts):
            for layer, norm in zip(layers, layers[1:]):
                yield layer, norm, None

    for layer_expression, norm_expression, cls in candidates():
        if isinstance(layer_expression, cst.Call) and isinstance(norm_expression, cst.Call) or not isinstance(layer_expression, cst.Call) and not isinstance(norm_expression, cst.Call):
            layer = construction(layer_expression, layer_names, cls)
            norm = construction(norm_expression, norm_names, cls)
        else:
            continue
        if layer is None or norm is None or layer in reported or not has_bias(layer):
            continue
        reported.add(layer)
        yield layer, norm


def _consecutive_layer_statements(
    facts: FileFacts,
) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression, cst.ClassDef | None]]:
    """`(self.conv, self.bn, class)` for `out = self.conv(x)` directly followed by a statement
    that rebinds `out` and reads it once, as the only argument of a call: `out = self.bn(out)`,
    `x = self.norm(x) + shortcut`. The conv output then feeds nothing but that call."""
    for cls in facts.index.classes:
        for function in cls.body.body:
            if not isinstance(function, cst.FunctionDef) or not isinstance(function.body, cst.IndentedBlock):
                continue
            statements = list(function.body.body)
            for first, second in zip(statements, statements[1:]):
                produced = single_assignment(first)
                consumed = single_assignment(second)
                if produced is None or consumed is None or produced[0] != consumed[0]:
                    continue
                (target, layer_call), (_, value) = produced, consumed
                if not isinstance(layer_call, cst.Call):
                    continue
                reads = [
                    node for node in descendants(value)
                    if isinstance(node, cst.Name) and node.value == target
                ]
                if len(reads) != 1:
                    continue
                argument = facts.index.parents.get(reads[0])
                call = facts.index.parents.get(argument)
                if not (isinstance(argument, cst.Arg) and isinstance(call, cst.Call)):
                    continue
                if len(call.args) == 1 and argument.keyword is None and not argument.star:
                    yield layer_call.func, call.func, cls


def _layer_lists(facts: FileFacts) -> Iterator[list[cst.BaseExpression]]:
    """The layers of lists that become a sequence of modules, in order: a list literal that is
    returned or unpacked into `nn.Sequential(*...)`, or a name bound to one and grown with
    `.append(...)`, `.extend([...])` or `+= [...]` in the same function before it is returned
    or unpacked (the `block()` helpers of MLP and GAN code, appends under an `if` included)."""
    for call in facts.index.calls:
        if facts.names.call_name(call) != SEQUENTIAL:
            continue
        for arg in call.args:
            if arg.star == "*" and isinstance(arg.value, cst.List):
                yield [element.value for element in arg.value.elements]
    for statement in facts.index.returns:
        if isinstance(statement.value, cst.List):
            yield [element.value for element in statement.value.elements]
    # (function, name) of the lists a layer is appended to.
    grown = {
        (facts.scopes.enclosing_function(call), call.func.value.value)
        for call in facts.index.calls
        if isinstance(call.func, cst.Attribute)
        and call.func.attr.value in ("append", "extend")
        and isinstance(call.func.value, cst.Name)
        and call.args
        and any(
            _holds_layers(facts, value) if isinstance(value, cst.List) else _is_layer(facts, value)
            for value in (call.args[0].value,)
        )
    }
    for assignment in facts.index.assigns:
        if not (
            isinstance(assignment, cst.Assign)
            and isinstance(assignment.value, cst.List)
            and len(assignment.targets) == 1
            and isinstance(assignment.targets[0].target, cst.Name)
        ):
            continue
        name = assignment.targets[0].target.value
        function = facts.scopes.enclosing_function(assignment)
        if function is None:
            continue
        if not _holds_layers(facts, assignment.value) and (function, name) not in grown:
            continue
        if not _becomes_modules(facts, name, function):
            continue
        layers = [element.value for element in assignment.value.elements]
        for node in descendants(function.body):
            layers.extend(_appended(node, name))
        yield layers


def _holds_layers(facts: FileFacts, literal: cst.List) -> bool:
    """A list with a `torch.nn` module among its elements."""
    return any(_is_layer(facts, element.value) for element in literal.elements)


def _is_layer(facts: FileFacts, expression: cst.BaseExpression) -> bool:
    return isinstance(expression, cst.Call) and (
        facts.names.call_name(expression) or ""
    ).startswith("torch.nn.")


def _becomes_modules(facts: FileFacts, name: str, function: cst.FunctionDef) -> bool:
    """`return name`, or `nn.Sequential(*name)`, in `function`."""
    for node in descendants(function.body):
        if isinstance(node, cst.Return):
            returned = node.value
            if isinstance(returned, cst.Name) and returned.value == name:
                return True
        elif isinstance(node, cst.Call) and facts.names.call_name(node) == SEQUENTIAL and any(
            arg.star == "*" and isinstance(arg.value, cst.Name) and arg.value.value == name
            for arg in node.args
        ):
            return True
    return False


def _appended(node: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """What `node` adds to the list `name`: `name.append(x)`, `name.extend([x, y])`,
    `name += [x, y]`."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        receiver, method = node.func.value, node.func.attr.value
        if not (isinstance(receiver, cst.Name) and receiver.value == name and len(node.args) == 1):
            return []
        value = node.args[0].value
        if method == "append":
            return [value]
        if method == "extend" and isinstance(value, cst.List):
            return [element.value for element in value.elements]
    if (
        isinstance(node, cst.AugAssign)
        and isinstance(node.operator, cst.AddAssign)
        and isinstance(node.target, cst.Name)
        and node.target.value == name
        and isinstance(node.value, cst.List)
    ):
        return [element.value for element in node.value.elements]
    return []


class _BiasBeforeBatchNorm(Rule):
    """Shared check of TPL906 and TPL909: which layers, which norms."""

    layer_names: frozenset[str]
    norm_names: frozenset[str]
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if facts.models.loads_released_weights:
            return  # `bias=False` would break loading the published checkpoints
        bias_reads = facts.models.bias_reads
        for layer, norm in bias_cancelled_by_norm(facts, self.layer_names, self.norm_names):
            cls = facts.scopes.enclosing_class(layer)
            if cls is not None and facts.program.builds_released_weights(cls):
                continue  # a block of a released architecture another module loads
            if _builds_no_model(facts, layer) or _stored_but_never_read(facts, layer):
                continue
            switch = _norm_switch(facts, layer, norm)
            if switch is not None and facts.guards.switch_default(switch.test) is (not switch.on):
                continue  # the BatchNorm is built only with a switch turned from its default
            if facts.guards.off_default_option(layer):
                continue  # `elif self.pooling == "attention":`, an option away from its default
            # Without the BatchNorm the bias is live: it goes only when the switch adds one.
            bias = cst.Name("False") if switch is None else switch.bias_value()
            fix = (
                self._with_bias(facts, layer, bias, bias_reads)
                if switch is None or _readable_at(facts, switch.test, layer)
                else None  # the switch is a parameter of another function
            )
            yield self.finding(layer, fix, bias=facts.code(bias))

    def _with_bias(
        self, facts: FileFacts, layer: cst.Call, bias: cst.BaseExpression, bias_reads: BiasReads
    ) -> ProposedFix:
        """`layer` constructed with `bias=<bias>`."""
        qualified = facts.names.call_name(layer) or ""
        new_call = set_keyword(layer, "bias", bias)  # reported layers do not pass `bias`
        # Code that reads the bias (an init function's `m.bias.data.zero_()`) would raise
        # on `None`: only its author can change it along with the layer.
        read = bias_reads.covers(layer, qualified.rsplit(".", 1)[-1])
        applicability = Applicability.DISPLAY_ONLY if read else Applicability.UNSAFE
        title = f"Construct the layer with `bias={facts.code(bias)}`"
        return self.replace(facts, layer, new_call, title, applicability)


class ConvBiasBeforeBatchNorm(_BiasBeforeBatchNorm):
    """A convolution's bias is computed and then cancelled by the BatchNorm that follows it.

    ## What it does
    Checks for a convolution constructed with a bias (the default) whose output goes
    straight into a BatchNorm: adjacent layers of an `nn.Sequential(...)` literal, or
    `self.bn(self.conv(x))` (also `out = self.conv(x)` then `out = self.bn(out)`) in a module.
    An explicit `bias=True` is a decision (a port that mirrors a reference model's layers,
    layer for layer) and is left alone, as an explicit `num_workers=0` is by TPL101.
    It stays silent in a module that loads published weights into its models
    (`load_state_dict_from_url`, `hf_hub_download`, `from_pretrained`, or a `pretrained`
    switch), and in the classes such a module builds wherever they are defined: the classes
    it defines, imports or constructs, and the classes their methods construct, directly or
    through project functions (`self.fusion = build_fusion(c)` builds a `Fusion` block of the
    released architecture), or pass to a call (`HourglassNet(Bottleneck2D, ...)`, whose
    stages build the block class they are given). Dropping the bias would break loading the
    released checkpoints.
    A module loads published weights too when it loads, strictly (the default), a state dict
    of `torch.load(path)` (or a key of it: `checkpoint["model_state_dict"]`) into a model it
    builds (`model = Net(args)`, or `self`), and the file is published: the loading function
    downloads it, itself or through the module's functions it calls (`requests.get(url)`,
    `urlretrieve`, `download_url_to_file`, ModelScope's `snapshot_download`), or its path
    is built from `__file__`, a package resource or a URL literal (shipped with the
    package). Such a module's released models include the classes its strings name by
    their dotted path (a table of model ids, `'obj': 'speakerlab.models.eres2net.ERes2Net'`,
    built with `dynamic_import(conf['obj'])`: 3D-Speaker's). A `strict=False` load (a
    fine-tuning start), a model passed in, or a checkpoint of the project's own runs
    (`torch.load(args.resume)`) is not published weights. Two kinds of model class are
    released architectures too, with the classes derived from them and what they build: a
    class a registry builds by the name a config gives (`@MODELS.register_module()`,
    `@BACKBONE_REGISTRY.register()`: a model zoo's, whose released configs and weights name
    it), and a class with an API for its own checkpoints, a method that strictly loads into
    `self` a state dict read from a file (`state = load_fsspec(checkpoint_path);
    self.load_state_dict(state["model"])`, or `torch.load`). Users load checkpoints of
    them, and the names of their parameters are the checkpoints' format (a non-strict load
    of a checkpoint with the bias still succeeds, and then the BatchNorm's running mean no
    longer matches its input).
    It is silent too in code that builds no model: a private module-level builder (`def
    _projection_mlp(...)`) that no code of the project calls, tests included, or the
    `__init__` of a class that no file of the project names, configs and launchers
    included, but as the base of such classes, in a module another file imports (a leftover
    `SimpleDenseNet`); for a layer that `__init__` stores on `self` (`self.te_patch =
    nn.Sequential(...)`, or appends to `self.up_sample`) in a class with a `forward`, when
    no code of the module reads an attribute of that name back, nor walks children by name
    (`getattr(self, ...)`, `self.children()`): it never runs; and
    where the BatchNorm
    is built only under a switch that is off by default and the layer is built either way
    (`layers.append(nn.Conv2d(...)); if use_bn: layers.append(nn.BatchNorm2d(c))`): a
    parameter whose default is off (`use_bn=False`, `None`, `0`), or without a default one
    that every call in the module passes off or reads from a setting that defaults to off
    (`cls(use_batchnorm=config.get("use_batchnorm", False))`), or `self.<attr>` stored from
    such an `__init__` parameter. Built with its defaults, the model has no BatchNorm there
    and the bias is live. Under a switch that is on by default, or whose default the module
    does not show, it is reported with the fix `bias=not use_bn`. It is silent as well where
    the pair is built only in a branch that an object built with its defaults never takes
    (`elif self.graph_pooling == "attention":` in an `__init__(..., graph_pooling="mean")`
    that stores the option, or `if self.use_gate:` for a switch that defaults to `False`).
    Test files are not checked.

    ## Why is this bad?
    BatchNorm subtracts the per-channel mean of its input, so a per-channel constant added
    by the convolution is removed again: the bias costs an extra kernel (or epilogue), memory
    traffic, optimizer state and a gradient, and changes nothing the model can express.

    ## Example
    ```python
    block = nn.Sequential(nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU())
    ```

    ## Use instead
    ```python
    block = nn.Sequential(nn.Conv2d(64, 128, 3, padding=1, bias=False), nn.BatchNorm2d(128), nn.ReLU())
    ```

    ## Fix safety
    Unsafe: the model computes the same function, but the `state_dict` loses the `.bias`
    keys, so existing checkpoints no longer load with `strict=True`. Display-only when the
    module reads the bias of that layer, or of layers of its type, without checking that
    there is one (`m.bias.data.zero_()` in an init function, `nn.init.zeros_(self.conv.bias)`):
    with `bias=False` that read raises. A read under `if m.bias is not None:` is safe. When
    the BatchNorm is built under a switch, the fix is `bias=not use_bn` (`bias=no_bn` for
    `if not no_bn:`), which keeps the bias in the models built without the BatchNorm; no fix
    is offered when the switch is a parameter of another function than the layer's.

    ## References
    - PyTorch Performance Tuning Guide, [Disable bias for convolutions directly followed by a batch norm](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#disable-bias-for-convolutions-directly-followed-by-a-batch-norm)
    - PyTorch docs, [BatchNorm2d](https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm2d.html)
    """

    code = "TPL906"
    name = "conv-bias-before-batchnorm"
    message = "Convolution bias is cancelled by the BatchNorm that follows; construct it with `bias={bias}`"
    default = True
    layer_names = CONVOLUTIONS
    norm_names = BATCH_NORMS


@dataclass(frozen=True)
class NormSwitch:
    """The switch a BatchNorm is built under and its layer is not: `if use_bn:` (`on`: the
    value of `test` that builds it), around `layers.append(nn.BatchNorm1d(dim))`."""

    test: cst.BaseExpression
    on: bool

    def bias_value(self) -> cst.BaseExpression:
        """`not use_bn`: a bias exactly when there is no BatchNorm."""
        return cst.UnaryOperation(cst.Not(), self.test) if self.on else self.test


def _norm_switch(facts: FileFacts, layer: cst.Call, norm: cst.Call) -> NormSwitch | None:
    """The `if <switch>:` (or `if not <switch>:`) of the function whose body holds `norm` and
    not `layer`; `switch` a name or `self.<attr>`."""
    for parent, child in facts.scopes.ancestors_with_child(norm):
        if isinstance(parent, ScopeNode):
            return None
        if not isinstance(parent, cst.If) or facts.scopes.within_same_scope(layer, parent):
            continue
        test, on = parent.test, child is parent.body
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, on = test.expression, not on
        if isinstance(test, cst.Name) or (
            isinstance(test, cst.Attribute) and dotted_name(test) == f"self.{test.attr.value}"
        ):
            return NormSwitch(test, on)
        return None
    return None


def _readable_at(facts: FileFacts, switch: cst.BaseExpression, layer: cst.Call) -> bool:
    """`self.<attr>` anywhere in the class; a parameter in its own function."""
    if isinstance(switch, cst.Attribute):
        return facts.scopes.enclosing_class(switch) is facts.scopes.enclosing_class(layer)
    return facts.scopes.enclosing_function(switch) is facts.scopes.enclosing_function(layer)


def _stored_but_never_read(facts: FileFacts, layer: cst.Call) -> bool:
    """`__init__` stores the layer on `self` (`self.te_patch = nn.Sequential(...)`, or a
    name bound to it appended to `self.up_sample_conv`), its class defines `forward`, and no
    code of the module reads an attribute of that name back, nor walks children by name
    (`getattr(self, ...)`, `self.children()`): a layer built and never run (TFB's
    ModernTCN)."""
    init = facts.scopes.enclosing_function(layer)
    cls = facts.scopes.enclosing_class(layer)
    if init is None or cls is None or init.name.value != "__init__":
        return False
    if not methods_of(cls, ("forward",)):
        return False  # a base class: its subclasses' `forward` reads what it builds
    stored = _stored_attribute(facts, layer, init)
    if stored is None:
        return False
    attribute = stored.partition(".")[2]
    for node in descendants(facts.module):
        if type(node) is cst.Call and dotted_name(node.func) in ("getattr", "self.children"):
            return False
        if type(node) is cst.Attribute and node.attr.value == attribute:
            parent = facts.index.parents.get(node)
            if type(parent) is cst.AssignTarget:
                continue  # `self.up_sample_conv = nn.ModuleList()`
            if (
                type(parent) is cst.Attribute
                and parent.attr.value == "append"
                and facts.scopes.enclosing_function(node) is init
            ):
                continue  # `self.up_sample_conv.append(up_conv)`
            return False
    return True


def _stored_attribute(facts: FileFacts, layer: cst.Call, init: cst.FunctionDef) -> str | None:
    """`self.x` that the statement building `layer` stores it in, directly or through a name
    it binds and then appends to `self.x` in `init`."""
    for parent in facts.scopes.ancestors(layer):
        if type(parent) is not cst.Assign:
            continue
        if len(parent.targets) != 1:
            return None
        target = parent.targets[0].target
        name = dotted_name(target)
        if name is not None and name.startswith("self.") and name.count(".") == 1:
            return name
        if type(target) is not cst.Name:
            return None
        appended = {
            dotted_name(call.func.value)
            for call in facts.index.calls
            if type(call.func) is cst.Attribute
            and call.func.attr.value == "append"
            and len(call.args) == 1
            and dotted_name(call.args[0].value) == target.value
            and facts.scopes.enclosing_function(call) is init
        }
        found = appended.pop() if len(appended) == 1 else None
        return found if found is not None and found.startswith("self.") and found.count(".") == 1 else None
    return None


def _builds_no_model(facts: FileFacts, layer: cst.Call) -> bool:
    """In a function nothing in the project calls (`ProgramAnswers.never_called`): a private
    module-level builder (`def _projection_mlp(...)`), or a method of a class nothing names,
    a leftover model."""
    function = facts.scopes.enclosing_function(layer)
    return function is not None and facts.program.never_called(function)


class LinearBiasBeforeBatchNorm(_BiasBeforeBatchNorm):
    """An `nn.Linear` bias is computed and then cancelled by the `BatchNorm1d` that follows it.

    ## What it does
    Checks for `nn.Linear` constructed with a bias (the default) whose output goes straight
    into `nn.BatchNorm1d`: adjacent layers of an `nn.Sequential(...)` literal, or
    `self.bn(self.fc(x))` (also `out = self.fc(x)` then `out = self.bn(out)`) in a module.
    LayerNorm and GroupNorm are not reported: they normalise across features, so a
    per-feature bias before them is not cancelled. As TPL906, it stays silent in a module
    that loads published weights into its models, in a model class a registry builds or that
    loads its own checkpoints, and in the classes these build, and where the BatchNorm is
    built only under a switch that is off by default (`if use_bn: layers.append(...)` with
    `use_bn=False`, or `use_batchnorm=config.get("use_batchnorm", False)` at every call) or
    in a branch that an object built with its defaults never takes (`elif self.graph_pooling
    == "attention":` with `graph_pooling="mean"`), or for a layer stored on `self` that
    nothing reads back; under a switch that is on by default it offers `bias=not use_bn`.
    Test files are not checked.

    ## Why is this bad?
    `BatchNorm1d` subtracts the per-feature batch mean, so the constant the Linear adds to
    each feature is removed again: an extra addition, a parameter, its gradient and its
    optimizer state, for nothing.

    ## Example
    ```python
    head = nn.Sequential(nn.Linear(512, 256), nn.BatchNorm1d(256), nn.ReLU())
    ```

    ## Use instead
    ```python
    head = nn.Sequential(nn.Linear(512, 256, bias=False), nn.BatchNorm1d(256), nn.ReLU())
    ```

    ## Fix safety
    Unsafe: the model computes the same function, but the `state_dict` loses the `.bias`
    keys, so existing checkpoints no longer load with `strict=True`. Display-only when the
    module reads the bias of that layer, or of layers of its type, without checking that
    there is one (`m.bias.data.zero_()` in an init function, `nn.init.zeros_(self.conv.bias)`):
    with `bias=False` that read raises. A read under `if m.bias is not None:` is safe. When
    the BatchNorm is built under a switch, the fix is `bias=not use_bn` (`bias=no_bn` for
    `if not no_bn:`), which keeps the bias in the models built without the BatchNorm; no fix
    is offered when the switch is a parameter of another function than the layer's.

    ## References
    - PyTorch Performance Tuning Guide, [Disable bias for convolutions directly followed by a batch norm](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#disable-bias-for-convolutions-directly-followed-by-a-batch-norm) (the same holds for Linear)
    - PyTorch docs, [BatchNorm1d](https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html)
    """

    code = "TPL909"
    name = "linear-bias-before-batchnorm"
    message = "Linear bias is cancelled by the BatchNorm1d that follows; construct it with `bias={bias}`"
    default = True
    layer_names = LINEARS
    norm_names = FEATURE_BATCH_NORMS


class CudnnBenchmarkNotEnabled(Rule):
    """A CUDA training module with convolutions never enables cuDNN autotuning.

    ## What it does
    Checks modules that train on CUDA, construct convolution layers, and never assign
    `torch.backends.cudnn.benchmark`. Reported at the first convolution. A module that sets it
    to `False` made a decision and is not reported.

    Test files are not checked.

    ## Why is this bad?
    With `benchmark = True`, cuDNN times the available convolution algorithms for each input
    shape the first time it sees it and then uses the fastest; without it a heuristic picks
    one, often a slower one. With fixed input shapes (most image training) the search runs
    once and every later step is faster.

    ## Example
    ```python
    model = nn.Sequential(
        nn.Conv2d(3, 64, kernel_size=3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    ).cuda()

    for images, labels in loader:
        loss = criterion(model(images.cuda()), labels.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    torch.backends.cudnn.benchmark = True

    model = nn.Sequential(
        nn.Conv2d(3, 64, kernel_size=3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    ).cuda()

    for images, labels in loader:
        loss = criterion(model(images.cuda()), labels.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Fix safety
    No fix: with input shapes that change every step the search reruns for each new shape
    and costs more than it saves, and the choice is not deterministic; only the author knows.

    ## References
    - PyTorch Performance Tuning Guide, [Enable cuDNN auto-tuner](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#enable-cudnn-auto-tuner)
    - PyTorch docs, [`torch.backends.cudnn.benchmark`](https://pytorch.org/docs/stable/backends.html#torch.backends.cudnn.benchmark)
    """

    code = "TPL901"
    name = "cudnn-benchmark-not-enabled"
    message = "CUDA training with convolutions and no `torch.backends.cudnn.benchmark`; set it to `True` for fixed input shapes"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if not self.trains_on_cuda(facts):
            return
        if any(target == CUDNN_BENCHMARK for _, target, _ in assigned_settings(facts)):
            return
        first_convolution = next(layer_constructions(facts, CONVOLUTIONS), None)
        if first_convolution is not None:
            yield self.finding(first_convolution)


class CudnnDeterministicEnabled(Rule):
    """`torch.backends.cudnn.deterministic = True` restricts cuDNN to its slower algorithms.

    ## What it does
    Checks for assignments of `True` to `torch.backends.cudnn.deterministic`. Assignments
    under a flag (`if args.seed is not None:`) are a decision and are not reported.

    Test files are not checked.

    ## Why is this bad?
    Deterministic mode lets cuDNN use only algorithms that give bit-identical results run to
    run, which excludes many of the fastest convolution kernels (and disables the benefit of
    `cudnn.benchmark`). Useful while debugging a reproducibility problem; costly when left on
    for training.

    ## Example
    ```python
    torch.backends.cudnn.deterministic = True
    ```

    ## Use instead
    ```python
    torch.backends.cudnn.benchmark = True  # reproducibility only where it is needed
    ```

    ## Fix safety
    No fix: whether bitwise reproducibility is required is the author's call.

    ## References
    - PyTorch docs, [Reproducibility](https://pytorch.org/docs/stable/notes/randomness.html)
    - [PyTorch Performance Tuning Guide](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    """

    code = "TPL902"
    name = "cudnn-deterministic-enabled"
    message = "`cudnn.deterministic = True` excludes the fastest cuDNN kernels; enable it only while debugging"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for assignment, target, value in assigned_settings(facts):
            if target == CUDNN_DETERMINISTIC and is_true(value) and not facts.guards.under_flag(assignment):
                yield self.finding(assignment)


class DataParallel(Rule):
    """`nn.DataParallel` is a single-process, multi-thread wrapper that scales poorly.

    ## What it does
    Checks for `torch.nn.DataParallel(...)` constructions in a module that trains: it calls
    `backward` or steps an optimizer somewhere; or whose wrapped model the module hands to
    a function of the project that trains it (`model = nn.DataParallel(model)`, then
    `model_training(args, data, model)` of a `trainer.py` with the training loop).

    It stays silent where `DataParallel` is a fallback or costs nothing worth the move: in a
    module that also builds `DistributedDataParallel` (or `FullyShardedDataParallel`), which
    is then the choice for real runs; when the wrapped model only runs with autograd off
    (inference, such as a metric's feature extractor), or the function that wraps it switches
    it to eval mode (also as it wraps it: `nn.DataParallel(model).to(device).eval()`), never
    back, and trains nothing (a sampling entry point that wraps a checkpoint and hands it to
    its samplers, a feature-extraction pass, or an evaluation that runs it itself, whose
    missing `torch.no_grad()` is TPL701's finding), or the module trains nowhere; when the
    wrapper is unwrapped before anything runs it (`decoder = nn.DataParallel(decoder)`,
    `decoder.load_state_dict(state)`, `decoder = decoder.module.cuda()`: wrapped only to load
    a checkpoint saved from a wrapped model); in the CPU branch of a device test (the `else`
    of `if torch.cuda.is_available():`, where the wrapper only keeps `.module` uniform and
    the CUDA branch's construction is the finding); and in test files.

    ## Why is this bad?
    `DataParallel` replicates the model onto every GPU on every forward pass, scatters the
    inputs and gathers the outputs on the first GPU, all from one Python process whose GIL the
    replicas contend for. `DistributedDataParallel` runs one process per GPU, keeps replicas
    in place and overlaps the gradient all-reduce with the backward pass; the PyTorch docs
    recommend it even on a single machine.

    ## Example
    ```python
    model = nn.DataParallel(model).cuda()
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    model = nn.parallel.DistributedDataParallel(model.to(rank), device_ids=[rank])  # one process per GPU (torchrun)
    for x, y in loader:
        loss = criterion(model(x.cuda(rank)), y.cuda(rank))
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    No fix: moving to DDP needs a process launcher, a process group and a distributed sampler.

    ## References
    - PyTorch docs, [DataParallel](https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html) ("use DistributedDataParallel instead")
    - PyTorch docs, [CUDA semantics: use DDP instead of DataParallel](https://pytorch.org/docs/stable/notes/cuda.html#use-nn-parallel-distributeddataparallel-instead-of-multiprocessing-or-nn-dataparallel)
    """

    code = "TPL903"
    name = "data-parallel"
    message = "`nn.DataParallel` scales poorly (one process, GIL, replication every step); use `DistributedDataParallel`"
    default = True

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if facts.models.builds_distributed_wrapper:
            return
        trains = _trains(facts)
        for call in layer_constructions(facts, frozenset({"torch.nn.DataParallel"})):
            if (
                (trains or _handed_to_training(facts, call))
                and not _only_run_without_grad(facts, call)
                and not _unwrapped_before_running(facts, call)
                and not facts.guards.cpu_branch(call)
            ):
                yield self.finding(call)


def _trains(facts: FileFacts) -> bool:
    """The module calls `backward` or steps an optimizer (in a loop or not)."""
    return any(
        isinstance(call.func, cst.Attribute)
        and (
            call.func.attr.value == "backward"
            or facts.loops.is_training_step(call, call.func.attr.value)
        )
        for call in facts.index.calls
    )


def _handed_to_training(facts: FileFacts, wrapper: cst.Call) -> bool:
    """The name the wrapper is bound to is passed, later in its function, to a project
    function that trains it (`model = nn.DataParallel(model)`, then `model_training(args,
    data, model, ...)` of a sibling `trainer.py`: `ProgramAnswers.runs_training`)."""
    assign = facts.index.parents.get(wrapper)
    if type(assign) is not cst.Assign or len(assign.targets) != 1:
        return False
    name = dotted_name(assign.targets[0].target)
    if name is None:
        return False
    function = facts.scopes.enclosing_function(wrapper)
    order = facts.index.preorder
    return any(
        order[call] > order[wrapper]
        and facts.scopes.enclosing_function(call) is function
        and any(dotted_name(arg.value) == name for arg in call.args)
        and facts.program.runs_training(call)
        for call in facts.index.inside(facts.index.calls, function or facts.module)
    )


def _unwrapped_before_running(facts: FileFacts, wrapper: cst.Call) -> bool:
    """The name the wrapper is bound to is next bound, in the same block, to what it wraps,
    before anything calls it (`decoder = nn.DataParallel(decoder)`,
    `decoder.load_state_dict(state)`, then `decoder = decoder.module.cuda()`): wrapped only
    to load a checkpoint saved from a wrapped model, whose keys start with `module.`."""
    assign = facts.index.parents.get(wrapper)
    if type(assign) is not cst.Assign or len(assign.targets) != 1:
        return False
    target = assign.targets[0].target
    if type(target) is not cst.Name:
        return False
    name, function, order = target.value, facts.scopes.enclosing_function(assign), facts.index.preorder
    block = facts.index.parents.get(facts.index.parents.get(assign))  # the statement's block
    rebinding = next(
        (
            later for later in facts.index.assigns
            if type(later) is cst.Assign
            and order[later] > order[assign]
            and facts.scopes.enclosing_function(later) is function
            and any(dotted_name(t.target) == name for t in later.targets)
        ),
        None,
    )
    if (
        rebinding is None
        or not _unwraps(rebinding.value, name)
        or facts.index.parents.get(facts.index.parents.get(rebinding)) is not block
    ):
        return False  # not unwrapped, or only on some paths (`if isinstance(m, DataParallel):`)
    return not any(
        dotted_name(call.func) == name and order[assign] < order[call] < order[rebinding]
        for call in facts.index.calls
    )


def _unwraps(value: cst.BaseExpression, name: str) -> bool:
    """`name.module`, also moved or converted on the way: `name.module.cuda()`."""
    while type(value) in (cst.Call, cst.Attribute):
        if type(value) is cst.Attribute and value.attr.value == "module":
            return dotted_name(value.value) == name
        value = value.func if type(value) is cst.Call else value.value
    return False


def _only_run_without_grad(facts: FileFacts, wrapper: cst.Call) -> bool:
    """The name the wrapped model is bound to is called, and only with autograd off; or the
    function that wraps it switches it to eval mode and never back, and trains nothing
    itself (`model = nn.DataParallel(model)`, `model.eval()`, then `self.sample_fid(model)`
    or `logits = model(data)`)."""
    node: cst.CSTNode = wrapper
    parent = facts.index.parents.get(node)
    chained_eval = False  # `DataParallel(model).to(device).eval()`
    while isinstance(parent, (cst.Attribute, cst.Call)) and not isinstance(parent, cst.Arg):
        node, parent = parent, facts.index.parents.get(parent)  # `DataParallel(m).cuda()`
        chained_eval |= isinstance(node, cst.Attribute) and node.attr.value == "eval"
    if not isinstance(parent, cst.Assign):
        return False
    names = {dotted_name(target.target) for target in parent.targets} - {None}
    runs = [call for call in facts.index.calls if dotted_name(call.func) in names]
    function = facts.scopes.enclosing_function(wrapper)
    local = all("." not in name for name in names)  # not `self.net`, which other methods run
    if local and _only_evaluated(facts, names, function, chained_eval):
        return True
    return bool(runs) and all(facts.guards.grad_maybe_disabled(run) for run in runs)


def _only_evaluated(
    facts: FileFacts, names: set[str], function: cst.FunctionDef | None, chained_eval: bool
) -> bool:
    """`function` switches the model it holds in the local variables `names` to eval mode
    (also as it wraps it: `chained_eval`) and never to training mode, and neither
    backpropagates nor steps an optimizer."""
    if function is None:
        return False
    modes = {"eval"} if chained_eval else set()
    for call in facts.index.calls:
        if facts.scopes.enclosing_function(call) is not function or not isinstance(
            call.func, cst.Attribute
        ):
            continue
        method = call.func.attr.value
        if method == "backward" or facts.loops.is_training_step(call, method):
            return False
        if method in ("eval", "train") and dotted_name(call.func.value) in names:
            modes.add(method)
    return modes == {"eval"}


class BatchSizeNotPowerOfTwo(Rule):
    """A literal `batch_size=` that is not a power of two.

    ## What it does
    Checks for a literal integer passed as `batch_size=` (also positionally to `DataLoader`)
    that is not a power of two.

    Test files are not checked.

    ## Why is this bad?
    GPU kernels tile their work in powers of two; a batch of 100 can leave tiles partly empty
    and pick less efficient kernels than 96 or 128. The effect is real but usually small and
    depends on the model, which is why this rule is opt-in.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=100)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=128)
    ```

    ## Fix safety
    No fix: the batch size changes the optimisation (learning rate, memory use).

    ## References
    - PyTorch Performance Tuning Guide, [Use mixed precision and AMP](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#use-mixed-precision-and-amp)
      ("set sizes to multiples of 8")
    - NVIDIA, [Matrix Multiplication Background User's Guide](https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html)
    """

    code = "TPL904"
    name = "batch-size-not-power-of-two"
    message = "`batch_size={size}` is not a power of two; GPU kernels tile best with 2^k batches"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        loaders = {loader.call: loader for loader in facts.dataloaders.constructions}
        for call in facts.index.calls:
            loader = loaders.get(call)
            passed = loader.argument("batch_size") if loader else bound_argument(call, "batch_size")
            if not isinstance(passed, cst.Arg):
                continue
            size = argument_value(call, "batch_size", SIGNATURES["torch.utils.data.DataLoader"] if loader else ())
            if isinstance(size, int) and not isinstance(size, bool) and size > 0 and size & (size - 1):
                yield self.finding(passed, size=size)


class Float32MatmulPrecision(Rule):
    """A CUDA training module runs float32 matmuls without allowing TF32.

    ## What it does
    Checks modules that train on CUDA and never call `torch.set_float32_matmul_precision(...)`
    nor assign an `allow_tf32` or `fp32_precision` backend setting. Reported at the first
    training loop.

    Test files are not checked.

    ## Why is this bad?
    On Ampere and newer GPUs, TF32 tensor cores run float32 matmuls and convolutions several
    times faster with a 10-bit mantissa, which training tolerates. PyTorch leaves TF32 off
    for matmuls by default, so float32 code does not use them unless asked.

    ## Example
    ```python
    model = Net().cuda()

    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    torch.set_float32_matmul_precision("high")
    model = Net().cuda()

    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Fix safety
    No fix: TF32 changes numerics; whether the model tolerates it is the author's call.

    ## References
    - PyTorch docs, [torch.set_float32_matmul_precision](https://pytorch.org/docs/stable/generated/torch.set_float32_matmul_precision.html)
    - PyTorch docs, [TensorFloat-32 on Ampere devices](https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices)
    """

    code = "TPL905"
    name = "float32-matmul-precision"
    message = "float32 matmuls on CUDA without TF32; call `torch.set_float32_matmul_precision(\"high\")`"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if not self.trains_on_cuda(facts):
            return
        if any(
            facts.names.call_name(call) == "torch.set_float32_matmul_precision" for call in facts.index.calls
        ):
            return
        if any(
            target.rsplit(".", 1)[-1] in ("allow_tf32", "fp32_precision")
            for _, target, _ in assigned_settings(facts)
        ):
            return
        yield self.finding(facts.loops.training_loops[0].node)


class DeterministicAlgorithmsEnabled(Rule):
    """`torch.use_deterministic_algorithms(True)` left on outside tests.

    ## What it does
    Checks for `torch.use_deterministic_algorithms(True)` outside test files and not under a
    flag (`if args.deterministic:`).

    ## Why is this bad?
    Deterministic mode makes PyTorch pick deterministic kernels, which are often slower
    (scatter/index_add fall back to serialised versions, cuDNN loses its fastest algorithms),
    and it raises for operations that have no deterministic implementation. It is the right
    tool while hunting a reproducibility bug; left on, every training run pays for it.

    ## Example
    ```python
    torch.use_deterministic_algorithms(True)
    ```

    ## Use instead
    ```python
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
    ```

    ## Fix safety
    No fix: whether bitwise reproducibility is required is the author's call. Fine while
    debugging, and in tests.

    ## References
    - PyTorch docs, [torch.use_deterministic_algorithms](https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html)
    - PyTorch docs, [Reproducibility](https://pytorch.org/docs/stable/notes/randomness.html)
    """

    code = "TPL908"
    name = "deterministic-algorithms-enabled"
    message = "`torch.use_deterministic_algorithms(True)` selects slower kernels; keep it behind a debug flag"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.index.calls:
            if facts.names.call_name(call) != "torch.use_deterministic_algorithms":
                continue
            if argument_value(call, "mode", ("mode",)) is True and not facts.guards.under_flag(call):
                yield self.finding(call)


# The size parameters of each layer that become a matmul or convolution dimension.
SIZE_PARAMETERS = {
    "torch.nn.Linear": ("in_features", "out_features"),
    **{
        f"torch.nn.{kind}{dims}d": ("in_channels", "out_channels")
        for kind in ("Conv", "ConvTranspose") for dims in (1, 2, 3)
    },
}
TENSOR_CORE_MULTIPLE = 8


class TensorCoreUnfriendlyDims(Rule):
    """A layer size that is not a multiple of 8 in a module that trains with AMP.

    ## What it does
    Checks, in modules that use autocast, for `nn.Linear` and `nn.Conv*` constructions whose
    literal feature or channel counts are not multiples of 8. Sizes below 8 (an RGB input,
    a scalar output) are not reported: they come from the data, and padding them buys little.
    Test files are not reported.

    ## Why is this bad?
    Tensor cores multiply float16/bfloat16 matrices in tiles whose dimensions are multiples of
    8; cuBLAS and cuDNN use them fully only when the matrix dimensions are multiples of 8, and
    otherwise pad internally or fall back to slower kernels. nanoGPT pads GPT-2's vocabulary
    from 50257 to 50304 (a multiple of 64) for a measurable speedup of the output layer.

    ## Example
    ```python
    lm_head = nn.Linear(768, 50257).cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = lm_head(hidden)
    ```

    ## Use instead
    ```python
    lm_head = nn.Linear(768, 50304).cuda()  # padded vocabulary; extra logits are never targets
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = lm_head(hidden)
    ```

    ## Fix safety
    No fix: the size is part of the model (and of its checkpoints); pad it where it is chosen.

    ## References
    - NVIDIA, [Tensor Core requirements](https://docs.nvidia.com/deeplearning/performance/mixed-precision-training/index.html#tensor-core-shape)
    - PyTorch Performance Tuning Guide, [Use mixed precision and AMP](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#use-mixed-precision-and-amp)
    """

    code = "TPL907"
    name = "tensor-core-unfriendly-dims"
    message = "Layer size {sizes} is not a multiple of 8; tensor cores under AMP need multiples of 8"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if not uses_autocast(facts):
            return
        for layer in layer_constructions(facts, frozenset(SIZE_PARAMETERS)):
            qualified = facts.names.call_name(layer) or ""
            sizes = [
                size
                for parameter in SIZE_PARAMETERS[qualified]
                if isinstance(size := argument_value(layer, parameter, SIGNATURES[qualified]), int)
                and not isinstance(size, bool)
                and size >= TENSOR_CORE_MULTIPLE
                and size % TENSOR_CORE_MULTIPLE
            ]
            if sizes:
                yield self.finding(layer, sizes=", ".join(map(str, sizes)))


class ChannelsLastNotUsed(Rule):
    """A CUDA AMP training module with 2-d convolutions keeps the default NCHW layout.

    ## What it does
    Checks modules that train on CUDA under autocast, construct `nn.Conv2d` layers, and
    mention neither `channels_last` nor `memory_format=` anywhere. Reported at the first
    `nn.Conv2d`. Modules with only `Conv1d` layers are not reported.

    Test files are not checked.

    ## Why is this bad?
    Tensor-core convolution kernels work on channels-last (NHWC) data. With the default
    contiguous (NCHW) layout, cuDNN transposes every activation to NHWC and back around each
    convolution; converting the model and the inputs once removes those copies, typically
    10-30% of a convolutional network's step time under AMP.

    ## Example
    ```python
    model = nn.Sequential(
        nn.Conv2d(3, 64, kernel_size=3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    ).cuda()

    for images, labels in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(model(images.cuda()), labels.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    model = nn.Sequential(
        nn.Conv2d(3, 64, kernel_size=3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    ).cuda().to(memory_format=torch.channels_last)

    for images, labels in loader:
        images = images.cuda().to(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(model(images), labels.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Fix safety
    No fix: every input must be converted too, and custom operators that call `.view()` on
    activations may need `.reshape()` or `.contiguous()`.

    ## References
    - PyTorch tutorial, [Channels last memory format](https://pytorch.org/tutorials/intermediate/memory_format_tutorial.html)
    - PyTorch Performance Tuning Guide, [Enable channels_last memory format for computer vision models](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#enable-channels-last-memory-format-for-computer-vision-models)
    """

    code = "TPL910"
    name = "channels-last-not-used"
    message = "Conv2d under AMP on CUDA in NCHW layout; convert model and inputs with `memory_format=torch.channels_last`"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        if not self.trains_on_cuda(facts) or not uses_autocast(facts):
            return
        if self._chooses_memory_format(facts):
            return
        first_convolution = next(layer_constructions(facts, frozenset({"torch.nn.Conv2d"})), None)
        if first_convolution is not None:
            yield self.finding(first_convolution)

    @staticmethod
    def _chooses_memory_format(facts: FileFacts) -> bool:
        if any(attribute.attr.value == "channels_last" for attribute in facts.index.attributes):
            return True
        if any(
            arg.keyword is not None and arg.keyword.value == "memory_format"
            for call in facts.index.calls for arg in call.args
        ):
            return True
        return any(string.evaluated_value == "channels_last" for string in facts.index.strings)


RULES = (
    CudnnBenchmarkNotEnabled,
    CudnnDeterministicEnabled,
    DataParallel,
    BatchSizeNotPowerOfTwo,
    Float32MatmulPrecision,
    ConvBiasBeforeBatchNorm,
    TensorCoreUnfriendlyDims,
    DeterministicAlgorithmsEnabled,
    LinearBiasBeforeBatchNorm,
    ChannelsLastNotUsed,
)
