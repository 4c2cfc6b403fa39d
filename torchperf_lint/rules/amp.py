"""TPL3xx — mixed precision."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from torchperf_lint.diagnostics import Applicability
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.amp import Precision
from torchperf_lint.facts.arguments import SIGNATURES
from torchperf_lint.facts.loops import LoopFacts
from torchperf_lint.facts.names import CANONICAL_NAMES, dotted_name, last_identifier
from torchperf_lint.rules.base import Finding, NodeEdit, ProposedFix, Rule
from torchperf_lint.rules.edits import keyword_argument


@dataclass(frozen=True)
class Replacement:
    """What a deprecated `torch.cuda.amp`/`torch.cpu.amp` name becomes in `torch.amp`."""

    name: str  # the name in torch.amp
    device: str  # "cuda" or "cpu"
    # Since when `torch.amp.<name>` exists: for an older `torch-version` the fix is display-only.
    since: tuple[int, int]
    # The new API takes the device first (autocast, GradScaler) or as `device_type=`.
    device_keyword: str | None = None


DEPRECATED = {
    "torch.cuda.amp.autocast": Replacement("autocast", "cuda", (2, 3)),
    "torch.cpu.amp.autocast": Replacement("autocast", "cpu", (2, 3)),
    "torch.cuda.amp.GradScaler": Replacement("GradScaler", "cuda", (2, 3)),
    "torch.cpu.amp.GradScaler": Replacement("GradScaler", "cpu", (2, 3)),
    # torch.amp.custom_fwd/custom_bwd were added in PyTorch 2.4.
    "torch.cuda.amp.custom_fwd": Replacement("custom_fwd", "cuda", (2, 4), "device_type"),
    "torch.cuda.amp.custom_bwd": Replacement("custom_bwd", "cuda", (2, 4), "device_type"),
}
# The release whose `torch.cuda.amp`/`torch.cpu.amp` names warn: a project that allows only
# older ones has nothing deprecated to replace.
DEPRECATED_SINCE = (2, 4, 0)
_DEPRECATED_MODULES = ("torch.cuda.amp", "torch.cpu.amp")
_TYPE_CHECKS = frozenset({"builtins.isinstance", "builtins.issubclass"})
# unittest's type assertions: `self.assertIsInstance(scaler, GradScaler)`.
_TYPE_ASSERTIONS = frozenset({"assertIsInstance", "assertNotIsInstance"})


class _DeprecatedAmpUses:
    """Every use of a deprecated AMP name in one file, with the rewrite of each."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.torch_name = facts.names.module_level_name("torch")

    # Rewriting one use.

    def rewrite(self, use: cst.CSTNode, func: cst.BaseExpression | None, old: str) -> NodeEdit | None:
        """The edit turning `use` (a call of, or decorator naming, the deprecated `old`) into
        the `torch.amp` API; `func` is the new callee (None: keep the one written)."""
        replacement = DEPRECATED[old]
        if isinstance(use, cst.Call):
            call = use
        elif isinstance(self.facts.index.parents.get(use), cst.Decorator):
            call = cst.Call(func=use)
        else:
            return None
        if any(arg.star == "*" for arg in call.args):
            return None
        device = cst.SimpleString(f'"{replacement.device}"')
        if replacement.device_keyword is not None:
            args = _with_first_keyword(call.args, keyword_argument(replacement.device_keyword, device))
        else:
            args = _device_first(call.args, device, SIGNATURES[old])
            if args is None:
                return None
        new_call = call.with_changes(func=func or call.func, args=args)
        return NodeEdit(use, Rule.code_of(self.facts, new_call, at=use))

    def new_callee(self, reference: cst.Attribute, old: str) -> cst.BaseExpression | None:
        """`torch.amp.X` for `torch.cuda.amp.X`, `T.amp.X` for `T.cuda.amp.X`, and
        `torch.amp.X` for `amp.X` after `from torch.cuda import amp` (when `torch` is imported)."""
        name = DEPRECATED[old].name
        package = reference.value
        names = self.facts.names
        if (
            isinstance(package, cst.Attribute)
            and isinstance(package.value, cst.Attribute)
            and names.qualified_name(package.value.value) == "torch"
        ):
            return cst.Attribute(
                value=cst.Attribute(value=package.value.value, attr=cst.Name("amp")),
                attr=cst.Name(name),
            )
        if self.torch_name is None:
            return None
        return cst.Attribute(
            value=cst.Attribute(value=cst.Name(self.torch_name), attr=cst.Name("amp")),
            attr=cst.Name(name),
        )


