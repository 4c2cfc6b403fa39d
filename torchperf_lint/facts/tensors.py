"""Which expressions are tensors (RULES.md, "Tensor expression"). Rules stay silent on the rest.

A tensor expression is a `torch.*` call, a model or criterion call, a value later
`.backward()`ed (`loss` in `loss.backward()`, and in `fabric.backward(loss)`, whose receiver
is a framework object), a name bound to one of these, and arithmetic, indexing or method chains
on them. A name is judged by the bindings that reach its use where the code shows them all
(`for start in range(0, n, m):` rebinds an earlier tensor `start` to an int), else by any of
its bindings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from torchperf_lint.facts.index import COMPREHENSION_TYPES, SCOPE_TYPES, SyntaxIndex
from torchperf_lint.facts.names import NameResolver, dotted_name, last_identifier, target_names
from torchperf_lint.facts.scopes import Scopes

# What people call the modules and loss functions they call on tensors.
_MODEL_NAME = re.compile(
    r"(^|_)(model|net|network|criterion|loss_?fn|loss_?func|encoder|decoder|module|head|"
    r"backbone|classifier|generator|discriminator|critic|actor|policy)s?($|_)|"
    r"model$|net$",
    re.IGNORECASE,
)
# The longest word that may follow a model word in a model's name: `model_ema`, `net_g`,
# `text_encoder_2`, `model_fp16`; a longer one makes it a qualifier of something else
# (`logical_and_across_model_parallel_group`).
_MAX_SUFFIX_WORD = 4
# First words of function names that act on a model rather than name one: `build_model`,
# `get_model`, `self.load_model(...)` return or change a model, they do not run it.
_ACTION_WORDS = frozenset({
    "get", "build", "create", "make", "load", "save", "init", "initialize", "setup", "prepare",
    "wrap", "unwrap", "convert", "export", "compile", "register", "train", "evaluate", "eval",
    "test", "run", "update", "reset", "freeze", "unfreeze", "to", "from", "is", "has", "set",
    "print", "log", "copy", "clone", "instantiate", "apply", "fetch", "download", "push",
    "move", "check", "validate", "configure", "patch", "replace", "add", "remove", "resolve",
})
# torch.* callables that return something other than a tensor.
_NON_TENSOR_TORCH = re.compile(
    r"^torch\.(device|dtype|cuda\.(?!FloatTensor)|backends|distributed|optim|utils|nn\.(?!functional)"
    r"|autograd\.profiler|profiler|amp|is_|get_|set_|manual_seed|compile|jit|load$|save$|no_grad"
    r"|inference_mode|enable_grad|Size|Generator|finfo|iinfo|numel$"
    # Private modules, and the compiler, export and tooling namespaces, build graphs, guards
    # and descriptions of tensors, not tensors.
    r"|_|fx|export|library|onnx|hub|package|testing|ao|futures|multiprocessing|overrides|types)"
    # Classes other than the tensor types (`torch.fx.tensor_type.TensorType` is no tensor).
    r"|^torch\..*\.(?!\w*Tensor$)[A-Z]\w*$"
)
# Tensor factories (`torch.zeros(...)`): without `device=` they build the tensor in host
# memory, and without `requires_grad=True` it needs no gradient.
TENSOR_FACTORIES = frozenset({
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange",
    "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm",
})
# Tensor methods that return something that is no longer a tensor.
_NON_TENSOR_METHODS = frozenset({
    "item", "tolist", "numpy", "size", "dim", "numel", "data_ptr", "is_contiguous",
    "element_size", "stride", "storage", "untyped_storage", "get_device", "nelement",
    "parameters", "named_parameters", "state_dict", "modules", "children", "keys", "items",
    "values",
})
# Tensor attributes that describe the tensor rather than hold its values.
_NON_TENSOR_ATTRIBUTES = frozenset({
    "shape", "ndim", "dtype", "device", "is_cuda", "requires_grad", "layout", "is_leaf",
    "grad_fn", "names", "is_sparse", "is_quantized", "is_meta", "training",
})
# Comparisons that ask about identity or membership give a Python bool, never a tensor.
_NON_ELEMENTWISE_COMPARISONS = (cst.Is, cst.IsNot, cst.In, cst.NotIn)
# `torch.nn` namespaces of functions: calling one computes a value, it builds no module.
_NN_NON_MODULES = ("torch.nn.utils", "torch.nn.functional.", "torch.nn.init.")
_MAX_DEPTH = 4
# Element-wise predicates and logical operations whose result is a boolean mask.
_MASK_METHODS = frozenset({
    "bool", "isnan", "isinf", "isfinite", "eq", "ne", "gt", "lt", "ge", "le", "logical_not",
    "logical_and", "logical_or", "logical_xor",
})
_MASK_FUNCTIONS = frozenset(f"torch.{method}" for method in _MASK_METHODS - {"bool"})


class TensorExpressions:
    """Decides whether an expression is known to evaluate to a tensor."""

    def __init__(self, index: SyntaxIndex, scopes: Scopes, names: NameResolver) -> None:
        self.scopes = scopes
        self.names = names
        self._tensor_answers: dict[tuple[cst.BaseExpression, int], bool] = {}
        self.module_names = self._module_constructions(index)
        # Functions and methods the module defines: calling one runs code, not a model object.
        self.function_names = {function.name.value for function in index.functions}
        # (function, name) pairs that are `.backward()`ed: `loss` in `loss.backward()`.
        self.backwarded: set[tuple[cst.FunctionDef | None, str]] = set()
        backward_calls = [
            call for call in index.calls
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward"
        ]
        # (function, name) of what each function calls: a tensor is never called.
        called = {
            (scopes.enclosing_function(call), dotted_name(call.func))
            for call in (index.calls if any(call.args for call in backward_calls) else ())
        }
        for call in backward_calls:
            receiver = self._strip_scale(call.func.value)
            if call.args and (
                self._is_constructed_object(receiver)
                or (scopes.enclosing_function(call), dotted_name(receiver)) in called
            ):
                # `fabric.backward(loss)`, a DeepSpeed engine's `model.backward(loss)` after
                # `model(**batch)`: an object backpropagates `loss`.
                receiver = call.args[0].value
            name = dotted_name(receiver)
            if name is not None:
                self.backwarded.add((scopes.enclosing_function(call), name))

    def _strip_scale(self, receiver: cst.BaseExpression) -> cst.BaseExpression:
        # scaler.scale(loss).backward() backpropagates `loss`.
        is_scale = isinstance(receiver, cst.Call) and last_identifier(receiver.func) == "scale"
        if is_scale and receiver.args:
            return receiver.args[0].value
        return receiver

    def _is_constructed_object(self, receiver: cst.BaseExpression) -> bool:
        """A name bound only to constructions of classes outside `torch` (`Fabric()`,
        `Accelerator(...)`): an object, never a tensor."""
        values = self.scopes.bound_values(receiver)
        return bool(values) and all(
            isinstance(value, cst.Call)
            and (last_identifier(value.func) or "")[:1].isupper()
            and not (self.names.call_name(value) or "").startswith("torch.")
            for value in values
        )

    def _module_constructions(self, index: SyntaxIndex) -> set[str]:
        """Names bound to `nn.X(...)`, to instances of the file's own `nn.Module` subclasses,
        or to a pretrained model (`X.from_pretrained(...)`)."""
        own_modules = {
            cls.name.value
            for cls in index.classes
            if any(
                (self.names.qualified_name(base.value) or "").startswith("torch.nn.")
                for base in cls.bases
            )
        }
        bound = set()
        for assignment in index.assigns:
            if not isinstance(assignment, cst.Assign) or not isinstance(assignment.value, cst.Call):
                continue
            callee = self.names.call_name(assignment.value) or ""
            own = last_identifier(assignment.value.func) in own_modules
            # `AutoencoderKL.from_pretrained(...)`: a pretrained model of a model library.
            pretrained = last_identifier(assignment.value.func) == "from_pretrained"
            if own or pretrained or (
                callee.startswith("torch.nn.") and not callee.startswith(_NN_NON_MODULES)
            ):
                for target in assignment.targets:
                    name = dotted_name(target.target)
                    if name is not None:
                        bound.add(name)
        return bound

    def is_module_call(self, call: cst.Call) -> bool:
        """A call of a model, layer or criterion: `model(x)`, `self.encoder(x)`, `criterion(o, y)`."""
        if (last_identifier(call.func) or "")[:1].isupper():
            # `Net(cfg)`, `MyModel()`: constructing a module class, not running a module.
            return dotted_name(call.func) in self.module_names
        return self.is_module_reference(call.func)

    def is_module_reference(self, expression: cst.BaseExpression) -> bool:
        """A name or attribute that holds a model, layer or criterion: `model`, `self.encoder`,
        `teacher_model`; not a function the module defines, nor a name that starts with an
        action (`build_model`, `self.load_model`), even when it contains "model"."""
        name = dotted_name(expression)
        if name is None:
            return False
        if name in self.module_names:
            return True
        identifier = last_identifier(expression) or ""
        if identifier in self.function_names or identifier.split("_", 1)[0].lower() in _ACTION_WORDS:
            return False
        return any(_names_the_object(identifier, match) for match in _MODEL_NAME.finditer(identifier))

    def is_tensor(self, expression: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > _MAX_DEPTH:
            return False
        # A name bound many times is looked up through each of its values, which may name it
        # again (`x = x + 1`): each (node, depth) is answered once. A question met again while
        # it is being answered (`for m in [m, d]:`, where an item of the list is the loop's
        # own name, at the same depth) is answered no.
        key = (expression, depth)
        if key not in self._tensor_answers:
            self._tensor_answers[key] = False
            self._tensor_answers[key] = self._is_tensor(expression, depth)
        return self._tensor_answers[key]

    def _is_tensor(self, expression: cst.BaseExpression, depth: int) -> bool:
        kind = type(expression)  # asked of most expressions: by type, as in `index`
        if kind is cst.Call:
            return self._is_tensor_call(expression, depth)
        if kind is cst.Name or kind is cst.Attribute:
            return self._is_tensor_name(expression, depth)
        # Parts of an expression keep its depth: only a name's lookup goes deeper.
        if kind is cst.Subscript:
            return self.is_tensor(expression.value, depth) or self._selects_by_mask(
                expression, depth
            )
        if isinstance(expression, cst.BinaryOperation):
            return self.is_tensor(expression.left, depth) or self.is_tensor(
                expression.right, depth
            )
        if isinstance(expression, cst.UnaryOperation):
            return self.is_tensor(expression.expression, depth)
        if isinstance(expression, cst.IfExp):  # `x.item() if isinstance(x, Tensor) else x`: no
            return self.is_tensor(expression.body, depth) and self.is_tensor(expression.orelse, depth)
        if isinstance(expression, cst.Comparison):
            # `pred == target` compares element-wise and gives a boolean tensor.
            if not is_elementwise_comparison(expression):
                return False
            operands = (expression.left, *(c.comparator for c in expression.comparisons))
            return any(self.is_tensor(operand, depth) for operand in operands)
        return False

    def is_definitely_tensor(self, expression: cst.BaseExpression) -> bool:
        """A tensor expression; a name (or `self.attr`: a buffer, say) only when every value
        bound to it is one.

        `loss = loss.item()` rebinds a tensor name to a float: `float(loss)` after it reads no
        device value, and the bindings do not say which one a given line sees. A name bound
        once and backpropagated in its function holds a tensor whatever made it (`loss =
        loss_fn(z, h)`, a helper of the step, then `loss.backward()`).
        """
        if isinstance(expression, cst.Name):
            # `acc = None` then `acc = (pred == y).float().mean()`: a tensor wherever it is
            # tested as one (`if acc:` reads it when it is not None).
            values = [v for v in self.scopes.bound_values(expression) if not is_none(v)]
            backpropagated = (
                len(values) == 1
                and (self.scopes.enclosing_function(expression), expression.value) in self.backwarded
            )
            if not backpropagated and not all(self.is_tensor(value) for value in values):
                return False
        elif (dotted_name(expression) or "").startswith("self."):
            values = self.scopes.bound_values(expression)
            return bool(values) and all(self.is_tensor(value) for value in values)
        return self.is_tensor(expression)

    def _is_tensor_call(self, call: cst.Call, depth: int) -> bool:
        qualified = self.names.call_name(call)
        if qualified is not None:
            return qualified.startswith("torch.") and not _NON_TENSOR_TORCH.match(qualified)
        if self.is_module_call(call):
            return True
        func = call.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in _NON_TENSOR_METHODS:
                return False
            return self.is_tensor(func.value, depth)
        return False

    def _is_tensor_name(self, expression: cst.Name | cst.Attribute, depth: int) -> bool:
        name = dotted_name(expression)
        if name is None:
            return False
        function = self.scopes.enclosing_function(expression)
        if (function, name) in self.backwarded:
            return True
        if isinstance(expression, cst.Attribute) and not name.startswith("self."):
            # `out.logits`, `loss.data`: an attribute of a tensor-valued name.
            if expression.attr.value in _NON_TENSOR_ATTRIBUTES:
                return False  # `out.shape`, `x.device`: about the tensor, not its values.
            if self.qualified_torch_constant(expression):
                return False
            if expression.attr.value == "grad":
                return True  # `p.grad`: a parameter's gradient, whatever `p` was bound from
            return self.is_tensor(expression.value, depth)
        if isinstance(expression, cst.Name) and self.scopes.is_parameter(name, function):
            # `if beta == 0:` before the `beta = torch.tensor(beta)` of another branch: the
            # parameter still holds its argument there.
            if self.scopes.unbound_before(expression):
                return False
            reaching = self.scopes.reaching_value(expression)
            if reaching is not None:
                return self.is_tensor(reaching, depth + 1)
        if isinstance(expression, cst.Name):
            reaching = self._reaching_is_tensor(expression, depth)
            if reaching is not None:
                return reaching
        if any(self.is_tensor(v, depth + 1) for v in self.scopes.bound_values(expression)):
            return True
        # `for row in ids:`, `[x.sum() for x in torch.split(t, k)]`: an item of tensors. The
        # loop binds the name in its own syntax, as a subscript reads its value: same depth.
        iterated = self.iterated_for(expression) if isinstance(expression, cst.Name) else None
        return iterated is not None and self.yields_tensors(iterated, depth)

    def _reaching_is_tensor(self, name: cst.Name, depth: int) -> bool | None:
        """Whether a binding that reaches this use of `name` gives it a tensor, when each of
        them shows what it gives (`reaching_sources`): `start` in `for start in range(0, n,
        m): b[start:start + m]` is an int, whatever tensor an earlier `start =
        torch.clip(...)` bound. None when one does not."""
        sources = self.reaching_sources(name)
        if sources is None:
            return None
        # A loop binds the name in its own syntax, as a subscript reads its value: same depth.
        return any(
            self.yields_tensors(source, depth) if is_item else self.is_tensor(source, depth + 1)
            for source, is_item in sources
        )

    def reaching_sources(self, name: cst.Name) -> list[tuple[cst.BaseExpression, bool]] | None:
        """Where the value of this use of `name` comes from, for each binding that reaches
        it (`Scopes.reaching_bindings`): (an assignment's value, False), or (what a loop
        iterates, True) for an item of it (`next_done` for `d` in `for i, d in
        enumerate(next_done):`). None when a binding does not show it (an unpacked call, an
        augmented assignment) or the bindings are not known."""
        bindings = self.scopes.reaching_bindings(name)
        if bindings is None:
            return None
        sources = []
        for binding in bindings:
            if type(binding) is cst.For:
                source = self._iterable_binding(binding.target, binding.iter, name.value)
            else:
                source = self.scopes.binding_value(binding, name.value)
            if source is None:
                return None
            sources.append((source, type(binding) is cst.For))
        return sources

    def yields_tensors(self, iterable: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether every item of `iterable` is a tensor: the rows of a tensor built by a
        `torch.*` call or a tensor method (`torch.split(t, k)`, `t.unbind(0)`, `x[mask]`), a
        list or tuple literal of tensors, a comprehension of tensors (`[row[m] for row, m in
        zip(ids, masks)]`), or a name bound to one of these. What a model or another callable
        returns is left alone: a dict of outputs yields its keys."""
        if depth > _MAX_DEPTH:
            return False
        if type(iterable) in COMPREHENSION_TYPES and type(iterable) is not cst.DictComp:
            return self.is_tensor(iterable.elt, depth)
        if isinstance(iterable, (cst.List, cst.Tuple)):
            return bool(iterable.elements) and all(
                not isinstance(element, cst.StarredElement) and self.is_tensor(element.value, depth)
                for element in iterable.elements
            )
        if isinstance(iterable, cst.Call):
            return not self.is_module_call(iterable) and self._is_tensor_call(iterable, depth)
        if isinstance(iterable, cst.Name):
            function = self.scopes.enclosing_function(iterable)
            if self.scopes.is_parameter(iterable.value, function) and self.scopes.unbound_before(
                iterable
            ):
                return False  # the argument, whatever the function binds the name to later
            reaching = self.scopes.reaching_value(iterable)
            values = [reaching] if reaching is not None else self.scopes.bound_values(iterable)
            return any(self.yields_tensors(value, depth + 1) for value in values)
        return not isinstance(iterable, cst.Attribute) and self.is_tensor(iterable, depth)

    def _selects_by_mask(self, subscript: cst.Subscript, depth: int) -> bool:
        """`ids[mask]` with a boolean mask tensor: only tensors (and arrays) take a mask index,
        and what it selects is a tensor."""
        if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
            return False
        index = subscript.slice[0].slice.value
        return self.is_mask(index) and self.is_tensor(index, depth)

    def iterated_for(self, name: cst.Name) -> cst.BaseExpression | None:
        """What a loop or comprehension around `name` iterates to bind it: `ids` for `row` in
        `for row in ids:` or `[row.tolist() for row in ids]`, `masks` for `mask` in
        `for row, mask in zip(ids, masks):` (and `enumerate(...)`)."""
        for target, iterated in self.iterations_around(name):
            if name.value in target_names(target):
                return self._iterable_binding(target, iterated, name.value)
        return None

    def _iterable_binding(
        self, target: cst.BaseExpression, iterated: cst.BaseExpression, name: str
    ) -> cst.BaseExpression | None:
        """What a loop whose `target` binds `name` iterates to bind it: `iterated` itself, or
        one argument of the `enumerate(...)` or `zip(...)` it is."""
        if (
            isinstance(iterated, cst.Call)
            and self.names.call_name(iterated) == "builtins.enumerate"
            and iterated.args
            and isinstance(target, (cst.Tuple, cst.List))
            and len(target.elements) == 2
        ):
            target, iterated = target.elements[1].value, iterated.args[0].value
        if isinstance(target, cst.Name):
            return iterated if target.value == name else None
        if (
            isinstance(iterated, cst.Call)
            and self.names.call_name(iterated) == "builtins.zip"
            and isinstance(target, (cst.Tuple, cst.List))
        ):
            for element, arg in zip(target.elements, iterated.args):
                if isinstance(element.value, cst.Name) and element.value.value == name:
                    return None if arg.star else arg.value
        return None

    def iterations_around(
        self, name: cst.Name
    ) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression]]:
        """(target, iterable) of each `for` loop and comprehension around `name`, innermost
        first, within its function."""
        for parent in self.scopes.ancestors(name):
            kind = type(parent)  # by type (see `index.SCOPE_TYPES`)
            if kind in SCOPE_TYPES:
                return
            if kind is cst.For:
                yield parent.target, parent.iter
            elif kind in COMPREHENSION_TYPES:
                clause: cst.CompFor | None = parent.for_in
                while clause is not None:
                    yield clause.target, clause.iter
                    clause = clause.inner_for_in

    def iterated_for_item(self, name: cst.Name) -> cst.BaseExpression | None:
        """What the innermost loop or comprehension that binds `name` iterates (`batch` for
        `t` in `[t.to(device) for t in batch]`), or None."""
        return next(
            (
                iterated
                for target, iterated in self.iterations_around(name)
                if name.value in target_names(target)
            ),
            None,
        )

    def is_mask(self, expression: cst.BaseExpression, depth: int = 0) -> bool:
        """An element-wise comparison, a predicate such as `torch.isnan(x)` or `x.bool()`, `~m`,
        `m & n`, a name bound to one, or a name that says it is one (`mask`, `valid_mask`)."""
        if depth > 3:
            return False
        if isinstance(expression, cst.Comparison):
            return is_elementwise_comparison(expression)
        if isinstance(expression, cst.Call):
            qualified = self.names.call_name(expression)
            if qualified is not None:
                return qualified in _MASK_FUNCTIONS
            method = last_identifier(expression.func)
            return isinstance(expression.func, cst.Attribute) and method in _MASK_METHODS
        if isinstance(expression, cst.UnaryOperation) and isinstance(
            expression.operator, cst.BitInvert
        ):
            return self.is_mask(expression.expression, depth + 1)
        if isinstance(expression, cst.BinaryOperation) and isinstance(
            expression.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)
        ):
            return self.is_mask(expression.left, depth + 1) or self.is_mask(
                expression.right, depth + 1
            )
        if isinstance(expression, cst.Name):
            if expression.value.lower().endswith("mask"):
                return True
            return any(
                self.is_mask(value, depth + 1) for value in self.scopes.bound_values(expression)
            )
        return False

    def built_without_grad(self, expression: cst.BaseExpression, depth: int = 0) -> bool:
        """A tensor a factory builds without `requires_grad=True`, maybe converted or reshaped
        by methods given no tensor (`torch.zeros(n, d).float()`), or a name whose reaching
        assignment is one: it requires no gradient, as no tensor it is computed from does."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expression, cst.Name):
            reaching = self.scopes.reaching_value(expression)
            return reaching is not None and self.built_without_grad(reaching, depth + 1)
        if not isinstance(expression, cst.Call):
            return False
        if any(arg.star or self.is_tensor(arg.value) for arg in expression.args):
            return False
        qualified = self.names.call_name(expression)
        if qualified is not None:
            return (
                qualified.startswith("torch.")
                and qualified.removeprefix("torch.") in TENSOR_FACTORIES
                and all(
                    arg.keyword is None or arg.keyword.value != "requires_grad"
                    or (isinstance(arg.value, cst.Name) and arg.value.value == "False")
                    for arg in expression.args
                )
            )
        func = expression.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value != "requires_grad_"
            and self.built_without_grad(func.value, depth)
        )

    def is_tensor_size(self, expression: cst.BaseExpression, depth: int = 0) -> bool:
        """A count of an array's elements or rows: `t.shape[k]` and `t.size(k)` of anything
        (only arrays spell their sizes so), `len(t)` and `t.numel()` of a tensor expression,
        arithmetic on one (`t.size(1) - 1`), or a name bound to one: a loop to it runs as many
        times as the data is large."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expression, cst.BinaryOperation):
            return self.is_tensor_size(expression.left, depth + 1) or self.is_tensor_size(
                expression.right, depth + 1
            )
        if isinstance(expression, cst.Name):
            values = self.scopes.bound_values(expression)
            return bool(values) and all(self.is_tensor_size(v, depth + 1) for v in values)
        if isinstance(expression, cst.Subscript):
            value = expression.value
            return isinstance(value, cst.Attribute) and value.attr.value == "shape"
        if not isinstance(expression, cst.Call):
            return False
        func = expression.func
        if isinstance(func, cst.Attribute) and func.attr.value == "size":
            return bool(expression.args)
        if isinstance(func, cst.Attribute) and func.attr.value == "numel":
            return self.is_definitely_tensor(func.value)
        return (
            self.names.call_name(expression) == "builtins.len"
            and len(expression.args) == 1
            and self.is_definitely_tensor(expression.args[0].value)
        )

    def qualified_torch_constant(self, expression: cst.BaseExpression) -> bool:
        """`torch.float16` and friends are not tensors."""
        return (self.names.qualified_name(expression) or "").startswith("torch.")


def is_elementwise_comparison(comparison: cst.Comparison) -> bool:
    """`a < b`, `a == b`: element-wise on tensors; `is`, `is not`, `in`, `not in` never are."""
    return not any(
        isinstance(target.operator, _NON_ELEMENTWISE_COMPARISONS)
        for target in comparison.comparisons
    )


def is_none(expression: cst.BaseExpression) -> bool:
    """The literal `None`."""
    return isinstance(expression, cst.Name) and expression.value == "None"


def _names_the_object(identifier: str, match: re.Match) -> bool:
    """Whether the model word `match` found in `identifier` names what the identifier holds:
    it starts the name (`model_without_ddp`) or only short words follow it (`ema_model`,
    `net_g`), not a qualifier inside a longer name (`across_model_parallel_group`)."""
    if match.start() == 0:
        return True
    rest = identifier[match.end():].strip("_")
    return all(len(word) <= _MAX_SUFFIX_WORD for word in rest.split("_") if word)
