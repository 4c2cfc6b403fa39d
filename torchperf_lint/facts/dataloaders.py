"""`DataLoader(...)` constructions, what they are bound to, and the loops that iterate them."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchperf_lint.facts.arguments import (
    MISSING,
    SIGNATURES,
    UNKNOWN,
    argument_value,
    bound_argument,
)
from torchperf_lint.facts.index import SyntaxIndex
from torchperf_lint.facts.loops import LoopNode, iterated_expression
from torchperf_lint.facts.names import NameResolver, dotted_name, last_identifier
from torchperf_lint.facts.scopes import Scopes

DATALOADER = "torch.utils.data.DataLoader"
DATALOADER_SIGNATURE = SIGNATURES[DATALOADER]


@dataclass(frozen=True)
class DataLoaderConstruction:
    """One `DataLoader(...)` call."""

    call: cst.Call

    def value(self, parameter: str) -> object:
        """The literal passed for `parameter`, `MISSING`, or `UNKNOWN` (non-literal/`**kw`)."""
        return argument_value(self.call, parameter, DATALOADER_SIGNATURE)

    def argument(self, parameter: str) -> cst.Arg | None:
        arg = bound_argument(self.call, parameter, DATALOADER_SIGNATURE)
        return arg if isinstance(arg, cst.Arg) else None

    @property
    def pins_memory(self) -> bool:
        return self.value("pin_memory") is True

    @property
    def has_custom_collate(self) -> bool:
        collate = self.value("collate_fn")
        return collate is not MISSING and collate is not None


class DataLoaders:
    """Every DataLoader construction of the module, and which loop iterates which."""

    def __init__(self, index: SyntaxIndex, scopes: Scopes, names: NameResolver) -> None:
        self.scopes = scopes
        self.constructions = [
            DataLoaderConstruction(call)
            for call in index.calls
            if names.call_name(call) == DATALOADER
        ]
        self._by_call = {c.call: c for c in self.constructions}

    def construction(self, expression: cst.BaseExpression) -> DataLoaderConstruction | None:
        """The DataLoader construction `expression` evaluates to, when it can be known."""
        if isinstance(expression, cst.Call):
            return self._by_call.get(expression)
        for value in self.scopes.bound_values(expression):
            if isinstance(value, cst.Call) and value in self._by_call:
                return self._by_call[value]
        return None

    def loader_of(self, loop: LoopNode) -> DataLoaderConstruction | None:
        """The construction a loop iterates (`for x in loader`, `enumerate(loader)`)."""
        iterated = iterated_expression(loop)
        return None if iterated is None else self.construction(iterated)

    def iterates_a_loader(self, loop: LoopNode) -> bool:
        """Iterates a known construction, or a name that says it is one (`train_loader`)."""
        iterated = iterated_expression(loop)
        if iterated is None:
            return False
        if self.construction(iterated) is not None:
            return True
        # A loader passed in as a parameter or attribute: `for x in train_loader`.
        identifier = last_identifier(iterated) or ""
        return "loader" in identifier.lower() and dotted_name(iterated) is not None


__all__ = ["DATALOADER", "MISSING", "UNKNOWN", "DataLoaderConstruction", "DataLoaders"]
