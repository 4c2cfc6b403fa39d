"""The single traversal of a module: parents and the nodes every analysis starts from."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

Loop = (cst.For, cst.While)
ScopeNode = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


@dataclass
class SyntaxIndex:
    """Every node the analyses and rules look at, found in one visit, in source order."""

    parents: dict[cst.CSTNode, cst.CSTNode] = field(default_factory=dict)
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


class _Indexer(cst.CSTVisitor):
    def __init__(self, index: SyntaxIndex) -> None:
        self.index = index
        self.stack: list[cst.CSTNode] = []
        self.buckets: dict[type, list] = {
            cst.Call: index.calls,
            cst.For: index.loops,
            cst.While: index.loops,
            cst.FunctionDef: index.functions,
            cst.ClassDef: index.classes,
            cst.Assign: index.assigns,
            cst.AnnAssign: index.assigns,
            cst.AugAssign: index.assigns,
            cst.With: index.withs,
            cst.Import: index.imports,
            cst.ImportFrom: index.imports,
            cst.Attribute: index.attributes,
            cst.Subscript: index.subscripts,
            cst.BinaryOperation: index.binary_operations,
            cst.SimpleString: index.strings,
        }

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.index.parents[node] = self.stack[-1]
        self.stack.append(node)
        bucket = self.buckets.get(type(node))
        if bucket is not None:
            bucket.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def build_index(module: cst.Module) -> SyntaxIndex:
    """Visit `module` once and return its index."""
    index = SyntaxIndex()
    module.visit(_Indexer(index))
    return index
