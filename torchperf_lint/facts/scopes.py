"""Where a node sits: its enclosing function and class, and what each name is bound to there."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from functools import cached_property

import libcst as cst

from torchperf_lint.facts.index import (
    COMPREHENSION_TYPES,
    LOOP_TYPES,
    SCOPE_TYPES,
    SyntaxIndex,
    methods_of,
    nearest_ancestor,
    statements_of,
)
from torchperf_lint.facts.names import dotted_name, target_names

_CLASS_TYPES = frozenset({cst.ClassDef})
_TRY_TYPES = frozenset({cst.Try, cst.TryStar})


class Scopes:
    """Parent navigation plus, per function (or the module), the values bound to each name."""

    def __init__(self, index: SyntaxIndex) -> None:
        self.parents = index.parents
        self._binders = index.binders
        self._function_of = index.function_of
        self._functions = index.functions
        self._classes: dict[cst.CSTNode, cst.CSTNode | None] = {}  # for `enclosing_class`
        # Per function, the names of its parameters (for `is_parameter`).
        self._parameters: dict[cst.FunctionDef, frozenset[str]] = {}
        self._binding_statements: dict[tuple[cst.CSTNode, str], bool] = {}
        self._nearest_bindings: dict[cst.Name, cst.CSTNode | bool | None] = {}
        self._reaching_bindings: dict[cst.Name, list[cst.CSTNode] | None] = {}
        # (scope, "name" or "self.attr") -> every value assigned to it, in source order.
        self._bindings: dict[tuple[cst.CSTNode | None, str], list[cst.BaseExpression]] = (
            defaultdict(list)
        )
        # The values `bound_values` gives for augmented assignments (`x += y` as `x + y`).
        self._augmented: set[int] = set()
        for assignment in index.assigns:
            if assignment.value is None:
                continue
            scope = self.enclosing_function(assignment)
            targets = (
                [t.target for t in assignment.targets]
                if isinstance(assignment, cst.Assign)
                else [assignment.target]
            )
            for target, value in _element_pairs(targets, assignment.value):
                name = dotted_name(target)
                if name is None:
                    continue
                if isinstance(assignment, cst.AugAssign):
                    value: cst.BaseExpression = cst.BinaryOperation(
                        left=target, operator=cst.Add(), right=assignment.value
                    )
                    self._augmented.add(id(value))
                key_scope = None if name.startswith("self.") else scope
                self._bindings[(key_scope, name)].append(value)
        for call in index.calls:
            buffer = _registered_buffer(call)
            if buffer is not None:
                self._bindings[(None, f"self.{buffer[0]}")].append(buffer[1])

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """Parents of `node`, nearest first, up to the module."""
        parent = self.parents.get(node)
        while parent is not None:
            yield parent
            parent = self.parents.get(parent)

    def in_a_loop(self, node: cst.CSTNode) -> bool:
        """Inside a `for` or `while` of its own function (or of the module's code)."""
        for parent in self.ancestors(node):
            if type(parent) in SCOPE_TYPES:
                return False
            if type(parent) in LOOP_TYPES:
                return True
        return False

    def ancestors_with_child(
        self, node: cst.CSTNode
    ) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
        """(parent, the child of it on the way to `node`) pairs, nearest first."""
        child = node
        for parent in self.ancestors(node):
            yield parent, child
            child = parent

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The innermost `def` containing `node`, or None at module level."""
        return self._function_of.get(id(node))

    def enclosing_functions(self, node: cst.CSTNode) -> Iterator[cst.FunctionDef]:
        """Every `def` containing `node`, innermost first."""
        # From `def` to `def`: the index knows each one's innermost `def` around it.
        function = self._function_of.get(id(node))
        while function is not None:
            yield function
            function = self._function_of.get(id(function))

    @cached_property
    def module_functions(self) -> dict[str, cst.FunctionDef]:
        """The functions defined outside any function or class, by name (the last wins)."""
        return {
            function.name.value: function
            for function in self._functions
            if self.enclosing_function(function) is None and self.enclosing_class(function) is None
        }

    def functions_called(
        self,
        call: cst.Call,
        caller: cst.FunctionDef | None,
        receivers: tuple[str, ...] = ("self", "cls"),
    ) -> list[cst.FunctionDef]:
        """The module's function `call` runs (`_download_weights()`), or the methods of the
        caller's class it may run on one of `receivers` (`self._download()`)."""
        func = call.func
        if type(func) is cst.Name:
            found = self.module_functions.get(func.value)
            return [found] if found is not None else []
        if (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value in receivers
            and caller is not None
        ):
            cls = self.enclosing_class(caller)
            if cls is not None:
                return methods_of(cls, [func.attr.value])
        return []

    def enclosing_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        return nearest_ancestor(self.parents, self._classes, node, _CLASS_TYPES)

    def within_same_scope(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        """Whether `ancestor` contains `node` without a `def`, `lambda` or `class` between."""
        for parent in self.ancestors(node):
            if parent is ancestor:
                return True
            if type(parent) in SCOPE_TYPES:
                return False
        return False

    def is_parameter(self, name: str, function: cst.FunctionDef | None) -> bool:
        if function is None:
            return False
        names = self._parameters.get(function)
        if names is None:
            params = function.params
            every = (*params.posonly_params, *params.params, *params.kwonly_params)
            extras = [p for p in (params.star_arg, params.star_kwarg) if type(p) is cst.Param]
            names = self._parameters[function] = frozenset(p.name.value for p in (*every, *extras))
        return name in names

    def holds_argument(self, name: cst.Name) -> bool:
        """Whether `name` is a parameter of the function it is read in that the function
        never rebinds: it holds what each caller passed."""
        return self.is_parameter(name.value, self.enclosing_function(name)) and not (
            self.bound_values(name)
        )

    def calls_of(self, function: cst.FunctionDef, calls: list[cst.Call]) -> list[cst.Call]:
        """The calls of `function` among the module's `calls`: `name(...)` of a module-level
        function, `self.name(...)` of a method, and for an `__init__`, `Class(...)` and the
        `cls(...)` of the class's own methods."""
        cls = self.enclosing_class(function)
        if cls is None:
            callees = {function.name.value}
        elif function.name.value == "__init__":
            callees = {cls.name.value, "cls"}
        else:
            callees = {f"self.{function.name.value}"}
        return [
            call for call in calls
            if dotted_name(call.func) in callees
            and (dotted_name(call.func) != "cls" or self.enclosing_class(call) is cls)
        ]

    def binds(self, function: cst.FunctionDef | None, name: str) -> bool:
        """Whether `function` (None: the module's own code) binds `name`: a parameter, an
        assignment, a loop or `with` target."""
        return self.is_parameter(name, function) or bool(self._binding_sites.get((function, name)))

    def bound_values(self, expression: cst.BaseExpression) -> list[cst.BaseExpression]:
        """Values assigned to the name or `self.attr` that `expression` reads.

        A name is looked up in its own function first, then in the functions around it (a
        closure's free name), then at module level; a function parameter that is never
        reassigned has no known value.
        """
        name = dotted_name(expression)
        if name is None:
            return []
        if name.startswith("self."):
            return self._bindings.get((None, name), [])
        root = name.split(".")[0]
        for function in self.enclosing_functions(expression):
            values = self._bindings.get((function, name), [])
            if values or self.is_parameter(root, function):
                return values
        return self._bindings.get((None, name), [])

    def shows_every_binding(self, name: cst.Name) -> bool:
        """Whether `bound_values` holds every value `name` may have where it is read: its
        function binds it only by assignments the module shows, not as a parameter, a loop,
        `with` or walrus target, or an element of an unpacked value (`train, test = [...]`)."""
        function = self.enclosing_function(name)
        if self.is_parameter(name.value, function):
            return False
        scope = function if (function, name.value) in self._binding_sites else None
        for site in self._binding_sites.get((scope, name.value), ()):
            if type(site) in (cst.AnnAssign, cst.AugAssign):
                continue
            if type(site) is not cst.AssignTarget:
                return False
            if isinstance(site.target, (cst.Tuple, cst.List)) and not any(
                dotted_name(target) == name.value
                for target, _ in _element_pairs([site.target], self.parents[site].value)
            ):
                return False  # `train, test = splits`: no value of its own is shown
        return True

    def is_augmented(self, value: cst.BaseExpression) -> bool:
        """Whether `value`, one of `bound_values`, stands for an augmented assignment
        (`x += y`, given as `x + y`), which updates a tensor in place."""
        return id(value) in self._augmented

    def unpacked_from(self, name: cst.Name) -> tuple[cst.BaseExpression, int] | None:
        """The value and the position of `name` in it, when the name's one binding in its
        function is an element of an unpacking assignment: `loader, dataset = build(cfg)`
        gives (`build(cfg)`, 0)."""
        sites = self._binding_sites.get((self.enclosing_function(name), name.value), [])
        if len(sites) != 1 or not isinstance(sites[0], cst.AssignTarget):
            return None
        target = sites[0].target
        assignment = self.parents.get(sites[0])
        if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(assignment, cst.Assign):
            return None
        for position, element in enumerate(target.elements):
            if isinstance(element, cst.StarredElement):
                return None
            if isinstance(element.value, cst.Name) and element.value.value == name.value:
                return assignment.value, position
        return None

    def reaching_value(self, name: cst.Name) -> cst.BaseExpression | None:
        """The value of the assignment `name = value` that every path to this use of `name`
        goes through last, in straight-line code of its function: the nearest earlier
        statement of an enclosing block that binds the name, when that statement is such an
        assignment. None when the nearest binding is of another kind (a branch, a loop, an
        unpacking), when a loop around the use binds the name again (its next iteration
        reads that value), or when nothing before the use binds it."""
        statement = self._nearest_binding(name)
        return _assigned_value(statement, name.value) if isinstance(statement, cst.CSTNode) else None

    def reaching_bindings(self, name: cst.Name) -> list[cst.CSTNode] | None:
        """The bindings of `name` (assignment targets, `for` loops, ...: `SyntaxIndex.binders`)
        whose value this use may read: the last binding on each path to it in its function,
        through both branches of an `if` (`if explore: a = sample() else: a = q.argmax()`),
        the body of a `with` and a loop's previous iteration; a `for` loop around the use
        whose target is the name binds it on each iteration, whatever came before.

        None when a path may reach the use with nothing binding the name in its function (a
        parameter, a global, a name a comprehension binds), or through a statement this does
        not follow (`try`, `match`, a `with ... as` or walrus binding)."""
        if name not in self._reaching_bindings:
            self._reaching_bindings[name] = self._find_reaching_bindings(name)
        return self._reaching_bindings[name]

    def _find_reaching_bindings(self, name: cst.Name) -> list[cst.CSTNode] | None:
        found: list[cst.CSTNode] = []
        for parent, child in self.ancestors_with_child(name):
            kind = type(parent)
            if kind in SCOPE_TYPES or (
                kind in COMPREHENSION_TYPES and self._binds(parent, name.value)
            ):
                return None
            if kind in _TRY_TYPES and child is not parent.body:
                return None  # a handler may run after any statement of the `try`
            if self._binds_in_header(parent, name.value):
                return None  # `with open(p) as name:`, `if (name := f()):`
            if kind is cst.For and child is parent.body and name.value in target_names(parent.target):
                found.append(parent)
                return found
            if kind in LOOP_TYPES and (child is parent.body or child is getattr(parent, "test", None)):
                previous = self._last_bindings(statements_of(parent.body), name.value)
                if previous is None:
                    return None
                found.extend(previous[0])  # the iteration before, then the code before the loop
                continue
            if kind in LOOP_TYPES and child is parent.orelse and self._binds(parent, name.value):
                return None
            statements = statements_of(parent)
            if child not in statements:
                continue
            before = self._last_bindings(statements[: statements.index(child)], name.value)
            if before is None:
                return None
            found.extend(before[0])
            if before[1]:
                return found
        return None

    def _last_bindings(
        self, statements: list[cst.CSTNode], name: str
    ) -> tuple[list[cst.CSTNode], bool] | None:
        """The bindings of `name` that may be the last ones after `statements` run, and
        whether every path through them binds it; None for a binding this does not follow."""
        found: list[cst.CSTNode] = []
        for statement in reversed(statements):
            if not self._binds(statement, name):
                continue
            through = self._bindings_through(statement, name)
            if through is None:
                return None
            found.extend(through[0])
            if through[1]:
                return found, True
        return found, False

    def _bindings_through(
        self, statement: cst.CSTNode, name: str
    ) -> tuple[list[cst.CSTNode], bool] | None:
        """`_last_bindings` of one statement that binds `name`."""
        kind = type(statement)
        if kind is cst.SimpleStatementLine or isinstance(statement, cst.BaseSmallStatement):
            sites = self._binding_sites[(self.enclosing_function(statement), name)]
            return [next(s for s in reversed(sites) if self._within(s, statement))], True
        if kind is cst.If:
            if self._binds_in_header(statement, name):
                return None
            body = self._branch_bindings(statement.body, name)
            orelse = statement.orelse
            if orelse is None:
                other: tuple[list[cst.CSTNode], bool] | None = ([], False)
            elif type(orelse) is cst.If:
                other = self._bindings_through(orelse, name)
            else:
                other = self._branch_bindings(orelse.body, name)
            if body is None or other is None:
                return None
            return body[0] + other[0], body[1] and other[1]
        if kind is cst.With and not self._binds_in_header(statement, name):
            return self._last_bindings(statements_of(statement.body), name)
        if kind in LOOP_TYPES and statement.orelse is None and not self._binds_in_header(
            statement, name
        ):
            body = self._last_bindings(statements_of(statement.body), name)
            if body is None:
                return None
            targets = target_names(statement.target) if kind is cst.For else ()
            header = [statement] if name in targets else []
            return body[0] + header, False  # it may make no iteration
        if kind in _TRY_TYPES and statement.finalbody is None:
            return self._bindings_through_try(statement, name)
        return None

    def _bindings_through_try(
        self, statement: cst.Try | cst.TryStar, name: str
    ) -> tuple[list[cst.CSTNode], bool] | None:
        """`_last_bindings` of a `try` without `finally`: any binding in its body (an exception
        may stop it after any one), and the last ones of its handlers and of its `else`
        (`try: batch = next(batches) except StopIteration: batches = iter(loader)`)."""
        if any(
            handler.name is not None and self._binds(handler.name, name)
            for handler in statement.handlers
        ):
            return None
        sites = self._binding_sites[(self.enclosing_function(statement), name)]
        found = [site for site in sites if self._within(site, statement.body)]
        for block in (*(handler.body for handler in statement.handlers), statement.orelse):
            if block is None:
                continue
            through = self._branch_bindings(block.body if type(block) is cst.Else else block, name)
            if through is None:
                return None
            found.extend(through[0])
        return found, False

    def _branch_bindings(
        self, block: cst.BaseSuite, name: str
    ) -> tuple[list[cst.CSTNode], bool] | None:
        """`_last_bindings` of a branch of an `if`; a branch that leaves the function (`raise`,
        `return`, `exit(-1)`) binds nothing that the code after the `if` reads."""
        statements = statements_of(block)
        if statements and _leaves_the_function(statements[-1]):
            return [], True
        return self._last_bindings(statements, name)

    def _binds_in_header(self, statement: cst.CSTNode, name: str) -> bool:
        """Whether the test of an `if` or `while`, or the items of a `with`, bind `name`."""
        kind = type(statement)
        if kind is cst.If or kind is cst.While:
            return self._binds(statement.test, name)
        if kind is cst.With:
            return any(self._binds(item, name) for item in statement.items)
        return False

    def reaching_values(self, name: cst.Name) -> list[cst.BaseExpression] | None:
        """The values of the bindings that reach this use of `name` (`reaching_bindings`),
        also through a `with` block and both branches of an `if`; None when they are not
        known or one of them shows no value (`binding_value`)."""
        bindings = self.reaching_bindings(name)
        values = None if bindings is None else [self.binding_value(b, name.value) for b in bindings]
        return None if not values or None in values else values

    def binding_value(self, binding: cst.CSTNode, name: str) -> cst.BaseExpression | None:
        """The value a binding from `reaching_bindings` gives `name`: `v` for `name = v`,
        `a, name = u, v` and `(name := v)`; None for any other binding (an unpacking of a call,
        an augmented assignment, a loop)."""
        if type(binding) is cst.AnnAssign or type(binding) is cst.NamedExpr:
            return binding.value if dotted_name(binding.target) == name else None
        if type(binding) is not cst.AssignTarget:
            return None
        assignment = self.parents.get(binding)
        if type(assignment) is not cst.Assign:
            return None
        for target, value in _element_pairs([binding.target], assignment.value):
            if type(target) is cst.Name and target.value == name:
                return value
        return None

    def unbound_before(self, name: cst.Name) -> bool:
        """Nothing in its function binds `name` before this use (nor a loop around it): a
        parameter still holds its argument, whatever the function binds it to later."""
        return self._nearest_binding(name) is None

    def _nearest_binding(self, name: cst.Name) -> cst.CSTNode | bool | None:
        """The nearest earlier statement of an enclosing block that binds `name`; True when a
        loop around the use binds it (the value may come from an earlier iteration); None
        when nothing before the use in its function binds it. Answered once per use: both
        `reaching_value` and `unbound_before` ask it."""
        if name not in self._nearest_bindings:
            self._nearest_bindings[name] = self._find_nearest_binding(name)
        return self._nearest_bindings[name]

    def _find_nearest_binding(self, name: cst.Name) -> cst.CSTNode | bool | None:
        for parent, child in self.ancestors_with_child(name):
            kind = type(parent)
            if kind in SCOPE_TYPES:
                return None
            if kind is cst.For and child is parent.body and name.value in target_names(parent.target):
                return parent  # each iteration binds it again, whatever came before
            if (
                kind in LOOP_TYPES
                and child is parent.body
                and self._binds(parent.body, name.value)
            ):
                return True
            body = getattr(parent, "body", None)
            if not isinstance(body, (list, tuple)) or child not in body:
                continue
            for statement in reversed(body[: body.index(child)]):
                if self._binds(statement, name.value):
                    return statement
        return None

    def _binds(self, node: cst.CSTNode, name: str) -> bool:
        """Whether `node` binds `name` in its own function: an assignment, a loop or `with`
        target, an augmented assignment or a walrus inside it."""
        key = (node, name)
        if key not in self._binding_statements:
            sites = self._binding_sites.get((self.enclosing_function(node), name), ())
            self._binding_statements[key] = any(self._within(site, node) for site in sites)
        return self._binding_statements[key]

    def _within(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        """`node` is `ancestor` or below it."""
        return node is ancestor or any(parent is ancestor for parent in self.ancestors(node))

    @cached_property
    def _binding_sites(self) -> dict[tuple[cst.CSTNode | None, str], list[cst.CSTNode]]:
        """Per (function, name), the nodes that bind the name there (see `_binds`)."""
        sites: dict[tuple[cst.CSTNode | None, str], list[cst.CSTNode]] = defaultdict(list)
        for node in self._binders:
            target = node.name if isinstance(node, cst.AsName) else node.target
            function = self.enclosing_function(node)
            for name in target_names(target):
                sites[(function, name)].append(node)
        return sites


def single_assignment(statement: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """`("out", value)` for a line that is exactly `out = value` (one target, one statement)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assignment = statement.body[0]
    if (
        isinstance(assignment, cst.Assign)
        and len(assignment.targets) == 1
        and isinstance(assignment.targets[0].target, cst.Name)
    ):
        return assignment.targets[0].target.value, assignment.value
    return None


def _assigned_value(statement: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """`value` when `statement` is the line `name = value`."""
    assigned = single_assignment(statement)
    return assigned[1] if assigned is not None and assigned[0] == name else None


def _registered_buffer(call: cst.Call) -> tuple[str, cst.BaseExpression] | None:
    """`self.register_buffer("name", value)`: a module attribute bound to a tensor, as
    `self.name = value` would bind it."""
    func = call.func
    if not (
        isinstance(func, cst.Attribute)
        and func.attr.value == "register_buffer"
        and dotted_name(func.value) == "self"
        and len(call.args) >= 2
        and all(arg.keyword is None and arg.star == "" for arg in call.args[:2])
    ):
        return None
    name = call.args[0].value
    if not isinstance(name, cst.SimpleString) or not isinstance(name.evaluated_value, str):
        return None
    return name.evaluated_value, call.args[1].value


def _element_pairs(
    targets: list[cst.BaseExpression], value: cst.BaseExpression
) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(target, value) for each target of an assignment, and for each element of a tuple
    target assigned a tuple of as many elements (`self.hyp, self.autobalance = h,
    autobalance`); a tuple target assigned anything else binds no value the module shows."""
    for target in targets:
        if not isinstance(target, (cst.Tuple, cst.List)):
            yield target, value
        elif (
            isinstance(value, (cst.Tuple, cst.List))
            and len(value.elements) == len(target.elements)
            and not any(
                isinstance(element, cst.StarredElement)
                for element in (*target.elements, *value.elements)
            )
        ):
            for element, element_value in zip(target.elements, value.elements):
                yield element.value, element_value.value


# Calls after which nothing more of the program runs.
_EXITS = frozenset({"exit", "quit", "sys.exit", "os._exit"})


def _leaves_the_function(statement: cst.CSTNode) -> bool:
    """`raise ...`, `return ...` or `sys.exit(...)` (also `exit`, `quit`, `os._exit`)."""
    if type(statement) is cst.SimpleStatementLine:
        final = statement.body[-1]
    elif isinstance(statement, cst.BaseSmallStatement):  # `if bad: raise ValueError(bad)`
        final = statement
    else:
        return False
    if isinstance(final, (cst.Raise, cst.Return)):
        return True
    return (
        isinstance(final, cst.Expr)
        and isinstance(final.value, cst.Call)
        and dotted_name(final.value.func) in _EXITS
    )
