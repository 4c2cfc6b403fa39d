"""Compute one file's summary (`program.summary`) from its facts, built without a program."""

from __future__ import annotations

import ast
import builtins
import sys
from collections.abc import Iterator
from dataclasses import replace
from functools import cached_property

import libcst as cst

from torchperf_lint.conventions import LIBRARY_SWITCHES, OFF_VALUES
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.arguments import UNKNOWN, literal_value
from torchperf_lint.facts.dataloaders import DESERIALIZERS, MISSING
from torchperf_lint.facts.devices import mentions_cuda_device
from torchperf_lint.facts.guards import is_main_test
from torchperf_lint.facts.index import (
    SCOPE_TYPES,
    descendants,
    descendants_in_scope,
    methods_of,
    nearest_ancestor,
    statements_of,
)
from torchperf_lint.facts.loops import LoopFacts, iterated_expression
from torchperf_lint.facts.names import (
    alias_binding,
    dotted_name,
    last_identifier,
    root_name,
    target_names,
)
from torchperf_lint.facts.steps import caches_its_result, saves_a_checkpoint
from torchperf_lint.facts.tensors import is_none
from torchperf_lint.program.options import (
    DECLARING_CALLS,
    DeclaredSettings,
    builds_a_config_tree,
    declared_settings,
    is_argument_class,
)
from torchperf_lint.program.summary import (
    CallSite,
    ClassSummary,
    FunctionSummary,
    LoopSummary,
    ModuleSummary,
    Ref,
    Value,
    named_in_string,
)

_DEFINITIONS = frozenset({cst.FunctionDef, cst.ClassDef})
_BUILTINS = frozenset(dir(builtins))
_GRAD_WRAPPED = frozenset({"torch.no_grad", "torch.inference_mode"})
_GRAD_WRAPPED_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in _GRAD_WRAPPED)
# Calls into these never reach project code: they are left out of summaries.
_EXTERNAL_ROOTS = frozenset(getattr(sys, "stdlib_module_names", ())) | {
    "torch", "torchvision", "torchaudio", "numpy", "math", "os", "sys", "time", "logging",
    "json", "random", "collections", "functools", "itertools", "typing", "re", "copy",
}


