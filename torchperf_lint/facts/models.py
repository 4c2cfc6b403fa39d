"""What a module does with its models beyond running them: the layers whose `.bias` it
reads, and the data-parallel wrappers it builds.

Both are answers about this module alone. A program spans modules (an init function in
`utils.py` reads the biases of layers built in `model.py`); the program layer widens these
answers with the other modules' (`BiasReads.union`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from torchperf_lint.facts.index import ScopeNode, SyntaxIndex, descendants
from torchperf_lint.facts.names import NameResolver, dotted_name, last_identifier
from torchperf_lint.facts.scopes import Scopes

# Wrappers that run one process per device and all-reduce gradients during backward.
_DISTRIBUTED_WRAPPERS = frozenset({"DistributedDataParallel", "FullyShardedDataParallel"})


# Calls that fetch a model's published weights.
_WEIGHT_DOWNLOADS = frozenset({
    "load_state_dict_from_url", "load_url", "hf_hub_download", "from_pretrained",
})


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
    def loads_released_weights(self) -> bool:
        """The module downloads published weights into its models
        (`load_state_dict_from_url(...)`, `hf_hub_download(...)`, `Model.from_pretrained(...)`),
        or its classes and functions take a `pretrained` switch: their layers' parameters are
        the checkpoints' keys."""
        if any(
            last_identifier(call.func) in _WEIGHT_DOWNLOADS for call in self.index.calls
        ):
            return True
        return any(
            param.name.value == "pretrained"
            for function in self.index.functions
            for param in (*function.params.params, *function.params.kwonly_params)
        )

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
