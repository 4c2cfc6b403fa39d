"""Rows and columns of the few nodes a file's findings name, without a position for every node.

LibCST's `PositionProvider` renders the module once and builds a position object for each of
its nodes, which costs more than parsing it. A file with findings needs the positions of a
handful of nodes (the reported ones, and those its fixes edit), so the module is rendered with
a state that counts rows and columns and records ranges for those nodes only. Ranges are
LibCST's own syntactic ranges: a node that takes its start or end from a child (a call starts
where its callee starts) asks for that child's position as rendering enters it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange


def node_positions(
    module: cst.Module,
    nodes: Collection[cst.CSTNode],
    statement: cst.BaseStatement | None = None,
) -> dict[cst.CSTNode, CodeRange]:
    """The syntactic range of each of `nodes` (nodes of `module`), as `PositionProvider`
    gives it: 1-based lines, 0-based columns counted in code points. With `statement`, a
    top-level statement of `module` holding `nodes`, only it is rendered, and lines count
    from its first line (its leading lines included): a top-level statement is rendered the
    same wherever it stands, from column 0."""
    state = _TargetedPositions(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        wanted=set(nodes),
    )
    (module if statement is None else statement)._codegen(state)
    return {node: state.ranges[node] for node in nodes if node in state.ranges}


@dataclass
class _TargetedPositions(CodegenState):
    """A code generator that keeps no text, only the current row and column, and the ranges of
    the wanted nodes."""

    wanted: set[cst.CSTNode] = field(default_factory=set)
    ranges: dict[cst.CSTNode, CodeRange] = field(default_factory=dict)
    line: int = 1
    column: int = 0
    _starts: list[CodePosition | None] = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str) -> None:
        self._advance(value)

    def _advance(self, value: str) -> None:
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.line += len(lines) - 1
        self.column = len(lines[-1])

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append(CodePosition(self.line, self.column) if node in self.wanted else None)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        if start is not None and node not in self.ranges:
            self.ranges[node] = CodeRange(start, CodePosition(self.line, self.column))

    @contextmanager
    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> Iterator[None]:
        if node not in self.wanted:
            yield
            return
        # The children this node's range is taken from are rendered inside: want them too.
        for child in (start_node, end_node):
            if child is not None:
                self.wanted.add(child)
        start = CodePosition(self.line, self.column)
        try:
            yield
        finally:
            end = CodePosition(self.line, self.column)
            if start_node is not None:
                start = self.ranges[start_node].start
            if end_node is not None:
                end = self.ranges[end_node].end
            self.ranges[node] = CodeRange(start, end)