class References:
    """How one module names functions and classes: its definitions, imports and `self`."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.scopes = facts.scopes
        self._scopes: dict[cst.CSTNode, cst.CSTNode | None] = {}
        self.imports: dict[str, str] = {}
        self.stars: list[str] = []
        self.imported_modules: list[str] = []
        for statement in facts.index.imports:
            self._add_import(statement)
        self.qualnames: dict[cst.CSTNode, str] = {}
        self._callees: dict[cst.Call, Ref | None] = {}
        # (enclosing def or class, or None for the module; name) -> qualified name.
        self._definitions: dict[tuple[cst.CSTNode | None, str], str] = {}
        for definition in (*facts.index.functions, *facts.index.classes):
            self._definitions[(self._scope_of(definition), definition.name.value)] = (
                self._qualname_of(definition)
            )

    def _qualname_of(self, definition: cst.FunctionDef | cst.ClassDef) -> str:
        """`Outer.method`: the names of the defs and classes around it, then its own."""
        if definition not in self.qualnames:
            scope = self._scope_of(definition)
            name = definition.name.value
            self.qualnames[definition] = (
                name if scope is None else f"{self._qualname_of(scope)}.{name}"
            )
        return self.qualnames[definition]

    def _scope_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost `def` or `class` around `node`."""
        return nearest_ancestor(self.scopes.parents, self._scopes, node, _DEFINITIONS)

    def _add_import(self, statement: cst.Import | cst.ImportFrom) -> None:
        if isinstance(statement, cst.Import):
            for alias in statement.names:
                binding = alias_binding(alias, from_import=False)
                if binding is None:
                    continue
                self.imported_modules.append(dotted_name(alias.name))
                self.imports.setdefault(*binding)
            return
        module = dotted_name(statement.module) if statement.module is not None else ""
        if module is None:
            return
        base = "." * len(statement.relative) + module
        if isinstance(statement.names, cst.ImportStar):
            self.stars.append(base)
            self.imported_modules.append(base)
            return
        self.imported_modules.append(base)
        for alias in statement.names:
            binding = alias_binding(alias, from_import=True)
            if binding is None:
                continue
            bound, name = binding
            target = f"{base}.{name}" if not base.endswith(".") else f"{base}{name}"
            self.imports.setdefault(bound, target)
            # `from pkg import engine` may name a submodule.
            self.imported_modules.append(target)

    def qualname(self, definition: cst.FunctionDef | cst.ClassDef | None) -> str:
        """The dotted name of a function or class in this module; "" for module level."""
        return "" if definition is None else self.qualnames[definition]

    def of_name(self, dotted: str, at: cst.CSTNode) -> Ref | None:
        """What a dotted name (`log_metrics`, `utils.log`, `Trainer.step`) means at `at`."""
        head, _, rest = dotted.partition(".")
        suffix = f".{rest}" if rest else ""
        scope = self._scope_of(at)
        while True:
            qualname = self._definitions.get((scope, head))
            if qualname is not None:
                return f"def:{qualname}{suffix}"
            if scope is None:
                break
            scope = self._scope_of(scope)
        target = self.imports.get(head)
        if target is not None:
            return f"import:{target}{suffix}"
        if self._from_a_star(head, at):
            return f"def:{dotted}"
        return None

    def _from_a_star(self, name: str, at: cst.CSTNode) -> bool:
        """Whether `name`, read at `at`, may come from the module's `*` imports: the module
        has some, and neither a builtin nor a binding of the functions around `at` (nor of
        the module) is what it names. The linker looks it up in the modules imported so."""
        if not self.stars or name in _BUILTINS:
            return False
        functions = list(self.scopes.enclosing_functions(at))
        return not any(self.scopes.binds(function, name) for function in (*functions, None))

    def of_expression(self, expression: cst.BaseExpression, at: cst.CSTNode) -> Ref | None:
        dotted = dotted_name(expression)
        return None if dotted is None else self.of_name(dotted, at)

    def callee(self, call: cst.Call) -> Ref | None:
        """What `call` runs, when it may be the project's own code."""
        # The summary asks of every call, and the program's answers again of many.
        if call not in self._callees:
            self._callees[call] = None  # `dset = dset(...)`: what a call runs names no cycle
            self._callees[call] = self._callee(call)
        return self._callees[call]

    def _callee(self, call: cst.Call) -> Ref | None:
        func = call.func
        owner = self.owner_class(call)
        if isinstance(func, cst.Name) and func.value == "self" and owner is not None:
            return f"method:{owner}:forward"
        if isinstance(func, cst.Name) and func.value == "cls" and self._in_class_method(call):
            return f"def:{owner}"  # `return cls(...)` in a `from_opts` builds its class
        if isinstance(func, cst.Attribute):
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self" and owner is not None:
                constructed = self._constructed_class(func)
                if constructed is not None:
                    return f"forward:{constructed}"
                stored = self._stored_argument(func)
                if stored is not None:  # `self.train_loss(batch, output)`
                    return f"argument:__call__:{stored}"
                return f"method:{owner}:{func.attr.value}"
            if (
                isinstance(receiver, cst.Call)
                and isinstance(receiver.func, cst.Name)
                and receiver.func.value == "super"
                and owner is not None
            ):
                return f"super:{owner}:{func.attr.value}"
        dotted = dotted_name(func)
        if dotted is None:
            return None
        ref = self.of_name(dotted, call)
        if ref is not None:
            return ref
        constructed = self._constructed_class(func)
        if constructed is not None:
            return f"forward:{constructed}"
        made_by = self._made_by(func)
        if made_by is not None:
            return f"returned:{made_by}"
        if isinstance(func, cst.Attribute):
            method = self.instance_method(func)
            if method is not None:
                return method
            parameter = self._parameter_receiver(func.value)
            if parameter is not None:
                return f"argument:{func.attr.value}:{parameter}"
        return None

    def instance_method(self, attribute: cst.Attribute) -> Ref | None:
        """The method `attribute` names on an instance of a project class the module builds
        or narrows to (`dataset.collate_fn` after `dataset = ConllDataset(...)`): its class's,
        or one it inherits."""
        instance_of = self._constructed_class(attribute.value) or self._narrowed_class(attribute.value)
        return None if instance_of is None else f"instance:{attribute.attr.value}:{instance_of}"

    def dispatched(self, call: cst.Call) -> list[Ref]:
        """The project functions a call through a table may run: `table[key](...)` where
        `table` is a dict literal, or a name its function binds only to one, whose values
        are methods of `self` or the project's functions (`model_func = {"TransE":
        self.TransE, "RotatE": self.RotatE}`, then `model_func[self.model_name](head, tail)`)."""
        func = call.func
        if type(func) is not cst.Subscript:
            return []
        if type(func.value) is cst.Dict:
            tables = [func.value]
        elif type(func.value) is cst.Name:
            bound = self.scopes.bound_values(func.value)
            tables = [value for value in bound if type(value) is cst.Dict]
        else:
            return []
        refs = []
        for table in tables:
            for element in table.elements:
                if type(element) is not cst.DictElement:
                    return []  # `**other`: entries this module does not show
                ref = self.passed_function(element.value, call)
                if ref is not None:
                    refs.append(ref)
        return sorted(set(refs))

    def called_parameter(self, call: cst.Call) -> Ref | None:
        """`argument:__call__:gpu_timer:closure` for `closure()` in `def gpu_timer(closure):`,
        a call of a parameter its function never rebinds: it runs what each caller passes (a
        function, or an object whose `forward` or `__call__` runs). Summaries only: as a
        value, the result of calling a parameter is not a project call's."""
        parameter = self._parameter_receiver(call.func)
        return None if parameter is None else f"argument:__call__:{parameter}"

    def passed_function(self, expression: cst.BaseExpression, at: cst.CSTNode) -> Ref | None:
        """The project function `expression` names without calling it, as an argument of
        the call `at`: `gpu_timer(train_step)` after `def train_step(): ...`, an imported
        function, or `self.train_step` in a method (a name the functions around `at` bind
        to a value is a variable, whatever the module defines)."""
        if isinstance(expression, cst.Name):
            name = expression.value
            functions = self.scopes.enclosing_functions(at)
            if any(self.scopes.binds(function, name) for function in functions):
                return None
            ref = self.of_name(name, at)
            return ref if ref is not None and not is_external(ref) else None
        owner = self.owner_class(at)
        if (
            isinstance(expression, cst.Attribute)
            and isinstance(expression.value, cst.Name)
            and expression.value.value == "self"
            and owner is not None
        ):
            return f"method:{owner}:{expression.attr.value}"
        return None

    def _parameter_receiver(self, expression: cst.BaseExpression) -> str | None:
        """`function:parameter` when `expression` is a parameter of its function that the
        function never rebinds, or an attribute of `self` that holds one (`_stored_argument`):
        its class is what the callers pass."""
        if isinstance(expression, cst.Attribute):
            return self._stored_argument(expression)
        if not isinstance(expression, cst.Name) or expression.value in ("self", "cls"):
            return None
        if not self.scopes.holds_argument(expression):
            return None
        return f"{self.qualname(self.scopes.enclosing_function(expression))}:{expression.value}"

    def _stored_argument(self, expression: cst.BaseExpression) -> str | None:
        """`function:parameter` when `expression` is `self.attr` and every value the module
        binds to it (but `None`) is that parameter of a method, held as it was passed:
        `self.train_loss = train_loss` in `Trainer.__init__(self, model, train_loss)`."""
        if not (
            isinstance(expression, cst.Attribute)
            and isinstance(expression.value, cst.Name)
            and expression.value.value == "self"
        ):
            return None
        found = set()
        for value in self.scopes.bound_values(expression):
            if is_none(value):
                continue
            if not isinstance(value, cst.Name) or not self.scopes.holds_argument(value):
                return None
            function = self.scopes.enclosing_function(value)
            found.add(f"{self.qualname(function)}:{value.value}")
        return found.pop() if len(found) == 1 else None

    def _in_class_method(self, node: cst.CSTNode) -> bool:
        """In a method whose first parameter is `cls` (a `@classmethod`)."""
        function = self.scopes.enclosing_function(node)
        if function is None or self.owner_class(node) is None:
            return False
        params = (*function.params.posonly_params, *function.params.params)
        return bool(params) and params[0].name.value == "cls"

    def _constructed_class(self, expression: cst.BaseExpression) -> Ref | None:
        """The class a name or `self.attr` is bound to an instance of (`model = Net()`), when
        every binding agrees. A placeholder (`self.sampler = None`) and a rebinding of the
        same object (`model = model.to(device)`, `model = DDP(model)`,
        `torch.compile(model)`) do not count; any other value (another class, a factory's
        result, a parameter) leaves it unknown: `self._sampler = sampler` in one method and
        `self._sampler = ConsumingSampler()` in another may hold either."""
        name = dotted_name(expression)
        found = set()
        for value in self.scopes.bound_values(expression):
            if is_none(value):
                continue
            if name is not None and _rebinds(value, name):
                continue
            ref = self._construction(value)
            if ref is None:
                return None
            found.add(ref)
        return found.pop() if len(found) == 1 else None

    def _made_by(self, name: cst.BaseExpression) -> Ref | None:
        """The project function every binding of the name `name` calls: `train_step =
        make_train_step(model, optimizer)`, then `train_step(batch)` runs what it returned."""
        if type(name) is not cst.Name:
            return None
        made = {
            self.callee(value) if isinstance(value, cst.Call) else None
            for value in self.scopes.bound_values(name)
        }
        ref = made.pop() if len(made) == 1 else None
        return ref if ref is not None and not is_external(ref) else None

    def _construction(self, value: cst.BaseExpression) -> Ref | None:
        """The class `value` constructs: `Net(args)`, `models.ResNet()`, also moved or
        switched on the way (`Net(args).cuda()`, `Net().to(device).eval()`), which returns
        the same module."""
        while (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in _SAME_MODULE_METHODS
            and isinstance(value.func.value, cst.Call)
        ):
            value = value.func.value
        if not isinstance(value, cst.Call):
            return None
        dotted = dotted_name(value.func)
        last = dotted.rsplit(".", 1)[-1] if dotted else ""
        return self.of_name(dotted, value) if last[:1].isupper() else None

    def _narrowed_class(self, expression: cst.BaseExpression) -> Ref | None:
        """The class a name or attribute is tested to be an instance of, in the body of that
        test: `posterior.sample()` under `if isinstance(posterior, Gaussian):`,
        `self.sampler.update(...)` under `if isinstance(self.sampler, LossAwareSampler):`."""
        name = dotted_name(expression)
        if name is None:
            return None
        # Asked of the receiver of most calls: ancestors are tested by type, as in `index`.
        for parent, child in self.scopes.ancestors_with_child(expression):
            if type(parent) in SCOPE_TYPES:
                return None
            if not (type(parent) is cst.If and child is parent.body):
                continue
            test = parent.test
            if (
                isinstance(test, cst.Call)
                and self.facts.names.call_name(test) == "builtins.isinstance"
                and len(test.args) == 2
                and dotted_name(test.args[0].value) == name
            ):
                tested = dotted_name(test.args[1].value)  # one class, not a tuple of them
                return None if tested is None else self.of_name(tested, test)
        return None

    def owner_class(self, node: cst.CSTNode) -> str | None:
        """The class of the method `node` is in (`self` refers to its instance)."""
        function = self.scopes.enclosing_function(node)
        if function is None:
            return None
        parent = self.scopes.parents.get(self.scopes.parents.get(function))
        return self.qualnames.get(parent) if isinstance(parent, cst.ClassDef) else None


