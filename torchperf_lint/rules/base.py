"""What a rule is: its public identity, its documentation, and its check.

A rule subclasses `Rule`, sets its metadata as class attributes, writes its documentation as
the class docstring (the six sections every page has), and yields `Finding`s from `check`.
Findings point at CST nodes; the engine turns nodes into rows and columns only for files
that have findings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar, Literal

import libcst as cst

from torchperf_lint.diagnostics import Applicability, Related
from torchperf_lint.facts import FileFacts
from torchperf_lint.registry import DOCS_URL, parse_sections
from torchperf_lint.settings import RuleOptions


@dataclass(frozen=True)
class NodeEdit:
    """Replace `node`'s source with `content`, insert `content` before it, or delete its lines.

    Replacements are LibCST node replacements: build the new node with `with_changes` and
    pass `Rule.code_of(new_node)`. Only the node's own span changes; `insert_before` adds text
    at the node's first character; `delete_lines` removes the whole lines the node spans.
    """

    node: cst.CSTNode
    content: str = ""
    mode: Literal["replace", "insert_before", "delete_lines"] = "replace"


@dataclass(frozen=True)
class ProposedFix:
    applicability: Applicability
    message: str
    edits: tuple[NodeEdit, ...]


@dataclass(frozen=True)
class Finding:
    """A rule's verdict on one node: where, what (default: the rule's message), and the fix."""

    node: cst.CSTNode
    message: str | None = None
    fix: ProposedFix | None = None
    # Other places that explain it: the per-step call path of a helper.
    related: tuple[Related, ...] = ()
    # Other nodes of this file the finding stands for, each with its note (the other reads of
    # a run of syncs): reported as related locations after `related`.
    also_at: tuple[tuple[cst.CSTNode, str], ...] = ()


# The release that brought `torch.no_grad()`, `non_blocking=` and the factories' `device=`.
PYTORCH_0_4 = (0, 4)


class Rule:
    """Base class of every rule. Subclasses set the metadata and implement `check`."""

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    default: ClassVar[bool]
    fix_applicability: ClassVar[Applicability | None] = None  # None: the rule never fixes.
    # Whether the fix can only pay off on a CUDA device (pinned memory, CUDA AMP, fused CUDA
    # optimizers): `verify` never reports such a fix as a gain on a machine without CUDA.
    gains_only_on_cuda: ClassVar[bool] = False
    # Whether the rule also checks test files and test-support code (`is_test_file`). Only
    # deprecations and correctness rules do: a cost that only matters in real training is no
    # one's concern in a test, which reads values and builds tiny loaders on purpose.
    checks_test_files: ClassVar[bool] = False
    # The first PyTorch release that has what the finding asks for (`torch.no_grad()`,
    # `non_blocking=`: 0.4): a project whose every allowed release is older (`torch==0.3.0`)
    # cannot follow the advice, and gets no finding.
    fix_needs_torch: ClassVar[tuple[int, ...] | None] = None
    options: RuleOptions

    def __init__(self, options: RuleOptions | None = None) -> None:
        self.options = options or RuleOptions()

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        raise NotImplementedError

    def applies_to(self, facts: FileFacts) -> bool:
        """Whether `check` runs on this file at all: test files only for the rules that say
        so; never a module that nothing runs (`ProgramAnswers.runs_nowhere`: a vendored copy
        of a library that no entry point of a program imports), where no cost is paid and no
        warning is raised; never in a project that runs only on releases older than the one
        its advice needs (`fix_needs_torch`)."""
        if facts.program.runs_nowhere():
            return False
        if self.fix_needs_torch is not None:
            below = self.torch_below(facts)
            if below is not None and below <= self.fix_needs_torch:
                return False
        return self.checks_test_files or not facts.is_test_file

    def runs_on_cuda(self, facts: FileFacts) -> bool:
        """`target-device` says so, or (when it is "auto") the module itself uses CUDA or
        belongs to a program that does."""
        if self.options.target_device == "auto":
            return facts.uses_cuda or facts.program.runs_on_cuda()
        return self.options.target_device == "cuda"

    def torch_below(self, facts: FileFacts) -> tuple[int, ...] | None:
        """The first PyTorch release the code cannot run on: the project's declared upper
        bound (`torch<2.4`, `torch==1.11.0`), or the release that removed a module every
        program of this file imports (`from torch._six import inf`: 2.0), whichever is
        older; None when neither says."""
        bounds = [
            bound
            for bound in (self.options.torch_below, facts.program.imports_only_below())
            if bound is not None
        ]
        return min(bounds) if bounds else None

    def trains_on_cuda(self, facts: FileFacts) -> bool:
        """The module has a training loop and runs on CUDA."""
        return bool(facts.loops.training_loops) and self.runs_on_cuda(facts)

    # Helpers every rule uses to build its findings.

    def finding(
        self,
        node: cst.CSTNode,
        fix: ProposedFix | None = None,
        related: tuple[Related, ...] = (),
        also_at: tuple[tuple[cst.CSTNode, str], ...] = (),
        **details: object,
    ) -> Finding:
        message = self.message.format(**details) if details else None
        return Finding(node=node, message=message, fix=fix, related=related, also_at=also_at)

    @staticmethod
    def code_of(facts: FileFacts, node: cst.CSTNode, at: cst.CSTNode | None = None) -> str:
        """Source text for a replacement node, without the parentheses around it (those
        stay in the file: a node's reported span excludes them). With `at`, the node it
        replaces, continuation lines keep the indentation of `at`'s place."""
        if isinstance(node, cst.BaseExpression) and (node.lpar or node.rpar):
            node = node.with_changes(lpar=(), rpar=())
        return facts.code(node, at)

    def replace(
        self, facts: FileFacts, old: cst.CSTNode, new: cst.CSTNode, message: str,
        applicability: Applicability | None = None,
    ) -> ProposedFix:
        """A fix that replaces `old` with `new`."""
        return ProposedFix(
            applicability=applicability or self.fix_applicability or Applicability.UNSAFE,
            message=message,
            edits=(NodeEdit(old, self.code_of(facts, new, at=old)),),
        )

    # Documentation.

    @classmethod
    def documentation(cls) -> dict[str, str]:
        """The docstring's six sections, by heading."""
        return parse_sections(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        """The docstring's first line."""
        return (cls.__doc__ or "").strip().splitlines()[0]

    @classmethod
    def url(cls) -> str:
        return DOCS_URL.format(code=cls.code, name=cls.name)

    @classmethod
    def implementation(cls) -> type[Rule]:
        """The class itself (a selected rule is its catalog entry or its class)."""
        return cls
