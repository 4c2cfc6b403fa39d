"""The run's settings, and the values they hold in the runs a project ships.

`if args.verbose:` runs only when a run turns `--verbose` on, and the `else` of `if
config.TRAIN.CLIP_GRAD:` only when a run turns clipping off. A setting's default is declared
in Python: a command-line option (`parser.add_argument("--verbose", action="store_true")`
gives `verbose` the default `False`, and so does `verbose: bool = False` in a class of
arguments such as `class Args(Tap)`, or in a config class such as `class PPO_CFG`) or an
entry of a config tree (`_C.TRAIN.CLIP_GRAD = 5.0`, yacs and its kin, gives
`TRAIN.CLIP_GRAD` the default `5.0`; also of a copy of one, `TrainCfg = deepcopy(BaseCfg)`). What a run may set it to is
written where runs are launched: shell scripts and README commands (`--verbose`,
`TRAIN.CLIP_GRAD 0.`), YAML and JSON configs (`CLIP_GRAD: 0.0`), the commands a Python
launcher builds (`"--verbose"`). A test of a setting whose every known value fails it, with
no launcher giving it another, is passed by no run the project ships: what it guards is off
the usual path (`Steps.left_off_by_settings`), like a debugging mode.

Each file's part is in its summary (`ModuleSummary.setting_defaults`, `.settings_given`), as
`[name]` (a value the file does not say) or `[name, value]`; the linker joins them
(`ProgramFacts.setting_values`). A test of a setting is `[key, operator, literal, expected]`
(`Guards.setting_tests`): the branch runs when `value <operator> literal` (or the value's
truth, for the operator "truth") is `expected`.

This module reads Python with the standard library's parser only: a file without PyTorch code
is never parsed by LibCST (`program.plain`), and of a file with PyTorch code only the
statements that may declare a setting are read again (`summarize._declared_settings`). The
command lines a Python file builds are read in files without PyTorch code only: launchers.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from torchperf_lint.program.summary import ModuleSummary

_COMPARISONS: dict[str, Any] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge, "is": operator.is_, "is not": operator.is_not,
}
# `--name value`, `--name=value` or `-n value` on a command line (the value may be left out).
_OPTION = re.compile(
    r"(?<![\w-])(--?[A-Za-z_][\w-]*)(?:[ \t]*=[ \t]*|[ \t]+)?([^\s\\'\"`-][^\s\\'\"`]*)?"
)
# `name: value` in YAML, `"name": value` in JSON, `name = value` in an INI file.
_KEY = re.compile(
    r"""^[ \t]*(?:-[ \t]+)?["']?([A-Za-z_]\w*)["']?[ \t]*[:=][ \t]*(.*?)[ \t,]*$""", re.MULTILINE
)
# `TRAIN.CLIP_GRAD 0.` (yacs' command-line opts, in capitals) or `train.clip_grad=0` (Hydra).
_DOTTED = re.compile(
    r"(?<![\w./-])(?:[A-Z][A-Z0-9_]*(?:\.[A-Z][A-Z0-9_]*)+[ \t]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+=)"
    r"([^\s\\'\"`]+)"
)
# The methods of an argument parser that declare an option, and that set defaults.
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DECLARING_OPTION = "add_argument"
_SETTING_DEFAULTS = "set_defaults"
DECLARING_CALLS = frozenset({_DECLARING_OPTION, _SETTING_DEFAULTS})
# What a config tree is built with (`_C = CN()`, `cfg = edict()`).
_CONFIG_TREES = frozenset({
    "CN", "CfgNode", "ConfigDict", "EasyDict", "edict", "AttrDict", "Munch", "SimpleNamespace",
    "Namespace", "Config", "CFG",
})
# What copies a config tree into another (`TrainCfg = deepcopy(BaseCfg)`), whose entries
# are then set as the original's are.
_TREE_COPIES = frozenset({"deepcopy", "copy"})
# Classes whose fields are command-line arguments or the run's settings: by name (`Args`,
# `TrainingArguments`, `Hparams`, `TrainCfg`, skrl's `PPO_CFG`) or by base
# (typed-argument-parser's `Tap`).
_ARGUMENT_CLASS_SUFFIXES = ("Args", "Arguments", "Options", "Hparams", "HParams", "Cfg", "_CFG")
_ARGUMENT_PARSER_BASES = frozenset({"Tap"})
# Text a Python file declares or gives settings with (see `declared_settings`); a file
# without any is not parsed again.
_PYTHON_MARKERS = (
    "add_argument", "set_defaults", *_ARGUMENT_CLASS_SUFFIXES, *_ARGUMENT_PARSER_BASES,
    *(f"{name}(" for name in _CONFIG_TREES),
)
# An option in a string (`"--verbose"`, `"python train.py --lr 0.1"`), not a comment's rule.
_OPTION_IN_TEXT = re.compile(r"""[\s"'=]--[A-Za-z]""")
_YAML_WORDS = {
    "true": True, "false": False, "yes": True, "no": False, "on": True, "off": False,
    "null": None, "none": None, "~": None,
}