def _rebinds(value: cst.BaseExpression, name: str) -> bool:
    """`value` is the object `name` already holds, moved or wrapped: `model.to(device)`,
    `model.cuda().half()`, `DDP(model, device_ids=[rank])`, `torch.compile(model)`."""
    if not isinstance(value, cst.Call):
        return False
    receiver: cst.BaseExpression = value
    while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        receiver = receiver.func.value
    return dotted_name(receiver) == name or any(
        dotted_name(arg.value) == name for arg in value.args
    )


def _declared_settings(facts: FileFacts) -> DeclaredSettings:
    """The defaults of the run's settings the file declares (`program.options`): the
    statements that may declare one (`parser.add_argument(...)`, a class of arguments, a
    config tree and its entries) are read again by Python's parser, which `options` reads,
    without parsing the whole file twice. The command lines a file with PyTorch code builds
    are not read (a launcher has none)."""
    module = facts.module
    assignments = [
        (statement, small)
        for statement in module.body
        if type(statement) is cst.SimpleStatementLine
        for small in statement.body
        if type(small) is cst.Assign
    ]
    roots: set[str] = set()  # `_C = CN()`, `TrainCfg = deepcopy(BaseCfg)`
    for _, assignment in assignments:
        value = assignment.value
        if type(value) is cst.Call and (
            builds_a_config_tree(last_identifier(value.func)) or _copied_name(value) in roots
        ):
            roots.update(
                target.target.value for target in assignment.targets
                if type(target.target) is cst.Name
            )
    nodes: list[cst.CSTNode] = [  # `_C = CN()`, `_C.TRAIN.CLIP_GRAD = 5.0`
        statement
        for statement, assignment in assignments
        if any(root_name(target.target) in roots for target in assignment.targets)
    ]
    nodes.extend(call for call in facts.index.calls if last_identifier(call.func) in DECLARING_CALLS)
    nodes.extend(
        cls for cls in facts.index.classes
        if is_argument_class(cls.name.value, [last_identifier(base.value) for base in cls.bases])
    )
    nothing = DeclaredSettings([], [], [], [])
    if not nodes:
        return nothing
    snippet = "\n".join(module.code_for_node(node).strip() for node in nodes)
    try:
        tree = ast.parse(snippet)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return nothing
    return declared_settings(tree)._replace(given=[])


def _declares_a_default(
    assignment: cst.Assign | cst.AnnAssign | cst.AugAssign, declared: set[str], facts: FileFacts
) -> bool:
    """`assignment` gives one of the run's settings its default (`program.options`, where
    its key is `declared`): module code setting a config tree's entry (`_C.TRAIN.CLIP_GRAD =
    5.0`), or a field of a class of arguments (`clip: int = -1` in `class Args(Tap)`)."""
    if facts.scopes.enclosing_function(assignment) is not None:
        return False
    cls = facts.scopes.enclosing_class(assignment)
    if cls is not None:
        bases = [last_identifier(base.value) for base in cls.bases]
        target = assignment.target if isinstance(assignment, cst.AnnAssign) else None
        return (
            isinstance(target, cst.Name)
            and target.value in declared
            and is_argument_class(cls.name.value, bases)
        )
    targets = assignment.targets if isinstance(assignment, cst.Assign) else ()
    names = [dotted_name(target.target) for target in targets]
    return bool(names) and all(
        name is not None and name.partition(".")[2] in declared for name in names
    )


def _copied_name(call: cst.Call) -> str | None:
    """The name `call` copies: `BaseCfg` of `deepcopy(BaseCfg)`, `copy.deepcopy(BaseCfg)` or
    `BaseCfg.copy()` (`options.copies_a_config_tree`)."""
    func = call.func
    if type(func) is cst.Attribute and func.attr.value == "copy" and not call.args:
        copied: cst.BaseExpression = func.value
    elif last_identifier(func) in ("deepcopy", "copy") and len(call.args) == 1:
        copied = call.args[0].value
    else:
        return None
    return copied.value if type(copied) is cst.Name else None


# `nn.Module` methods that return the module itself.
_SAME_MODULE_METHODS = frozenset({
    "cuda", "cpu", "to", "train", "eval", "float", "half", "bfloat16", "double",
    "requires_grad_", "to_empty",
})


def _generic_origin(base: cst.BaseExpression) -> cst.BaseExpression:
    """The class a base names, without its type arguments: `LLMAlgorithm` for
    `LLMAlgorithm[PreferencePrompts]` (AgileRL's generic algorithms)."""
    return base.value if type(base) is cst.Subscript else base


def _mentions(facts: FileFacts) -> list[str]:
    """Every identifier `facts`' module mentions but the names its definitions bind and the
    name of a class where it is only a base of another (`class OneWay(SF2M):`: the linker
    follows `ClassSummary.bases` for those), nor the class that `super(Cls, self)` names
    in its own methods. A name an import gives another object
    (`from .quantize import VectorQuantizer2 as VectorQuantizer`) mentions that object's
    own name: the module never names the legacy class the alias spells."""
    defined = {id(definition.name) for definition in (*facts.index.functions, *facts.index.classes)}
    for cls in facts.index.classes:
        for base in cls.bases:
            named = base.value.attr if type(base.value) is cst.Attribute else base.value
            defined.add(id(named))
    for call in facts.index.calls:  # `super(VectorQuantizer, self)` in the class itself
        if type(call.func) is cst.Name and call.func.value == "super" and call.args:
            defined.add(id(call.args[0].value))
    renamed = _import_aliases(facts)
    mentioned = {
        renamed.get(name.value, name.value) for name in facts.index.names if id(name) not in defined
    }
    for string in facts.index.strings:
        mentioned.update(named_in_string(string.raw_value))
    return sorted(mentioned)


