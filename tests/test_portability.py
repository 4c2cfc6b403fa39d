"""The oldest supported Python can run every module: its syntax, the `X | Y` unions it cannot
evaluate, and the standard-library APIs it lacks (through vermin's tables).

The CI also runs the whole suite on the oldest and the newest supported Python; these checks
fail on any interpreter, so a 3.10-only construct is caught before it reaches that run.
"""

from __future__ import annotations

import ast
import builtins
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OLDEST = (3, 9)
# Code this project runs; tests/fixtures is code to lint, written in any Python.
CHECKED = ("torchperf_lint", "tests", "benchmarks", "examples")
SOURCES = sorted(
    path
    for folder in CHECKED
    for path in (ROOT / folder).rglob("*.py")
    if "fixtures" not in path.relative_to(ROOT).parts
)
BUILTIN_TYPES = frozenset(name for name, value in vars(builtins).items() if isinstance(value, type))


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_package_declares_the_oldest_python_checked_here() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'requires-python = ">={OLDEST[0]}.{OLDEST[1]}"' in text


@pytest.mark.parametrize("path", SOURCES, ids=_relative)
def test_syntax_is_that_of_the_oldest_python(path: Path) -> None:
    """No `match`, `except*`, type parameters or other syntax newer than the oldest Python."""
    source = path.read_text(encoding="utf-8")
    ast.parse(source, filename=str(path), feature_version=OLDEST)
    assert _new_f_strings(path) == []


def _new_f_strings(path: Path) -> list[str]:
    """f-strings that only Python 3.12's grammar (PEP 701) accepts: a quote of the enclosing
    f-string, a backslash or a comment inside a replacement field. `ast.parse` ignores
    `feature_version` for these; on Python < 3.12 the parse itself rejects them."""
    if sys.version_info < (3, 12):
        return []
    problems = []
    stack: list[str] = []  # The quote of each f-string being read, innermost last.
    with path.open("rb") as stream:
        for token in tokenize.tokenize(stream.readline):
            if token.type == tokenize.FSTRING_START:
                if stack and _quote(token.string) == stack[-1]:
                    problems.append(f"{token.start[0]}: nested f-string reuses its quote")
                stack.append(_quote(token.string))
            elif token.type == tokenize.FSTRING_END:
                stack.pop()
            elif stack and token.type != tokenize.FSTRING_MIDDLE:
                if token.type == tokenize.STRING and _quote(token.string) == stack[-1]:
                    problems.append(f"{token.start[0]}: string reuses the f-string's quote")
                if "\\" in token.string or token.type == tokenize.COMMENT:
                    problems.append(f"{token.start[0]}: backslash or comment in an f-string")
    return problems


def _quote(string_token: str) -> str:
    body = string_token.lstrip("rRbBfFuU")
    return body[:3] if body[:3] in ('"""', "'''") else body[:1]


class _RuntimeUnions(ast.NodeVisitor):
    """`X | Y` of types where it is evaluated at run time: Python 3.9 raises `TypeError`.

    An operand is taken for a type when it is `None`, a builtin type, a CamelCase name
    (`cst.With`) or a subscripted one (`list[int]`); `A_FLAG | B_FLAG` and sets are not.
    Annotations are not evaluated under `from __future__ import annotations`, nor is code
    under `if TYPE_CHECKING:`.
    """

    def __init__(self, postponed_annotations: bool) -> None:
        self.postponed = postponed_annotations
        self.found: list[str] = []

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.BitOr) and (_is_type(node.left) or _is_type(node.right)):
            self.found.append(f"{node.lineno}: {ast.unparse(node)}")
        self.generic_visit(node)

    def visit_If(self, node: ast.If) -> None:
        if ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        if not self.postponed and node.annotation is not None:
            self.visit(node.annotation)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for child in (*node.decorator_list, node.args, *node.body):
            self.visit(child)
        if not self.postponed and node.returns is not None:
            self.visit(node.returns)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        if not self.postponed:
            self.visit(node.annotation)


def _is_type(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, ast.Subscript):
        return _is_type(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _is_type(node.left) or _is_type(node.right)
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    camel_case = name[:1].isupper() and not name.isupper()
    return name in BUILTIN_TYPES or camel_case


def _postpones_annotations(module: ast.Module) -> bool:
    return any(
        isinstance(statement, ast.ImportFrom)
        and statement.module == "__future__"
        and any(alias.name == "annotations" for alias in statement.names)
        for statement in module.body
    )


@pytest.mark.parametrize("path", SOURCES, ids=_relative)
def test_no_union_of_types_is_evaluated_at_run_time(path: Path) -> None:
    module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    visitor = _RuntimeUnions(_postpones_annotations(module))
    visitor.visit(module)
    assert visitor.found == [], "use typing.Union (or Optional) outside annotations"


def test_the_union_check_sees_what_python_3_9_rejects() -> None:
    module = ast.parse(
        "from __future__ import annotations\n"
        "Region = cst.With | cst.FunctionDef\n"
        "def f(x: int | None) -> list[str] | None:\n"
        "    flags = re.IGNORECASE | re.VERBOSE\n"
        "    return isinstance(x, int | str)\n"
    )
    visitor = _RuntimeUnions(_postpones_annotations(module))
    visitor.visit(module)
    assert visitor.found == ["2: cst.With | cst.FunctionDef", "5: int | str"]


def test_annotations_are_evaluated_without_the_future_import() -> None:
    module = ast.parse("def f(x: int | None) -> None:\n    pass\n")
    visitor = _RuntimeUnions(_postpones_annotations(module))
    visitor.visit(module)
    assert visitor.found == ["1: int | None"]


def test_no_standard_library_api_newer_than_the_oldest_python() -> None:
    """vermin knows when each module, function and keyword argument of the standard library
    appeared (`zip(strict=)`, `itertools.pairwise`, `int.bit_count`, ...)."""
    pytest.importorskip("vermin", reason="vermin is a test dependency: pip install -e .[test]")
    target = f"--target={OLDEST[0]}.{OLDEST[1]}-"
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, vermin; sys.exit(vermin.main())",
            target,
            "--violations",
            "--no-tips",
            *map(str, SOURCES),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_every_module_imports_without_torch() -> None:
    """On the Python running the suite (the oldest one in CI), every module of the package
    imports, and none imports torch at import time (pre-commit environments have no torch)."""
    script = (
        "import importlib, pkgutil, sys, torchperf_lint\n"
        "modules = list(pkgutil.walk_packages(torchperf_lint.__path__, 'torchperf_lint.'))\n"
        "for module in modules:\n"
        "    if not module.name.endswith('__main__'):\n"
        "        importlib.import_module(module.name)\n"
        "print(len(modules) > 40, 'torch' in sys.modules)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "True False\n"
