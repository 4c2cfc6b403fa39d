"""What the program reads of a file that cannot hold PyTorch code (`source.worth_parsing`): a
config (`model = dict(backbone=dict(type="ResNet", with_cp=True))`) or a launcher script.

Such a file is read with Python's own parser, much faster than LibCST's, for the names it
mentions (`ModuleSummary.mentions`: a launcher `run.py` that calls `Trainer().fit()`), for the
switches it may turn on: the keywords of its calls and the keys of its dict literals and
subscript assignments (`ModuleSummary.keywords_on`), and the attributes it sets (the
`switches` of its module code), each given a value that may be true (without a function of
its own to follow, any value but `False`, `None` or `0` may be); and for the run's settings
it declares or gives (`program.options`: a config tree's defaults, a launcher's command lines);
and for what makes it run other modules: the modules it imports and whether it is a script
(`ProgramFacts._unrun_modules`: a launcher `run.py` that imports `engine`).
"""

from __future__ import annotations

import ast

from torchperf_lint.conventions import OFF_VALUES
from torchperf_lint.program.options import attribute_chain, python_settings
from torchperf_lint.program.summary import FunctionSummary, ModuleSummary, named_in_string


def summarize_plain(text: str) -> ModuleSummary | None:
    """The summary of a file without PyTorch code; None when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    settings = python_settings(text, tree)
    declared = {entry[0] for entry in settings.defaults}
    # A config tree's defaults (`_C.TRAIN.CLIP_GRAD = 5.0`) turn nothing on: no run changes them.
    defaulting = {
        id(statement) for statement in tree.body
        if isinstance(statement, ast.Assign)
        and all(_declared_entry(target, declared) for target in statement.targets)
    }
    keywords: set[str] = set()
    attributes: set[str] = set()
    mentions: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            mentions.add(node.id)
        elif isinstance(node, ast.Attribute):
            mentions.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            mentions.update(named_in_string(node.value))
        if isinstance(node, ast.keyword):
            if node.arg is not None and _may_be_true(node.value):
                keywords.add(node.arg)
        elif isinstance(node, ast.Dict):
            keywords.update(
                key.value for key, value in zip(node.keys, node.values)
                if _identifier(key) and _may_be_true(value)
            )
        elif isinstance(node, ast.Assign) and _may_be_true(node.value) and id(node) not in defaulting:
            for target in node.targets:
                if isinstance(target, ast.Subscript) and _identifier(target.slice):
                    keywords.add(target.slice.value)  # `cfg["with_cp"] = True`
                elif isinstance(target, ast.Attribute):
                    attributes.add(target.attr)  # `cfg.model.with_cp = True`
        elif isinstance(node, ast.Call) and _sets_attribute(node):
            attributes.add(node.args[1].value)  # `setattr(cfg, "with_cp", True)`
    module_code = FunctionSummary(qualname="", switches=sorted(attributes))
    return ModuleSummary(
        functions={"": module_code} if attributes else {},
        imported_modules=sorted(set(_imported_modules(tree))),
        runs_as_script=any(map(_is_main_block, tree.body)),
        works_at_top_level=any(map(_does_work, tree.body)),
        imports_by_name=sorted({_package_named(call) for call in ast.walk(tree) if _imports_by_name(call)}),
        mentions=sorted(mentions),
        keywords_on=sorted(keywords),
        setting_defaults=settings.defaults,
        settings_given=settings.given,
        setting_aliases=settings.aliases,
        setting_flags=settings.flags,
    )


def _imported_modules(tree: ast.Module) -> list[str]:
    """The modules the file imports, written as `program.summarize` records them: `a.b` for
    `import a.b`, `.models` and `.models.engine` for `from .models import engine` (which
    may name a submodule)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.append(base)
            found.extend(
                base + name if base.endswith(".") else f"{base}.{name}"
                for name in (alias.name for alias in node.names)
                if name != "*"
            )
    return found


def _imports_by_name(node: ast.AST) -> bool:
    """`importlib.import_module(name)` or `__import__(name)` of a name it computes."""
    if not isinstance(node, ast.Call) or not node.args or isinstance(node.args[0], ast.Constant):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id in ("__import__", "import_module")) or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )


def _package_named(call: ast.Call) -> str:
    """The package a computed module name starts with (`summarize._package_named`)."""
    name = call.args[0]
    if isinstance(name, ast.JoinedStr) and name.values:
        first = name.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and "." in first.value:
            return first.value.rpartition(".")[0]
    return ""


def _is_main_block(statement: ast.stmt) -> bool:
    """`if __name__ == "__main__":`."""
    test = statement.test if isinstance(statement, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def _does_work(statement: ast.stmt) -> bool:
    """A top-level statement that does work when the module runs (`summarize._does_work`)."""
    return isinstance(statement, (ast.For, ast.While, ast.With)) or (
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
    )


def _declared_entry(target: ast.expr, declared: set[str]) -> bool:
    chain = attribute_chain(target)
    return chain is not None and ".".join(chain[1:]) in declared


def _may_be_true(value: ast.expr) -> bool:
    return not (isinstance(value, ast.Constant) and value.value in OFF_VALUES)


def _identifier(node: ast.expr | None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.isidentifier()
    )


def _sets_attribute(call: ast.Call) -> bool:
    return (
        isinstance(call.func, ast.Name)
        and call.func.id == "setattr"
        and len(call.args) == 3
        and _identifier(call.args[1])
        and _may_be_true(call.args[2])
    )