def _dotted_paths(facts: FileFacts) -> list[str]:
    """The strings of the module that are dotted paths of two parts or more (`'obj':
    'speakerlab.models.campplus.DTDNN.CAMPPlus'`)."""
    found = set()
    for string in facts.index.strings:
        text = literal_value(string)
        if isinstance(text, str) and "." in text and len(named_in_string(text)) > 1:
            found.add(text)
    return sorted(found)


def _switch_enablers(facts: FileFacts) -> list[str]:
    """`ModuleSummary.switch_enablers`: the names of `LIBRARY_SWITCHES`' methods the module's
    code mentions (not its strings: an error message's "use `gradient_checkpointing_enable()`
    instead"), outside the branches that test the switch itself and outside the library's
    own methods that switch it (a copy of `PreTrainedModel`, whose
    `gradient_checkpointing_enable` and `gradient_checkpointing_disable` name the hook
    `_set_gradient_checkpointing`)."""
    found = set()
    for name in facts.index.names:
        switch = _ENABLED_SWITCH.get(name.value)
        if switch is None:
            continue
        if any(
            type(ancestor) is cst.FunctionDef and ancestor.name.value in _SWITCHING_METHODS
            or type(ancestor) is cst.If and _names_switch(ancestor.test, switch)
            for ancestor in facts.scopes.ancestors(name)
        ):
            continue
        found.add(name.value)
    return sorted(found)


# Each method of `LIBRARY_SWITCHES`, with the switch it turns on.
_ENABLED_SWITCH = {
    method: switch for switch, methods in LIBRARY_SWITCHES.items() for method in methods
}


# The methods of libraries' models that turn their switches on and off.
_SWITCHING_METHODS = frozenset(_ENABLED_SWITCH) | {
    "gradient_checkpointing_disable", "disable_gradient_checkpointing",
}


def _names_switch(test: cst.BaseExpression, switch: str) -> bool:
    """`test` reads the attribute `switch` (`config.gradient_checkpointing`, also
    `getattr(self.config, "gradient_checkpointing", False)`)."""
    return any(
        type(node) is cst.Attribute and node.attr.value == switch
        or type(node) is cst.SimpleString and literal_value(node) == switch
        for node in (test, *descendants(test))
    )


def _import_aliases(facts: FileFacts) -> dict[str, str]:
    """The names `from ... import X as Y` statements bind, each to the name it imports (`Y`
    to `X`), where they differ."""
    renamed = {}
    for statement in facts.index.imports:
        if type(statement) is not cst.ImportFrom or type(statement.names) is cst.ImportStar:
            continue
        for alias in statement.names:
            if alias.asname is None or type(alias.asname.name) is not cst.Name:
                continue
            imported = (dotted_name(alias.name) or "").rpartition(".")[2]
            if imported and imported != alias.asname.name.value:
                renamed[alias.asname.name.value] = imported
    return renamed


def _is_periodic_value(facts: FileFacts, value: cst.BaseExpression) -> bool:
    """A periodic test (`Guards.is_periodic_test`), or an `or` of periodic tests and tests of
    one value (`step == 1`)."""
    if isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or):
        periodic = [_is_periodic_value(facts, operand) for operand in (value.left, value.right)]
        return any(periodic) and all(
            is_periodic or _tests_one_value(operand)
            for is_periodic, operand in zip(periodic, (value.left, value.right))
        )
    return facts.guards.is_periodic_test(value)


def _tests_one_value(test: cst.BaseExpression) -> bool:
    """`step == 1`: equal to one literal."""
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
        and literal_value(test.comparisons[0].comparator) is not UNKNOWN
    )


def _stores_parameter(switch: tuple[cst.Param, cst.BaseExpression], name: str) -> bool:
    """A constructor switch (`Guards.constructor_switch`) that holds its parameter `name`
    itself (`self.with_cp = with_cp`), not a test of it."""
    param, value = switch
    return isinstance(value, cst.Name) and value.value == param.name.value == name


def _assigned_elements(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The names and attributes an assignment target binds (`self.a, self.b = ...`)."""
    if type(target) is cst.Tuple or type(target) is cst.List:
        for element in target.elements:
            yield from _assigned_elements(element.value)
    else:
        yield target


# Modules whose import caps the PyTorch a program runs on, with the first release it cannot:
# - PyTorch removed `torch._six` in 2.0.
# - ColossalAI removed modules that its releases for PyTorch 1 only had (v0.1-v0.2 import
#   `torch._six` or pin `torch<2.0`), and later the legacy engine, whose releases (to v0.3.1)
#   support PyTorch 2.1 at most by their README.
# - timm's `Dataset` (renamed `ImageDataset` in 0.4) is from releases that import
#   `torch._six.container_abcs`, which PyTorch 1.9 removed.
_MODULES_ONLY_BELOW = {
    "torch._six": [2, 0, 0],
    "timm.data.Dataset": [1, 9, 0],
    "colossalai.utils.memory_utils": [2, 0, 0],
    "colossalai.gemini": [2, 0, 0],
    "colossalai.zero.init_ctx": [2, 0, 0],
    "colossalai.zero.shard_utils": [2, 0, 0],
    "colossalai.utils.model.colo_init_context": [2, 0, 0],
    "colossalai.core": [2, 2, 0],
    "colossalai.engine": [2, 2, 0],
    "colossalai.trainer": [2, 2, 0],
    "colossalai.registry": [2, 2, 0],
}


def _imports_only_below(module: cst.Module) -> list[int] | None:
    """`ModuleSummary.imports_only_below`: the first PyTorch release a module the file
    imports at its top level, outside any `try` or `if`, cannot run on (`_MODULES_ONLY_BELOW`:
    `from torch._six import inf`, `from torch import _six`, `from
    colossalai.gemini.chunk import ChunkManager`); a guarded import (`try: from torch._six
    import inf` / `except ImportError: from torch import inf`) runs on any release."""
    removed = [
        _MODULES_ONLY_BELOW[prefix]
        for _, names in _unguarded_imports(module)
        for name in names
        for prefix in _dotted_prefixes(name)
        if prefix in _MODULES_ONLY_BELOW
    ]
    return min(removed) if removed else None


def _unguarded_imports(module: cst.Module) -> Iterator[tuple[str, list[str]]]:
    """(the module imported, the dotted names the statement reads) for each absolute import
    at the file's top level, outside any `try` or `if`: `import a.b` gives ("a.b",
    ["a.b"]), `from a.b import c` gives ("a.b", ["a.b", "a.b.c"])."""
    for statement in module.body:
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in statement.body:
            if type(small) is cst.Import:
                for alias in small.names:
                    name = dotted_name(alias.name)
                    if name:
                        yield name, [name]
            elif type(small) is cst.ImportFrom and small.module is not None and not small.relative:
                source = dotted_name(small.module)
                if not source:
                    continue
                aliases = small.names if isinstance(small.names, (list, tuple)) else ()
                yield source, [source, *(f"{source}.{dotted_name(alias.name)}" for alias in aliases)]


def _dotted_prefixes(name: str | None) -> list[str]:
    """`a.b.c`, `a.b`, `a` for `a.b.c`."""
    parts = (name or "").split(".")
    return [".".join(parts[:end]) for end in range(len(parts), 0, -1)]


def summarize(facts: FileFacts, refs: References | None = None) -> ModuleSummary:
    """The summary of one file, from facts built without a program (they must not depend on
    other files); `refs`, when given, are the file's references, built once per file."""
    return _Summarizer(facts, refs or References(facts)).summary