def _device_first(
    args: tuple[cst.Arg, ...] | list[cst.Arg], device: cst.SimpleString, old_signature: tuple[str, ...]
) -> list[cst.Arg] | None:
    """`device` as the first argument, the old positional arguments as keywords (the new
    signatures put `dtype` or `init_scale` elsewhere); None when that cannot be done."""
    positional = [arg for arg in args if arg.keyword is None and not arg.star]
    if len(positional) > len(old_signature):
        return None
    converted = []
    for position, arg in enumerate(args):
        if arg.keyword is None and not arg.star:
            arg = arg.with_changes(
                keyword=cst.Name(old_signature[position]),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""),
                ),
            )
        converted.append(arg)
    return _prepend(converted, cst.Arg(value=device))


def _with_first_keyword(args: tuple[cst.Arg, ...] | list[cst.Arg], keyword: cst.Arg) -> list[cst.Arg]:
    """`keyword` after the positional arguments, before any other keyword."""
    position = next(
        (index for index, arg in enumerate(args) if arg.keyword is not None or arg.star),
        len(args),
    )
    if position == len(args):
        if not args:
            return [keyword]
        previous = list(args)
        last = previous[-1]
        previous[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return [*previous, keyword.with_changes(comma=last.comma)]
    return [*args[:position], *_prepend(list(args[position:]), keyword)]


def _prepend(args: list[cst.Arg], first: cst.Arg) -> list[cst.Arg]:
    """`first` before `args`, separated as the call separates its arguments (one per line
    stays one per line)."""
    if not args:
        return [first]
    separator = args[0].comma if isinstance(args[0].comma, cst.Comma) else None
    if separator is None or "\n" not in _code(separator.whitespace_after):
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [first.with_changes(comma=separator), *args]


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


class DeprecatedCudaAmp(Rule):
    """`torch.cuda.amp` / `torch.cpu.amp` APIs are deprecated in favour of `torch.amp`.

    ## What it does
    Checks for `torch.cuda.amp.autocast(...)`, `torch.cuda.amp.GradScaler(...)`,
    `torch.cpu.amp.autocast(...)`, `torch.cpu.amp.GradScaler(...)` and
    `torch.cuda.amp.custom_fwd`/`custom_bwd`, however they are imported: each deprecated name
    in a `from torch.cuda.amp import ...` statement is reported (when the module uses it
    somewhere that warns: an import nothing reads, or only annotations and type checks
    read, is not), and so is each use.
    Importing the module itself (`from torch.cuda import amp`) is not reported; its uses
    (`amp.autocast()`) are, except in annotations, type checks (`isinstance`,
    `assertIsInstance`) and a mock's spec (`MagicMock(spec=GradScaler)`), which build
    nothing. An import inside a function binds only there:
    the fix of its uses never touches another function's. Compatibility shims are left
    alone: code inside
    `except ImportError`/`AttributeError`/`TypeError` (or the `try` it guards; also a `try`
    whose bare `except:` defines the same name again, `try: autocast = torch.cuda.amp.autocast`
    / `except: class autocast: ...`), or under an
    `if` that tests the PyTorch version or `hasattr` (also a call given a version string,
    `X if ppe.requires("2.3.0") else Y`). Test files are checked too: a
    deprecation warns there as well; but not when the oldest PyTorch the project supports
    (below) lacks the replacement (a project declaring `torch>=1.8`): its tests must also
    run on the releases where the deprecated name is the only one, and the warning is only
    test output. Outside tests such code is still reported, with a display-only fix.

    Nothing is reported in a project that installs only PyTorch releases older than 2.4,
    where these names are the current API and do not warn: one that pins (`torch==1.11.0`)
    or caps (`torch<2.4`) its `torch` requirement. The requirement is the `torch-version`
    setting when it is configured (`--torch-version`, `[tool.torchperf-lint]`), else what the
    project's packaging files declare (`pyproject.toml` dependencies, `setup.cfg` and
    `setup.py` `install_requires`, `requirements*.txt`, a conda `environment.yml` with
    `pytorch=1.12.1` or `pytorch-cuda=11.7`, which only 1.13 and 2.0 are built for, a pinned
    Triton, `triton==2.1.0`, which only PyTorch 2.1 installs with; see the README's
    Configuration; an install script's commands, `pip install torch==1.9.0` in
    `install_req.sh`, which installs that release; a README's install commands, `conda
    install pytorch==1.8.0 ...`, give the oldest release the fix must keep working on,
    not a cap),
    capped by the project's pip constraints file (`constraints.txt` with `torch<1.13.0`,
    which every install of the project with `pip install -c` obeys, caps `torch>=1.10.0`),
    or by an OpenMMLab package's import-time check of mmcv (`mmcv_maximum_version =
    '2.1.0'` in `mmyolo/__init__.py`: mmcv 2.0's compiled releases stop at PyTorch 2.0).
    Nor where every program the file belongs to imports, unguarded, a module PyTorch 2.0
    removed (`from torch._six import inf` in the `utils.py` that each entry point
    imports), or one that only a framework's releases for older PyTorch have
    (`colossalai.gemini`, gone from ColossalAI when it moved to PyTorch 2; its legacy
    `colossalai.engine`, whose releases support PyTorch 2.1 at most; timm 0.3's
    `timm.data.Dataset`, whose releases break on PyTorch 1.9): that code cannot run
    on a release where these names warn. A guarded import
    (`try: from torch._six import inf` / `except ImportError: from torch import inf`) runs
    anywhere, and so does a file that some program without such an import also uses.

    ## Why is this bad?
    Since PyTorch 2.4 these names emit a `FutureWarning` on every call (an autocast entered
    each step warns each step) and they will be removed. The device-generic `torch.amp` API
    behaves the same and also covers other devices.

    ## Example
    ```python
    from torch.cuda.amp import autocast, GradScaler

    scaler = GradScaler()
    with autocast():
        loss = model(x)
    ```

    ## Use instead
    ```python
    from torch.amp import autocast, GradScaler

    scaler = GradScaler("cuda")
    with autocast("cuda"):
        loss = model(x)
    ```

    ## Fix safety
    Safe: `torch.amp.autocast("cuda", ...)` and `torch.amp.GradScaler("cuda", ...)` are what
    the deprecated names call. Positional arguments become keywords (`autocast(flag)` becomes
    `autocast("cuda", enabled=flag)`, because the second positional parameter of the new
    `autocast` is `dtype`). A from-import is rewritten together with every use of the names
    it imports, in one fix; when one of those uses cannot be rewritten (the name is passed
    around rather than called, or a call unpacks `*args`), no fix is offered. The fix needs
    `torch.amp.GradScaler`, which appeared in PyTorch 2.3, and `torch.amp.custom_fwd`/
    `custom_bwd`, which appeared in 2.4: when the oldest PyTorch the code must run on (the
    `torch-version` setting, or the floor the project declares: `torch>=1.11`) is older, the
    fix is display-only. It shows the replacement but is never applied: applied, it would
    break the code for the users of the older releases the project still supports (a version
    guard, or raising the floor, is the author's choice).

    ## References
    - PyTorch docs, [Automatic Mixed Precision package](https://pytorch.org/docs/stable/amp.html)
    - PyTorch docs, [`torch.cuda.amp.autocast`](https://pytorch.org/docs/stable/amp.html#torch.cuda.amp.autocast):
      "`torch.cuda.amp.autocast(args...)` is deprecated. Please use
      `torch.amp.autocast("cuda", args...)` instead."
    """

    code = "TPL301"
    name = "deprecated-cuda-amp"
    message = "`{old}` is deprecated; use `torch.amp.{new}` with the device type `\"{device}\"`"
    default = True
    fix_applicability = Applicability.SAFE
    gains_only_on_cuda = True
    checks_test_files = True

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        below = self.torch_below(facts)
        if below is not None and below <= DEPRECATED_SINCE:
            return  # every PyTorch the project allows is older than the deprecation.
        uses = _DeprecatedAmpUses(facts)
        for statement in facts.index.imports:
            if isinstance(statement, cst.ImportFrom):
                yield from self._check_import(facts, uses, statement)
        for attribute in facts.index.attributes:
            old = facts.names.qualified_name(attribute)
            if old not in DEPRECATED or not self._reportable(facts, attribute):
                continue
            if not self._replaceable_in(facts, DEPRECATED[old].since):
                continue
            use = _use_of(facts, attribute)
            func = uses.new_callee(attribute, old)
            edit = None if func is None else uses.rewrite(use, func, old)
            yield self._finding(use, old, None if edit is None else (edit,), DEPRECATED[old].since)

    def _replaceable_in(self, facts: FileFacts, needs: tuple[int, int]) -> bool:
        """Outside tests, always (the library's users on newer releases see the warning);
        in a test file, only when the oldest PyTorch the project supports has the
        replacement: the tests must also run on the releases where the deprecated name is
        the only one, and the warning is only test output."""
        return not facts.is_test_file or needs <= self.options.torch_version

    def _check_import(
        self, facts: FileFacts, uses: _DeprecatedAmpUses, statement: cst.ImportFrom
    ) -> Iterator[Finding]:
        module = dotted_name(statement.module) if statement.module and not statement.relative else None
        if module is None or not module.startswith(_DEPRECATED_MODULES):
            return
        if isinstance(statement.names, cst.ImportStar) or facts.guards.in_compatibility_shim(statement):
            return
        deprecated: list[tuple[cst.ImportAlias, str]] = []
        all_replaceable = True
        for alias in statement.names:
            full = f"{module}.{dotted_name(alias.name)}"
            old = CANONICAL_NAMES.get(full, full)
            if old in DEPRECATED:
                deprecated.append((alias, old))
            else:
                all_replaceable = False
        if not deprecated:
            return
        bound = {_bound_name(alias): old for alias, old in deprecated}
        rebound_at_module_level = any(
            None in facts.names.local_definitions.get(name, ()) for name in bound
        )
        edits: list[NodeEdit] | None = (
            [NodeEdit(statement.module, "torch.amp")]
            if all_replaceable and not rebound_at_module_level
            else None
        )
        reported = []
        scope = facts.scopes.enclosing_function(statement) or facts.scopes.enclosing_class(statement)
        # Per imported name, whether each of its uses is a type reference.
        type_references: dict[str, list[bool]] = {name: [] for name in bound}
        for reference in _references(facts, set(bound), statement):
            if facts.names.import_scope(reference) is not scope:
                continue  # bound by another function's own import: not this statement's use.
            type_references[reference.value].append(_is_type_reference(facts, reference))
            old = facts.names.qualified_name(reference)
            if old is None:
                continue  # a local definition of the same name, not the import.
            if old != bound[reference.value]:
                edits = None  # bound to something else first: the rewrite cannot be proven.
                continue
            if _is_type_reference(facts, reference):
                continue  # `torch.amp.X` is a base class of the old `X`: checks still hold.
            use = _use_of(facts, reference)
            if self._reportable(facts, reference):
                reported.append((use, old))
            edit = uses.rewrite(use, None, old) if edits is not None else None
            if edit is None or facts.guards.in_compatibility_shim(reference):
                edits = None
            else:
                edits.append(edit)
        fix_edits = None if edits is None else tuple(edits)
        # One fix rewrites every name the statement imports: it needs the newest of them.
        needs = max(DEPRECATED[old].since for _, old in deprecated)
        if not self._replaceable_in(facts, needs):
            return
        for alias, old in deprecated:
            read = type_references[_bound_name(alias)]
            if all(read):
                continue  # unused, or read by annotations and type checks only: nothing warns.
            yield self._finding(alias.name, old, fix_edits, needs)
        for use, old in reported:
            yield self._finding(use, old, fix_edits, needs)

    def _reportable(self, facts: FileFacts, reference: cst.BaseExpression) -> bool:
        """A use that calls or passes the deprecated name, outside a compatibility shim;
        annotations and `isinstance` checks are not uses that warn."""
        return not _is_type_reference(facts, reference) and not facts.guards.in_compatibility_shim(reference)

    def _finding(
        self,
        node: cst.CSTNode,
        old: str,
        edits: tuple[NodeEdit, ...] | None,
        needs: tuple[int, int],
    ) -> Finding:
        """The finding at `node`, with the fix `edits` make, which needs PyTorch `needs`."""
        replacement = DEPRECATED[old]
        fix = None
        if edits:
            message = f"Use `torch.amp.{replacement.name}` with `\"{replacement.device}\"`"
            oldest = self.options.torch_version
            if needs > oldest:
                # Shown, never applied: it would break the code on the older PyTorch it
                # supports; a version guard or a higher floor is the author's choice.
                message += " (needs PyTorch {}.{}; the oldest supported is {}.{})".format(*needs, *oldest)
            applicability = Applicability.SAFE if needs <= oldest else Applicability.DISPLAY_ONLY
            fix = ProposedFix(applicability, message, edits)
        return self.finding(node, fix, old=old, new=replacement.name, device=replacement.device)


def _is_type_reference(facts: FileFacts, reference: cst.BaseExpression) -> bool:
    """In an annotation, or the class argument of `isinstance`/`issubclass` or of unittest's
    `assertIsInstance`, or the spec of a mock (`MagicMock(spec=GradScaler)`: never built)."""
    for parent, child in facts.scopes.ancestors_with_child(reference):
        if isinstance(parent, cst.Annotation):
            return True
        if isinstance(parent, cst.Arg) and child is parent.value:
            if parent.keyword is not None and parent.keyword.value in ("spec", "spec_set"):
                return True
            call = facts.index.parents.get(parent)
            if isinstance(call, cst.Call) and (
                facts.names.call_name(call) in _TYPE_CHECKS
                or last_identifier(call.func) in _TYPE_ASSERTIONS
            ):
                return True
        if isinstance(parent, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            break
    return False


def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return dotted_name(alias.name) or ""


def _use_of(facts: FileFacts, reference: cst.BaseExpression) -> cst.CSTNode:
    """The call when `reference` is called (a call is reported at the whole call), else itself."""
    parent = facts.index.parents.get(reference)
    if isinstance(parent, cst.Call) and parent.func is reference:
        return parent
    return reference


def _references(facts: FileFacts, names: set[str], statement: cst.ImportFrom) -> list[cst.Name]:
    """Every `Name` node reading one of `names`, outside the import statement itself: not an
    attribute's `.attr`, a keyword or a parameter's name. The names a `def` or `class` binds
    are included: they do not resolve to the import, which makes the fix back off."""
    parents = facts.index.parents
    found = []
    for name in facts.index.names:
        if name.value not in names:
            continue
        parent = parents.get(name)
        if (
            (isinstance(parent, cst.Attribute) and parent.attr is name)
            or (isinstance(parent, cst.Arg) and parent.keyword is name)
            or (isinstance(parent, cst.Param) and parent.name is name)
            or _in_import(facts, name)
        ):
            continue
        found.append(name)
    return found


def _in_import(facts: FileFacts, name: cst.Name) -> bool:
    """Part of an `import` or `from ... import` statement (a module path or an alias)."""
    for parent in facts.scopes.ancestors(name):
        if isinstance(parent, (cst.Import, cst.ImportFrom)):
            return True
        if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
    return False


class Fp16WithoutGradScaler(Rule):
    """A training loop runs float16 autocast but backpropagates an unscaled loss.

    ## What it does
    Checks for training loops whose forward runs under float16 autocast (the default dtype of
    CUDA autocast: `torch.autocast("cuda")`, `torch.cuda.amp.autocast()`) and that call
    `.backward()` on a loss that never goes through a gradient scaler's `.scale(...)`. The
    autocast call is reported. Regions with `dtype=torch.bfloat16`, `enabled=False`, or a dtype
    that is not a literal are left alone, and so are loops that scale any of their losses
    (`scaler.scale(loss).backward()` in one branch, `loss.backward()` in the other) or hand
    the loss to a scaler helper (`loss_scaler(loss, optimizer)`) or a framework
    (`accelerator.backward(loss)`).

    Test files are not checked.

    ## Why is this bad?
    float16 has a narrow exponent range: small gradients underflow to zero in the backward
    pass and those parameters stop learning. `GradScaler` multiplies the loss before
    `backward()` and divides the gradients before the step so they stay representable.

    ## Example
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```
    Or use `dtype=torch.bfloat16` on hardware that supports it: it needs no scaler.

    ## Fix safety
    There is no automatic fix: adding a scaler means changing the step and the update too.

    ## References
    - PyTorch docs, [Gradient scaling](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
      and [AMP examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    - PyTorch tutorial, [Automatic Mixed Precision recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
      ("Adding GradScaler": gradient scaling prevents float16 gradients from underflowing)
    """

    code = "TPL302"
    name = "fp16-without-grad-scaler"
    message = (
        "float16 autocast in a training loop whose loss is not scaled; use "
        "`scaler.scale(loss).backward()` with a `GradScaler`, or bfloat16"
    )
    default = True
    gains_only_on_cuda = True

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        reported: set[cst.Call] = set()
        for loop in facts.loops.training_loops:
            if not self._backpropagates_unscaled_loss(facts, loop):
                continue
            autocasts = facts.autocast.around(loop.node) + facts.autocast.inside(loop.node)
            for autocast in autocasts:
                if autocast.is_float16 and autocast.node not in reported:
                    reported.add(autocast.node)
                    yield self.finding(autocast.node)

    def _backpropagates_unscaled_loss(self, facts: FileFacts, loop: LoopFacts) -> bool:
        if any(_mentions_scaler(call.func) for call in loop.own_calls):
            return False
        return any(
            _is_loss(facts, call.func.value) and not _is_scaled(facts, call.func.value)
            for call in loop.backward_calls
        )


def _is_loss(facts: FileFacts, receiver: cst.BaseExpression) -> bool:
    """A tensor computed here: `criterion(out, y)`, or a name bound to a tensor expression.
    A bare parameter (`accelerator` in `accelerator.backward(loss)`) is not one."""
    if not isinstance(receiver, (cst.Name, cst.Attribute)):
        return facts.tensors.is_tensor(receiver)
    return any(facts.tensors.is_tensor(value) for value in facts.scopes.bound_values(receiver))


def _mentions_scaler(func: cst.BaseExpression) -> bool:
    """`scaler.scale`, `scaler.step`, `self.loss_scaler(...)`: the loop scales somewhere."""
    name = dotted_name(func) or ""
    return "scaler" in name.lower()


def _is_scaled(facts: FileFacts, loss: cst.BaseExpression) -> bool:
    """`scaler.scale(loss)`, or a name bound to it."""
    candidates = [loss, *facts.scopes.bound_values(loss)]
    return any(
        isinstance(value, cst.Call) and last_identifier(value.func) == "scale" for value in candidates
    )


class GradScalerWithBf16(Rule):
    """`GradScaler` in a module whose autocast computes in bfloat16.

    ## What it does
    Checks for `GradScaler(...)` constructions in a module where every autocast region that
    may be enabled computes in bfloat16 (`dtype=torch.bfloat16`, or CPU autocast's default),
    when bfloat16 is the dtype actually used where the scaler is: every function that uses
    the scaler (`scaler.scale(loss)`, `scaler.step(optimizer)`) runs its forward under such a
    region, entered unconditionally. The construction is reported.

    Left alone: modules that also have a float16 autocast, or an autocast whose dtype is not a
    literal; scalers built with `enabled=` anything but `True`, or only under a flag
    (`if args.fp16:`); scalers this module never uses, or uses where the autocast is only
    entered under a flag (the precision is a run-time choice); and test files.

    ## Why is this bad?
    bfloat16 has float32's exponent range, so gradients do not underflow and loss scaling is
    not needed. The scaler still multiplies the loss, unscales every gradient and checks them
    all for infs and NaNs each step: extra kernels and a host sync for nothing.

    ## Example
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x)
    loss.backward()
    optimizer.step()
    ```

    ## Fix safety
    There is no automatic fix: removing the scaler means rewriting the backward, the step and
    the update.

    ## References
    - PyTorch docs, [Automatic Mixed Precision package](https://pytorch.org/docs/stable/amp.html)
    - PyTorch docs, [Gradient scaling](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
      (the underflow it prevents is that of `torch.float16` gradients; automatic mixed
      precision with `torch.bfloat16` "only uses `torch.autocast`")
    """

    code = "TPL303"
    name = "grad-scaler-with-bf16"
    message = "`GradScaler` with bfloat16 autocast is unneeded work; drop the scaler"
    default = True
    gains_only_on_cuda = True

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        autocasts = [call for call in facts.autocast.calls if call.may_be_enabled]
        if not autocasts or any(call.precision is not Precision.BFLOAT16 for call in autocasts):
            return
        for scaler in facts.autocast.scalers:
            if scaler.enabled is not True or facts.guards.under_flag(scaler.node):
                continue
            uses = _uses_of(facts, scaler.node)
            if uses and all(_bf16_path(facts, use) for use in uses):
                yield self.finding(scaler.node)


def _uses_of(facts: FileFacts, construction: cst.Call) -> list[cst.Call]:
    """The method calls (`scaler.scale(loss)`, `scaler.step(optimizer)`) on the name or
    attribute a scaler construction is bound to."""
    parent = facts.index.parents.get(construction)
    if not isinstance(parent, cst.Assign):
        return []
    names = {dotted_name(target.target) for target in parent.targets} - {None}
    return [
        call for call in facts.index.calls
        if isinstance(call.func, cst.Attribute) and dotted_name(call.func.value) in names
    ]


def _bf16_path(facts: FileFacts, use: cst.Call) -> bool:
    """The autocast regions of the function that uses the scaler (or around the use) compute
    in bfloat16, there is one, and none is only entered under a flag."""
    function = facts.scopes.enclosing_function(use)
    regions = [
        autocast
        for autocast in facts.autocast.calls
        if autocast.may_be_enabled
        and any(facts.scopes.enclosing_function(region) is function
                or (isinstance(region, cst.FunctionDef) and region is function)
                for region in autocast.regions)
    ] + [autocast for autocast in facts.autocast.around(use) if autocast.may_be_enabled]
    return bool(regions) and all(
        autocast.precision is Precision.BFLOAT16 and not facts.guards.under_flag(autocast.node)
        for autocast in regions
    )


# Signs that a module already trains in reduced precision some other way.
_REDUCED_PRECISION_NAMES = frozenset({"torch.float16", "torch.half", "torch.bfloat16"})
_REDUCED_PRECISION_METHODS = frozenset({"half", "bfloat16"})
_PRECISION_KEYWORDS = frozenset({"mixed_precision", "precision", "amp", "fp16", "bf16"})


class NoMixedPrecision(Rule):
    """A CUDA training loop in a module that never uses autocast.

    ## What it does
    Checks for modules that train on CUDA (a training loop and any CUDA use, or
    `target-device = "cuda"`) and never mention `autocast`, and reports the first training
    loop. Modules that already pick a reduced precision another way (`.half()`,
    `.bfloat16()`, `torch.float16`/`torch.bfloat16`, a `mixed_precision=` or `precision=`
    argument to a training framework) are left alone, and so are CPU-only modules and test
    files.

    Test files are not checked.

    ## Why is this bad?
    Tensor cores run float16 and bfloat16 matrix multiplies and convolutions several times
    faster than float32, and half-size activations halve the memory traffic. Autocast picks the
    precision per operation, keeping the numerically sensitive ones in float32.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
    ```
    With float16, add a `GradScaler` (see TPL302).

    ## Fix safety
    There is no automatic fix: which region to autocast, and which dtype the GPU supports,
    are the user's decisions.

    ## References
    - PyTorch docs, [Automatic Mixed Precision package](https://pytorch.org/docs/stable/amp.html)
      and the [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    - PyTorch Performance Tuning Guide, [Use mixed precision and AMP](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#use-mixed-precision-and-amp)
      ("up to 3x overall speedup on Volta and newer GPU architectures")
    """

    code = "TPL304"
    name = "no-mixed-precision"
    message = "CUDA training loop without mixed precision; run the forward under `torch.autocast(\"cuda\")`"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        loops = facts.loops.training_loops
        if not self.trains_on_cuda(facts):
            return
        if facts.autocast.mentions_autocast or _chooses_reduced_precision(facts):
            return
        yield self.finding(min(loops, key=lambda loop: facts.index.loops.index(loop.node)).node)


def _chooses_reduced_precision(facts: FileFacts) -> bool:
    names = facts.names
    for call in facts.index.calls:
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _REDUCED_PRECISION_METHODS:
            return True
        if any(arg.keyword is not None and arg.keyword.value in _PRECISION_KEYWORDS for arg in call.args):
            return True
    return any(
        names.qualified_name(attribute) in _REDUCED_PRECISION_NAMES
        for attribute in facts.index.attributes
    )


RULES = (DeprecatedCudaAmp, Fp16WithoutGradScaler, GradScalerWithBf16, NoMixedPrecision)
