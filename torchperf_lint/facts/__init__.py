"""Per-file analyses every rule can ask for, each computed at most once per file.

`FileFacts` parses nothing itself: it takes the parsed module, indexes it in one traversal,
and builds each analysis (names, loops, guards, CUDA use, DataLoaders, tensor expressions)
the first time a rule asks for it.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import PurePath

import libcst as cst
from libcst._nodes.internal import CodegenState

from torchperf_lint.conventions import is_test_file
from torchperf_lint.facts.amp import AutocastFacts
from torchperf_lint.facts.dataloaders import DataLoaders
from torchperf_lint.facts.devices import module_uses_cuda
from torchperf_lint.facts.guards import Counters, Guards, is_main_test
from torchperf_lint.facts.index import SyntaxIndex, build_index, descendants
from torchperf_lint.facts.loops import (
    LoopNode,
    Loops,
    iterated_expression,
    unwrapped_iterable,
)
from torchperf_lint.facts.models import ModelUse
from torchperf_lint.facts.names import (
    NameResolver,
    dotted_name,
)
from torchperf_lint.facts.program import LoaderDescription, Program, ProgramAnswers
from torchperf_lint.facts.scopes import Scopes
from torchperf_lint.facts.steps import Steps
from torchperf_lint.facts.syncs import HostSyncs
from torchperf_lint.facts.tensors import TensorExpressions
from torchperf_lint.facts.waits import StepWaits
from torchperf_lint.source import IPYTHON_LINE_MARKER

_IDENTIFIER = re.compile(r"[^\W\d]\w*")
# The analyses that read nothing from the program (the others ask it about loops, guards, ...).
_PROGRAM_INDEPENDENT = (
    "index", "names", "scopes", "dataloaders", "tensors", "uses_cuda", "autocast", "counters",
    "models", "ipython_names",
)


class FileFacts:
    """The shared analyses of one parsed file."""

    def __init__(
        self,
        module: cst.Module,
        path: PurePath,
        program: Program | None = None,
        index: SyntaxIndex | None = None,
    ) -> None:
        """`index`, when given, is the module's (an editor's file keeps it per statement)."""
        self.module = module
        self.path = path
        self._program = program or Program()
        # The loops found for the module in another program (or in none), if any: only the
        # calls of step helpers are found again (`with_program`).
        self._loops_alone: Loops | None = None
        if index is not None:
            # `index` is a cached property: what the instance holds under its name is its value.
            self.__dict__["index"] = index

    def with_program(self, program: Program) -> FileFacts:
        """These facts as seen from `program`: what does not depend on other files (the
        index, names, scopes, tensors, ..., and the loops but for their step helpers) is
        shared, not computed again."""
        other = FileFacts(self.module, self.path, program)
        for name in _PROGRAM_INDEPENDENT:
            if name in self.__dict__:
                other.__dict__[name] = self.__dict__[name]
        other._loops_alone = self.__dict__.get("loops", self._loops_alone)
        return other

    @cached_property
    def program(self) -> ProgramAnswers:
        """What the rest of the program says about this file (nothing, linted on its own)."""
        return self._program.answers_for(self)

    @cached_property
    def index(self) -> SyntaxIndex:
        return build_index(self.module)

    @cached_property
    def names(self) -> NameResolver:
        return NameResolver(self.index)

    @cached_property
    def scopes(self) -> Scopes:
        return Scopes(self.index)

    @cached_property
    def dataloaders(self) -> DataLoaders:
        return DataLoaders(self.index, self.scopes, self.names)

    @cached_property
    def loops(self) -> Loops:
        if self._loops_alone is not None:
            return self._loops_alone.in_program(self.program.calls_step_helper)
        return Loops(
            self.index,
            self.scopes,
            self.names,
            self.dataloaders.iterates_a_loader,
            self.program.calls_step_helper,
        )

    @cached_property
    def guards(self) -> Guards:
        return Guards(
            self.index,
            self.scopes,
            self.names,
            self.counters,
            self.program.disables_grad,
            self.program.switched_on,
            self.program.never_built_with,
            self.program.inherits_switch,
        )

    @cached_property
    def counters(self) -> Counters:
        """The names that count the iterations of each loop and of each class's loops."""
        return Counters(self.index, self.scopes)

    @cached_property
    def steps(self) -> Steps:
        """What runs on every training or evaluation step, here and through the program."""
        return Steps(
            self.scopes, self.names, self.loops, self.guards, self.program,
            runs_a_model=self.tensors.is_module_call,
            holds_a_model=self.tensors.is_module_reference,
        )

    @cached_property
    def tensors(self) -> TensorExpressions:
        return TensorExpressions(self.index, self.scopes, self.names)

    @cached_property
    def host_syncs(self) -> HostSyncs:
        """Where the host waits for the device: reads of device values, data-dependent shapes."""
        return HostSyncs(
            self.index, self.scopes, self.names, self.tensors, self.loops,
            self.program.receives_tensor, self.program.receives_host_values,
        )

    @cached_property
    def waits(self) -> StepWaits:
        """Where a step waits for the device anyway, and where it waits next after a node."""
        return StepWaits(
            self.index, self.scopes, self.names, self.loops, self.guards, self.dataloaders,
            self.tensors, self.host_syncs, self.autocast, self.program, self.steps,
        )

    @cached_property
    def models(self) -> ModelUse:
        """The layers whose bias the module reads, and the data-parallel wrappers it builds."""
        return ModelUse(self.index, self.scopes, self.names)

    @cached_property
    def uses_cuda(self) -> bool:
        return module_uses_cuda(self.index, self.scopes, self.names)

    @cached_property
    def autocast(self) -> AutocastFacts:
        """Autocast calls (device, dtype, the code they cover) and GradScaler constructions."""
        return AutocastFacts(self.index, self.scopes, self.names)

    @cached_property
    def ipython_names(self) -> frozenset[str] | None:
        """For a notebook, the names its IPython lines mention (`%time train(model, loader)`,
        kept in the comment of the `pass` each becomes); None for a module."""
        if self.path.suffix != ".ipynb":
            return None
        marker = f"# {IPYTHON_LINE_MARKER} "
        return frozenset(
            name
            for line in self.module.code.splitlines()
            if marker in line
            # After the marker: the nonce, then the line as IPython reads it.
            for name in _IDENTIFIER.findall(line.split(marker, 1)[1].partition(" ")[2])
        )

    @cached_property
    def is_test_file(self) -> bool:
        """A test file by its path, a script that checks the module's own functions (its
        `if __name__ == "__main__":` block calls only `check_*` / `test_*` functions of the
        module: an op's numerical test run by hand), or test support: a module only tests
        import."""
        return (
            is_test_file(self.path)
            or _runs_only_checks(self.module, self.index)
            or self.program.is_test_support()
        )

    def loader_of(self, loop: LoopNode) -> LoaderDescription | None:
        """The DataLoader `loop` iterates, when known: built in this module (also behind a
        name bound to a wrapper of it: `pbar = tqdm(loader)`), returned by a project factory
        (`for x in build_loader(cfg)`, `loader = build_loader(cfg)`, `loader, dataset =
        build(cfg)` of a factory that returns both), or passed as a parameter by every caller
        outside tests."""
        iterated = iterated_expression(loop)
        if iterated is None:
            return None
        iterated = self._wrapped_by_name(iterated)
        construction = self.dataloaders.loader_of(loop) or self.dataloaders.construction(iterated)
        if construction is not None:
            return LoaderDescription(
                construction.pins_memory,
                construction.has_custom_collate,
                self.dataloaders.moved_by_a_framework(construction),
            )
        unpacked = self.scopes.unpacked_from(iterated) if isinstance(iterated, cst.Name) else None
        values = [iterated] if isinstance(iterated, cst.Call) else self.scopes.bound_values(iterated)
        if unpacked is not None and isinstance(unpacked[0], cst.Call):
            returned = self.program.returned_loader(*unpacked)
        elif len(values) == 1 and isinstance(values[0], cst.Call):
            returned = self.program.returned_loader(values[0])
        else:
            function = self.scopes.enclosing_function(loop)
            if not values and isinstance(iterated, cst.Name) and self.scopes.is_parameter(
                iterated.value, function
            ):
                return self.program.loader_argument(function, iterated.value)
            return None
        if (
            returned is not None
            and isinstance(iterated, (cst.Name, cst.Attribute))
            and self.dataloaders.prepared_by_a_framework(iterated)
        ):
            return LoaderDescription(returned.pins_memory, returned.has_custom_collate, True)
        return returned

    def samples_elsewhere(self, source: cst.BaseExpression) -> str | None:
        """What the program says the dataset `source` holds (see `ProgramAnswers`): one that
        a class or function of another module builds (`dataset_samples`, also an item of the
        tuple a function returns: `train, val = create_dataset(...)`), or a parameter the
        function never rebinds, by what every caller passes (`dataset_argument`)."""
        if isinstance(source, cst.Call):
            return self.program.dataset_samples(source)
        if not isinstance(source, cst.Name):
            return None
        if self.scopes.holds_argument(source):
            return self.program.dataset_argument(self.scopes.enclosing_function(source), source.value)
        unpacked = self.scopes.unpacked_from(source)
        if unpacked is not None and isinstance(unpacked[0], cst.Call):
            return self.program.dataset_samples(*unpacked)
        return None

    def _wrapped_by_name(self, iterated: cst.BaseExpression) -> cst.BaseExpression:
        """What a name bound to a wrapper of an iterable wraps: `loader` for `pbar` after
        `pbar = enumerate(loader)`, also when a later binding wraps the name itself again
        (`if rank == 0: pbar = tqdm(pbar)`)."""
        if not isinstance(iterated, cst.Name):
            return iterated
        values = [
            value for value in self.scopes.bound_values(iterated)
            if not (
                isinstance(value, cst.Call)
                and unwrapped_iterable(value) is not value
                and dotted_name(unwrapped_iterable(value)) == iterated.value
            )
        ]
        if len(values) != 1:
            return iterated
        wrapped = unwrapped_iterable(values[0])
        return iterated if wrapped is values[0] else wrapped

    def code(self, node: cst.CSTNode, at: cst.CSTNode | None = None) -> str:
        """The source text of `node` (or of a new node built from this module's nodes).

        With `at`, a node of this module, the text is rendered for `at`'s place: the lines of
        a multi-line replacement keep the indentation of the blocks around it.
        """
        indent_tokens = [] if at is None else self.indents(at)
        state = CodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            indent_tokens=indent_tokens,
        )
        node._codegen(state)
        return "".join(state.tokens)

    def indents(self, node: cst.CSTNode) -> list[str]:
        """The indentation of each block around `node`, outermost first."""
        return [
            block.indent if block.indent is not None else self.module.default_indent
            for block in reversed(list(self.scopes.ancestors(node)))
            if type(block) is cst.IndentedBlock
        ]


def _runs_only_checks(module: cst.Module, index: SyntaxIndex) -> bool:
    defined = {function.name.value for function in index.functions}
    for statement in module.body:
        if type(statement) is not cst.If or not is_main_test(statement.test):
            continue
        called = {
            node.func.value
            for node in descendants(statement.body)
            if type(node) is cst.Call and type(node.func) is cst.Name
        } & defined
        return bool(called) and all(name.startswith(("check_", "test_")) for name in called)
    return False