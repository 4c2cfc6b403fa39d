"""The linked program: every file's summary joined into facts that span functions and modules.

Linking resolves each summary's references (imports, `__init__` re-exports, `*` imports,
`self.method()`, base classes) to the functions and classes they name, builds the call graph
and computes, once per run, in the parent process:

- **step helpers**: functions that step an optimizer outside any loop of their own, or
  backpropagate outside their loops and step anywhere in their body, directly or through another
  step helper (`train_step(batch)`); a loop that calls one is a training loop (a function that
  only backpropagates, a Grad-CAM, does not make one);
- **per-step functions**: every function called (not under a periodic guard, not on an error
  path) from the body of a training or evaluation loop, directly or through other per-step
  functions (a function passed to one that calls it runs at the call that passes it:
  `gpu_timer(train_step)`), and the per-step hooks of framework classes
  (`LightningModule.training_step`, `Trainer.compute_loss`); each keeps one call path (its
  witness), the shortest found first;
- **CUDA modules**: modules with CUDA evidence of their own (including a device from a project
  helper: `dist_util.dev()`, an imported `DEVICE`), the modules they import, and every module
  of a training program (a module that trains, with its imports) in which one of them is;
- **no-grad wrappers**: project functions that build `torch.no_grad` / `inference_mode`
  (`smart_inference_mode`), and functions every real caller runs with autograd off;
- **DataLoader factories and arguments**: the loader a function returns, and the loader every
  caller passes as a given parameter.

Test files are linked (their functions can be called) but never start a per-step path, never
count as CUDA evidence and never decide what a helper's callers do.
Answers are plain JSON values, so a file's cached findings can record the answers they read.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import PurePosixPath
from typing import NamedTuple

from torchperf_lint.config import DEFAULT_EXCLUDE
from torchperf_lint.conventions import (
    LIBRARY_SWITCHES,
    framework_hook_kind,
    is_superseded,
    is_test_file,
    runs_its_function_per_step,
    runs_its_model_per_step,
)
from torchperf_lint.program.modules import ModuleMap
from torchperf_lint.program.options import takes
from torchperf_lint.program.summary import CallSite, FunctionSummary, ModuleSummary, Ref, Value

# Name chains (imports of imports, base classes) are followed at most this deep: cycles end.
MAX_DEPTH = 32
# A call of a method on `self` follows at most this many overrides in subclasses.
MAX_OVERRIDES = 8
STEP_KINDS = ("train", "eval")
# The classes outside the project whose subclasses' other methods only the project calls.
_PLAIN_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "object"})
# How many functions a loop counter is followed through as a parameter passed on.
_MAX_PASS_THROUGH = 3
# Hugging Face's hook that switches `gradient_checkpointing` on a model's modules; the names
# that run it are that switch's `LIBRARY_SWITCHES`.
_CHECKPOINTING_HOOK = "_set_gradient_checkpointing"
# What the dataset a summarized value of these kinds holds (`dataset_samples`): a Hugging
# Face dataset preprocessed ahead of training, an object read back whole from a file.
_SAMPLES_OF_VALUES = {"rows": "rows", "loaded": "in_memory"}
_AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
# The methods of `nn.Module` that PyTorch itself calls on a subclass that overrides them.
_MODULE_CALLBACKS = frozenset({
    "forward", "extra_repr", "_load_from_state_dict", "_save_to_state_dict", "train", "eval",
    "state_dict", "load_state_dict", "_apply",
})

Answer = object  # JSON: None, bool, list or dict.


# The files that make a project a distribution, whose modules are its users' API.
_PACKAGING_FILES = frozenset(("setup.py", "setup.cfg", "pyproject.toml"))


@dataclass(frozen=True, order=True)
class Target:
    """A function or class of the program (`kind` "function" or "class"), or a module-level
    name bound to a CUDA device (`kind` "cuda")."""

    file: str
    qualname: str
    kind: str


@dataclass(frozen=True)
class Hop:
    """One call on a per-step path: in `file`, the call with this ordinal runs `callee`
    (itself, or through the function `through` that it passes `callee` to:
    `gpu_timer(train_step)`)."""

    file: str
    call: int
    callee: str
    through: str = ""


class _ProjectSettings(NamedTuple):
    """The run's settings across the project (`ProgramFacts.setting_values`)."""

    # Per setting, the defaults declared (`[value]`, or `[]` when not a literal).
    defaults: dict[str, list[list]]
    # Per name a setting is given by (the last part of its key, or an alias), the values given.
    given: dict[str, list[list]]
    # Per option, its other names.
    aliases: dict[str, set[str]]
    # Per flag option, the values giving it stores.
    flags: dict[str, set[bool]]