class DeclaredSettings(NamedTuple):
    """What a Python file says of the run's settings (`ModuleSummary.setting_defaults`,
    `.settings_given`, `.setting_aliases`)."""

    defaults: list[list]
    given: list[list]
    # `[alias, name]` for an option's other names (`-r` of `--regularization`).
    aliases: list[list[str]]
    # `[name, value]` for a flag option, with the value that giving it stores (`True` for
    # `action="store_true"`): what a launcher's bare `--fp16` gives.
    flags: list[list]


def python_settings(text: str, tree: ast.Module) -> DeclaredSettings:
    """`declared_settings` of Python `text`, parsed as `tree`; nothing, without walking the
    tree, for a text that names nothing that declares or gives a setting."""
    if not any(marker in text for marker in _PYTHON_MARKERS) and not _OPTION_IN_TEXT.search(text):
        return DeclaredSettings([], [], [], [])
    return declared_settings(tree)


def summarize_launcher(text: str) -> ModuleSummary:
    """The summary of a launcher (`discovery.LAUNCHER_SUFFIXES`): the settings it gives, and
    every word it holds, which may name code (`target: ldm.models.autoencoder.VQModel`,
    `python -m tools.train`)."""
    return ModuleSummary(
        settings_given=settings_in_launcher(text), mentions=sorted(set(_WORD.findall(text)))
    )


def declared_settings(tree: ast.Module) -> DeclaredSettings:
    """The settings a Python file declares (their defaults, and the other names of its
    options) and those it gives a value, as a launcher does."""
    defaults: list[list] = []
    aliases: list[list[str]] = []
    flags: list[list] = []
    strings: list[ast.Constant] = []
    declaring: set[int] = set()  # the strings of `add_argument` calls: names and help
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str) and "--" in node.value:
                strings.append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == _DECLARING_OPTION:
                declaring.update(id(inner) for inner in ast.walk(node))
                defaults.extend(_option_default(node))
                aliases.extend(_option_aliases(node))
                flags.extend(_option_flag(node))
            elif node.func.attr == _SETTING_DEFAULTS:
                defaults.extend(
                    _entry(keyword.arg, keyword.value) for keyword in node.keywords if keyword.arg
                )
        elif isinstance(node, ast.ClassDef) and _declares_arguments(node):
            defaults.extend(_argument_class_defaults(node))
    given = [
        [name]
        for node in strings
        if id(node) not in declaring
        for name, _ in _options_in(node.value)
    ]
    defaults.extend(_config_tree_defaults(tree))
    return DeclaredSettings(defaults, given, aliases, flags)


def settings_in_launcher(text: str) -> list[list]:
    """The settings a launcher gives, with the values it gives them where it says."""
    given = [[name, *_scalar(value)] for name, value in _options_in(text)]
    given.extend([name, *_scalar(value)] for name, value in _keys_in(text) if value)
    for match in _DOTTED.finditer(text):
        dotted = match.group(0).split("=")[0].split()[0]
        given.append([dotted.rpartition(".")[2], *_scalar(match.group(1))])
    return given