class _Summarizer:
    def __init__(self, facts: FileFacts, refs: References) -> None:
        self.facts = facts
        self.refs = refs
        self.settings = _declared_settings(facts)
        self.returns: dict[cst.FunctionDef, list[cst.Return]] = {}
        for node in facts.index.returns:
            function = facts.scopes.enclosing_function(node)
            if function is not None:
                self.returns.setdefault(function, []).append(node)
        self.loop_ordinals = {loop: ordinal for ordinal, loop in enumerate(facts.index.loops)}
        self.loops_of: dict[cst.FunctionDef | None, list[LoopFacts]] = {}
        for loop in facts.loops.all:
            self.loops_of.setdefault(loop.function, []).append(loop)
        self.grad_wrappers = self._grad_wrappers()
        summary = ModuleSummary(
            imports=self.refs.imports,
            stars=self.refs.stars,
            imported_modules=sorted(set(self.refs.imported_modules)),
            uses_cuda=facts.uses_cuda,
            loads_released_weights=facts.models.loads_released_weights,
            released_paths=_dotted_paths(facts) if facts.models.loads_released_weights else [],
            runs_as_script=any(
                isinstance(statement, cst.If) and is_main_test(statement.test)
                for statement in facts.module.body
            ),
            works_at_top_level=any(map(_does_work, facts.module.body)),
            imports_by_name=sorted({
                _package_named(call.args[0].value)
                for call in facts.index.calls
                if facts.names.call_name(call) in _IMPORTERS
                and call.args
                and not isinstance(call.args[0].value, cst.SimpleString)
            }),
            imports_only_below=_imports_only_below(facts.module),
            unguarded_imports=sorted({source for source, _ in _unguarded_imports(facts.module)}),
            setting_defaults=self.settings.defaults,
            setting_aliases=self.settings.aliases,
            setting_flags=self.settings.flags,
        )
        summary.functions[""] = FunctionSummary("")
        for function in facts.index.functions:
            summary.functions[self.refs.qualname(function)] = self._function(function)
        for cls in facts.index.classes:
            qualname = self.refs.qualname(cls)
            bases = [self.refs.of_expression(_generic_origin(base.value), cls) for base in cls.bases]
            summary.classes[qualname] = ClassSummary(
                qualname,
                [b for b in bases if b],
                facts.dataloaders.class_samples(cls),
                cls in facts.models.checkpoint_architectures,
                decorated=bool(cls.decorators),
                unpinnable=cls in self._unpinnable_classes,
            )
        for loop in facts.loops.all:
            if loop.over_constants:
                continue  # a handful of configurations, neither training nor evaluation
            owner = summary.functions[self.refs.qualname(loop.function)]
            owner.loops.append(self._loop(loop))
        # Functions that step an optimizer anywhere, and that backpropagate outside loops: a
        # function that does both is a training step (`fit_batch`, which steps each of its
        # optimizers in a loop); one that only backpropagates computes gradients for
        # something else (a Grad-CAM), unless a loop around its call steps.
        self.stepping: set[str] = set()
        self.backpropagating: set[str] = set()
        for ordinal, call in enumerate(facts.index.calls):
            self._add_call(summary, ordinal, call)
        for qualname in self.backpropagating & self.stepping:
            summary.functions[qualname].steps = True
        self._add_devices(summary)
        summary.mentions = _mentions(facts)
        summary.keywords_on = self._keywords_on()
        summary.switch_enablers = _switch_enablers(facts)
        summary.periodic_predicates = sorted({
            function.name.value for function in facts.index.functions
            if self._returns_periodic_test(function)
        })
        for qualname, attribute, parameter in self._switches():
            function = summary.functions[qualname]
            if parameter is not None:
                function.stored_switches.append([attribute, parameter])
            elif attribute not in function.switches:
                function.switches.append(attribute)
        self.summary = summary

    def _returns_periodic_test(self, function: cst.FunctionDef) -> bool:
        """Every `return` of `function` gives `False` or a periodic test (`step % n == 0`,
        also `and`-ed with anything, or `or`-ed with tests of single steps: `step == 1 or
        step % n == 0`), and one gives a test."""
        values = [node.value for node in self.returns.get(function, ())]
        tests = [value for value in values if literal_value(value) is not False]
        return bool(tests) and all(
            value is not None and _is_periodic_value(self.facts, value) for value in tests
        )

    def _switches(self) -> Iterator[tuple[str, str, str | None]]:
        """(qualified name of the function, or "" for module code; attribute; the parameter
        of a switch its `__init__` stores, or None) for each attribute the file may set to a
        true value: `obj.flag = value` unless `value` is `False`, `None` or `0`,
        `setattr(obj, "flag", value)`, and class attributes; not the defaults of a config
        tree (`_C.TRAIN.CLIP_GRAD = 5.0`, `program.options`), which no run changes."""
        facts = self.facts
        declared = {entry[0] for entry in self.settings.defaults}
        for assignment in facts.index.assigns:
            value = assignment.value
            if value is None or literal_value(value) in OFF_VALUES:
                continue  # `flag: bool` declares; `self.flag = False` leaves it off
            if declared and _declares_a_default(assignment, declared, facts):
                continue
            if isinstance(assignment, cst.Assign):
                targets = [target.target for target in assignment.targets]
            else:
                targets = [assignment.target]
            in_class_body = facts.scopes.enclosing_class(assignment) is not None and (
                facts.scopes.enclosing_function(assignment) is None
            )
            function = self.refs.qualname(facts.scopes.enclosing_function(assignment))
            for target in targets:
                for element in _assigned_elements(target):
                    stored = None
                    if isinstance(element, cst.Attribute):
                        name = element.attr.value
                        stored = facts.guards.stored_switch(element)
                    elif isinstance(element, cst.Name) and in_class_body:
                        name = element.value
                    else:
                        continue
                    yield function, name, None if stored is None else stored[1]
        for call in facts.index.calls:
            if dotted_name(call.func) != "setattr" or len(call.args) != 3:
                continue
            attribute, value = call.args[1].value, call.args[2].value
            if isinstance(attribute, cst.SimpleString) and literal_value(value) not in OFF_VALUES:
                name = literal_value(attribute)
                if isinstance(name, str):
                    yield self.refs.qualname(facts.scopes.enclosing_function(call)), name, None

    def _function(self, function: cst.FunctionDef) -> FunctionSummary:
        facts = self.facts
        params = function.params
        every_parameter = (*params.posonly_params, *params.params, *params.kwonly_params)
        parameters = [p.name.value for p in every_parameter]
        off_by_default = [
            p.name.value
            for p in every_parameter
            if p.default is not None and literal_value(p.default) in OFF_VALUES
        ]
        decorators = []
        grad_off = False
        for decorator in function.decorators:
            expression = decorator.decorator
            if facts.guards.is_grad_disabling(expression):
                grad_off = True
                continue
            callee = expression.func if isinstance(expression, cst.Call) else expression
            ref = self.refs.of_expression(callee, function)
            if ref is not None:
                decorators.append(ref)
        owner = self.refs.owner_class(function.body)
        iterated = []
        for loop in self.loops_of.get(function, ()):
            expression = iterated_expression(loop.node)
            if isinstance(expression, cst.Name) and expression.value in parameters:
                iterated.append(expression.value)
        return FunctionSummary(
            qualname=self.refs.qualname(function),
            owner=owner,
            parameters=parameters,
            off_by_default=off_by_default,
            decorators=decorators,
            grad_off=grad_off,
            caches_its_result=caches_its_result(function, facts.names),
            wraps_no_grad=self._wraps_no_grad(function),
            returns_cuda_device=self._returns_cuda_device(function),
            returns=self._returns(function),
            iterated=sorted(set(iterated)),
            unpinnable_batch=self._builds_unpinnable_batch(function),
            uploads_first=self._uploads_first(function, parameters),
        )

    @cached_property
    def _unpinnable_classes(self) -> list[cst.ClassDef]:
        """The module-level classes a DataLoader cannot pin: plain classes (no base but
        `object`) without a `pin_memory` method (DETR's `NestedTensor`)."""
        return [
            cls
            for cls in self.facts.index.classes
            if all(dotted_name(base.value) == "object" for base in cls.bases)
            and not methods_of(cls, ("pin_memory",))
            and self.facts.scopes.enclosing_function(cls) is None
        ]

    @cached_property
    def _unpinnable_builders(self) -> frozenset[str]:
        """The classes of the module that a DataLoader cannot pin (plain classes, without a
        `pin_memory` method: DETR's `NestedTensor`), their class methods that return an
        instance (`NestedTensor.from_tensor_list`, returning `cls(tensor, mask)`), and the
        module's functions that only return one, also through one another
        (`nested_tensor_from_tensor_list`), by name."""
        classes = self._unpinnable_classes
        builders = {cls.name.value for cls in classes}
        for cls in classes:
            for method in methods_of(cls):
                returns = self.returns.get(method)
                if returns and any(
                    dotted_name(decorator.decorator) == "classmethod" for decorator in method.decorators
                ) and all(
                    type(node.value) is cst.Call and dotted_name(node.value.func) in ("cls", cls.name.value)
                    for node in returns
                ):
                    builders.add(f"{cls.name.value}.{method.name.value}")
        while True:  # `return _onnx_nested_tensor(...)` of a function that returns one
            found = {
                function.name.value
                for function, returns in self.returns.items()
                if all(
                    type(node.value) is cst.Call and dotted_name(node.value.func) in builders
                    for node in returns
                )
            }
            if found <= builders:
                return frozenset(builders)
            builders |= found

    def _uploads_first(self, function: cst.FunctionDef, parameters: list[str]) -> str | None:
        """`FunctionSummary.uploads_first`: the parameter whose data the first statements
        of `function` that do more than unpack or reshape (`HostSyncs.queues_little`) copy
        with a blocking copy (`HostSyncs.is_blocking_move`): the parameter, an item or
        attribute of it, or a name unpacked from it (`image, text = batch`, then
        `text.to(device)`)."""
        syncs = self.facts.host_syncs
        sources = {name: name for name in parameters}
        for statement in statements_of(function.body):
            if type(statement) is not cst.SimpleStatementLine:
                return None
            for node in descendants(statement):
                if type(node) is cst.Call and syncs.is_blocking_move(node):
                    return sources.get(root_name(node.func.value) or "")
            if not syncs.queues_little(statement):
                return None
            for small in statement.body:
                source = sources.get(root_name(small.value) or "") if type(small) is cst.Assign else None
                if source is not None:
                    for target in small.targets:
                        sources.update(dict.fromkeys(target_names(target.target), source))
        return None

    def _builds_unpinnable_batch(self, function: cst.FunctionDef) -> bool:
        """`FunctionSummary.unpinnable_batch`: `function` returns a value and builds one the
        DataLoader cannot pin on the way (DETR's `collate_fn`: `batch[0] =
        nested_tensor_from_tensor_list(batch[0])`, then `return tuple(batch)`)."""
        return bool(self.returns.get(function)) and any(
            type(node) is cst.Call and dotted_name(node.func) in self._unpinnable_builders
            for node in descendants_in_scope(function.body)
        )

    def _loop(self, loop: LoopFacts) -> LoopSummary:
        facts = self.facts
        evaluates = (
            not loop.trains_itself
            and (loop.iterates_dataloader or facts.loops.calls_eval(loop.function))
            and any(facts.tensors.is_module_call(call) for call in loop.own_calls)
        )
        return LoopSummary(self.loop_ordinals[loop.node], loop.trains_itself, evaluates)

    def _add_call(self, summary: ModuleSummary, ordinal: int, call: cst.Call) -> None:
        facts = self.facts
        function = facts.scopes.enclosing_function(call)
        owner = summary.functions[self.refs.qualname(function)]
        loop = facts.loops.loop_of_call(call)
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        closure = None
        if facts.loops.is_training_step(call, method):
            self.stepping.add(owner.qualname)
            if loop is None:
                owner.steps = True
            closure = self._closure(call)
        elif method == "backward" and loop is None:
            self.backpropagating.add(owner.qualname)
        if method == "eval" and not call.args:
            owner.evaluates = True
        callee = self.refs.callee(call) or self.refs.called_parameter(call)
        if callee is not None and is_external(callee):
            callee = None
        dispatched = [] if callee is not None else self.refs.dispatched(call)
        if callee is None and closure is None and not dispatched:
            return
        if loop is not None:
            # Sparse within its loop, or the loop itself runs on few steps (after `if not
            # self._log or step % n != 0: return` in its function).
            sparse = (
                facts.guards.sparse_guard(call, loop.node) is not None
                or facts.guards.periodic_guard(loop.node) is not None
            )
        else:
            sparse = (
                facts.guards.periodic_guard(call) is not None
                or facts.guards.counter_guard(call)
                or facts.guards.initializes_once(call)
            )
        site = CallSite(
            callee=callee or "",
            ordinal=ordinal,
            loop=-1 if loop is None else self.loop_ordinals[loop.node],
            sparse=sparse or facts.steps.off_the_usual_path(call) or self._saves_a_checkpoint(call),
            no_grad=facts.guards.grad_disabled(call),
            evaluation_only=facts.guards.evaluation_only(call),
            arguments=self._arguments(call),
            positional=-1 if any(arg.star == "*" for arg in call.args) else sum(
                1 for arg in call.args if arg.keyword is None and not arg.star
            ),
            keywords=[
                "**" if arg.star == "**" else arg.keyword.value
                for arg in call.args
                if arg.star == "**" or arg.keyword is not None
            ],
            needs=facts.guards.required_parameters(call),
            needs_left_on=facts.guards.parameters_left_on(call),
            predicates=[] if sparse else facts.guards.predicate_guards(call),
            counter_guards=[] if sparse else facts.guards.counter_parameter_tests(call),
            settings=[] if sparse else facts.guards.setting_tests(call),
        )
        if callee is not None:
            owner.calls.append(site)
        # `{"TransE": self.TransE, ...}[self.model_name](head, tail)` may run any of them.
        owner.calls.extend(replace(site, callee=ref) for ref in dispatched)
        if closure is not None:  # `optimizer.step(closure)` runs `closure()`, with no argument
            owner.calls.append(
                replace(site, callee=closure, arguments={}, positional=0, keywords=[])
            )

    def _saves_a_checkpoint(self, call: cst.Call) -> bool:
        """A call that saves a checkpoint (`steps.saves_a_checkpoint`), or one whose result
        is what such a call saves: `save_checkpoint(checkpoint_state(model, optimizer),
        filename=name)` runs `checkpoint_state` only when it saves."""
        if saves_a_checkpoint(call):
            return True
        for parent in self.facts.scopes.ancestors(call):
            if isinstance(parent, (cst.BaseSmallStatement, cst.BaseStatement)):
                return False
            if type(parent) is cst.Call and saves_a_checkpoint(parent):
                return True
        return False

    def _closure(self, call: cst.Call) -> Ref | None:
        """The project function an optimizer step is passed as its closure
        (`optimizer.step(closure)`, `step(closure=closure)`), which the step calls."""
        for position, arg in enumerate(call.args):
            if arg.keyword is not None and arg.keyword.value == "closure" or (
                position == 0 and arg.keyword is None and not arg.star
            ):
                return self.refs.passed_function(arg.value, call)
        return None

    def _arguments(self, call: cst.Call) -> dict[str, Value]:
        found = {}
        loops = [loop.node for loop in self.facts.loops.enclosing_loops(call)]
        counters = {name for loop in loops for name in self.facts.counters.of_loop(loop)}
        flags = {name for loop in loops for name in self.facts.counters.first_flags(loop)}
        for position, arg in enumerate(call.args):
            if arg.star == "**":
                if self._own_keywords(arg.value):
                    found["**"] = ["kwargs"]  # `super().__init__(depth=50, **kwargs)`
                continue
            if arg.star:
                break
            passed = dotted_name(arg.value)
            switch = self.facts.guards.constructor_switch(arg.value)
            if passed in counters:
                value: Value | None = ["counter"]  # `train_step(model, iteration)`
            elif passed in flags:
                value = ["first"]  # `log(loss, is_first_iteration=is_first_iteration)`
            elif self._turned_off(arg.value):
                value = ["off"]  # `self.bert(ids, checkpoint_activations=False)`
            elif switch is not None and isinstance(switch[1], cst.Name):
                value = ["switch", switch[0].name.value]  # `Block(dim, with_cp=self.with_cp)`
            else:
                value = self._value(arg.value)
                function = None if value is not None else self.refs.passed_function(arg.value, call)
                if function is not None:
                    value = ["function", function]  # `gpu_timer(train_step)`
            if value is not None:
                key = arg.keyword.value if arg.keyword is not None else str(position)
                found[key] = value
        return found

    def _keywords_on(self) -> list[str]:
        """`ModuleSummary.keywords_on`: the keywords of calls, and the keys of dict literals
        and subscript assignments (`cfg["with_cp"] = True`), given a value that may be true."""
        facts = self.facts
        found = set()
        for call in facts.index.calls:
            for arg in call.args:
                if arg.keyword is None or self._turned_off(arg.value):
                    continue
                if not self._passed_on(arg.keyword.value, arg.value):
                    found.add(arg.keyword.value)
        for string in facts.index.strings:
            key = literal_value(string)
            value = self._keyed_value(string)
            if (
                isinstance(key, str)
                and key.isidentifier()
                and value is not None
                and not self._turned_off(value)
            ):
                found.add(key)
        return sorted(found)

    def _passed_on(self, keyword: str, value: cst.BaseExpression) -> bool:
        """`value`, passed as `keyword`, is a switch of the caller's passed on: a parameter of
        its function (`with_cp=with_cp`), or its object's constructor switch of that name
        (`with_cp=self.with_cp` after `self.with_cp = with_cp`)."""
        if isinstance(value, cst.Name):
            return self.facts.scopes.holds_argument(value)
        switch = self.facts.guards.constructor_switch(value)
        return switch is not None and _stores_parameter(switch, keyword)

    def _keyed_value(self, key: cst.SimpleString) -> cst.BaseExpression | None:
        """The value a dict literal (`{"with_cp": True}`) or a subscript assignment
        (`cfg["with_cp"] = True`) gives the string `key`."""
        parents = self.facts.index.parents
        parent = parents.get(key)
        if isinstance(parent, cst.DictElement) and parent.key is key:
            return parent.value
        element = parents.get(parent) if isinstance(parent, cst.Index) else None
        subscript = parents.get(element) if isinstance(element, cst.SubscriptElement) else None
        target = parents.get(subscript) if isinstance(subscript, cst.Subscript) else None
        assignment = parents.get(target) if isinstance(target, cst.AssignTarget) else None
        return assignment.value if isinstance(assignment, cst.Assign) else None

    def _own_keywords(self, expression: cst.BaseExpression) -> bool:
        """`expression` is the `**kwargs` parameter of its function, never rebound."""
        function = self.facts.scopes.enclosing_function(expression)
        star = function.params.star_kwarg if function is not None else None
        return (
            isinstance(expression, cst.Name)
            and isinstance(star, cst.Param)
            and star.name.value == expression.value
            and self.facts.scopes.holds_argument(expression)
        )

    def _turned_off(self, expression: cst.BaseExpression) -> bool:
        """`False`, `None` or `0`, or a name of its function bound to nothing else
        (`checkpoint_activations = False` before the call; not `dataset_test = None` on one
        path and unpacked from a list of splits on the other)."""
        if literal_value(expression) in OFF_VALUES:
            return True
        if not isinstance(expression, cst.Name):
            return False
        scopes = self.facts.scopes
        values = scopes.bound_values(expression)
        return (
            bool(values)
            and all(literal_value(value) in OFF_VALUES for value in values)
            and scopes.shows_every_binding(expression)
        )

    def _value(self, expression: cst.BaseExpression, depth: int = 0) -> Value | None:
        facts = self.facts
        loader = facts.dataloaders.construction(expression)
        if loader is not None:
            collate = loader.value("collate_fn")
            return ["loader", loader.pins_memory, collate is not MISSING and collate is not None]
        if isinstance(expression, cst.Tuple):  # `return loader, dataset`
            items = [
                None if isinstance(element, cst.StarredElement) else self._value(element.value, depth)
                for element in expression.elements
            ]
            return ["tuple", items] if any(items) else None
        if isinstance(expression, cst.Call):
            callee = self.refs.callee(expression)
            if callee is not None and not is_external(callee):
                return ["call", callee]
        if facts.dataloaders.is_preprocessed(expression):
            return ["rows"]
        if isinstance(expression, cst.Call) and facts.names.call_name(expression) in DESERIALIZERS:
            return ["loaded"]
        if (
            facts.tensors.is_tensor(expression)
            or (type(expression) is cst.Name and facts.tensors.is_definitely_tensor(expression))
        ) and facts.host_syncs.may_be_device_tensor(expression):
            # Or, bound to several values, may be one; or a name the function backpropagates.
            return ["tensor"]
        if (
            isinstance(expression, (cst.Name, cst.Subscript))
            and not (isinstance(expression, cst.Name) and facts.scopes.holds_argument(expression))
            and facts.host_syncs.is_host_value(expression, containers=False)
        ):
            return ["host"]  # `lm_input_ids = batch["input_ids"]` of a loader's batch, not copied
        if isinstance(expression, cst.Call):
            return None if callee is None else ["call", callee]
        if isinstance(expression, cst.Name):
            if facts.scopes.holds_argument(expression):
                return ["param", expression.value]
            values = facts.scopes.bound_values(expression)
            # `writer = None` on the paths that do not make one: whoever uses it tests first.
            made = [value for value in values if not is_none(value)]
            if len(made) == 1 and depth == 0:
                return self._value(made[0], depth + 1)
            if len(made) > 1 and depth == 0:
                return self._calls(made)
        return None

    def _calls(self, values: list[cst.BaseExpression]) -> Value | None:
        """["calls", refs] for a name bound, on different paths, to the results of calls of
        what the project may define (`model = Llama.from_pretrained(...)`, then
        `model = get_peft_model(model, config)`), when every binding is one."""
        refs = set()
        for value in values:
            callee = self.refs.callee(value) if isinstance(value, cst.Call) else None
            if callee is None or is_external(callee):
                return None
            refs.add(callee)
        return ["calls", sorted(refs)]

    def _returns(self, function: cst.FunctionDef) -> list[Value]:
        found = []
        for statement in self._own_returns(function):
            if statement.value is not None:
                value = self._value(statement.value)
                returned = None if value is not None else self.refs.passed_function(statement.value, statement)
                if returned is not None:
                    value = ["function", returned]  # a closure factory: `return train`
                if value is not None:
                    found.append(value)
        return found

    def _own_returns(self, function: cst.FunctionDef) -> list[cst.Return]:
        return self.returns.get(function, [])

    def _returns_cuda_device(self, function: cst.FunctionDef) -> bool:
        return any(
            statement.value is not None
            and mentions_cuda_device(statement.value, self.facts.scopes)
            for statement in self._own_returns(function)
        )

    def _wraps_no_grad(self, function: cst.FunctionDef) -> bool:
        """Refers to `torch.no_grad` or `torch.inference_mode` (in its body or nested defs)
        and calls no backward: a decorator or context factory that turns autograd off."""
        return function in self.grad_wrappers

    def _grad_wrappers(self) -> set[cst.FunctionDef]:
        facts = self.facts
        referring: set[cst.FunctionDef] = set()
        for node in (*facts.index.names, *facts.index.attributes):
            identifier = node.value if type(node) is cst.Name else node.attr.value
            if identifier in _GRAD_WRAPPED_NAMES and facts.names.qualified_name(node) in _GRAD_WRAPPED:
                referring.update(facts.scopes.enclosing_functions(node))
        backpropagating: set[cst.FunctionDef] = set()
        for call in facts.index.calls:
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward":
                backpropagating.update(facts.scopes.enclosing_functions(call))
        return referring - backpropagating

    def _add_devices(self, summary: ModuleSummary) -> None:
        """Module-level names bound to a CUDA device, and project values used as devices
        (`.to(dist_util.dev())`, `device=DEVICE` imported from a config module)."""
        facts = self.facts
        for assignment in facts.index.assigns:
            if facts.scopes.enclosing_function(assignment) is not None:
                continue
            if not isinstance(assignment, cst.Assign) or assignment.value is None:
                continue
            if mentions_cuda_device(assignment.value, facts.scopes):
                for target in assignment.targets:
                    if isinstance(target.target, cst.Name):
                        summary.cuda_names.append(target.target.value)
        refs = set()
        for call in facts.index.calls:
            func = call.func
            for position, arg in enumerate(call.args):
                keyword = arg.keyword.value if arg.keyword is not None else None
                is_to_target = (
                    position == 0 and keyword is None
                    and isinstance(func, cst.Attribute) and func.attr.value == "to"
                )
                if keyword != "device" and not is_to_target:
                    continue
                for value in self._device_sources(arg.value):
                    if isinstance(value, cst.Call):
                        ref = self.refs.callee(value)
                    else:
                        ref = self.refs.of_expression(value, call)
                    if ref is not None and ref.startswith(("import:", "def:")):
                        refs.add(ref)
        summary.device_refs = sorted(refs)

    def _device_sources(
        self, value: cst.BaseExpression, depth: int = 0
    ) -> Iterator[cst.BaseExpression]:
        """`value`, and what it may come from: both branches of a conditional, what a name
        or an attribute of `self` is bound to (`device = torch.device(cfg.device) if
        cfg.device else get_available_device()` then `device=device`), and the name that
        `torch.device(...)` is given (`self.device = torch.device(define_device("auto"))`)."""
        yield value
        if depth >= 2:
            return
        if isinstance(value, cst.IfExp):
            for branch in (value.body, value.orelse):
                yield from self._device_sources(branch, depth + 1)
        elif isinstance(value, (cst.Name, cst.Attribute)):
            for bound in self.facts.scopes.bound_values(value):
                yield from self._device_sources(bound, depth + 1)
        elif (
            isinstance(value, cst.Call)
            and value.args
            and self.facts.names.call_name(value) == "torch.device"
        ):
            yield from self._device_sources(value.args[0].value, depth + 1)


def is_external(ref: Ref) -> bool:
    """An import of the standard library or of PyTorch itself."""
    if not ref.startswith("import:"):
        return False
    target = ref[len("import:"):]
    return not target.startswith(".") and target.split(".")[0] in _EXTERNAL_ROOTS


# The calls that import a module by its name.
_IMPORTERS = frozenset(("importlib.import_module", "builtins.__import__"))


def _package_named(name: cst.BaseExpression) -> str:
    """The package a computed module name starts with (`f"baselines.{name}"`: "baselines");
    "" when it does not say."""
    if isinstance(name, cst.FormattedString) and name.parts:
        first = name.parts[0]
        if isinstance(first, cst.FormattedStringText) and "." in first.value:
            return first.value.rpartition(".")[0]
    return ""


def _does_work(statement: cst.BaseStatement) -> bool:
    """A top-level statement that does work when its module runs: a call (`main()`,
    `trainer.fit(model)`), a loop or a `with`; not a definition, an import or an assignment."""
    if isinstance(statement, (cst.For, cst.While, cst.With)):
        return True
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) for small in statement.body
    )