class ProgramFacts:
    """The facts of one linked program: `summaries` maps each file, by the name it is reported
    under (a relative posix path), to its summary."""

    def __init__(self, summaries: dict[str, ModuleSummary]) -> None:
        self.summaries = summaries
        self._test_paths = frozenset(
            file for file in summaries if is_test_file(PurePosixPath(file))
        )
        self.modules = ModuleMap(summaries)
        self._resolved: dict[tuple[str, Ref], Target | None] = {}
        # `_in_module`'s lookups: those done, those under way (by their order), and the
        # earliest under way that the current one met again.
        self._looked_up: dict[tuple[str, tuple[str, ...]], Target | None] = {}
        self._lookups_under_way: dict[tuple[str, tuple[str, ...]], int] = {}
        self._cycle_start = 0
        self._external_bases: dict[Target, list[str]] = {}
        self._methods: dict[tuple[Target, str], Target | None] = {}
        self._returned_classes: dict[Target, frozenset[Target]] = {}
        self._counter_parameters: dict[tuple[Target, str, str], bool] = {}
        self._parameter_calls: dict[tuple[Target, str, int], CallSite | None] = {}
        # Per call that passes a function it runs (file, ordinal, the function passed): the
        # function it calls, which runs it (`gpu_timer` for `gpu_timer(train_step)`).
        self._runners: dict[tuple[str, int, Target], Target] = {}
        self._switches_off: dict[tuple[Target, str, bool], bool] = {}
        self._unrun_callers: dict[Target, bool] = {}  # `_only_unrun_callers`, per function.

    @cached_property
    def tests(self) -> frozenset[str]:
        """Test files (by their path), and test support: files that only test files (or other
        test support) import and that are not scripts of their own (no `__main__` block), such
        as a `demos/boring_classes.py` of models for tests."""
        importers: dict[str, set[str]] = defaultdict(set)
        for file, imported in self._imports.items():
            for target in imported:
                importers[target].add(file)
        tests = set(self._test_paths)
        changed = True
        while changed:
            changed = False
            for file in sorted(self.summaries):
                if (
                    file not in tests
                    and importers[file]
                    and importers[file] <= tests
                    and not self.summaries[file].runs_as_script
                ):
                    tests.add(file)
                    changed = True
        return frozenset(tests)

    # Resolution ------------------------------------------------------------------------------

    def resolve(self, file: str, ref: Ref) -> Target | None:
        """What `ref`, written in `file`, names, or None when it is not the project's own."""
        key = (file, ref)
        if key not in self._resolved:
            self._resolved[key] = None  # A cycle through this reference resolves to nothing.
            self._resolved[key] = self._resolve(file, ref, 0)
        return self._resolved[key]

    def _resolve(self, file: str, ref: Ref, depth: int) -> Target | None:
        if depth > MAX_DEPTH or file not in self.summaries:
            return None
        kind, _, rest = ref.partition(":")
        if kind == "def":
            return self._in_module(file, tuple(rest.split(".")), depth)
        if kind == "import":
            return self._imported(file, rest, depth)
        if kind in ("method", "super"):
            owner, _, method = rest.partition(":")
            cls = Target(file, owner, "class")
            if kind == "method":
                return self.method(cls, method)
            for base in self.bases(cls):
                found = self.method(base, method)
                if found is not None:
                    return found
            return None
        if kind in ("forward", "returned"):
            made = self._resolve(file, rest, depth + 1)
            if made is not None and made.kind == "class" and kind == "forward":
                return self.called_instance(made)
            return self._returned_function(made) if made is not None and made.kind == "function" else None
        if kind == "instance":
            method, _, constructed = rest.partition(":")
            cls = self._resolve(file, constructed, depth + 1)
            return self.method(cls, method) if cls is not None and cls.kind == "class" else None
        if kind == "argument":
            method, _, parameter = rest.partition(":")
            qualname, _, parameter = parameter.partition(":")
            cls = self._argument_class(Target(file, qualname, "function"), parameter)
            if cls is None:
                return None
            return self.called_instance(cls) if method == "__call__" else self.method(cls, method)
        return None

    def _returned_function(self, factory: Target) -> Target | None:
        """The project function that `factory` returns uncalled, when every `return` of it
        that the summary keeps agrees (`def GAN_training_function(G, D, ...): def train(x,
        y): ...; return train`): calling its result runs that function."""
        function = self.function(factory)
        returns = function.returns if function is not None else []
        if not returns or any(value != returns[0] for value in returns):
            return None
        if returns[0][0] != "function":
            return None
        return self.resolve(factory.file, returns[0][1])

    def _argument_class(self, target: Target, parameter: str) -> Target | None:
        """The project class of the instances the callers outside tests pass as `parameter`
        of `target`, when they all agree (callers that pass something else, or nothing the
        summaries keep, say nothing). Only direct calls are read: the calls on parameters are
        what this answers."""
        classes = {
            cls
            for file, _, argument in self._arguments_for(target, parameter, self._direct_callers)
            for cls in self._instance_classes(file, argument)
        }
        return classes.pop() if len(classes) == 1 else None

    def _instance_classes(self, file: str, value: list) -> set[Target]:
        """The project classes a summarized value, written in `file`, may be an instance of:
        built by calling the class (`TensorboardLogger(log_dir)`), one of its own
        constructors that the project does not define (`Model.from_pretrained(name)`), or a
        project function that returns such an instance (`returned_classes`)."""
        if value[0] not in ("call", "calls"):
            return set()
        found = set()
        for ref in _called(value):
            target = self.resolve(file, ref)
            if target is None:
                head, _, last = ref.rpartition(".")
                target = self.resolve(file, head) if last.startswith("from_") else None
            if target is not None and target.kind == "class":
                found.add(target)
            elif target is not None and target.kind == "function":
                found |= self.returned_classes(target)
        return found

    def returned_classes(self, target: Target) -> frozenset[Target]:
        """The project classes whose instances the function `target` returns: a factory
        (`def build_loss(opt): return LossCompute(...)`), a class method that returns
        `cls(...)` (`LossCompute.from_opts(opt)`, an instance of its class), or one that
        returns what such a function returns."""
        if target not in self._returned_classes:
            self._returned_classes[target] = frozenset()  # A cycle of factories builds nothing.
            function = self.function(target)
            self._returned_classes[target] = frozenset(
                cls
                for value in (function.returns if function is not None else ())
                for cls in self._instance_classes(target.file, value)
            )
        return self._returned_classes[target]

    def _imported(self, file: str, target: str, depth: int) -> Target | None:
        found = self.modules.resolve(file, target)
        if found is None:
            return None
        module, attributes = found
        if not attributes:
            return None
        return self._in_module(module, attributes, depth + 1)

    def _in_module(self, file: str, parts: tuple[str, ...], depth: int) -> Target | None:
        """`parts` (a name and attributes) looked up in `file`'s definitions and imports.

        Each lookup is made once per program: a package whose `__init__` star-imports modules
        that import from it again (`from .logging import *` there, `from pkg.callbacks import
        Callback` in `logging.py`) would otherwise be walked along every path through the
        cycle. A lookup met again while it is still under way finds nothing on that path;
        what was found while relying on that is not kept (another path may find it), except
        by the lookup that started the cycle, which has then seen every path."""
        key = (file, parts)
        if key in self._looked_up:
            return self._looked_up[key]
        if key in self._lookups_under_way:
            self._cycle_start = min(self._cycle_start, self._lookups_under_way[key])
            return None
        position = len(self._lookups_under_way)
        self._lookups_under_way[key] = position
        outer_cycle_start, self._cycle_start = self._cycle_start, position
        found = self._look_up(file, parts, depth)
        del self._lookups_under_way[key]
        if self._cycle_start >= position:  # No lookup started before this one was met again.
            self._looked_up[key] = found
        self._cycle_start = min(outer_cycle_start, self._cycle_start)
        return found

    def _look_up(self, file: str, parts: tuple[str, ...], depth: int) -> Target | None:
        if depth > MAX_DEPTH:
            return None
        summary = self.summaries.get(file)
        if summary is None or not parts:
            return None
        head = parts[0]
        if head in summary.classes or head in summary.functions:
            qualname = head
            for position, part in enumerate(parts[1:], start=1):
                nested = f"{qualname}.{part}"
                if nested in summary.functions or nested in summary.classes:
                    qualname = nested
                    continue
                if qualname in summary.classes and position == len(parts) - 1:
                    return self.method(Target(file, qualname, "class"), part)
                return None
            kind = "class" if qualname in summary.classes else "function"
            return Target(file, qualname, kind)
        if head in summary.imports:
            target = summary.imports[head]
            rest = ".".join(parts[1:])
            return self._imported(file, f"{target}.{rest}" if rest else target, depth + 1)
        if len(parts) == 1 and head in summary.cuda_names:
            return Target(file, head, "cuda")
        for star in summary.stars:
            found = self.modules.resolve(file, star)
            if found is not None and not found[1]:
                target = self._in_module(found[0], parts, depth + 1)
                if target is not None:
                    return target
        return None

    def method(self, cls: Target, name: str) -> Target | None:
        """`name` defined in class `cls` or inherited from one of its project base classes."""
        key = (cls, name)
        if key not in self._methods:
            self._methods[key] = None  # A cycle of bases defines nothing.
            summary = self.summaries.get(cls.file)
            found = None
            if summary is not None and f"{cls.qualname}.{name}" in summary.functions:
                found = Target(cls.file, f"{cls.qualname}.{name}", "function")
            else:
                for base in self.bases(cls):
                    found = self.method(base, name)
                    if found is not None:
                        break
            self._methods[key] = found
        return self._methods[key]

    def called_instance(self, cls: Target) -> Target | None:
        """What calling an instance of `cls` runs: its `forward` (a module's `__call__` runs
        it, also when a project base class wraps it in a `__call__` of its own), or else its
        `__call__` (a loss object: `compute_loss(pred, targets)`)."""
        return self.method(cls, "forward") or self.method(cls, "__call__")

    def bases(self, cls: Target) -> list[Target]:
        """The project classes `cls` derives from directly."""
        summary = self.summaries.get(cls.file)
        record = summary.classes.get(cls.qualname) if summary else None
        if record is None:
            return []
        found = [self.resolve(cls.file, base) for base in record.bases]
        return [base for base in found if base is not None and base.kind == "class"]

    def external_bases(self, cls: Target) -> list[str]:
        """The qualified names of the classes outside the project that `cls` derives from
        (`lightning.pytorch.LightningModule`), through its project base classes, whose own
        qualified names are included: in a framework's own repository, its base classes
        (`fairseq.tasks.fairseq_task.FairseqTask`) are the framework's."""
        if cls not in self._external_bases:
            self._external_bases[cls] = []  # A cycle of bases adds nothing.
            summary = self.summaries.get(cls.file)
            record = summary.classes.get(cls.qualname) if summary else None
            names = []
            for ref in record.bases if record else ():
                base = self.resolve(cls.file, ref)
                if base is not None and base.kind == "class":
                    module = self.modules.name_of.get(base.file)
                    if module is not None:
                        names.append(f"{module}.{base.qualname}")
                    names.extend(self.external_bases(base))
                elif ref.startswith("import:") and not ref.startswith("import:."):
                    names.append(ref[len("import:"):])
            self._external_bases[cls] = names
        return self._external_bases[cls]

    def dataset_samples(
        self, target: Target | None, depth: int = 0, index: int | None = None
    ) -> str | None:
        """What the dataset a project class builds, or a project function returns (with
        `index`, as that item of the tuple it returns: `return train_set, eval_set`), holds
        when no file is read for a sample: "made_up", "in_memory" (the class's own summary,
        or an object read back whole: `torch.load(path)`), "rows" (a Hugging Face dataset
        preprocessed ahead of training), or None. A function answers when all its returns
        agree."""
        if target is None or depth > MAX_DEPTH:
            return None
        summary = self.summaries.get(target.file)
        if summary is None:
            return None
        if target.kind == "class":
            record = summary.classes.get(target.qualname)
            return record.samples if record is not None else None
        function = summary.functions.get(target.qualname)
        kinds = set()
        for value in function.returns if function is not None else ():
            if index is not None:
                value = value[1][index] if value[0] == "tuple" and index < len(value[1]) else None
            kinds.add(self._samples_of(target.file, value, depth + 1))
        return kinds.pop() if len(kinds) == 1 else None

    def dataset_argument(self, target: Target, parameter: str) -> str | None:
        """What the datasets that every caller outside tests passes as `parameter` of
        `target` hold (`dataset_samples`), when each caller's argument is known and they all
        agree: a library's `fit(dataset)` that its examples call with in-memory datasets."""
        callers = self._callers.get(target, [])
        kinds = [
            self._samples_of(file, argument)
            for file, _, argument in self._arguments_for(target, parameter)
        ]
        if not callers or len(kinds) != len(callers) or len(set(kinds)) != 1:
            return None
        return kinds[0]

    def _samples_of(self, file: str, value: list | None, depth: int = 0) -> str | None:
        """`dataset_samples` of the dataset a summarized value, written in `file`, builds."""
        if value is None:
            return None
        if value[0] in _SAMPLES_OF_VALUES:
            return _SAMPLES_OF_VALUES[value[0]]
        if value[0] not in ("call", "calls"):
            return None
        kinds = {self.dataset_samples(self.resolve(file, ref), depth) for ref in _called(value)}
        return kinds.pop() if len(kinds) == 1 else None

    def function(self, target: Target) -> FunctionSummary | None:
        summary = self.summaries.get(target.file)
        return summary.functions.get(target.qualname) if summary else None

    def callee(self, file: str, site: CallSite) -> Target | None:
        """The project function a call runs (a class's `__init__` for a construction)."""
        target = self.resolve(file, site.callee)
        if target is None:
            return None
        if target.kind == "class":
            return self.method(target, "__init__")
        return target if target.kind == "function" else None

    @cached_property
    def released_classes(self) -> set[Target]:
        """The classes whose parameters are keys of published checkpoints: those a module
        that loads released weights defines, imports, builds or names by their dotted path
        in a string (a table of released models, `'obj': 'pkg.models.ERes2Net'`; outside
        test files), those
        a registry builds by name or with a method that loads their own checkpoints and the
        classes derived from these, and, through them all, the classes their methods build,
        directly or in the project functions they call, and the classes they pass to a call
        (`HourglassNet(Bottleneck2D, ...)`: the blocks of a released architecture)."""
        methods: dict[Target, list[FunctionSummary]] = defaultdict(list)
        for file, function in self._functions:
            if function.owner is not None:
                methods[Target(file, function.owner, "class")].append(function)
        found: set[Target] = set()
        pending: list[tuple[str, FunctionSummary]] = []
        seen: set[tuple[str, str]] = set()

        def reached(target: Target | None) -> None:
            if target is None or target.file in self.tests:
                return
            if target.kind == "class" and target not in found:
                found.add(target)
                pending.extend((target.file, method) for method in methods[target])
            elif target.kind == "function" and (target.file, target.qualname) not in seen:
                function = self.function(target)
                if function is not None:
                    pending.append((target.file, function))

        for file in sorted(self.summaries):
            summary = self.summaries[file]
            for name, cls in summary.classes.items():
                if cls.checkpoint_architecture:
                    root = Target(file, name, "class")
                    for target in (root, *self._descendants(root)):
                        reached(target)
            if file in self.tests or not summary.loads_released_weights:
                continue
            for name in summary.classes:
                reached(Target(file, name, "class"))
            for name in summary.imports:
                reached(self.resolve(file, f"import:{summary.imports[name]}"))
            for path in summary.released_paths:  # `dynamic_import(conf['obj'])(**conf['args'])`
                reached(self.resolve(file, f"import:{path}"))
            pending.extend((file, function) for function in summary.functions.values())
        while pending:
            file, function = pending.pop()
            if (file, function.qualname) in seen:
                continue
            seen.add((file, function.qualname))
            for site in function.calls:
                reached(self.resolve(file, site.callee))
                for value in site.arguments.values():
                    if value[0] == "function":  # `HourglassNet(Bottleneck2D, ...)`
                        reached(self.resolve(file, value[1]))
        return found

    # The call graph ------------------------------------------------------------------------

    @cached_property
    def _functions(self) -> list[tuple[str, FunctionSummary]]:
        return [
            (file, function)
            for file in sorted(self.summaries)
            for function in self.summaries[file].functions.values()
        ]

    @cached_property
    def _edges(self) -> dict[tuple[str, str], list[tuple[CallSite, Target]]]:
        """Per function (file, qualname): its calls that run project functions. A call of a
        method on `self` may also run the overrides of that method in project subclasses; one
        on a parameter runs the method of the class whose instances the callers pass, which
        the direct calls tell; one that passes a project function to a function that calls
        that parameter runs the function passed too (`_passed_edges`)."""
        edges = {}
        for file, function in self._functions:
            key = (file, function.qualname)
            indirect = [
                (site, target)
                for site in function.calls
                if site.callee.startswith("argument:")
                for target in (self.callee(file, site),)
                if target is not None
            ]
            indirect.extend(self._passed_edges(file, function))
            edges[key] = self._direct_edges[key]
            if indirect:  # in source order, as the others
                edges[key] = sorted([*edges[key], *indirect], key=lambda edge: edge[0].ordinal)
        return edges

    def _passed_edges(self, file: str, function: FunctionSummary) -> list[tuple[CallSite, Target]]:
        """The project functions that `function`'s calls pass, uncalled, to a project function
        that calls them (`gpu_timer(train_step)`, where `gpu_timer(closure)` runs
        `closure()`), each on a copy of the call that says how the function passed runs: on
        every call unless the runner calls it under a sparse guard, with autograd off when
        either call is, and passing what the runner's call of it passes (how many arguments,
        which keywords; their values are the runner's, not kept)."""
        found = []
        for site in function.calls:
            passed = [
                (key, value[1]) for key, value in site.arguments.items() if value[0] == "function"
            ]
            runner = self.callee(file, site) if passed else None
            summary = self.function(runner) if runner is not None else None
            if summary is None:
                continue
            for key, ref in passed:
                parameter = _parameter(site, summary, key)
                inner = None if parameter is None else self._parameter_call(runner, parameter)
                target = self.resolve(file, ref)
                if inner is None or target is None or target.kind != "function":
                    continue
                self._runners[(file, site.ordinal, target)] = runner
                found.append((
                    replace(
                        site,
                        callee=ref,
                        sparse=site.sparse or inner.sparse,
                        no_grad=site.no_grad or inner.no_grad,
                        evaluation_only=site.evaluation_only or inner.evaluation_only,
                        arguments={},
                        positional=inner.positional,
                        keywords=inner.keywords,
                    ),
                    target,
                ))
        return found

    def _parameter_call(self, target: Target, parameter: str, depth: int = 0) -> CallSite | None:
        """The call by which `target` runs what its callers pass as `parameter`: its own call
        of it (`closure()`), or one that passes it on to a function that calls it
        (`_MAX_PASS_THROUGH` deep), sparse when that call or the one passing it on is (under a
        periodic guard, or a call of a periodic predicate); one on every call comes first."""
        key = (target, parameter, depth)
        if key in self._parameter_calls:
            return self._parameter_calls[key]
        function = self.function(target)
        found = None
        for site in function.calls if function is not None else ():
            call = None
            if site.callee == f"argument:__call__:{target.qualname}:{parameter}":
                call = site
            elif depth < _MAX_PASS_THROUGH and ["param", parameter] in site.arguments.values():
                call = self._passed_on(target.file, site, parameter, depth)
            if call is None:
                continue
            periodic = any(name in self.periodic_predicates for name in call.predicates)
            call = replace(call, sparse=call.sparse or periodic, predicates=[])
            if found is None or found.sparse and not call.sparse:
                found = call
        self._parameter_calls[key] = found
        return found

    def _passed_on(self, file: str, site: CallSite, parameter: str, depth: int) -> CallSite | None:
        """The call by which the function `site` runs calls `parameter`, which `site` passes on
        to it (`_parameter_call`), as one call: sparse, without grad or for evaluation only
        when either is."""
        callee = self.callee(file, site)
        summary = self.function(callee) if callee is not None else None
        if summary is None:
            return None
        for key, value in site.arguments.items():
            name = _parameter(site, summary, key) if value == ["param", parameter] else None
            inner = None if name is None else self._parameter_call(callee, name, depth + 1)
            if inner is not None:
                return replace(
                    inner,
                    sparse=site.sparse or inner.sparse,
                    no_grad=site.no_grad or inner.no_grad,
                    evaluation_only=site.evaluation_only or inner.evaluation_only,
                    predicates=site.predicates,
                )
        return None

    @cached_property
    def _direct_edges(self) -> dict[tuple[str, str], list[tuple[CallSite, Target]]]:
        """The edges but for the calls of methods on parameters."""
        edges: dict[tuple[str, str], list[tuple[CallSite, Target]]] = {}
        for file, function in self._functions:
            resolved = []
            for site in function.calls:
                if site.callee.startswith("argument:"):
                    continue
                target = self.callee(file, site)
                if target is not None:
                    resolved.append((site, target))
                    resolved.extend((site, override) for override in self._overrides(file, site))
            edges[(file, function.qualname)] = resolved
        return edges

    def _overrides(self, file: str, site: CallSite) -> list[Target]:
        """The overrides that `self.name()` (in a method of class `Owner`) runs when `self` is
        an instance of a project subclass: `self.shared_step(batch)` in a base class's
        `training_step` runs the subclass's own `shared_step`. None when more than
        `MAX_OVERRIDES` subclasses define it: such a call says little about any of them."""
        kind, _, rest = site.callee.partition(":")
        if kind != "method":
            return []
        owner, _, name = rest.partition(":")
        found = []
        for subclass in self._descendants(Target(file, owner, "class")):
            summary = self.summaries[subclass.file]
            qualname = f"{subclass.qualname}.{name}"
            if qualname in summary.functions:
                found.append(Target(subclass.file, qualname, "function"))
        return found if len(found) <= MAX_OVERRIDES else []

    def _descendants(self, cls: Target) -> list[Target]:
        """The project classes derived from `cls`, directly or not, sorted."""
        found: set[Target] = set()
        queue = deque(self._subclasses.get(cls, ()))
        while queue:
            current = queue.popleft()
            if current not in found:
                found.add(current)
                queue.extend(self._subclasses.get(current, ()))
        return sorted(found)

    @cached_property
    def _subclasses(self) -> dict[Target, list[Target]]:
        """Per project class, the project classes that name it as a base."""
        subclasses: dict[Target, list[Target]] = defaultdict(list)
        for file in sorted(self.summaries):
            for qualname in self.summaries[file].classes:
                cls = Target(file, qualname, "class")
                for base in self.bases(cls):
                    subclasses[base].append(cls)
        return subclasses

    @cached_property
    def _mentioned(self) -> frozenset[str]:
        """Every identifier some file of the project mentions (`ModuleSummary.mentions`)."""
        return frozenset(self._mentioned_in)

    def never_called(self, function: Target) -> bool:
        """Whether nothing can run `function`, a method or a private function (a module's
        public functions are its API): no file of the project, tests included, mentions its
        name (calls it, passes it, registers it by name in a config), it has no decorator
        that may register it, it is no special method, and no framework class outside the
        project that its class derives from may call it (`nn.Module` calls only its own
        methods: `forward`, `extra_repr`, ...). The methods of an `autograd.Function` that no
        file names run nowhere: PyTorch runs its `forward` and `backward` only through
        `Cls.apply(...)`, and a Function is never built from a config string. The methods
        of a class that nothing builds run nowhere either (`_unbuilt_classes`), nor does a
        function, public or not, that only such functions call (`_only_unrun_callers`)."""
        summary = self.summaries.get(function.file)
        record = summary.functions.get(function.qualname) if summary else None
        if record is None or not function.qualname:
            return False
        if self._never_runs(function, record):
            return True
        owner = None if record.owner is None else Target(function.file, record.owner, "class")
        name = function.qualname.rpartition(".")[2]
        if record.decorators or name in _MODULE_CALLBACKS:
            return False
        if name.startswith("__") and name.endswith("__"):
            return False
        if name in self._mentioned:
            return False
        if owner is None:  # a module's public function is its API
            return name.startswith("_")
        return all(base in _PLAIN_BASES for base in self._imported_bases(owner))

    def _never_runs(self, function: Target, record: FunctionSummary) -> bool:
        """`never_called` for what the program shows: `function` is in a module that never
        runs, a method of a class that nothing builds or of an `autograd.Function` that no
        file names, or only such functions call it (`_only_unrun_callers`)."""
        if function.file in self._dead_modules:
            return True
        owner = None if record.owner is None else Target(function.file, record.owner, "class")
        if owner is not None and (
            self._unbuilt_classes.get(owner, False) or self._unnamed_autograd_function(owner)
        ):
            return True
        return self._only_unrun_callers(function)

    def _only_unrun_callers(self, function: Target) -> bool:
        """Whether only functions that never run call `function`, and no file but theirs
        mentions its name (`_may_name`: not a file that defines or imports another function
        of that name): Point-BERT's vendored `farthest_point_sample`, which only the
        methods of PointNet++ classes that nothing builds call; for an `__init__`, its
        class's name (TFB's copy of `ProbMask`, built only by a copied `ProbAttention` that
        nothing builds). A cycle of calls runs."""
        if function.qualname.endswith("__") and not function.qualname.endswith(".__init__"):
            return False  # Python runs special methods; a construction calls `__init__`
        if function in self._unrun_callers:
            return self._unrun_callers[function]
        self._unrun_callers[function] = False  # A cycle of calls: it may run.
        callers = self._callers.get(function, [])
        named = function
        if function.qualname.endswith(".__init__"):  # named by its class: `ProbMask(B, ...)`
            named = Target(function.file, function.qualname.rpartition(".")[0], "class")
        name = named.qualname.rpartition(".")[2]
        elsewhere = {
            file for file in self._mentioned_in.get(name, frozenset())
            if self._may_name(file, name, named)
        }
        found = (
            bool(callers)
            and elsewhere <= {file for file, _, _ in callers}
            and all(
                caller.qualname
                and not caller.qualname.endswith("__")
                and self._never_runs(Target(file, caller.qualname, "function"), caller)
                for file, caller, _ in callers
            )
        )
        self._unrun_callers[function] = found
        return found

    @cached_property
    def _mentioned_in(self) -> dict[str, frozenset[str]]:
        """Per name, the files that mention it (`ModuleSummary.mentions`)."""
        files: dict[str, set[str]] = defaultdict(set)
        for file, summary in self.summaries.items():
            for name in summary.mentions:
                files[name].add(file)
        return {name: frozenset(found) for name, found in files.items()}

    @cached_property
    def _unbuilt_classes(self) -> dict[Target, bool]:
        """Per project class, whether nothing builds it: the program uses its module
        (`_used_module`), but no file of the project, tests, configs and launchers included,
        names it other than as the base of classes nothing builds either, and it has no
        decorator that may register it (a legacy `VectorQuantizer` beside the improved class
        every model imports, a `LightningModule` no Hydra config names), so none of its
        methods runs. In a cycle of bases, what the other classes say decides."""

        def compute(cls: Target, unbuilt) -> bool:
            record = self.summaries[cls.file].classes[cls.qualname]
            name = cls.qualname.rpartition(".")[2]
            if cls.file in self._dead_modules:
                return True
            if record.decorated or self._named_elsewhere(cls) or not self._used_module(cls.file):
                return False
            return all(unbuilt(subclass) for subclass in self._named_as_base.get(name, ()))

        classes = sorted(
            Target(file, qualname, "class")
            for file, summary in self.summaries.items()
            for qualname in summary.classes
        )
        return _solve(classes, compute, unknown=True)

    def _named_elsewhere(self, cls: Target) -> bool:
        """Some file names the class `cls` (`_may_name`)."""
        name = cls.qualname.rpartition(".")[2]
        return any(self._may_name(file, name, cls) for file in self._mentioned_in.get(name, ()))

    def _may_name(self, file: str, name: str, target: Target) -> bool:
        """Whether the mentions of `name` in `file` may name `target`: they do in its own
        file; elsewhere, not when the file defines its own class or function of that name
        (LlamaGen's `vq_model.py` builds its own `VectorQuantizer`, not the legacy one of
        `vqgan/quantize.py`) or imports the name from a module where it is another one (TFB's
        Time-Series-Library models import their own `ProbAttention`, not the copy in a
        baseline's package), nor in a module that cannot be imported (`_broken_modules`; a
        config that no entry point imports names classes for a framework that reads it)."""
        if file == target.file:
            return True
        if file in self._broken_modules:
            return False  # TALENT's `pretraining.py`, which cannot be imported
        summary = self.summaries[file]
        if name in summary.classes or name in summary.functions:
            return False
        imported = summary.imports.get(name)
        if imported is None or target.file in self._imports.get(file, ()):
            return True  # also `from libs.uvit_t2i import UViT` beside another import of it
        found = self.resolve(file, f"import:{imported}")
        return found is None or found == target

    @cached_property
    def _named_as_base(self) -> dict[str, list[Target]]:
        """Per class name, the project classes that name it as a base (`class OneWay(SF2M):`,
        also through an attribute, `class Net(models.Base):`), resolved or not: a class
        whose subclass is built runs its inherited methods."""
        named: dict[str, list[Target]] = defaultdict(list)
        for file, summary in self.summaries.items():
            for qualname, record in summary.classes.items():
                for base in record.bases:
                    named[_last_name(base)].append(Target(file, qualname, "class"))
        return named

    @cached_property
    def _entry_points(self) -> list[str] | None:
        """The files that run a program of a project that is no distribution: its tests,
        notebooks, launchers and configs, and its scripts (an `if __name__ == "__main__":`
        block, or work at the top level: `main()`), but those of a superseded copy the
        project keeps (`conventions.is_superseded`: `old/train.py`), which run only where
        another entry point reaches them. None for a distribution (a `setup.py`,
        `setup.cfg` or `pyproject.toml` among its files), whose modules are its users' API
        even where none of its own files uses them, and for a program
        without entry points (a module linted alone): what runs there is not known."""
        if any(PurePosixPath(file).name in _PACKAGING_FILES for file in self.summaries):
            return None
        found = [
            file
            for file, summary in self.summaries.items()
            if (
                not file.endswith(".py")
                or file in self._test_paths
                or summary.runs_as_script
                or summary.works_at_top_level
            )
            and not is_superseded(PurePosixPath(file))
        ]
        return found or None

    @cached_property
    def _unrun_modules(self) -> frozenset[str]:
        """The Python modules that no entry point (`_entry_points`) runs: a module runs when
        a file that runs imports it or names it (its stem in a string, a config or a
        launcher: `python -m tools.train`, `model: resnet`), and a package's `__init__.py`
        runs; where a file that runs imports modules by a name it computes, so does every
        module of the package the name starts with (`f"baselines.{name}"`), or, where the name
        says none (`importlib.import_module(args.model)`), every module beside one that runs. A
        vendored copy of a library that no entry point reaches
        (`fbrs/model/losses.py`, imported only by the rest of the copy) runs nowhere, and so
        does a superseded copy of the project (`old/train.py`), which a word of another
        file's (`train`) does not name."""
        if self._entry_points is None:
            return frozenset()
        by_stem: dict[str, list[str]] = defaultdict(list)
        for file in self.summaries:
            by_stem[PurePosixPath(file).stem].append(file)
        running = [*self._entry_points, *(f for f in self.summaries if f.endswith("__init__.py"))]
        reached = set(running)
        superseded = {file for file in self.summaries if is_superseded(PurePosixPath(file))}
        while running:
            file = running.pop()
            named = (
                other
                for word in self.summaries[file].mentions
                for other in by_stem.get(word, ())
                # `train` in a README names `tools/train.py`, not a superseded `old/train.py`
                if file in superseded or other not in superseded
            )
            for other in (*self._imports.get(file, ()), *named):
                if other not in reached:
                    reached.add(other)
                    running.append(other)
        packages = {package for file in reached for package in self.summaries[file].imports_by_name}
        if packages:
            # `importlib.import_module(args.model)` may run any module beside one that runs
            # (`models/pointnet2_cls_msg.py`, which a user names on the command line);
            # `f"baselines.{name}"` any module of a `baselines` folder.
            folders = {PurePosixPath(file).parent for file in reached} if "" in packages else set()
            named = {package.replace(".", "/") for package in packages if package}
            reached.update(
                file
                for file in self.summaries
                if (parent := PurePosixPath(file).parent) in folders
                or any(f"/{parent.as_posix()}".endswith(f"/{package}") for package in named)
            )
        return frozenset(file for file in self.summaries if file not in reached)

    @cached_property
    def _dead_modules(self) -> frozenset[str]:
        """The modules that never run: no entry point reaches them (`_unrun_modules`), or
        nothing imports them and they cannot be imported (`_broken_modules`)."""
        return self._unrun_modules | self._broken_modules

    @cached_property
    def _broken_modules(self) -> frozenset[str]:
        """The Python modules that cannot be imported and that nothing imports: no script,
        and at their top level, outside any `try` or `if`, an import of a module of the
        project's own packages whose package is gone (`from TALENT.model.tabnet.utils import
        ...` in TALENT's copies of pytorch-tabnet, where the package is now
        `TALENT.model.lib.tabnet`). A missing last part may be a compiled extension
        (`detectron2._C`), and a missing folder the linter skips (`third_party`) may be
        there: neither makes a module broken."""
        return frozenset(
            file
            for file, summary in self.summaries.items()
            if file.endswith(".py")
            and file not in self._imported_files
            and not summary.runs_as_script
            and not summary.works_at_top_level
            and any(self._missing_package(file, module) for module in summary.unguarded_imports)
        )

    def _missing_package(self, file: str, module: str) -> bool:
        """`module`, imported by `file`, names a package of the project that does not exist:
        its longest existing prefix is a project package or folder (`TALENT.model`), and at
        least two parts follow it (`tabnet.utils`), the first not a folder the linter skips."""
        found = self.modules.resolve(file, module)
        if found is None:
            return False
        path = module.replace(".", "/")
        if any(
            f"/{other}".endswith((f"/{path}.py", f"/{path}/__init__.py")) for other in self.summaries
        ):
            return False  # there, but where the linker looked for another package of that name
        target, missing = found
        if len(missing) < 2 or not target.endswith("__init__.py"):
            return False
        # Folders without `__init__.py` are namespace packages that import fine (axolotl's
        # `monkeypatch/utils.py`, TALENT's `model/`): what is gone starts where no file is.
        folder = PurePosixPath(target).parent
        while missing and any(
            other.startswith(f"{folder / missing[0]}/") or other == f"{folder / missing[0]}.py"
            for other in self.summaries
        ):
            folder, missing = folder / missing[0], missing[1:]
        return len(missing) >= 2 and missing[0] not in DEFAULT_EXCLUDE

    def _used_module(self, file: str) -> bool:
        """Another file imports `file`, or names it (`_target_:
        src.models.cfm_module.CFMLitModule` in a Hydra config), and none imports all its
        names (`from .losses import *` makes them a package's API). A module nothing
        imports may be a library's API, or a script."""
        if file in self._star_imported:
            return False
        if file in self._imported_files:
            return True
        stem = PurePosixPath(file).stem
        return stem in self._mentioned and any(
            _holds(summary.mentions, stem)
            for other, summary in self.summaries.items()
            if other != file
        )

    @cached_property
    def _imported_files(self) -> frozenset[str]:
        """The project files another file imports."""
        return frozenset(imported for found in self._imports.values() for imported in found)

    @cached_property
    def _star_imported(self) -> frozenset[str]:
        """The project files some file imports with `from module import *` and passes on:
        a package's `__init__.py`, or a module other files import. A star import in a
        module nothing imports (a vendored `exp_imports/default.py` whose experiments were
        left out) passes no name on."""
        return frozenset(
            found[0]
            for file, summary in self.summaries.items()
            if PurePosixPath(file).name == "__init__.py" or file in self._imported_files
            for star in summary.stars
            if (found := self.modules.resolve(file, star)) is not None
        )

    def _unnamed_autograd_function(self, cls: Target) -> bool:
        """`cls` derives from `torch.autograd.Function` and no file of the project names it,
        not even as a base of another."""
        name = cls.qualname.rpartition(".")[2]
        return name not in self._mentioned and name not in self._named_as_base and any(
            base in _AUTOGRAD_FUNCTIONS for base in self._imported_bases(cls)
        )

    def _imported_bases(self, cls: Target, depth: int = 0) -> list[str]:
        """What the classes outside the project that `cls` derives from are imported as
        (`torch.nn.Module`), through its project bases; a base the linker cannot resolve
        counts as "?"."""
        record = self.summaries[cls.file].classes.get(cls.qualname)
        if record is None or depth > MAX_DEPTH:
            return ["?"]
        names = []
        for ref in record.bases:
            base = self.resolve(cls.file, ref)
            if base is not None and base.kind == "class":
                names.extend(self._imported_bases(base, depth + 1))
            elif ref.startswith("import:") and not ref.startswith("import:."):
                names.append(ref[len("import:"):])
            else:
                names.append("?")
        return names

    @cached_property
    def periodic_predicates(self) -> frozenset[str]:
        """The names of project functions that return a periodic test of their arguments
        (`should_log`, `step_check`): a call of one decides that what it guards runs on few
        steps. By name: the object a method is called on is rarely known."""
        return frozenset(
            name for summary in self.summaries.values() for name in summary.periodic_predicates
        )

    def _sparse(self, site: CallSite, caller: Target | None = None) -> bool:
        """Not on every iteration (`CallSite.sparse`), guarded by a call of a periodic
        predicate (`if step_check(step, n):`), or by a test of a parameter of `caller` that
        its callers pass a loop counter (`if iteration == last + k:`)."""
        return (
            site.sparse
            or any(name in self.periodic_predicates for name in site.predicates)
            or any(self.never_passed(test) for test in site.settings)
            or caller is not None
            and any(self.receives_counter(caller, name, kind) for name, kind in site.counter_guards)
        )

    def never_passed(self, test: list) -> bool:
        """No run the project ships passes `test` of a setting (`program.options`): every
        value it may hold fails it."""
        values = self.setting_values(test[0])
        return values is not None and not any(takes(test, value) for value in values)

    def setting_values(self, key: str) -> list | None:
        """The values a setting holds in the runs the project ships: its defaults
        (`ModuleSummary.setting_defaults`) and what launchers give it (`.settings_given`,
        matched by its last part, `CLIP_GRAD` of `TRAIN.CLIP_GRAD`, or by another name of
        its option, `-r` of `--regularization`; a bare flag, `--fp16`, gives what its
        `store_true` option stores); None when one is not
        known, when no default is declared, or when code of the project may set it
        (`args.verbose = True`, `_set_on_settings`). An attribute of the same name that
        a constructor sets on the object it builds (`self.kl_threshold = kl_threshold` in a
        scheduler's `__init__`) is that object's: the settings' own class declares their
        defaults."""
        leaf = key.rpartition(".")[2]
        settings = self._settings
        declared = settings.defaults.get(key)
        if not declared or leaf in self._set_on_settings:
            return None
        names = (leaf, *settings.aliases.get(leaf, ()))  # `-r` of `--regularization`
        given = [value for name in names for value in settings.given.get(name, ())]
        stored = settings.flags.get(leaf, set())
        if len(stored) == 1:  # a launcher's bare `--fp16`, for a `store_true` flag
            given = [value or [next(iter(stored))] for value in given]
        values = [*declared, *given]
        if not all(values):
            return None
        return [value[0] for value in values]

    @cached_property
    def _settings(self) -> _ProjectSettings:
        """What the files outside tests say of the run's settings, joined."""
        defaults: dict[str, list[list]] = defaultdict(list)
        given: dict[str, list[list]] = defaultdict(list)
        aliases: dict[str, set[str]] = defaultdict(set)
        flags: dict[str, set[bool]] = defaultdict(set)
        for file, summary in self.summaries.items():
            if file in self.tests:
                continue
            for name, stored in summary.setting_flags:
                flags[name].add(stored)
            for name, *value in summary.setting_defaults:
                defaults[name].append(value)
            for name, *value in summary.settings_given:
                given[name].append(value)
            for alias, name in summary.setting_aliases:
                aliases[name].add(alias)
        return _ProjectSettings(defaults, given, aliases, flags)

    @cached_property
    def switched_on(self) -> frozenset[str]:
        """The attributes that code of the project that may run sets to a true value
        (`FunctionSummary.switches`): `self.gradient_checkpointing = False` in a class whose
        attribute nothing else sets (a copied model whose `enable` method nothing calls) is
        off in every run. Hugging Face's hook `_set_gradient_checkpointing(module, value)`
        runs only when the project names it or the methods of `transformers`/`diffusers`
        that call it (`gradient_checkpointing_enable()`, `enable_gradient_checkpointing()`).
        A library's switch (`LIBRARY_SWITCHES`) is on when the project names a method of the
        library that turns it on (`model.set_grad_checkpointing()`) or passes it as a keyword
        (`from_pretrained(name, gradient_checkpointing=True)`); a switch a constructor
        stores (`self.with_cp = with_cp`), when the project may build its class with it on
        (not `never_built_with`)."""
        stored = (
            attribute
            for file, summary in self.summaries.items()
            for qualname, function in summary.functions.items()
            for attribute, parameter in function.stored_switches
            if not self.never_built_with(Target(file, qualname, "function"), parameter)
        )
        return self._set_on | frozenset(stored)

    @cached_property
    def _set_on(self) -> frozenset[str]:
        """`switched_on` but for the switches constructors store (`with_cp=False`), which
        are on only when the project builds their class with them on."""
        return frozenset(attribute for attribute, _, _ in self._switches_set)

    @cached_property
    def _set_on_settings(self) -> frozenset[str]:
        """`_set_on` but for what a constructor sets on the object it builds
        (`self.kl_threshold = kl_threshold` in a scheduler's `__init__`): that object's
        attribute, not a setting of the run; and for what tests set (`cfg.flooding_level =
        0.1` in a test of the trainer), which no shipped run does."""
        return frozenset(
            attribute for attribute, qualname, file in self._switches_set
            if not qualname.endswith(".__init__") and file not in self.tests
        )

    @cached_property
    def _switches_set(self) -> frozenset[tuple[str, str, str]]:
        """`(attribute, qualified name of the function that sets it, its file)` for each
        switch that code of the project that may run sets on, and `(attribute, "", "")` for
        a library's switch the project turns on."""
        set_by_code = (
            (attribute, qualname, file)
            for file, summary in self.summaries.items()
            for qualname, function in summary.functions.items()
            if function.switches
            and not self.never_called(Target(file, qualname, "function"))
            and not self._checkpointing_hook_never_run(qualname)
            for attribute in function.switches
        )
        set_by_library = (
            (attribute, "", "")
            for attribute, enablers in LIBRARY_SWITCHES.items()
            if self._switch_enablers & enablers or attribute in self._keywords_on
        )
        return frozenset((*set_by_code, *set_by_library))

    def _checkpointing_hook_never_run(self, qualname: str) -> bool:
        """`qualname` is Hugging Face's `_set_gradient_checkpointing` hook and nothing in the
        project names it or a method that calls it."""
        return qualname.rpartition(".")[2] == _CHECKPOINTING_HOOK and not (
            self._switch_enablers & LIBRARY_SWITCHES["gradient_checkpointing"]
        )

    @cached_property
    def _switch_enablers(self) -> frozenset[str]:
        """The methods that turn a library's switch on that some file of the project names
        (`ModuleSummary.switch_enablers`)."""
        return frozenset(
            name for summary in self.summaries.values() for name in summary.switch_enablers
        )

    @cached_property
    def _callers(self) -> dict[Target, list[tuple[str, FunctionSummary, CallSite]]]:
        """Per function: the calls of it outside test files."""
        return self._callers_in(self._edges)

    @cached_property
    def _direct_callers(self) -> dict[Target, list[tuple[str, FunctionSummary, CallSite]]]:
        return self._callers_in(self._direct_edges)

    def _callers_in(
        self, edges: dict[tuple[str, str], list[tuple[CallSite, Target]]]
    ) -> dict[Target, list[tuple[str, FunctionSummary, CallSite]]]:
        callers: dict[Target, list[tuple[str, FunctionSummary, CallSite]]] = defaultdict(list)
        for file, function in self._functions:
            if file in self.tests:
                continue
            for site, target in edges[(file, function.qualname)]:
                callers[target].append((file, function, site))
        return callers

    # Step helpers and training loops --------------------------------------------------------

    @cached_property
    def step_helpers(self) -> frozenset[Target]:
        """Training steps (`FunctionSummary.steps`), directly or through another step
        helper."""
        helpers = {
            Target(file, function.qualname, "function")
            for file, function in self._functions
            if function.steps and function.qualname
        }
        changed = True
        while changed:
            changed = False
            for file, function in self._functions:
                own = Target(file, function.qualname, "function")
                if own in helpers or not function.qualname:
                    continue
                if any(
                    site.loop == -1 and target in helpers
                    for site, target in self._edges[(file, function.qualname)]
                ):
                    helpers.add(own)
                    changed = True
        return frozenset(helpers)

    @cached_property
    def _runs(self) -> dict[tuple[str, int], list[Target]]:
        """Per call (file, ordinal): the project functions it runs (the call graph's edges)."""
        runs: dict[tuple[str, int], list[Target]] = defaultdict(list)
        for (file, _), edges in self._edges.items():
            for site, target in edges:
                runs[(file, site.ordinal)].append(target)
        return runs

    def _loop_kind(self, file: str, function: FunctionSummary, ordinal: int) -> str | None:
        """"train" for a training loop (by itself or through a step helper), "eval" for an
        evaluation loop, None for any other loop."""
        for loop in function.loops:
            if loop.ordinal != ordinal:
                continue
            if loop.trains or any(
                site.loop == ordinal and target in self.step_helpers
                for site, target in self._edges[(file, function.qualname)]
            ):
                return "train"
            return "eval" if loop.evaluates else None
        return None

    # Per-step functions ---------------------------------------------------------------------

    @cached_property
    def _per_step(self) -> dict[str, dict[Target, tuple[Hop, ...]]]:
        """Per kind of step, the per-step functions with their call paths (breadth first)."""
        result: dict[str, dict[Target, tuple[Hop, ...]]] = {}
        for kind in STEP_KINDS:
            paths: dict[Target, tuple[Hop, ...]] = {}
            queue: deque[Target] = deque()
            for hook in self._hooks(kind):
                paths.setdefault(hook, ())
                queue.append(hook)
            for forward, hop in self._trained_forwards if kind == "train" else ():
                if forward not in paths:
                    paths[forward] = (hop,)
                    queue.append(forward)
            for step, hop in self._engine_steps:
                function = self.function(step)
                step_kind = "train" if function is not None and function.steps else "eval"
                if step_kind == kind and step not in paths:
                    paths[step] = (hop,)
                    queue.append(step)
            for file, function in self._functions:
                if file in self.tests:
                    continue
                edges = self._edges[(file, function.qualname)]
                # Loops that run an evaluation on every iteration (`for epoch in ...: loss =
                # train(); accs = test()`, full-batch training): the host waits for the GPU
                # there by design, and the step's own reads add nothing to undo.
                evaluating = {
                    site.loop for site, target in edges
                    if not self._sparse(site) and self._evaluates(site, target)
                }
                for site, target in edges:
                    if site.loop == -1 or self._sparse(site) or target in paths:
                        continue
                    loop_kind = self._loop_kind(file, function, site.loop)
                    if loop_kind == "train" and site.evaluation_only:
                        continue  # `if opt.test: self.save_result(...)` in the training loop
                    if loop_kind == "train" and self._evaluates(site, target):
                        loop_kind = "eval"  # `test()` in the epoch loop
                    elif loop_kind == "train" and site.loop in evaluating:
                        continue  # full-batch training: it waits for `test()` every epoch
                    if loop_kind == kind:
                        paths[target] = (self._hop(file, site, target),)
                        queue.append(target)
            while queue:
                current = queue.popleft()
                summary = self.function(current)
                if summary is not None and summary.caches_its_result:
                    continue  # `@lru_cache def gt(classes, device)`: built once, not per step
                for site, target in self._edges.get((current.file, current.qualname), ()):
                    if self._sparse(site, current) or target in paths:
                        continue
                    route = paths[current]
                    if site.needs or site.needs_left_on:  # `if normals is not None: gather(normals)`
                        route = self._route_passing(
                            paths, current, site.needs, kind, left_on=site.needs_left_on
                        )
                        if route is None:
                            continue
                    if kind == "train" and (site.evaluation_only or self._evaluates(site, target)):
                        continue  # `if stage != Stage.TRAIN: save(...)`: evaluation steps only
                    paths[target] = (*route, self._hop(current.file, site, target))
                    queue.append(target)
            result[kind] = paths
        return result

    def _hop(self, file: str, site: CallSite, target: Target) -> Hop:
        """The hop of a per-step path where `site`, in `file`, runs `target`."""
        runner = self._runners.get((file, site.ordinal, target))
        return Hop(file, site.ordinal, target.qualname, runner.qualname if runner else "")

    def _route_passing(
        self, paths: dict[Target, tuple[Hop, ...]], function: Target, parameters: list[str],
        kind: str, depth: int = 0, left_on: list[str] = (),
    ) -> tuple[Hop, ...] | None:
        """A per-step path to `function` whose last call passes it every one of
        `parameters`: its own path (a framework's hook, with no call on it, may be passed
        anything), else one through another caller that runs on every step of this kind
        and passes them; None when no caller passes them on every step. A parameter the
        caller passes on from its own (`compute_loss(labels, output, valid)` in `def
        multi_crit(criterion, output, labels, valid)`) must be given to the caller in turn
        (`multi_crit(criterion, output, labels, None)` turns it off). The parameters
        `left_on` are on by default: a call that leaves them out passes them
        (`self.decoder(x, infer=infer)` from a step given `infer=False` turns one off)."""
        path = paths[function]
        last = self._sites.get((path[-1].file, path[-1].call)) if path else None
        caller = Target(path[-1].file, path[-2].callee, "function") if len(path) > 1 else None
        if last is None or self._gives(paths, caller, last, function, parameters, kind, depth, left_on):
            return path
        for file, caller_summary, site in self._callers.get(function, ()):
            caller_target = Target(file, caller_summary.qualname, "function")
            if self._sparse(site) or not self._gives(
                paths, caller_target, site, function, parameters, kind, depth, left_on
            ):
                continue
            hop = self._hop(file, site, function)
            if caller_target in paths:
                return (*paths[caller_target], hop)
            if site.loop != -1 and self._loop_kind(file, caller_summary, site.loop) == kind:
                return (hop,)
        return None

    def _gives(
        self, paths: dict[Target, tuple[Hop, ...]], caller: Target | None, site: CallSite,
        function: Target, parameters: list[str], kind: str, depth: int, left_on: list[str] = (),
    ) -> bool:
        """Whether `site`, a call of `function` in `caller`, passes it every one of
        `parameters` (`_passes`), those it passes on from `caller`'s own parameters given
        to `caller` on a per-step path in turn (`_MAX_PASS_THROUGH` deep)."""
        if not self._passes(site, function, parameters, left_on):
            return False
        summary = self.function(function)
        if summary is None or caller is None or caller not in paths or depth >= _MAX_PASS_THROUGH:
            return True

        def passed_on(names: list[str]) -> list[str]:
            return [
                argument[1]
                for argument in (_argument(site, summary, name) for name in names)
                if argument is not None and argument[0] == "param"
            ]

        forwarded, forwarded_on = passed_on(parameters), passed_on(left_on)
        return not (forwarded or forwarded_on) or self._route_passing(
            paths, caller, forwarded, kind, depth + 1, forwarded_on
        ) is not None

    def _passes(
        self, site: CallSite, function: Target, parameters: list[str], left_on: list[str] = ()
    ) -> bool:
        """Whether `site`, a call of `function`, passes every one of its `parameters` (or
        may: it unpacks `*args` or `**kwargs`), none of them as `None` or `False`, and turns
        none of `left_on` off."""
        summary = self.function(function)
        if summary is None:
            return True
        if any(_argument(site, summary, name) == ["off"] for name in left_on):
            return False
        names = summary.parameters
        bound = _bound(site, summary)
        return all(
            (
                name in site.keywords
                or "**" in site.keywords
                or site.positional == -1
                or (name in names and names.index(name) - bound < site.positional)
            )
            and _argument(site, summary, name) != ["off"]
            for name in parameters
        )

    @cached_property
    def _sites(self) -> dict[tuple[str, int], CallSite]:
        """Every call site of the program, by file and ordinal."""
        return {
            (file, site.ordinal): site
            for file, summary in self.summaries.items()
            for function in summary.functions.values()
            for site in function.calls
        }

    def _evaluates(self, site: CallSite, target: Target) -> bool:
        """The call runs an evaluation: a callee that switches a model to eval mode
        (`model.eval()`) and trains nothing itself. Its reads are an evaluation step's, even
        when a training loop makes the call (`test()` in the epoch loop of a full-batch
        training)."""
        callee = self.function(target)
        return callee is not None and callee.evaluates and not callee.steps

    def _hooks(self, kind: str) -> list[Target]:
        """Methods a framework runs on every step of this kind (outside test files)."""
        found = []
        for file in sorted(self.summaries):
            if file in self.tests:
                continue
            methods: dict[str, list[str]] = defaultdict(list)
            for function in self.summaries[file].functions.values():
                if function.owner is not None:
                    methods[function.owner].append(function.qualname)
            for owner in sorted(methods):
                bases = self.external_bases(Target(file, owner, "class"))
                for qualname in methods[owner]:
                    method = qualname.rsplit(".", 1)[-1]
                    if any(framework_hook_kind(base, method) == kind for base in bases):
                        found.append(Target(file, qualname, "function"))
        return found

    @cached_property
    def _trained_forwards(self) -> list[tuple[Target, Hop]]:
        """The `forward` of each project model handed to a framework that runs it on every
        training step (`Trainer(model=model, ...)` of transformers, or a project subclass),
        outside tests, with the hand-over as the first hop of its per-step path. A model
        bound on several paths (`Llava.from_pretrained(...)` or `Mpt.from_pretrained(...)`)
        is any of them."""
        found = []
        for file, site in self._sites_outside_tests:
            model = site.arguments.get("model", site.arguments.get("0"))
            if model is None or not self._runs_its_model(file, site.callee):
                continue
            for cls in sorted(self._instance_classes(file, model)):
                forward = self.method(cls, "forward")
                if forward is not None:
                    found.append((forward, Hop(file, site.ordinal, forward.qualname)))
        return found

    @cached_property
    def _sites_outside_tests(self) -> list[tuple[str, CallSite]]:
        """Every call site of the files outside tests, with its file: where a framework may
        be handed a model or a step function."""
        return [
            (file, site)
            for file, function in self._functions
            if file not in self.tests
            for site in function.calls
        ]

    @cached_property
    def _engine_steps(self) -> list[tuple[Target, Hop]]:
        """The project functions handed to a framework class that runs its function on every
        iteration (`trainer = Engine(train_step)` of Ignite, or a project subclass), outside
        tests, with the hand-over as the first hop of their per-step path: a training step
        when the function steps an optimizer, else an evaluation step."""
        found = []
        for file, site in self._sites_outside_tests:
            step = site.arguments.get("process_function", site.arguments.get("0"))
            if not step or step[0] != "function":
                continue
            if not self._framework_class(file, site.callee, runs_its_function_per_step):
                continue
            target = self.resolve(file, step[1])
            if target is not None and target.kind == "function":
                runner = _last_name(site.callee)
                found.append((target, Hop(file, site.ordinal, target.qualname, runner)))
        return found

    def _runs_its_model(self, file: str, ref: Ref) -> bool:
        """Whether `ref`, called in `file`, builds a framework class that runs its model on
        every training step (`conventions.runs_its_model_per_step`), or a project subclass."""
        return self._framework_class(file, ref, runs_its_model_per_step)

    def _framework_class(self, file: str, ref: Ref, test: Callable[[str], bool]) -> bool:
        """Whether `ref`, called in `file`, builds a framework class that `test` accepts (by
        qualified name), or a project subclass of one; in the framework's own repository,
        its class (`ignite.engine.engine.Engine`)."""
        target = self.resolve(file, ref)
        if target is not None and target.kind == "class":
            module = self.modules.name_of.get(target.file)
            own = [f"{module}.{target.qualname}"] if module is not None else []
            names = own + self.external_bases(target)
        elif target is None and ref.startswith("import:") and not ref.startswith("import:."):
            names = [ref[len("import:"):]]
        else:
            return False
        return any(map(test, names))

    @cached_property
    def _per_forward(self) -> frozenset[Target]:
        """The functions every forward pass runs: those a class's `forward` calls (outside
        tests), directly or through other functions, outside sparse guards and modes that a
        caller turns off (`_mode_off`)."""
        found: set[Target] = set()
        queue: deque[Target] = deque()
        for file, function in self._functions:
            if file not in self.tests and function.owner is not None and (
                function.qualname.rsplit(".", 1)[-1] == "forward"
            ):
                queue.append(Target(file, function.qualname, "function"))
        while queue:
            current = queue.popleft()
            for site, target in self._edges.get((current.file, current.qualname), ()):
                if not self._sparse(site) and target not in found and not self._mode_off(current, site):
                    found.add(target)
                    queue.append(target)
        return frozenset(found)

    def _mode_off(self, function: Target, site: CallSite) -> bool:
        """`site` needs a parameter of `function` that is on by default left on
        (`CallSite.needs_left_on`), and a caller outside tests turns it off: a mode of the
        forward pass, not every pass (so-vits-svc's diffusion decoder samples only with
        `infer=True`, and its training step passes `infer=False`)."""
        return any(self._turned_off_by_a_caller(function, name) for name in site.needs_left_on)

    def _turned_off_by_a_caller(self, function: Target, parameter: str, depth: int = 0) -> bool:
        """Some caller outside tests passes `parameter` of `function` as `None` or `False`,
        itself or through a parameter of its own that its callers turn off in turn
        (`self.decoder(x, infer=infer)` in a forward that the training step calls with
        `infer=False`)."""
        summary = self.function(function)
        if summary is None:
            return False
        for file, caller, site in self._callers.get(function, ()):
            argument = _argument(site, summary, parameter)
            if argument == ["off"]:
                return True
            if (
                argument is not None
                and argument[0] == "param"
                and depth < _MAX_PASS_THROUGH
                and self._turned_off_by_a_caller(
                    Target(file, caller.qualname, "function"), argument[1], depth + 1
                )
            ):
                return True
        return False

    def per_step(self, target: Target) -> tuple[str, tuple[Hop, ...]] | None:
        """The kind of step ("train" first) and the call path of a per-step function."""
        for kind in STEP_KINDS:
            path = self._per_step[kind].get(target)
            if path is not None:
                return kind, path
        return None

    # Devices ----------------------------------------------------------------------------------

    @cached_property
    def _imports(self) -> dict[str, set[str]]:
        """Per file, the project files it imports."""
        graph: dict[str, set[str]] = {}
        for file, summary in self.summaries.items():
            imported = set()
            for target in summary.imported_modules:
                found = self.modules.resolve(file, target)
                if found is not None:
                    imported.add(found[0])
            imported.discard(file)
            graph[file] = imported
        return graph

    @cached_property
    def _reach(self) -> tuple[list[str], dict[str, int]]:
        """The files outside tests, and per file the set of them it imports, directly or not,
        itself included, as a bit set (an integer: bit i is `files[i]`)."""
        files = sorted(file for file in self.summaries if file not in self.tests)
        reach = {file: 1 << position for position, file in enumerate(files)}
        changed = True
        while changed:  # import cycles converge: sets only grow, and they are finite
            changed = False
            for file in files:
                grown = reach[file]
                for imported in self._imports.get(file, ()):
                    grown |= reach.get(imported, 0)
                if grown != reach[file]:
                    reach[file] = grown
                    changed = True
        return files, reach

    def _files_of(self, bits: int) -> set[str]:
        files, _ = self._reach
        return {file for position, file in enumerate(files) if bits >> position & 1}

    def _bits_of(self, chosen: Iterable[str]) -> int:
        files, reach = self._reach
        return sum(1 << files.index(file) for file in set(chosen) if file in reach)

    @cached_property
    def _entries(self) -> list[str]:
        """The files outside tests that no other file imports: scripts, notebooks, a
        library's top modules; each with what it imports is a program."""
        files, _ = self._reach
        importers = {imported for file in files for imported in self._imports.get(file, ())}
        return [file for file in files if file not in importers]

    @cached_property
    def _imports_only_below(self) -> dict[str, tuple[int, ...]]:
        """Per file, the first PyTorch release that none of the programs it belongs to can
        be imported on: each imports a file that imports a module PyTorch removed
        (`ModuleSummary.imports_only_below`: `from torch._six import inf` in the `utils.py`
        every entry point imports). A file that belongs to any program without such an
        import runs on any release, and is not a key."""
        files, reach = self._reach
        removed = {
            file: tuple(summary.imports_only_below)
            for file, summary in self.summaries.items()
            if summary.imports_only_below and file in reach
        }
        if not removed:
            return {}
        positions = {file: files.index(file) for file in removed}
        capped_programs: list[tuple[int, tuple[int, ...]]] = []
        free = 0  # the files of programs that import on any release
        for entry in self._entries:
            program = reach[entry]
            caps = [cap for file, cap in removed.items() if program >> positions[file] & 1]
            if caps:
                capped_programs.append((program, min(caps)))
            else:
                free |= program
        found: dict[str, tuple[int, ...]] = {}
        for program, cap in capped_programs:
            for file in self._files_of(program & ~free):
                found[file] = max(found.get(file, cap), cap)
        return found

    @cached_property
    def _cuda_evidence(self) -> set[str]:
        return {
            file
            for file, summary in self.summaries.items()
            if file not in self.tests and (summary.uses_cuda or self._uses_cuda_helper(file))
        }

    @cached_property
    def cuda_training_files(self) -> frozenset[str]:
        """The files of training programs that run on CUDA. A program is what an entry (a file
        no other file imports: a script, a notebook) imports, directly or not; it trains when
        one of its files has a training loop or a training hook, and runs on CUDA when one of
        its files in the entry's own folder or below uses CUDA (the entry itself also through
        a device helper it calls: `dist_util.dev()`). A tutorial in `docs/` that imports the
        project's library is not on CUDA because some module of the library is. A notebook
        runs on CUDA only by its own evidence: it states its device in its own cells (a
        CPU-only tutorial that imports a CUDA library stays on the CPU)."""
        _, reach = self._reach
        entries = self._entries + sorted(self._training_files)
        training = self._bits_of(self._training_files)
        cuda = self._bits_of(self._cuda_evidence)
        found = 0
        for entry in entries:
            program = reach[entry]
            if program & training and program & cuda & self._bits_below(entry):
                found |= program
        return frozenset(
            file
            for file in self._files_of(found)
            if not file.endswith(".ipynb") or file in self._cuda_evidence
        )

    def _bits_below(self, entry: str) -> int:
        """The files in `entry`'s folder or below it, as a bit set."""
        return self._folder_bits.get(entry.rpartition("/")[0], 0)

    @cached_property
    def _folder_bits(self) -> dict[str, int]:
        """Per folder ("" for the top), the files in it or below it, as a bit set."""
        files, _ = self._reach
        bits: dict[str, int] = defaultdict(int)
        for position, file in enumerate(files):
            folder = file
            while folder:
                folder = folder.rpartition("/")[0]
                bits[folder] |= 1 << position
        return dict(bits)

    @cached_property
    def cuda_files(self) -> frozenset[str]:
        """Files that run on CUDA: evidence, what it imports, and CUDA training programs."""
        _, reach = self._reach
        imported = 0
        for file in self._cuda_evidence:
            imported |= reach[file]
        return frozenset(self._files_of(imported) | self.cuda_training_files)

    def _uses_cuda_helper(self, file: str) -> bool:
        for ref in self.summaries[file].device_refs:
            target = self.resolve(file, ref)
            if target is None:
                continue
            if target.kind == "cuda":
                return True
            function = self.function(target) if target.kind == "function" else None
            if function is not None and function.returns_cuda_device:
                return True
        return False

    @cached_property
    def _training_files(self) -> set[str]:
        """Files (outside tests) that hold a training loop or a framework's training hook."""
        files = {hook.file for hook in self._hooks("train")}
        for file, function in self._functions:
            if file in self.tests:
                continue
            if self._has_training_loop(file, function):
                files.add(file)
        return files

    def _has_training_loop(self, file: str, function: FunctionSummary) -> bool:
        """Whether a loop of `function` trains (`_loop_kind`)."""
        return any(self._loop_kind(file, function, loop.ordinal) == "train" for loop in function.loops)

    # Autograd ---------------------------------------------------------------------------------

    def is_no_grad_wrapper(self, target: Target | None) -> bool:
        function = self.function(target) if target and target.kind == "function" else None
        return function is not None and function.wraps_no_grad

    def _decorated_without_grad(self, file: str, function: FunctionSummary) -> bool:
        return function.grad_off or any(
            self.is_no_grad_wrapper(self.resolve(file, ref)) for ref in function.decorators
        )

    def always_without_grad(self, target: Target) -> bool:
        """Every call of `target` outside tests runs with autograd off (and there is one)."""
        return self._without_grad.get(target, False)

    def seldom_called(self, target: Target, once: bool = True) -> bool:
        """Whether every call of `target` outside tests (and there is one) runs on few steps:
        under a guard that skips most (`_sparse`: `if epoch % 10 == 0:`), or, with `once`,
        outside any loop of a caller that runs once (`_runs_once`): a validation every N
        epochs that an `--eval` mode also runs once before it returns."""
        callers = self._callers.get(target, [])
        return bool(callers) and all(
            self._sparse(site, caller)
            or once and site.loop == -1 and self._runs_once(caller)
            for caller, site in (
                (Target(file, function.qualname, "function"), site) for file, function, site in callers
            )
        )

    def _runs_once(self, target: Target, depth: int = 0) -> bool:
        """Code at a module's top level, or a function that runs on no step (`per_step`) and
        that the project calls, if at all, only outside loops of functions that run once
        (`main`, a function handed to `mp.spawn`)."""
        if not target.qualname:
            return True
        if depth > MAX_DEPTH or self.per_step(target) is not None:
            return False
        return all(
            site.loop == -1 and self._runs_once(Target(file, function.qualname, "function"), depth + 1)
            for file, function, site in self._callers.get(target, [])
        )

    @cached_property
    def _without_grad(self) -> dict[Target, bool]:
        def compute(target: Target, value) -> bool:
            callers = self._callers.get(target, [])
            return bool(callers) and all(
                site.no_grad
                or self._decorated_without_grad(file, function)
                or value(Target(file, function.qualname, "function"))
                for file, function, site in callers
            )

        return _solve(sorted(self._callers), compute, unknown=False)

    # DataLoaders --------------------------------------------------------------------------

    def returned_loader(self, target: Target | None, index: int | None = None) -> list | None:
        """[pins_memory, has_custom_collate] of the loader a function returns (with `index`,
        as that item of the tuple it returns: `return loader, dataset`), if known."""
        if target is None or index is None:
            return self._returned_loaders.get(target) if target is not None else None
        function = self.function(target)
        known = []
        for value in function.returns if function is not None else ():
            item = value[1][index] if value[0] == "tuple" and index < len(value[1]) else None
            known.append(None if item is None else self._loader(target.file, item, self._returned_loader_of))
        return _agreed(known)

    @cached_property
    def _returned_loaders(self) -> dict[Target, list | None]:
        def compute(target: Target, value) -> list | None:
            function = self.function(target)
            return _agreed([self._loader(target.file, item, value) for item in function.returns])

        factories = sorted(
            Target(file, function.qualname, "function")
            for file, function in self._functions
            if function.returns and function.qualname
        )
        return _solve(factories, compute, unknown=None)

    def loader_argument(self, target: Target, parameter: str) -> list | None:
        """[pins_memory, has_custom_collate] of the loader every caller passes as `parameter`
        (a parameter some loop of `target` iterates)."""
        return self._loader_arguments.get((target, parameter))

    @cached_property
    def _loader_arguments(self) -> dict[tuple[Target, str], list | None]:
        def compute(key: tuple[Target, str], value) -> list | None:
            target, parameter = key
            known = []
            for file, caller, argument in self._arguments_for(target, parameter):
                if argument[0] == "param":
                    known.append(value((Target(file, caller.qualname, "function"), argument[1])))
                else:
                    known.append(self._loader(file, argument, self._returned_loader_of))
            return _agreed(known)

        # Only the parameters a loop iterates are asked about; what callers pass through to
        # them is solved on the way.
        keys = sorted(
            (target, parameter)
            for target in self._callers
            for parameter in (self.function(target) or FunctionSummary("")).iterated
        )
        return _solve(keys, compute, unknown=None)

    def _returned_loader_of(self, target: Target) -> list | None:
        return self._returned_loaders.get(target)

    def receives_tensor(self, target: Target, parameter: str) -> bool:
        """Whether a caller outside tests passes a tensor that may live on the device as
        `parameter` of `target`; for a `*args` or `**kwargs` parameter (one the summary does
        not name), as any argument beyond the named ones."""
        function = self.function(target)
        if function is None:
            return False
        if parameter in function.parameters:
            return any(
                argument[0] == "tensor" for _, _, argument in self._arguments_for(target, parameter)
            )
        for _, _, site in self._callers.get(target, []):
            named = len(function.parameters) - _bound(site, function)
            for key, argument in site.arguments.items():
                extra = key not in function.parameters if not key.isdigit() else int(key) >= named
                if extra and argument[0] == "tensor":
                    return True
        return False

    def receives_host_values(self, target: Target, parameter: str) -> bool:
        """Whether every caller outside tests (one at least) passes, as `parameter` of
        `target`, a value in host memory (`ModuleSummary`'s "host" argument:
        `self._mask_tokens(lm_input_ids)` of a loader's batch before its copy)."""
        function = self.function(target)
        callers = self._callers.get(target, [])
        return (
            function is not None
            and parameter in function.parameters
            and bool(callers)
            and all(
                (argument := _argument(site, function, parameter)) is not None
                and argument[0] == "host"
                for _, _, site in callers
            )
        )

    def receives_counter(self, target: Target, parameter: str, kind: str) -> bool:
        """Whether every caller outside tests (one at least) passes, as `parameter` of
        `target`, a counter of a loop around the call (`kind` "counter":
        `training_log(loss, iteration)` in `while iteration < n:`) or a flag true on its
        first iteration only ("first": `is_first_iteration`), also through a parameter of
        its own that receives one (`_MAX_PASS_THROUGH` deep)."""
        key = (target, parameter, kind)
        if key not in self._counter_parameters:
            self._counter_parameters[key] = self._passes_counter(key, frozenset())
        return self._counter_parameters[key]

    def _passes_counter(self, key: tuple[Target, str, str], path: frozenset) -> bool:
        """`receives_counter` of `key`, reached through the pass-throughs of `path` (each
        answer is computed afresh from its own question, so it never depends on which was
        asked first; a cycle passes nothing)."""
        target, parameter, kind = key
        arguments = list(self._arguments_for(target, parameter))
        seen = path | {key}
        for file, caller, argument in arguments:
            if argument[0] == kind:
                continue
            if argument[0] != "param" or len(seen) > _MAX_PASS_THROUGH:
                return False
            passed = (Target(file, caller.qualname, "function"), argument[1], kind)
            if passed in seen or not self._passes_counter(passed, seen):
                return False
        return bool(arguments)

    def never_switched_on(self, target: Target, parameter: str) -> bool:
        """Whether `target` has callers outside tests and none turns on `parameter`, off by
        default: each leaves it out, passes it off (["off"]: `False`, `None`), or passes on a
        switch of its own that nothing turns on: a parameter of its own, off by default, that
        no caller of its own turns on (["param"]; also one its `**kwargs` may carry,
        ["kwargs"]), or its object's constructor switch (["switch"], `never_built_with`),
        through `_MAX_PASS_THROUGH` functions (a cycle turns nothing on); and no call of the
        project (tests included, and calls the linker cannot resolve) passes that keyword a
        value that may be true."""
        return self._switch_off((target, parameter, True))

    def never_built_with(self, target: Target, parameter: str) -> bool:
        """Whether no code of the project builds the class whose `__init__` is `target` with
        `parameter`, a switch off by default (`with_cp=False`), turned on: no call of the
        project passes that keyword a value that may be true (also in a dict literal or a
        subscript assignment, `ModuleSummary.keywords_on`), no code
        sets an attribute of that name to one, and each construction the linker resolves
        (`BasicBlock(...)`, a subclass's `super().__init__(..., **kwargs)`) leaves it out,
        passes it off or passes on a switch of its own that nothing turns on, as for
        `never_switched_on`. Unlike a function's parameter, it needs no construction that
        the linker resolves: a registry builds a class from a config's `dict(type="ResNet",
        with_cp=False)`, passing every switch by keyword."""
        return self._switch_off((target, parameter, False))

    def inherits_switch(self, cls: Target, attribute: str) -> bool:
        """Whether a project class that `cls` derives from, directly or not, stores
        `attribute` as a constructor switch (`FunctionSummary.stored_switches`): `self.with_cp`
        in a subclass of another module's `Bottleneck`."""
        seen: set[Target] = set()
        queue = deque(self.bases(cls))
        while queue and len(seen) <= MAX_DEPTH:
            base = queue.popleft()
            if base in seen:
                continue
            seen.add(base)
            init = self.function(Target(base.file, f"{base.qualname}.__init__", "function"))
            if init is not None and any(stored[0] == attribute for stored in init.stored_switches):
                return True
            queue.extend(self.bases(base))
        return False

    def _switch_off(self, key: tuple[Target, str, bool]) -> bool:
        if key not in self._switches_off:
            self._switches_off[key] = self._never_switched_on(key, frozenset())
        return self._switches_off[key]

    @cached_property
    def _keywords_on(self) -> frozenset[str]:
        """Keywords some call of the project passes a value that may be true
        (`ModuleSummary.keywords_on`)."""
        return frozenset(
            name for summary in self.summaries.values() for name in summary.keywords_on
        )

    def _never_switched_on(self, key: tuple[Target, str, bool], path: frozenset) -> bool:
        """`never_switched_on` (`needs_callers`) or `never_built_with` of `key`, reached
        through the pass-throughs of `path`. A parameter that is none of the function's
        can reach it only in its `**kwargs` (a caller passed them on, ["kwargs"])."""
        target, parameter, needs_callers = key
        function = self.function(target)
        callers = self._callers.get(target, [])
        if (
            function is None
            or parameter in function.parameters and parameter not in function.off_by_default
            or parameter in self._keywords_on
            or not needs_callers and parameter in self._set_on
            or needs_callers and not callers
        ):
            return False
        seen = path | {key}
        for file, caller, site in callers:
            if not self._passes(site, target, [parameter]):
                continue  # left out: off by default
            argument = _argument(site, function, parameter)
            if argument is None and parameter not in site.keywords and not _by_position(
                site, function, parameter
            ):
                argument = site.arguments.get("**")  # in the `**kwargs` it unpacks
            if argument == ["off"]:
                continue
            if argument is None or len(seen) > _MAX_PASS_THROUGH:
                return False
            caller_target = Target(file, caller.qualname, "function")
            if argument[0] == "param":
                forwarded = (caller_target, argument[1], needs_callers)
            elif argument[0] == "kwargs":
                forwarded = (caller_target, parameter, needs_callers)
            elif argument[0] == "switch" and caller.owner is not None:
                init = Target(file, f"{caller.owner}.__init__", "function")
                forwarded = (init, argument[1], False)
            else:
                return False
            if forwarded not in seen and not self._never_switched_on(forwarded, seen):
                return False
        return True

    def _arguments_for(
        self, target: Target, parameter: str, callers: dict | None = None
    ) -> Iterator[tuple[str, FunctionSummary, list]]:
        """What each caller outside tests (in `callers`, by default all of them) passes as
        `parameter` of `target`, when the summary kept it (a loader, a call, a parameter passed
        through)."""
        function = self.function(target)
        if function is None or parameter not in function.parameters:
            return
        for file, caller, site in (self._callers if callers is None else callers).get(target, []):
            argument = _argument(site, function, parameter)
            if argument is not None:
                yield file, caller, argument

    def _loader(self, file: str, value: list, returned) -> list | None:
        """The loader a summarized value is, with `returned` giving a function's loader."""
        if value[0] == "loader":
            return [value[1], value[2]]
        if value[0] not in ("call", "calls"):
            return None
        known = []
        for ref in _called(value):
            target = self.resolve(file, ref)
            known.append(returned(target) if target is not None and target.kind == "function" else None)
        return _agreed(known)

    # Answers --------------------------------------------------------------------------------

    def answer(self, file: str, question: str) -> Answer:
        """The answer to one of the questions a file's facts ask (see `view.LinkedAnswers`),
        as plain JSON. `question` is a JSON list: the question's name, then its arguments."""
        name, *arguments = json.loads(question)
        return getattr(self, f"_answer_{name}")(file, *arguments)

    def _answer_step_call(self, file: str, ordinal: int) -> bool:
        return any(target in self.step_helpers for target in self._runs.get((file, ordinal), ()))

    def _answer_per_step(self, file: str, qualname: str) -> Answer:
        found = self.per_step(Target(file, qualname, "function"))
        if found is None:
            return None
        kind, path = found
        return {
            "kind": kind,
            "path": [[hop.file, hop.call, hop.callee, hop.through] for hop in path],
        }

    def _answer_runs_nowhere(self, file: str) -> bool:
        return file in self._dead_modules

    def _answer_knows_what_runs(self, file: str) -> bool:
        return self._entry_points is not None

    def _answer_per_forward(self, file: str, qualname: str) -> bool:
        return Target(file, qualname, "function") in self._per_forward

    def _answer_receives_tensor(self, file: str, qualname: str, parameter: str) -> bool:
        return self.receives_tensor(Target(file, qualname, "function"), parameter)

    def _answer_receives_host_values(self, file: str, qualname: str, parameter: str) -> bool:
        return self.receives_host_values(Target(file, qualname, "function"), parameter)

    def _answer_receives_counter(self, file: str, qualname: str, parameter: str, kind: str) -> bool:
        return self.receives_counter(Target(file, qualname, "function"), parameter, kind)

    def _answer_test_support(self, file: str) -> bool:
        return file in self.tests and file not in self._test_paths

    def _answer_imports_only_below(self, file: str) -> list[int] | None:
        below = self._imports_only_below.get(file)
        return None if below is None else list(below)

    def _answer_cuda(self, file: str) -> bool:
        return file in self.cuda_files

    def _answer_cuda_training(self, file: str) -> bool:
        return file in self.cuda_training_files

    def _answer_no_grad(self, file: str, ref: Ref) -> bool:
        return self.is_no_grad_wrapper(self.resolve(file, ref))

    def _answer_dataset_samples(self, file: str, ref: Ref, index: int | None = None) -> Answer:
        return self.dataset_samples(self.resolve(file, ref), index=index)

    def _answer_callers_no_grad(self, file: str, qualname: str) -> bool:
        return self.always_without_grad(Target(file, qualname, "function"))

    def _answer_seldom_called(self, file: str, qualname: str) -> bool:
        return self.seldom_called(Target(file, qualname, "function"))

    def _answer_called_periodically(self, file: str, qualname: str) -> bool:
        return self.seldom_called(Target(file, qualname, "function"), once=False)

    def _answer_loader_argument(self, file: str, qualname: str, parameter: str) -> Answer:
        return self.loader_argument(Target(file, qualname, "function"), parameter)

    def _answer_dataset_argument(self, file: str, qualname: str, parameter: str) -> Answer:
        return self.dataset_argument(Target(file, qualname, "function"), parameter)

    def _answer_returned_loader(self, file: str, ref: Ref, index: int | None = None) -> Answer:
        return self.returned_loader(self.resolve(file, ref), index)

    def _answer_unpinnable_batch(self, file: str, ref: Ref) -> bool:
        """The collate function `ref` builds a batch a DataLoader cannot pin, itself
        (`FunctionSummary.unpinnable_batch`) or through a project function it calls that
        does (graph4nlp's `collate_fn`, whose `to_batch(graphs)` in another module returns
        the project's own `GraphData`), or by building an instance of another module's class
        that cannot be pinned (`ClassSummary.unpinnable`: `return PaddedBatch(x, lengths)`)."""
        target = self.resolve(file, ref)
        return target is not None and self._unpinnable_collate(target)

    def _answer_unpinnable_method(self, file: str, name: str) -> bool:
        """Every method `name` of the project's classes (outside tests) builds a batch a
        DataLoader cannot pin: what `collate_fn=dataset.collate_fn` runs for a dataset the
        function is given (pytorch-lifestream's sixteen `collate_fn`s, each returning a
        `PaddedBatch` with its labels)."""
        methods = [
            Target(method_file, function.qualname, "function")
            for method_file, function in self._functions
            if function.owner is not None
            and function.qualname == f"{function.owner}.{name}"
            and method_file not in self.tests
        ]
        return bool(methods) and all(self._unpinnable_collate(method) for method in methods)

    def _unpinnable_collate(self, target: Target, depth: int = 0) -> bool:
        """`target` builds a batch that cannot be pinned, itself or through the project
        functions it calls (two calls deep: ptls's `collate_fn` calls `collate_feature_dict`,
        which builds another module's `PaddedBatch`)."""
        record = self.function(target)
        if record is None:
            return False
        return record.unpinnable_batch or any(
            self._builds_unpinnable(target.file, site)
            or depth < 2
            and (callee := self.callee(target.file, site)) is not None
            and self._unpinnable_collate(callee, depth + 1)
            for site in record.calls
        )

    def _builds_unpinnable(self, file: str, site: CallSite) -> bool:
        """The call builds an instance of a project class a DataLoader cannot pin."""
        built = self.resolve(file, site.callee)
        return (
            built is not None
            and built.kind == "class"
            and self.summaries[built.file].classes[built.qualname].unpinnable
        )

    def _answer_uploads_first(self, file: str, ordinal: int) -> Answer:
        """[parameter, signature] when the call `ordinal` runs a function that starts by
        copying that parameter (`FunctionSummary.uploads_first`); the signature is the
        parameters the call's own arguments bind (`_bound`: a method's `self` left out)."""
        site = self._sites.get((file, ordinal))
        for target in self._runs.get((file, ordinal), ()):
            record = self.function(target)
            if site is not None and record is not None and record.uploads_first is not None:
                return [record.uploads_first, record.parameters[_bound(site, record):]]
        return None

    def _answer_runs_training(self, file: str, ordinal: int) -> bool:
        """Whether the call `ordinal` runs a function that steps or has a training loop."""
        for target in self._runs.get((file, ordinal), ()):
            record = self.function(target)
            if record is not None and (record.steps or self._has_training_loop(target.file, record)):
                return True
        return False

    def _answer_never_called(self, file: str, qualname: str) -> bool:
        return self.never_called(Target(file, qualname, "function"))

    def _answer_never_passed(
        self, file: str, key: str, comparison: str, literal: object, expected: bool
    ) -> bool:
        return self.never_passed([key, comparison, literal, expected])

    def _answer_switched_on(self, file: str, attribute: str) -> bool:
        return attribute in self.switched_on

    def _answer_always_passed(self, file: str, qualname: str, parameter: str) -> bool:
        target = Target(file, qualname, "function")
        callers = self._callers.get(target, ())
        return bool(callers) and all(
            self._passes(site, target, [parameter]) for _, _, site in callers
        )

    def _answer_never_switched_on(self, file: str, qualname: str, parameter: str) -> bool:
        return self.never_switched_on(Target(file, qualname, "function"), parameter)

    def _answer_never_built_with(self, file: str, qualname: str, parameter: str) -> bool:
        return self.never_built_with(Target(file, qualname, "function"), parameter)

    def _answer_inherits_switch(self, file: str, qualname: str, attribute: str) -> bool:
        return self.inherits_switch(Target(file, qualname, "class"), attribute)

    def _answer_periodic_predicate(self, file: str, name: str) -> bool:
        return name in self.periodic_predicates

    def _answer_released_weights(self, file: str, qualname: str) -> bool:
        return Target(file, qualname, "class") in self.released_classes

    def _answer_external_bases(self, file: str, qualname: str) -> Answer:
        return sorted(set(self.external_bases(Target(file, qualname, "class"))))