def _keys_in(text: str) -> Iterator[tuple[str, str]]:
    """`(name, value)` for each `name: value` line of a YAML, JSON or INI launcher, but for
    the keys nested under one that holds another callable's keyword arguments
    (`learning_rate_scheduler_kwargs:`, then `kl_threshold: 0.008`): they set that
    callable's parameters, not the run's settings."""
    nested_below: int | None = None  # the indent of the `*_kwargs:` key being skipped
    for match in _KEY.finditer(text):
        line = match.group(0)
        indent = len(line) - len(line.lstrip(" \t"))
        if nested_below is not None and indent > nested_below:
            continue
        nested_below = None
        name, value = match.groups()
        if name.endswith("kwargs") and value in ("", "{"):
            nested_below = indent
            continue
        yield name, value


def takes(test: list, value: object) -> bool:
    """Whether a run with `value` for the setting passes `test` (an unknown outcome may)."""
    _, comparison, literal, expected = test
    try:
        result = bool(value) if comparison == "truth" else bool(_COMPARISONS[comparison](value, literal))
    except TypeError:
        return True
    return result == expected


def _options_in(text: str) -> Iterator[tuple[str, str]]:
    """`(name, value)` for each option of a command line (`--batch-size 64` gives
    `("batch_size", "64")`, `-r 0.1` gives `("r", "0.1")`), value "" when none follows."""
    for match in _OPTION.finditer(text):
        yield _option_name(match.group(1)), match.group(2) or ""


def _option_name(option: str) -> str:
    """How argparse names the attribute of an option string: `--batch-size` is `batch_size`."""
    return option.lstrip("-").replace("-", "_")


def _scalar(text: str) -> list:
    """`[value]` for a scalar written in a launcher (`0.`, `true`, `'adam'`), `[]` for none."""
    text = text.split(" #")[0].strip().strip("'\"")
    if not text:
        return []
    lowered = text.lower()
    if lowered in _YAML_WORDS:
        return [_YAML_WORDS[lowered]]
    try:
        return [int(text)]
    except ValueError:
        pass
    try:
        return [float(text)]
    except ValueError:
        return [text] if re.fullmatch(r"[\w./-]+", text) else []


def _option_default(call: ast.Call) -> list[list]:
    """`[dest, default]` for `parser.add_argument("--lr", default=0.1)`, `[dest]` when its
    default is not a literal or it is required; nothing for a positional argument."""
    names = _option_strings(call)
    if not names:
        return []
    keywords = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}
    name = _destination(names, keywords.get("dest"))
    required = keywords.get("required")
    if required is not None and not (isinstance(required, ast.Constant) and not required.value):
        return [[name]]
    if "default" in keywords:
        return [_entry(name, keywords["default"])]
    action = keywords.get("action")
    kind = action.value if isinstance(action, ast.Constant) else None
    if kind in ("store_true", "store_false"):
        return [[name, kind == "store_false"]]
    return [[name, None]] if action is None or kind in ("store", "append", "count") else [[name]]


def _option_flag(call: ast.Call) -> list[list]:
    """`[dest, value]` for a flag, `parser.add_argument("--fp16", action="store_true")`:
    the value giving it stores."""
    names = _option_strings(call)
    action = next((keyword.value for keyword in call.keywords if keyword.arg == "action"), None)
    kind = action.value if isinstance(action, ast.Constant) else None
    if not names or kind not in ("store_true", "store_false"):
        return []
    dest = next((keyword.value for keyword in call.keywords if keyword.arg == "dest"), None)
    return [[_destination(names, dest), kind == "store_true"]]


def _option_aliases(call: ast.Call) -> list[list[str]]:
    """`[alias, dest]` for each name of an option but the one it is stored under
    (`add_argument("-r", "--regularization")` gives `["r", "regularization"]`)."""
    names = _option_strings(call)
    dest = next((keyword.value for keyword in call.keywords if keyword.arg == "dest"), None)
    stored = _destination(names, dest) if names else ""
    return [[_option_name(name), stored] for name in names if _option_name(name) != stored]


def _option_strings(call: ast.Call) -> list[str]:
    """The option strings `add_argument` is given (`["-r", "--regularization"]`), none for a
    positional argument."""
    names = [
        arg.value for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    ]
    return names if names and all(name.startswith("-") for name in names) else []


