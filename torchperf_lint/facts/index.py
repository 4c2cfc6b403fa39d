"""The single traversal of a module: parents and the nodes every analysis starts from."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from functools import cached_property

import libcst as cst

Loop = (cst.For, cst.While)
Comprehension = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
ScopeNode = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
# The same as sets, for `type(node) in ...`: LibCST's concrete node classes have no subclasses,
# so that answers as `isinstance` does, without the ABC machinery `isinstance` goes through on
# every miss (CSTNode is an ABC; a miss costs several times a type test). The walks that test
# every node, or every ancestor of many nodes, test by type: linting a 1,000-line training
# file made 250,000 such misses.
SCOPE_TYPES = frozenset(ScopeNode)
LOOP_TYPES = frozenset(Loop)
COMPREHENSION_TYPES = frozenset(Comprehension)


@dataclass
class SyntaxIndex:
    """Every node the analyses and rules look at, found in one visit, in source order.

    `parents` maps each node to its parent and is filled in pre-order (source order), which
    analyses that order nodes by execution rely on.
    """

    parents: dict[cst.CSTNode, cst.CSTNode] = field(default_factory=dict)
    # The `id` of each node inside a `def` to the innermost `def` around it (nodes at module
    # level, and the module, are not keys). By `id`: a node hashes in Python code, an `int`
    # does not, and most nodes are keys.
    function_of: dict[int, cst.FunctionDef] = field(default_factory=dict)
    calls: list[cst.Call] = field(default_factory=list)
    loops: list[cst.For | cst.While] = field(default_factory=list)
    functions: list[cst.FunctionDef] = field(default_factory=list)
    classes: list[cst.ClassDef] = field(default_factory=list)
    assigns: list[cst.Assign | cst.AnnAssign | cst.AugAssign] = field(default_factory=list)
    withs: list[cst.With] = field(default_factory=list)
    imports: list[cst.Import | cst.ImportFrom] = field(default_factory=list)
    attributes: list[cst.Attribute] = field(default_factory=list)
    subscripts: list[cst.Subscript] = field(default_factory=list)
    binary_operations: list[cst.BinaryOperation] = field(default_factory=list)
    strings: list[cst.SimpleString] = field(default_factory=list)
    names: list[cst.Name] = field(default_factory=list)
    returns: list[cst.Return] = field(default_factory=list)
    formatted_strings: list[cst.FormattedString] = field(default_factory=list)
    # Nodes with a test: `if`/`elif`, `while`, conditional expressions and `assert`.
    conditions: list[cst.If | cst.While | cst.IfExp | cst.Assert] = field(default_factory=list)
    # Nodes that bind names: assignment targets, augmented and annotated assignments, `for`
    # loops, walruses and `as` names.
    binders: list[
        cst.AssignTarget | cst.AugAssign | cst.AnnAssign | cst.For | cst.NamedExpr | cst.AsName
    ] = field(default_factory=list)
    # Per list of nodes above (by identity), the pre-order position of each of its nodes.
    _positions: dict[int, list[int]] = field(default_factory=dict, repr=False)

    @cached_property
    def preorder(self) -> dict[cst.CSTNode, int]:
        """The position of each node (the module's own aside) in source order."""
        return {node: position for position, node in enumerate(self.parents)}

    @cached_property
    def subtree_end(self) -> dict[cst.CSTNode, int]:
        """The pre-order position of the last node of each node's subtree."""
        nodes = list(self.parents)
        ends = list(range(len(nodes)))
        # The positions of the nodes from a top-level statement down to the node being read: a
        # node's subtree ends before the first node whose parent is not in it. Nodes are
        # compared by identity (hashing one is a Python call).
        path: list[int] = []
        for position, parent in enumerate(self.parents.values()):
            while path and nodes[path[-1]] is not parent:
                ends[path.pop()] = position - 1
            path.append(position)
        for open_position in path:
            ends[open_position] = len(nodes) - 1
        return dict(zip(nodes, ends))

    def contains(self, ancestor: cst.CSTNode, node: cst.CSTNode) -> bool:
        """Whether `node` is `ancestor` or in its subtree (a run of the pre-order)."""
        return self.preorder[ancestor] <= self.preorder[node] <= self.subtree_end[ancestor]

    def inside(self, nodes: list[cst.CSTNode], ancestor: cst.CSTNode) -> list[cst.CSTNode]:
        """The nodes of `nodes`, one of this index's lists, below `ancestor`, in source order.

        A subtree is a run of the pre-order, so they are found by bisection: analyses that ask
        which calls of the module a loop holds, for every loop, do not scan every call."""
        start = self.preorder.get(ancestor)
        if start is None:
            return list(nodes)  # the module
        positions = self._positions.get(id(nodes))
        if positions is None:
            positions = self._positions[id(nodes)] = [self.preorder[node] for node in nodes]
        first = bisect_right(positions, start)
        return nodes[first:bisect_right(positions, self.subtree_end[ancestor], first)]


# The buckets each node type goes into.
_BUCKETS: dict[type, tuple[str, ...]] = {
    cst.Call: ("calls",),
    cst.For: ("loops", "binders"),
    cst.While: ("loops", "conditions"),
    cst.FunctionDef: ("functions",),
    cst.ClassDef: ("classes",),
    cst.Assign: ("assigns",),
    cst.AnnAssign: ("assigns", "binders"),
    cst.AugAssign: ("assigns", "binders"),
    cst.AssignTarget: ("binders",),
    cst.NamedExpr: ("binders",),
    cst.AsName: ("binders",),
    cst.With: ("withs",),
    cst.Import: ("imports",),
    cst.ImportFrom: ("imports",),
    cst.Attribute: ("attributes",),
    cst.Subscript: ("subscripts",),
    cst.BinaryOperation: ("binary_operations",),
    cst.SimpleString: ("strings",),
    cst.Name: ("names",),
    cst.Return: ("returns",),
    cst.FormattedString: ("formatted_strings",),
    cst.If: ("conditions",),
    cst.IfExp: ("conditions",),
    cst.Assert: ("conditions",),
}

# Children are read from the node's dataclass fields, which LibCST declares in source order
# except for these types; their fields are listed here in source order.
_SOURCE_ORDER = {
    cst.FunctionDef: ("leading_lines", "decorators", "lines_after_decorators", "asynchronous",
                      "whitespace_after_def", "name", "whitespace_after_name",
                      "type_parameters", "whitespace_after_type_parameters",
                      "whitespace_before_params", "params", "returns",
                      "whitespace_before_colon", "body"),
    cst.ClassDef: ("leading_lines", "decorators", "lines_after_decorators",
                   "whitespace_after_class", "name", "whitespace_after_name",
                   "type_parameters", "whitespace_after_type_parameters", "lpar", "bases",
                   "keywords", "rpar", "whitespace_before_colon", "body"),
    cst.IfExp: ("lpar", "body", "whitespace_before_if", "whitespace_after_if", "test",
                "whitespace_before_else", "whitespace_after_else", "orelse", "rpar"),
    cst.ExceptHandler: ("leading_lines", "whitespace_after_except", "type", "name",
                        "whitespace_before_colon", "body"),
    cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params",
                     "star_kwarg"),
    cst.MatchCase: ("leading_lines", "whitespace_after_case", "pattern",
                    "whitespace_before_if", "whitespace_after_if", "guard",
                    "whitespace_before_colon", "body"),
    cst.Arg: ("star", "whitespace_after_star", "keyword", "equal", "value", "comma",
              "whitespace_after_arg"),
}