def _solve(keys: list, compute, unknown: object) -> dict:
    """The values of a recursive definition (`compute(key, value)`, where `value` gives the
    value of another key), computed depth first in the order of `keys`, which callers sort so
    that every process builds the same table. A value needed while it is being computed (a
    cycle), or deeper than `MAX_DEPTH`, is `unknown`."""
    table: dict = {}
    depth = 0

    def value(key):
        nonlocal depth
        if key in table:
            return table[key]
        if depth > MAX_DEPTH:
            return unknown
        table[key] = unknown
        depth += 1
        try:
            table[key] = compute(key, value)
        finally:
            depth -= 1
        return table[key]

    for key in keys:
        value(key)
    return table


def _argument(site: CallSite, function: FunctionSummary, parameter: str) -> Value | None:
    """What `site`, a call of `function`, passes as its `parameter`, when the summary kept it
    (by keyword, or by position: a method called on an instance does not pass `self`)."""
    argument = site.arguments.get(parameter)
    if argument is None and parameter in function.parameters:
        position = function.parameters.index(parameter) - _bound(site, function)
        argument = site.arguments.get(str(position))
    return argument


def _parameter(site: CallSite, function: FunctionSummary, key: str) -> str | None:
    """The parameter of `function` that `site`, a call of it, passes the argument `key` as
    (a keyword, or a position: `_argument` read backwards)."""
    if not key.isdigit():
        return key if key in function.parameters else None
    position = int(key) + _bound(site, function)
    return function.parameters[position] if position < len(function.parameters) else None


