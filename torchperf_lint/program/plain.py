"""What the program reads of a file that cannot hold PyTorch code (`source.worth_parsing`): a
config (`model = dict(backbone=dict(type="ResNet", with_cp=True))`) or a launcher script.

Such a file is read with Python's own parser, much faster than LibCST's, for the names it
mentions (`ModuleSummary.mentions`: a launcher `run.py` that calls `Trainer().fit()`), for the
switches it may turn on: the keywords of its calls and the keys of its dict literals and
subscript assignments (`ModuleSummary.keywords_on`), and the attributes it sets (the
`switches` of its module code), each given a value that may be true (without a function of
its own to follow, any value but `False`, `None` or `0` may be); and for the run's settings
it declares or gives (`program.options`: a config tree's defaults, a launcher's command lines).
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
        mentions=sorted(mentions),
        keywords_on=sorted(keywords),
        setting_defaults=settings.defaults,
        settings_given=settings.given,
        setting_aliases=settings.aliases,
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