# Fields that hold only whitespace, punctuation or operators: no analysis looks inside them
# (a `BinaryOperation`'s operator is read from the node itself), so the walk skips them.
_LAYOUT_FIELDS = frozenset({
    "lpar", "rpar", "comma", "equal", "semicolon", "colon", "dot", "leading_lines",
    "lines_after_decorators", "header", "footer", "operator", "asynchronous", "posonly_ind",
    "star_tok", "whitespace",
})


def _child_fields_of(node_type: type) -> tuple[str, ...]:
    ordered = _SOURCE_ORDER.get(node_type)
    names = tuple(f.name for f in fields(node_type))
    if ordered is not None:
        # Any field the table does not name (a newer LibCST's) still gets visited, last.
        names = tuple(name for name in ordered if name in names) + tuple(
            name for name in names if name not in ordered
        )
    return tuple(
        name for name in names
        if name not in _LAYOUT_FIELDS and not name.startswith("whitespace")
    )


# Per node type, the fields to read; per value type, whether it is a node. Both are asked for
# every field of every node, so plain dicts answer (`isinstance` against the abstract CSTNode
# goes through ABC machinery on every call).
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
_IS_NODE_TYPE: dict[type, bool] = {}


def _is_node(value: object) -> bool:
    value_type = type(value)
    known = _IS_NODE_TYPE.get(value_type)
    if known is None:
        known = _IS_NODE_TYPE[value_type] = issubclass(value_type, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node`'s child nodes in source order, layout (whitespace, punctuation) left out."""
    node_type = type(node)
    names = _CHILD_FIELDS.get(node_type)
    if names is None:
        names = _CHILD_FIELDS[node_type] = _child_fields_of(node_type)
    found: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            found.extend([item for item in value if _is_node(item)])
        elif _is_node(value):
            found.append(value)
    return found


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below `node` (not `node` itself), in source order."""
    pending = children(node)
    pending.reverse()
    while pending:
        child = pending.pop()
        yield child
        below = children(child)
        below.reverse()
        pending.extend(below)


def descendants_in_scope(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below `node` in its scope, in source order: a nested `def`, `lambda` or
    `class` is one of them, but not what it holds."""
    pending = children(node)
    pending.reverse()
    while pending:
        child = pending.pop()
        yield child
        if type(child) not in SCOPE_TYPES:
            below = children(child)
            below.reverse()
            pending.extend(below)


def statements_of(block: cst.CSTNode | None) -> list[cst.CSTNode]:
    """The statements of a block (a module, an indented block, a one-line suite); none for
    anything else (an `if` holding an `elif`)."""
    body = getattr(block, "body", ())
    return list(body) if isinstance(body, (list, tuple)) else []


def final_simple_statement(block: cst.CSTNode | None) -> cst.BaseSmallStatement | None:
    """The simple statement a block ends with when its last line is simple (`...; break`),
    also a one-line suite's (`if done: break`); None when it ends with a compound statement."""
    if type(block) is cst.SimpleStatementSuite:
        return block.body[-1] if block.body else None
    statements = statements_of(block)
    last = statements[-1] if statements else None
    return last.body[-1] if type(last) is cst.SimpleStatementLine else None


def nearest_ancestor(
    parents: dict[cst.CSTNode, cst.CSTNode],
    memo: dict[cst.CSTNode, cst.CSTNode | None],
    node: cst.CSTNode,
    wanted: frozenset[type],
) -> cst.CSTNode | None:
    """The nearest proper ancestor of `node` of a `wanted` type, or None.

    Analyses ask this of most nodes, so `memo` (one per question) keeps the answer of every
    node on the way up: a module's answers all cost one walk of its tree. `memo` maps a node
    to the nearest ancestor that is wanted, or that node itself when it is wanted.
    """
    path = []
    current = parents.get(node)
    while current is not None and current not in memo:
        if type(current) in wanted:
            memo[current] = current
            break
        path.append(current)
        current = parents.get(current)
    found = memo.get(current) if current is not None else None
    for passed in path:
        memo[passed] = found
    return found


def build_index(module: cst.Module) -> SyntaxIndex:
    """Walk `module` once, in source order, and return its index."""
    return joined_index(module, [statement_index(statement) for statement in module.body])


def statement_index(statement: cst.CSTNode) -> SyntaxIndex:
    """The index of one top-level statement: the statement and every node below it (its own
    parent, the module, is left to `joined_index`, so the index holds for any module that
    keeps the statement).

    A plain walk over the nodes' fields: LibCST's own `visit` rebuilds every node it passes
    (the most expensive part of linting a file), which a read-only index does not need.
    """
    index = SyntaxIndex()
    parents = index.parents
    function_of = index.function_of
    buckets = {
        node_type: [getattr(index, name) for name in names] for node_type, names in _BUCKETS.items()
    }
    # (node, its parent, the innermost `def` around it)
    pending: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.FunctionDef | None]] = [
        (statement, None, None)
    ]
    while pending:
        node, parent, function = pending.pop()
        if parent is not None:
            parents[node] = parent  # in pre-order: analyses rely on the insertion order
            if function is not None:
                function_of[id(node)] = function
        node_type = type(node)
        for bucket in buckets.get(node_type, ()):
            bucket.append(node)
        below = children(node)
        below.reverse()
        inner = node if node_type is cst.FunctionDef else function
        pending.extend([(child, node, inner) for child in below])
    return index


def joined_index(module: cst.Module, statements: list[SyntaxIndex]) -> SyntaxIndex:
    """The index of `module` from those of its top-level statements, in order (the module's
    only children: its header and footer are layout)."""
    index = SyntaxIndex()
    parents = index.parents
    lists = [(name, getattr(index, name)) for name in _BUCKET_NAMES]
    for statement, part in zip(module.body, statements):
        parents[statement] = module
        parents.update(part.parents)
        index.function_of.update(part.function_of)
        for name, nodes in lists:
            nodes.extend(getattr(part, name))
    return index


_BUCKET_NAMES = tuple(sorted({name for names in _BUCKETS.values() for name in names}))


def methods_of(cls: cst.ClassDef, names: Iterable[str] | None = None) -> list[cst.FunctionDef]:
    """The methods `cls` defines in its own body (those named `names`, when given)."""
    wanted = None if names is None else set(names)
    return [
        statement for statement in cls.body.body
        if type(statement) is cst.FunctionDef
        and (wanted is None or statement.name.value in wanted)
    ]
