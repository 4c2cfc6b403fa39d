"""Conditions around a node: periodic guards, flags, and whether autograd is switched off."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from torchperf_lint.facts.index import ScopeNode
from torchperf_lint.facts.names import NameResolver
from torchperf_lint.facts.scopes import Scopes

_GRAD_DISABLING = frozenset({"torch.no_grad", "torch.inference_mode"})


def is_modulo_test(test: cst.BaseExpression) -> bool:
    """`E % K == C`, `E % K != C`, `not E % K`, or an `and` with one of those as an operand."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return is_modulo_test(test.left) or is_modulo_test(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _is_modulo(test.expression)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            return _is_modulo(test.left) or _is_modulo(target.comparator)
    return False


def _is_modulo(expression: cst.BaseExpression) -> bool:
    return isinstance(expression, cst.BinaryOperation) and isinstance(
        expression.operator, cst.Modulo
    )


class Guards:
    """Answers "does this run every iteration?" and "is autograd recording here?"."""

    def __init__(
        self,
        scopes: Scopes,
        names: NameResolver,
        project_disables_grad: Callable[[cst.BaseExpression], bool] = lambda expression: False,
    ) -> None:
        self.scopes = scopes
        self.names = names
        # The project's own no-grad wrappers (`@smart_inference_mode()`), known to the program.
        self.project_disables_grad = project_disables_grad

    def periodic_guard(self, node: cst.CSTNode, within: cst.CSTNode | None = None) -> cst.If | None:
        """The `if step % n == 0:` whose body holds `node` (below `within`, if given)."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if parent is within or isinstance(parent, ScopeNode):
                return None
            if isinstance(parent, cst.If) and child is parent.body and is_modulo_test(parent.test):
                return parent
        return None

    def sparse_guard(self, node: cst.CSTNode, loop: cst.For | cst.While) -> cst.If | None:
        """The `if` inside `loop` whose body holds `node` and runs on few of its iterations.

        That is a periodic guard, a test of the loop's own counter for equality (`if i == 0:`,
        `if i + 1 == len(loader):`, or a name bound to one: `last = i == n - 1`), an `and`
        with one of those as an operand, or an `or` of them only.
        """
        counter = loop_counter(loop)
        for parent, child in self.scopes.ancestors_with_child(node):
            if parent is loop or isinstance(parent, ScopeNode):
                return None
            if (
                isinstance(parent, cst.If)
                and child is parent.body
                and self._is_sparse_test(parent.test, counter)
            ):
                return parent
        return None

    def _is_sparse_test(
        self, test: cst.BaseExpression, counter: str | None, depth: int = 0
    ) -> bool:
        if is_modulo_test(test):
            return True
        if isinstance(test, cst.BooleanOperation):
            left = self._is_sparse_test(test.left, counter, depth)
            right = self._is_sparse_test(test.right, counter, depth)
            return left or right if isinstance(test.operator, cst.And) else left and right
        if counter is None:
            return False
        if isinstance(test, cst.Name) and depth == 0:
            values = self.scopes.bound_values(test)
            return bool(values) and all(
                self._is_sparse_test(value, counter, depth + 1) for value in values
            )
        return _compares_counter(test, counter)

    def under_condition(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs only under some `if` (either branch) in its function."""
        for parent in self.scopes.ancestors(node):
            if isinstance(parent, ScopeNode):
                return False
            if isinstance(parent, (cst.If, cst.IfExp)):
                return True
        return False

    def under_flag(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs only under a condition (`if args.debug:`, `x if flag else y`).

        `if __name__ == "__main__":` is not a flag: it runs whenever the script does.
        """
        for parent, child in self.scopes.ancestors_with_child(node):
            if isinstance(parent, ScopeNode):
                return False
            if isinstance(parent, cst.IfExp) and child is not parent.test:
                return True
            if isinstance(parent, cst.If) and child is not parent.test:
                return not (child is parent.body and _is_main_test(parent.test))
        return False

    def under_main_guard(self, node: cst.CSTNode) -> bool:
        """Inside `if __name__ == "__main__":`, where spawned workers do not re-run it."""
        for parent, child in self.scopes.ancestors_with_child(node):
            if isinstance(parent, cst.If) and child is parent.body and _is_main_test(parent.test):
                return True
        return False

    def is_grad_disabling(self, expression: cst.BaseExpression) -> bool:
        """`torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`, or
        the project's own wrapper of one of them (`@smart_inference_mode()`)."""
        if isinstance(expression, cst.Call):
            name = self.names.call_name(expression)
            if name in _GRAD_DISABLING:
                return True
            if name == "torch.set_grad_enabled" and expression.args:
                value = expression.args[0].value
                return isinstance(value, cst.Name) and value.value == "False"
        elif self.names.qualified_name(expression) in _GRAD_DISABLING:
            return True
        return self.project_disables_grad(expression)

    def may_disable_grad(self, expression: cst.BaseExpression) -> bool:
        """`is_grad_disabling`, or a grad mode only known at run time:
        `torch.set_grad_enabled(<expression>)`, `ctx if c else torch.no_grad()`, or a name
        bound to a grad-disabling context manager (`ctx = torch.no_grad()`)."""
        if self.is_grad_disabling(expression):
            return True
        if (
            isinstance(expression, cst.Call)
            and expression.args
            and self.names.call_name(expression) == "torch.set_grad_enabled"
        ):
            value = expression.args[0].value
            return not (isinstance(value, cst.Name) and value.value == "True")
        if isinstance(expression, cst.IfExp):
            return self.may_disable_grad(expression.body) or self.may_disable_grad(expression.orelse)
        if isinstance(expression, (cst.Name, cst.Attribute)):
            return any(
                isinstance(value, (cst.Call, cst.IfExp)) and self.may_disable_grad(value)
                for value in self.scopes.bound_values(expression)
            )
        return False

    def decorated_grad_disabled(self, function: cst.FunctionDef) -> bool:
        return any(self.is_grad_disabling(d.decorator) for d in function.decorators)

    def grad_disabled(self, node: cst.CSTNode) -> bool:
        """Under `with torch.no_grad():` in the same function, or in a `@torch.no_grad()` def."""
        return self._under_grad_mode(node, self.is_grad_disabling)

    def grad_maybe_disabled(self, node: cst.CSTNode) -> bool:
        """`grad_disabled`, also counting grad modes only known at run time (`may_disable_grad`)."""
        return self._under_grad_mode(node, self.may_disable_grad)

    def _under_grad_mode(
        self, node: cst.CSTNode, disables: Callable[[cst.BaseExpression], bool]
    ) -> bool:
        in_own_function = True
        for parent in self.scopes.ancestors(node):
            if isinstance(parent, cst.FunctionDef):
                if any(disables(d.decorator) for d in parent.decorators):
                    return True
                in_own_function = False
            elif isinstance(parent, (cst.Lambda, cst.ClassDef)):
                in_own_function = False
            elif (
                in_own_function
                and isinstance(parent, cst.With)
                and any(disables(item.item) for item in parent.items)
            ):
                return True
        return False


def _is_main_test(test: cst.BaseExpression) -> bool:
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    has_name = any(isinstance(side, cst.Name) and side.value == "__name__" for side in sides)
    has_main = any(
        isinstance(side, cst.SimpleString) and side.evaluated_value == "__main__" for side in sides
    )
    return has_name and has_main and isinstance(test.comparisons[0].operator, cst.Equal)


def loop_counter(loop: cst.For | cst.While) -> str | None:
    """The name that counts a loop's iterations: `i` in `for i in range(n)` and in
    `for i, batch in enumerate(loader)`; None for other loops."""
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call):
        return None
    function = loop.iter.func
    called = function.value if isinstance(function, cst.Name) else None
    target = loop.target
    if called == "enumerate" and isinstance(target, (cst.Tuple, cst.List)) and target.elements:
        target = target.elements[0].value
    elif called != "range":
        return None
    return target.value if isinstance(target, cst.Name) else None


def _compares_counter(test: cst.BaseExpression, counter: str) -> bool:
    """`i == 0`, `i + 1 == len(loader)`: true on one iteration, since the counter never repeats."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    if not isinstance(test.comparisons[0].operator, cst.Equal):
        return False

    def is_counter(side: cst.BaseExpression) -> bool:
        if isinstance(side, cst.BinaryOperation) and isinstance(
            side.operator, (cst.Add, cst.Subtract)
        ):
            return is_counter(side.left) or is_counter(side.right)
        return isinstance(side, cst.Name) and side.value == counter

    return is_counter(test.left) or is_counter(test.comparisons[0].comparator)
