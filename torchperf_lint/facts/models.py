"""What a module does with its models beyond running them: the layers whose `.bias` it
reads, and the data-parallel wrappers it builds.

Both are answers about this module alone. A program spans modules (an init function in
`utils.py` reads the biases of layers built in `model.py`); the program layer widens these
answers with the other modules' (`BiasReads.union`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from torchperf_lint.facts.arguments import literal_value
from torchperf_lint.facts.index import ScopeNode, SyntaxIndex, descendants
from torchperf_lint.facts.names import NameResolver, dotted_name, last_identifier
from torchperf_lint.facts.scopes import Scopes

# Wrappers that run one process per device and all-reduce gradients during backward.
_DISTRIBUTED_WRAPPERS = frozenset({"DistributedDataParallel", "FullyShardedDataParallel"})


# Methods that return the module they are called on: `model.eval().requires_grad_(False)`
# freezes `model`.
_SELF_RETURNING_METHODS = frozenset({
    "eval", "train", "to", "cuda", "cpu", "float", "half", "bfloat16", "requires_grad_",
})


# Calls that fetch a model's published weights.
_WEIGHT_DOWNLOADS = frozenset({
    "load_state_dict_from_url", "load_url", "hf_hub_download", "from_pretrained",
})


# Calls that download a file, by qualified name: a module that loads a checkpoint it
# downloads with one of these into a model it builds loads published weights.
_FILE_DOWNLOADS = frozenset({
    "requests.get", "urllib.request.urlretrieve", "urllib.request.urlopen",
    "torch.hub.download_url_to_file", "torch.utils.model_zoo.load_url",
    "torchvision.datasets.utils.download_url", "torchvision.datasets.utils.download_file_from_google_drive",
    "huggingface_hub.snapshot_download", "modelscope.hub.snapshot_download.snapshot_download",
    "modelscope.snapshot_download", "wget.download", "gdown.download", "gdown.cached_download",
})
# The same, by the callee's last identifier when the import is not resolved (a vendored
# copy, a `try` import): names that only download.
_FILE_DOWNLOAD_NAMES = frozenset({"urlretrieve", "download_url_to_file", "download_file_from_google_drive"})
# Reads of a state dict out of a loaded checkpoint: `checkpoint.get("model")`.
_CHECKPOINT_READS = frozenset({"get", "pop"})
# Calls that locate a file shipped inside a package.
_PACKAGE_RESOURCES = frozenset({"resource_filename", "resource_stream", "files", "as_file"})


@dataclass(frozen=True)
class BiasReads:
    """Which layers have their `.bias` read where nothing checks that there is one.

    `layers`: constructions whose bias is read through the name they are bound to
    (`self.fc.bias`); `kinds`: class-name fragments of layers read by type (`"Conv"` for
    `isinstance(m, nn.Conv2d)` or `m.__class__.__name__.find("Conv") != -1`, `"Conv"` also for
    the base `_ConvNd`); `any_layer`: a read of a layer of unknown type (`model.fc.bias`).
    """

    layers: frozenset[cst.Call] = frozenset()
    kinds: frozenset[str] = frozenset()
    any_layer: bool = False

    def covers(self, layer: cst.Call, class_name: str) -> bool:
        """Whether the bias of `layer`, an instance of `class_name` (`Conv2d`), is read."""
        return (
            self.any_layer
            or layer in self.layers
            or any(kind in class_name for kind in self.kinds)
        )

    def union(self, other: BiasReads) -> BiasReads:
        return BiasReads(
            self.layers | other.layers, self.kinds | other.kinds, self.any_layer or other.any_layer
        )


class ModelUse:
    """Reads of layer biases and data-parallel wrappers, for one module."""

    def __init__(self, index: SyntaxIndex, scopes: Scopes, names: NameResolver) -> None:
        self.index = index
        self.scopes = scopes
        self.names = names

    @cached_property
    def builds_distributed_wrapper(self) -> bool:
        """Whether the module wraps a model in `DistributedDataParallel` (PyTorch's or
        another library's) or `FullyShardedDataParallel`."""
        for call in self.index.calls:
            name = self.names.call_name(call) or last_identifier(call.func) or ""
            if name.rsplit(".", 1)[-1] in _DISTRIBUTED_WRAPPERS:
                return True
        return False

    @cached_property
    def frozen(self) -> frozenset[str]:
        """The models the module freezes: `model.requires_grad_(False)` (also down a chain,
        `model.eval().requires_grad_(False).to(device)`), or `p.requires_grad = False` in a loop
        over `model.parameters()`. No parameter of theirs records a graph."""
        frozen: set[str | None] = set()
        for call in self.index.calls:
            func = call.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "requires_grad_"
                and call.args
                and literal_value(call.args[0].value) is False
            ):
                frozen.add(dotted_name(_chain_root(func.value)))
        for assignment in self.index.assigns:
            if not (isinstance(assignment, cst.Assign) and literal_value(assignment.value) is False):
                continue
            if not any(
                isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad"
                for t in assignment.targets
            ):
                continue
            for loop in self.scopes.ancestors(assignment):
                iterated = loop.iter if isinstance(loop, cst.For) else None
                if (
                    isinstance(iterated, cst.Call)
                    and isinstance(iterated.func, cst.Attribute)
                    and iterated.func.attr.value in ("parameters", "named_parameters")
                ):
                    frozen.add(dotted_name(iterated.func.value))
        frozen.discard(None)
        return frozenset(frozen)

    @cached_property
    def loads_released_weights(self) -> bool:
        """The module downloads published weights into its models
        (`load_state_dict_from_url(...)`, `hf_hub_download(...)`, `Model.from_pretrained(...)`),
        or its classes and functions take a `pretrained` switch, or it loads a published
        checkpoint (downloaded or shipped with the package) into a model it builds
        (`_loads_published_checkpoint`): their layers' parameters are the checkpoints' keys."""
        if any(
            last_identifier(call.func) in _WEIGHT_DOWNLOADS for call in self.index.calls
        ):
            return True
        if any(
            param.name.value == "pretrained"
            for function in self.index.functions
            for param in (*function.params.params, *function.params.kwonly_params)
        ):
            return True
        return any(self._loads_published_checkpoint(call) for call in self.index.calls)

    def _loads_published_checkpoint(self, call: cst.Call) -> bool:
        """`model.load_state_dict(checkpoint["model"])` (strict, the default) on a model the
        module builds (`model = Net(args)`, or `self` in one of its classes), with a state
        dict read from `torch.load(path)` of a published file: one the loading function
        downloads, itself or through the module's functions it calls (`requests.get(url)`,
        `urlretrieve`, `download_url_to_file`), or one shipped with the package (a path
        built from `__file__` or a package resource, or from a URL literal)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "load_state_dict":
            return False
        if not call.args or self._not_strict(call) or not self._built_model(func.value):
            return False
        state = next((arg.value for arg in call.args if arg.keyword is None
                      or arg.keyword.value == "state_dict"), None)
        if state is None:
            return False
        return any(
            self._published_file(load, call) for load in self._checkpoint_loads(state, depth=4)
        )

    @cached_property
    def checkpoint_architectures(self) -> frozenset[cst.ClassDef]:
        """The classes whose parameter names are the format of checkpoints that users load:
        a class a registry builds by name from configs (`@MODELS.register_module()`,
        `@BACKBONE_REGISTRY.register()`: a model zoo's), and a class a method of which strictly
        loads into `self` a state dict read from a file (`def load_checkpoint(self, path):
        state = load_fsspec(path); self.load_state_dict(state["model"])`), an API for its own
        checkpoints."""
        found = {cls for cls in self.index.classes if any(map(_registers, cls.decorators))}
        for call in self.index.calls:
            func = call.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "load_state_dict"
                and isinstance(func.value, cst.Name)
                and func.value.value == "self"
                and call.args
                and not self._not_strict(call)
                and self._checkpoint_loads(call.args[0].value, depth=4, loads=self._reads_a_file)
            ):
                cls = self.scopes.enclosing_class(call)
                if cls is not None:
                    found.add(cls)
        return frozenset(found)

    def _reads_a_file(self, call: cst.Call) -> bool:
        """`torch.load(path)`, or a call whose name says it loads (`load_fsspec(path)`,
        `safetensors.torch.load_file(path)`)."""
        return self._is_torch_load(call) or (last_identifier(call.func) or "").startswith("load")

    def _not_strict(self, call: cst.Call) -> bool:
        """`strict=False` (or a second positional `False`): a partial load, a fine-tuning
        start, not the checkpoint's own architecture."""
        for position, arg in enumerate(call.args):
            if (arg.keyword is not None and arg.keyword.value == "strict") or (
                arg.keyword is None and position == 1
            ):
                return not (isinstance(arg.value, cst.Name) and arg.value.value == "True")
        return False

    def _built_model(self, receiver: cst.BaseExpression) -> bool:
        """A model the module builds: one of its classes' `self`, or a name (`self.net`)
        bound to a call (a construction or a builder), not to a parameter."""
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            return self.scopes.enclosing_class(receiver) is not None
        return any(
            isinstance(value, cst.Call) and not self._is_torch_load(value)
            for value in self.scopes.bound_values(receiver)
        )

    def _is_torch_load(self, call: cst.Call) -> bool:
        return self.names.call_name(call) == "torch.load"

    def _checkpoint_loads(
        self,
        state: cst.BaseExpression,
        depth: int,
        loads: Callable[[cst.Call], bool] | None = None,
    ) -> list[cst.Call]:
        """The `torch.load(...)` calls (or those `loads` accepts) that `state` reads: the call
        itself, a key of its result (`checkpoint["model_state_dict"]`,
        `checkpoint.get("model")`), through the names they are bound to."""
        loads = loads or self._is_torch_load
        if depth == 0:
            return []
        if isinstance(state, cst.Call):
            func = state.func
            if isinstance(func, cst.Attribute) and func.attr.value in _CHECKPOINT_READS:
                return self._checkpoint_loads(func.value, depth - 1, loads)
            return [state] if loads(state) else []
        if isinstance(state, cst.Subscript):
            return self._checkpoint_loads(state.value, depth - 1, loads)
        return [
            load
            for value in self.scopes.bound_values(state)
            for load in self._checkpoint_loads(value, depth - 1, loads)
        ]

    def _published_file(self, load: cst.Call, call: cst.Call) -> bool:
        if load.args and self._bundled_path(load.args[0].value, depth=4):
            return True
        functions = {self.scopes.enclosing_function(load), self.scopes.enclosing_function(call)}
        return any(self._reaches_download(function) for function in functions)

    def _bundled_path(self, path: cst.BaseExpression, depth: int) -> bool:
        """A path built from `__file__`, a package resource (`importlib.resources.files`,
        `pkg_resources.resource_filename`) or a URL literal."""
        for node in (path, *descendants(path)):
            if isinstance(node, cst.Name) and node.value == "__file__":
                return True
            if isinstance(node, cst.SimpleString) and str(node.evaluated_value).startswith(
                ("http://", "https://")
            ):
                return True
            if isinstance(node, cst.Call) and last_identifier(node.func) in _PACKAGE_RESOURCES:
                qualified = self.names.call_name(node) or ""
                if qualified.startswith(("importlib.resources", "pkg_resources", "importlib_resources")):
                    return True
            if depth > 1 and isinstance(node, (cst.Name, cst.Attribute)) and any(
                self._bundled_path(value, depth - 1) for value in self.scopes.bound_values(node)
            ):
                return True
        return False

    def _reaches_download(self, function: cst.FunctionDef | None) -> bool:
        """Whether `function` (None: the module's own code) downloads a file, itself or
        through the module's functions and its class's methods it calls."""
        pending = [function]
        seen: set[cst.FunctionDef | None] = set()
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            for call in self._calls_by_function.get(current, ()):
                qualified = self.names.call_name(call) or ""
                if qualified in _FILE_DOWNLOADS or last_identifier(call.func) in _FILE_DOWNLOAD_NAMES:
                    return True
                pending.extend(self.scopes.functions_called(call, current))
        return False

    @cached_property
    def _calls_by_function(self) -> dict[cst.FunctionDef | None, list[cst.Call]]:
        calls: dict[cst.FunctionDef | None, list[cst.Call]] = {}
        for call in self.index.calls:
            calls.setdefault(self.scopes.enclosing_function(call), []).append(call)
        return calls

    @cached_property
    def bias_reads(self) -> BiasReads:
        """Reads of `<layer>.bias` (`m.bias.data.zero_()`, `nn.init.zeros_(self.fc.bias)`)
        outside any condition that tests for a bias (`if m.bias is not None:`,
        `hasattr(m, "bias")`). A layer built with `bias=False` has `None` there, so such a
        read raises. Writes (`m.bias = ...`) and a module's own `self.bias` are not reads."""
        layers: set[cst.Call] = set()
        kinds: set[str] = set()
        any_layer = False
        for attribute in self.index.attributes:
            if attribute.attr.value != "bias" or self._is_written(attribute):
                continue
            receiver = attribute.value
            if dotted_name(receiver) == "self" or self._tested_for_bias(attribute):
                continue
            if self._tests_presence(attribute):
                continue
            bound = [v for v in self.scopes.bound_values(receiver) if isinstance(v, cst.Call)]
            if bound:
                layers.update(bound)
                continue
            tested = self._tested_kinds(attribute, receiver)
            if tested:
                kinds.update(tested)
            else:
                any_layer = True
        return BiasReads(frozenset(layers), frozenset(kinds), any_layer)

    def _is_written(self, attribute: cst.Attribute) -> bool:
        parent = self.index.parents.get(attribute)
        if isinstance(parent, (cst.AssignTarget, cst.Del)):
            return True
        return isinstance(parent, (cst.AnnAssign, cst.AugAssign)) and parent.target is attribute

    def _tests_presence(self, attribute: cst.Attribute) -> bool:
        """`m.bias is not None`, `if m.bias:`, `not m.bias`: asking whether there is a bias."""
        parent = self.index.parents.get(attribute)
        if isinstance(parent, cst.Comparison):
            return all(
                isinstance(c.operator, (cst.Is, cst.IsNot)) for c in parent.comparisons
            )
        if isinstance(parent, (cst.If, cst.IfExp, cst.While)):
            return parent.test is attribute
        if isinstance(parent, cst.UnaryOperation):
            return isinstance(parent.operator, cst.Not)
        return isinstance(parent, cst.BooleanOperation)

    def _conditions(self, node: cst.CSTNode) -> list[cst.BaseExpression]:
        """The tests of the `if`s and conditional expressions around `node`, in its function."""
        tests = []
        for parent, child in self.scopes.ancestors_with_child(node):
            if isinstance(parent, ScopeNode):
                break
            if isinstance(parent, (cst.If, cst.IfExp)) and child is not parent.test:
                tests.append(parent.test)
            if isinstance(parent, cst.BooleanOperation) and child is parent.right:
                tests.append(parent.left)  # `m.bias is not None and m.bias.sum()`
        return tests

    def _tested_for_bias(self, attribute: cst.Attribute) -> bool:
        return any(_mentions_bias(test) for test in self._conditions(attribute))

    def _tested_kinds(self, attribute: cst.Attribute, receiver: cst.BaseExpression) -> set[str]:
        """Class-name fragments the conditions around `attribute` test `receiver` against:
        `isinstance(m, (nn.Conv2d, nn.Linear))`, `classname.find("Conv") != -1`."""
        kinds: set[str] = set()
        target = dotted_name(receiver)
        for test in self._conditions(attribute):
            for node in (test, *descendants(test)):
                if (
                    isinstance(node, cst.Call)
                    and self.names.call_name(node) == "builtins.isinstance"
                    and len(node.args) == 2
                    and dotted_name(node.args[0].value) == target
                ):
                    types = node.args[1].value
                    elements = (
                        [e.value for e in types.elements]
                        if isinstance(types, (cst.Tuple, cst.List))
                        else [types]
                    )
                    kinds.update(_class_fragment(last_identifier(e) or "") for e in elements)
                elif isinstance(node, cst.SimpleString) and _names_a_class(node.evaluated_value):
                    kinds.add(node.evaluated_value)
        kinds.discard("")
        return kinds


def _mentions_bias(test: cst.BaseExpression) -> bool:
    """`m.bias is not None`, `hasattr(m, "bias")`, `getattr(m, "bias", None) is not None`."""
    for node in (test, *descendants(test)):
        if isinstance(node, cst.Attribute) and node.attr.value == "bias":
            return True
        if isinstance(node, cst.SimpleString) and node.evaluated_value == "bias":
            return True
    return False


def _names_a_class(value: object) -> bool:
    """`"Conv"`, `"BatchNorm"`: a string compared with a class name, not a mode or a key."""
    return isinstance(value, str) and value.isidentifier() and value[:1].isupper() and len(value) >= 4


def _class_fragment(name: str) -> str:
    """`Conv2d` for `Conv2d`, `Conv` for the base `_ConvNd`."""
    return name.lstrip("_").removesuffix("Nd")


def _registers(decorator: cst.Decorator) -> bool:
    """`@MODELS.register_module()`, `@register_model`, `@BACKBONE_REGISTRY.register()`: a
    registry that builds the class by the name a config gives."""
    expression = decorator.decorator
    if isinstance(expression, cst.Call):
        expression = expression.func
    return (last_identifier(expression) or "").startswith("register")


def _chain_root(expression: cst.BaseExpression) -> cst.BaseExpression:
    """`model` for `model.eval().to(device)`: the receiver of a chain of calls that each
    return the module they are called on."""
    while (
        isinstance(expression, cst.Call)
        and isinstance(expression.func, cst.Attribute)
        and expression.func.attr.value in _SELF_RETURNING_METHODS
    ):
        expression = expression.func.value
    return expression