def _destination(names: list[str], dest: ast.expr | None) -> str:
    """The attribute argparse stores an option under: `dest=`, else its first long option
    string, else its first."""
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        return dest.value
    long = [name for name in names if name.startswith("--")]
    return _option_name((long or names)[0])


def _config_tree_defaults(tree: ast.Module) -> Iterable[list]:
    """`[key, default]` for each entry a module's code sets on a config tree it builds at its
    top level (`_C = CN()`, then `_C.TRAIN.CLIP_GRAD = 5.0` gives "TRAIN.CLIP_GRAD")."""
    roots: set[str] = set()
    for statement in tree.body:
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        target = statement.targets[0]
        if isinstance(target, ast.Name) and (
            _builds_a_config_tree(statement.value) or copies_a_config_tree(statement.value, roots)
        ):
            roots.add(target.id)
            continue
        parts = attribute_chain(target)
        if parts is None or parts[0] not in roots or _builds_a_config_tree(statement.value):
            continue  # `_C.TRAIN = CN()` holds entries, not a value
        yield _entry(".".join(parts[1:]), statement.value)


def _argument_class_defaults(cls: ast.ClassDef) -> Iterable[list]:
    """`[field, default]` for each field of a class that declares command-line arguments
    (`class Args(Tap): clip: int = -1`, a dataclass `TrainingArguments` that
    `HfArgumentParser` reads: `fp16: bool = field(default=False)`)."""
    for statement in cls.body:
        if not (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and statement.value is not None
        ):
            continue
        value = statement.value
        if isinstance(value, ast.Call) and _name_of(value.func) == "field":
            found = [keyword.value for keyword in value.keywords if keyword.arg == "default"]
            if not found:
                yield [statement.target.id]
                continue
            value = found[0]
        yield _entry(statement.target.id, value)


def _declares_arguments(cls: ast.ClassDef) -> bool:
    return is_argument_class(cls.name, [_name_of(base) for base in cls.bases])


def is_argument_class(name: str, bases: Iterable[str | None]) -> bool:
    """A class whose fields are command-line arguments or the run's settings: by its name
    (`Args`, `TrainingArguments`, `Hparams`, `TrainCfg`, `PPO_CFG`) or its base
    (typed-argument-parser's `Tap`)."""
    return name.endswith(_ARGUMENT_CLASS_SUFFIXES) or any(
        base in _ARGUMENT_PARSER_BASES for base in bases
    )


def _name_of(expression: ast.expr) -> str | None:
    if isinstance(expression, ast.Attribute):
        return expression.attr
    return expression.id if isinstance(expression, ast.Name) else None


def _builds_a_config_tree(value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and builds_a_config_tree(_name_of(value.func))


def copies_a_config_tree(value: ast.expr, roots: set[str]) -> bool:
    """`deepcopy(BaseCfg)` (also `copy.deepcopy(...)`, `BaseCfg.copy()`) of one of `roots`."""
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Attribute) and value.func.attr == "copy" and not value.args:
        copied: ast.expr = value.func.value
    elif _name_of(value.func) in _TREE_COPIES and len(value.args) == 1:
        copied = value.args[0]
    else:
        return False
    return isinstance(copied, ast.Name) and copied.id in roots


def builds_a_config_tree(callee: str | None) -> bool:
    """Calling `callee` builds a config tree (`CN()`, `CfgNode()`, `EasyDict()`)."""
    return callee in _CONFIG_TREES


def attribute_chain(node: ast.expr) -> list[str] | None:
    """`["_C", "TRAIN", "CLIP_GRAD"]` for `_C.TRAIN.CLIP_GRAD`; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not parts or not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _entry(name: str, value: ast.expr) -> list:
    """`[name, value]` for a scalar literal (a list or tuple by its truth), else `[name]`."""
    try:
        literal = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return [name]
    if isinstance(literal, (list, tuple, dict, set)):
        return [name, bool(literal)]
    if literal is None or isinstance(literal, (bool, int, float, str)):
        return [name, literal]
    return [name]
