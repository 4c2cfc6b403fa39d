"""Mixed precision: every autocast call with its device, dtype and the code it covers, and
every gradient scaler construction.

An autocast call is found however it is spelled: `torch.autocast("cuda")`,
`torch.amp.autocast(device_type=...)`, `torch.cuda.amp.autocast()`, `amp.autocast()` after
`from torch.cuda import amp`, `autocast(dtype=torch.bfloat16)` after a from-import, and
`functools.partial(torch.autocast, ...)`. Its *regions* are the `with` statements that enter it
(directly, through a name bound to it such as `ctx = torch.autocast(...)`, or by calling a name
bound to the partial) and the functions it decorates.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from torchperf_lint.facts.arguments import (
    MISSING,
    SIGNATURES,
    UNKNOWN,
    argument_value,
    bound_argument,
    literal_value,
)
from torchperf_lint.facts.index import ScopeNode, SyntaxIndex
from torchperf_lint.facts.names import CANONICAL_NAMES, NameResolver
from torchperf_lint.facts.scopes import Scopes

AUTOCAST_NAMES = frozenset({"torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast"})
GRAD_SCALER_NAMES = frozenset({
    "torch.amp.GradScaler",
    "torch.cuda.amp.GradScaler",
    "torch.cpu.amp.GradScaler",
    "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
})
# The deprecated spellings fix their device; `torch.amp.autocast` takes it as an argument.
_FIXED_DEVICE = {"torch.cuda.amp.autocast": "cuda", "torch.cpu.amp.autocast": "cpu"}
_PARTIAL = "functools.partial"
_MAX_DEPTH = 3


class Precision(enum.Enum):
    """The low-precision dtype an autocast region computes in."""

    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    UNKNOWN = "unknown"  # not a literal, or different on different paths


_PRECISION_OF_DTYPE = {
    "torch.float16": Precision.FLOAT16,
    "torch.half": Precision.FLOAT16,
    "torch.bfloat16": Precision.BFLOAT16,
}
# What autocast computes in when no dtype is given (`torch.get_autocast_dtype`'s defaults).
_DEFAULT_PRECISION = {"cuda": Precision.FLOAT16, "cpu": Precision.BFLOAT16}

Region = Union[cst.With, cst.FunctionDef]


@dataclass(eq=False)
class AutocastCall:
    """One autocast call (or `partial(autocast, ...)`) and what is known about it."""

    node: cst.Call
    qualified_name: str  # torch.amp.autocast, torch.cuda.amp.autocast or torch.cpu.amp.autocast
    device_type: str | None  # "cuda", "cpu", ...; None when not a literal
    precision: Precision
    # False only for a literal `enabled=False`; None when `enabled=` is not a literal.
    enabled: bool | None
    regions: list[Region] = field(default_factory=list)

    @property
    def may_be_enabled(self) -> bool:
        return self.enabled is not False

    @property
    def is_float16(self) -> bool:
        """Known to compute in float16 whenever it is enabled (CUDA autocast's default)."""
        return self.precision is Precision.FLOAT16 and self.may_be_enabled

    @property
    def is_bfloat16(self) -> bool:
        return self.precision is Precision.BFLOAT16 and self.may_be_enabled


@dataclass(frozen=True)
class GradScalerConstruction:
    """One `GradScaler(...)` call."""

    node: cst.Call
    qualified_name: str
    # True when `enabled` is absent or literally True, False for a literal False, None otherwise.
    enabled: bool | None


class AutocastFacts:
    """Every autocast call and gradient scaler of a module, and which code runs under autocast."""

    def __init__(self, index: SyntaxIndex, scopes: Scopes, names: NameResolver) -> None:
        self.scopes = scopes
        self.names = names
        self.calls: list[AutocastCall] = []
        self._by_node: dict[cst.Call, AutocastCall] = {}
        self.scalers: list[GradScalerConstruction] = []
        for call in index.calls:
            self._add_call(call)
        self._regions: dict[Region, list[AutocastCall]] = {}
        for statement in index.withs:
            for item in statement.items:
                self._add_region(statement, self.autocasts_of(item.item))
        for function in index.functions:
            for decorator in function.decorators:
                self._add_region(function, self.autocasts_of(decorator.decorator))
        self.mentions_autocast = bool(self.calls) or any(
            names.qualified_name(attribute) in AUTOCAST_NAMES for attribute in index.attributes
        ) or any(CANONICAL_NAMES.get(target, target) in AUTOCAST_NAMES for target in names.aliases.values())

    def _add_call(self, call: cst.Call) -> None:
        name = self.names.call_name(call)
        if name in GRAD_SCALER_NAMES:
            enabled = argument_value(call, "enabled", SIGNATURES[name])
            self.scalers.append(
                GradScalerConstruction(call, name, True if enabled is MISSING else _bool_or_none(enabled))
            )
            return
        arguments: Sequence[cst.Arg] = call.args
        if name == _PARTIAL and call.args:
            name = self.names.qualified_name(call.args[0].value)
            arguments = call.args[1:]
        elif name is None:
            # `amp_ctx = torch.cuda.amp.autocast if amp else nullcontext`, then `amp_ctx()`.
            name = self._referenced_autocast(call.func)
        if name in AUTOCAST_NAMES:
            autocast = self._describe(call, name, arguments)
            self.calls.append(autocast)
            self._by_node[call] = autocast

    def _referenced_autocast(self, func: cst.BaseExpression) -> str | None:
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return None
        for value in self.scopes.bound_values(func):
            for branch in _branches(value):
                name = self.names.qualified_name(branch)
                if name in AUTOCAST_NAMES:
                    return name
        return None

    def _describe(self, call: cst.Call, name: str, arguments: Sequence[cst.Arg]) -> AutocastCall:
        signature = SIGNATURES[name]
        view = call.with_changes(args=arguments)
        device = _FIXED_DEVICE.get(name) or self._device_type(bound_argument(view, "device_type", signature))
        dtype = bound_argument(view, "dtype", signature)
        if dtype is UNKNOWN:
            precision = Precision.UNKNOWN
        elif dtype is None or literal_value(dtype.value) is None:
            precision = _DEFAULT_PRECISION.get(device or "", Precision.UNKNOWN)
        else:
            precision = self.precision_of(dtype.value)
        enabled = argument_value(view, "enabled", signature)
        return AutocastCall(
            call, name, device, precision, True if enabled is MISSING else _bool_or_none(enabled)
        )

    def _device_type(self, argument: object) -> str | None:
        if not isinstance(argument, cst.Arg):
            return None
        values = self._literal_values(argument.value)
        if len(values) == 1 and isinstance(value := next(iter(values)), str):
            return value.split(":")[0]
        return None

    def _literal_values(self, expression: cst.BaseExpression, depth: int = 0) -> set[object]:
        """Every literal `expression` may evaluate to; `UNKNOWN` among them when not all known."""
        if isinstance(expression, cst.IfExp):
            return self._literal_values(expression.body, depth + 1) | self._literal_values(
                expression.orelse, depth + 1
            )
        if isinstance(expression, (cst.Name, cst.Attribute)) and depth < _MAX_DEPTH:
            values = self.scopes.bound_values(expression)
            if values and self.names.qualified_name(expression) is None:
                return set().union(*(self._literal_values(v, depth + 1) for v in values))
        return {literal_value(expression)}

    def precision_of(self, dtype: cst.BaseExpression, depth: int = 0) -> Precision:
        """`torch.float16`/`torch.half`, `torch.bfloat16`, or a name or conditional of them."""
        known = _PRECISION_OF_DTYPE.get(self.names.qualified_name(dtype) or "")
        if known is not None:
            return known
        if depth >= _MAX_DEPTH:
            return Precision.UNKNOWN
        if isinstance(dtype, cst.IfExp):
            candidates = [dtype.body, dtype.orelse]
        elif isinstance(dtype, (cst.Name, cst.Attribute)):
            candidates = self.scopes.bound_values(dtype)
        else:
            return Precision.UNKNOWN
        found = {self.precision_of(candidate, depth + 1) for candidate in candidates}
        return found.pop() if len(found) == 1 else Precision.UNKNOWN

    def autocasts_of(self, expression: cst.BaseExpression, depth: int = 0) -> list[AutocastCall]:
        """The autocast calls a `with` item or decorator may enter: the call itself, a name
        bound to one, a call of a name bound to a `partial(autocast, ...)`, either branch of
        a conditional."""
        if isinstance(expression, cst.Call):
            if expression in self._by_node:
                return [self._by_node[expression]]
            expression = expression.func
        if depth >= _MAX_DEPTH:
            return []
        if isinstance(expression, cst.IfExp):
            return self.autocasts_of(expression.body, depth + 1) + self.autocasts_of(
                expression.orelse, depth + 1
            )
        if isinstance(expression, (cst.Name, cst.Attribute)):
            return [
                autocast
                for value in self.scopes.bound_values(expression)
                for autocast in self.autocasts_of(value, depth + 1)
            ]
        return []

    def _add_region(self, region: Region, autocasts: list[AutocastCall]) -> None:
        for autocast in autocasts:
            if region not in autocast.regions:
                autocast.regions.append(region)
                self._regions.setdefault(region, []).append(autocast)

    def call_of(self, call: cst.Call) -> AutocastCall | None:
        """The autocast call `call` is, if it is one."""
        return self._by_node.get(call)

    def around(self, node: cst.CSTNode) -> list[AutocastCall]:
        """Autocast calls whose regions run `node`: `with` statements around it in its own
        function, and decorators of that function."""
        found: list[AutocastCall] = []
        for parent in self.scopes.ancestors(node):
            if isinstance(parent, cst.With):
                found.extend(self._regions.get(parent, ()))
            elif isinstance(parent, cst.FunctionDef):
                found.extend(self._regions.get(parent, ()))
                break
            elif isinstance(parent, ScopeNode):
                break
        return found

    def inside(self, node: cst.CSTNode) -> list[AutocastCall]:
        """Autocast calls entered by a `with` statement inside `node`, in the same scope."""
        return [
            autocast
            for region, autocasts in self._regions.items()
            if isinstance(region, cst.With) and self.scopes.within_same_scope(region, node)
            for autocast in autocasts
        ]


def _branches(expression: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(expression, cst.IfExp):
        return [*_branches(expression.body), *_branches(expression.orelse)]
    return [expression]


def _bool_or_none(value: object) -> bool | None:
    return value if isinstance(value, bool) else None
