"""Qualified names through imports and aliases, with local definitions shadowing them.

`import torch as T` makes `T.optim.Adam` resolve to `torch.optim.Adam`;
`from torch.utils.data import DataLoader as DL` makes `DL` resolve to
`torch.utils.data.DataLoader`; a `class DataLoader:` in the file makes `DataLoader` resolve to
nothing at all, so no rule mistakes the user's class for PyTorch's.
"""

from __future__ import annotations

import builtins

import libcst as cst

from torchperf_lint.facts.index import SCOPE_TYPES, SyntaxIndex, nearest_ancestor

# PyTorch re-exports the same object under several paths; rules speak of the public one.
CANONICAL_NAMES = {
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.autograd.grad_mode.no_grad": "torch.no_grad",
    "torch.autograd.no_grad": "torch.no_grad",
    "torch.autograd.grad_mode.inference_mode": "torch.inference_mode",
    "torch.autograd.inference_mode": "torch.inference_mode",
    "torch.autograd.grad_mode.enable_grad": "torch.enable_grad",
    "torch.autograd.grad_mode.set_grad_enabled": "torch.set_grad_enabled",
    "torch.nn.parallel.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": (
        "torch.nn.parallel.DistributedDataParallel"
    ),
    "torch.amp.autocast_mode.autocast": "torch.amp.autocast",
    "torch.autocast": "torch.amp.autocast",
    "torch.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.cuda.amp.autocast_mode.autocast": "torch.cuda.amp.autocast",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.cuda.amp.GradScaler",
    "torch.cpu.amp.autocast_mode.autocast": "torch.cpu.amp.autocast",
    "torch.cpu.amp.grad_scaler.GradScaler": "torch.cpu.amp.GradScaler",
    "torch.GradScaler": "torch.amp.GradScaler",
    "torch.cuda.amp.autocast_mode.custom_fwd": "torch.cuda.amp.custom_fwd",
    "torch.cuda.amp.autocast_mode.custom_bwd": "torch.cuda.amp.custom_bwd",
    "torch.utils.checkpoint.checkpoint_sequential": "torch.utils.checkpoint.checkpoint_sequential",
}

_BUILTINS = frozenset(dir(builtins))
_UNRESOLVED = object()  # not resolved yet (None is an answer: cannot be known)


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    # Asked of most expressions: by type (see `index.SCOPE_TYPES`).
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def last_identifier(node: cst.BaseExpression) -> str | None:
    """`c` for `a.b.c` or `c`; the name a reader would call the thing by."""
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    return None


def target_names(target: cst.BaseExpression) -> set[str]:
    """The plain names an assignment or `for` target binds: `x`, `(i, (x, y))`, `[a, *rest]`."""
    if type(target) is cst.Name:
        return {target.value}
    if type(target) is cst.Tuple or type(target) is cst.List:
        return {name for element in target.elements for name in target_names(element.value)}
    return set()


def alias_binding(alias: cst.ImportAlias, from_import: bool) -> tuple[str, str] | None:
    """(the name bound, what it names) for one alias of an import: `import a.b as c` binds
    `c` to `a.b`, `import a.b` binds `a` to `a`, `from m import x as y` binds `y` to `x`
    (which the caller qualifies with `m`)."""
    imported = dotted_name(alias.name)
    if imported is None:
        return None
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value, imported
    if from_import:
        return imported, imported
    top = imported.split(".")[0]
    return top, top


def root_name(expression: cst.BaseExpression) -> str | None:
    """`batch` for `batch`, `batch[0]`, `batch["x"]`, `batch.x` and `batch.x[0]`."""
    while isinstance(expression, (cst.Attribute, cst.Subscript)):
        expression = expression.value
    return expression.value if isinstance(expression, cst.Name) else None