def _bound(site: CallSite, function: FunctionSummary) -> int:
    """How many parameters of `function` the call `site` binds before its own arguments: 1
    (`self`) for a method called on an instance or a constructor called through its class
    (`Trainer(model, loss)` runs `__init__(self, model, loss)`), and `cls` for a class
    method; 0 for a function, a static method and a method called through its class with
    the instance passed (`Trainer.step(trainer, batch)`)."""
    first = function.parameters[:1]
    if function.owner is None or first not in (["self"], ["cls"]):
        return 0
    return 0 if first == ["self"] and site.callee == f"def:{function.qualname}" else 1


def _by_position(site: CallSite, function: FunctionSummary, parameter: str) -> bool:
    """Whether `site`, a call of `function`, passes its `parameter` by position (or may: it
    unpacks `*args`)."""
    if site.positional == -1:
        return True
    return (
        parameter in function.parameters
        and function.parameters.index(parameter) - _bound(site, function) < site.positional
    )


def _called(value: list) -> list[Ref]:
    """The references a "call" or "calls" value is the result of calling."""
    return [value[1]] if value[0] == "call" else list(value[1])


def _agreed(known: list[list | None]) -> list | None:
    """One answer for several values: all known, all pinned or all not; collate if any has one."""
    if not known or any(value is None for value in known):
        return None
    if len({value[0] for value in known}) != 1:
        return None
    return [known[0][0], any(value[1] for value in known)]


def _last_name(ref: Ref) -> str:
    """The name a reference ends with: `Engine` for `import:ignite.engine.Engine`, `SF2M`
    for `def:SF2M`."""
    return ref.rpartition(".")[2].rpartition(":")[2]


def _holds(names: list[str], name: str) -> bool:
    """Whether a sorted list of names holds `name`."""
    position = bisect_left(names, name)
    return position < len(names) and names[position] == name