class NameResolver:
    """Maps expressions to fully qualified names using the module's imports."""

    def __init__(self, index: SyntaxIndex) -> None:
        self.parents = index.parents
        self._scopes: dict[cst.CSTNode, cst.CSTNode | None] = {}
        self._resolved: dict[cst.BaseExpression, str | None] = {}
        # Every name an import or a PyTorch alias binds anywhere in the file (first wins).
        self.aliases: dict[str, str] = {}
        # Plain aliases of PyTorch names (`DL = torch.utils.data.DataLoader`).
        self._assigned_aliases: dict[str, str] = {}
        # name -> the scopes (a def or class node, None for the module) that define it locally.
        self.local_definitions: dict[str, set[cst.CSTNode | None]] = {}
        # scope (a def or class node, None for the module) -> what its own imports bind.
        self._imports_by_scope: dict[cst.CSTNode | None, dict[str, str]] = {}
        for statement in index.imports:
            self._add_import(statement)
            self._add_import(statement, self._imports_by_scope.setdefault(self._scope_of(statement), {}))
        # name -> what a module-level import binds it to, for fixes that must name a module.
        self.module_level_imports: dict[str, str] = self._imports_by_scope.get(None, {})
        # `from helper import *` of a module that is not PyTorch's, in a file that binds no
        # `torch` itself: it may bring `torch` (a notebook's `from tutorial_utils import *`,
        # whose module imports it).
        self._star_imports_torch = "torch" not in self.aliases and any(
            isinstance(statement, cst.ImportFrom)
            and isinstance(statement.names, cst.ImportStar)
            and not (dotted_name(statement.module) or "").startswith("torch")
            for statement in index.imports
        )
        for definition in (*index.functions, *index.classes):
            self._define(definition.name.value, self._scope_of(definition))
        # An assignment to an imported name shadows it too (`DataLoader = MyLoader`), unless
        # it is a plain alias of another PyTorch name (`DL = torch.utils.data.DataLoader`).
        for assignment in index.assigns:
            if isinstance(assignment, cst.Assign):
                for target in assignment.targets:
                    if isinstance(target.target, cst.Name):
                        self._bind(target.target, assignment.value)
                        if target.target.value == "torch":
                            self._star_imports_torch = False

    def _scope_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return nearest_ancestor(self.parents, self._scopes, node, SCOPE_TYPES)

    def _define(self, name: str, scope: cst.CSTNode | None) -> None:
        self.local_definitions.setdefault(name, set()).add(scope)

    def _bind(self, target: cst.Name, value: cst.BaseExpression) -> None:
        aliased = self._resolve(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
        if aliased is not None and aliased.startswith("torch"):
            self.aliases.setdefault(target.value, aliased)
            self._assigned_aliases.setdefault(target.value, aliased)
        elif target.value in self.aliases:
            self._define(target.value, self._scope_of(target))

    def _is_shadowed(self, node: cst.Name) -> bool:
        scopes = self.local_definitions.get(node.value)
        if not scopes:
            return False
        if None in scopes:
            return True
        parent = self.parents.get(node)
        while parent is not None:
            if parent in scopes:
                return True
            parent = self.parents.get(parent)
        return False

    def _add_import(
        self, statement: cst.Import | cst.ImportFrom, aliases: dict[str, str] | None = None
    ) -> None:
        if aliases is None:
            aliases = self.aliases
        if isinstance(statement.names, cst.ImportStar):
            return
        if isinstance(statement, cst.Import):
            for alias in statement.names:
                binding = alias_binding(alias, from_import=False)
                if binding is not None:
                    aliases.setdefault(*binding)
            return
        if statement.relative or statement.module is None:
            return
        module = dotted_name(statement.module)
        if module is None:
            return
        for alias in statement.names:
            binding = alias_binding(alias, from_import=True)
            if binding is not None:
                bound, imported = binding
                aliases.setdefault(bound, f"{module}.{imported}")

    def _imported_as(self, node: cst.Name) -> str | None:
        """What the import that binds `node` in its scope imported: the innermost enclosing
        function or class that imports the name itself, else the module. An import inside one
        function binds nothing in another."""
        scope = self._scope_of(node)
        while True:
            imported = self._imports_by_scope.get(scope, {})
            if node.value in imported:
                return imported[node.value]
            if scope is None:
                return self._assigned_aliases.get(node.value)
            scope = self._scope_of(scope)

    def import_scope(self, node: cst.Name) -> cst.CSTNode | None:
        """The scope (a def or class node, None for the module) whose import `node` reads,
        when an import binds it (see `_imported_as`)."""
        scope = self._scope_of(node)
        while scope is not None and node.value not in self._imports_by_scope.get(scope, {}):
            scope = self._scope_of(scope)
        return scope

    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        """The canonical dotted name `node` refers to, or None when it cannot be known."""
        # Every rule asks about the same calls: each node is resolved once.
        resolved = self._resolved.get(node, _UNRESOLVED)
        if resolved is _UNRESOLVED:
            resolved = self._resolved[node] = self._resolve(node)
        return resolved

    def _resolve(self, node: cst.BaseExpression) -> str | None:
        if type(node) is cst.Name:
            name = node.value
            if self._is_shadowed(node):
                return None
            target = self._imported_as(node)
            if target is not None:
                return CANONICAL_NAMES.get(target, target)
            if name in _BUILTINS:
                return f"builtins.{name}"
            if name == "torch" and self._star_imports_torch:
                return "torch"
            return None
        if type(node) is cst.Attribute:
            base = self._resolve(node.value)
            if base is None or base.startswith("builtins."):
                return None
            full = f"{base}.{node.attr.value}"
            return CANONICAL_NAMES.get(full, full)
        return None

    def module_level_name(self, qualified: str) -> str | None:
        """A name a module-level import binds to `qualified` and nothing in the file rebinds
        (`T` after `import torch as T`), for fixes that must spell a PyTorch name; else None."""
        # The name as PyTorch spells it (`torch`, `AdamW`) first, then any alias.
        spelt_as_pytorch = qualified.rsplit(".", 1)[-1]
        for name, target in sorted(
            self.module_level_imports.items(), key=lambda item: (item[0] != spelt_as_pytorch, item[0])
        ):
            if target == qualified and self.aliases.get(name) == qualified and (
                name not in self.local_definitions
            ):
                return name
        return None

    def call_name(self, call: cst.Call) -> str | None:
        """The qualified name of the callee of `call`."""
        return self.qualified_name(call.func)

    def isinstance_test(self, test: cst.BaseExpression) -> tuple[str, cst.BaseExpression] | None:
        """The dotted name `isinstance(name, cls)` tests, and `cls`; None for another test."""
        if not (
            isinstance(test, cst.Call)
            and self.call_name(test) == "builtins.isinstance"
            and len(test.args) == 2
        ):
            return None
        name = dotted_name(test.args[0].value)
        return None if name is None else (name, test.args[1].value)
