"""Notebooks: code cells linted as one module, findings per cell, IPython lines skipped, fixes
written back into the changed cells only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import torchperf_lint

from torchperf_lint.config import resolve_selection
from torchperf_lint.diagnostics import Location, Related
from torchperf_lint.engine import LintSettings
from torchperf_lint.notebooks import lint_notebook, lintable, notebook_lines, read_notebook

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"
TRAIN_LOOP = FIXTURES / "train_loop.ipynb"
DEFAULTS = LintSettings(resolve_selection(None))
WITH_TPL104 = LintSettings(resolve_selection(None, extend_select=["TPL104"]))


def notebook(*cells: object, indent: int = 1, metadata: dict | None = None) -> bytes:
    """A notebook as Jupyter writes it: each cell a code source (list of lines or string),
    or `("markdown", text)`."""
    raw = []
    for cell in cells:
        if isinstance(cell, tuple):
            raw.append({"cell_type": cell[0], "metadata": {}, "source": cell[1]})
        else:
            raw.append(
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "metadata": {},
                    "outputs": [],
                    "source": cell,
                }
            )
    document = {"cells": raw, "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(document, indent=indent, ensure_ascii=False) + "\n").encode()


def found(data: bytes, settings: LintSettings = DEFAULTS) -> list[tuple[str, int, int, int]]:
    result = lint_notebook(data, "nb.ipynb", settings)
    assert result.error is None, result.error
    return [(d.code, d.cell, d.location.row, d.location.column) for d in result.diagnostics]


IMPORTS = ["import torch\n", "from torch.utils.data import DataLoader\n", "device = torch.device(\"cuda\")"]
LOOP = [
    "for x, y in loader:\n",
    "    x = x.to(device)\n",
    "    loss = model(x).sum()\n",
    "    loss.backward()\n",
    "    optimizer.step()\n",
    "    losses.append(loss)",
]


def moves_batches(*loaders: str) -> list[str]:
    """A cell that sends the batches of `loaders` to the GPU, as TPL102 needs to see."""
    return [line for loader in loaders for line in (f"for x in {loader}:\n", "    x.to(device)\n")]


def test_training_loop_split_across_cells_is_linted_as_one_module():
    # The DataLoader cell alone has no CUDA in it: TPL102 needs the imports cell's facts.
    data = notebook(
        ("markdown", "# Training"), IMPORTS, ["loader = DataLoader(ds, num_workers=2)"], LOOP
    )
    assert found(data) == [("TPL102", 3, 1, 10), ("TPL501", 4, 6, 5)]


def test_the_other_reads_of_a_run_are_located_in_their_cell():
    data = notebook(
        IMPORTS,
        ["model = torch.nn.Linear(2, 2).to(device)\n"],
        [
            "for x in loader:\n",
            "    loss = model(x.to(device, non_blocking=True)).sum()\n",
            "    loss.backward()\n",
            "    optimizer.step()\n",
            "    a = loss.item()\n",
            "    b = loss.mean().item()\n",
        ],
    )
    [merged] = lint_notebook(data, "nb.ipynb", DEFAULTS).diagnostics
    assert (merged.code, merged.cell, merged.location.row) == ("TPL201", 3, 5)
    assert merged.related == (
        Related("nb.ipynb", Location(6, 9), "cell 3: also waits here: `.item()`"),
    )


def test_a_loader_that_no_cell_reads_loads_nothing():
    data = notebook(
        IMPORTS,
        [
            "train_loader = DataLoader(ds, batch_size=8)\n",
            "test_loader = DataLoader(ds, batch_size=8)",
        ],
        ["for x in train_loader:\n", "    x.to(device)"],
    )
    assert [finding for finding in found(data) if finding[0] == "TPL101"] == [("TPL101", 2, 1, 16)]


def test_a_loader_that_only_an_ipython_line_reads_is_still_read():
    data = notebook(
        IMPORTS,
        ["train_loader = DataLoader(ds, batch_size=8)\n", "valid_loader = DataLoader(ds)"],
        ["def train(loader):\n", "    for x in loader:\n", "        x.to(device)"],
        ["%time train(train_loader)\n", "!echo valid_loader"],
    )
    assert [finding for finding in found(data) if finding[0] == "TPL101"] == [
        ("TPL101", 2, 1, 16), ("TPL101", 2, 2, 16)
    ]


# The fixture's findings of these two rules; other rules' judgement is not this file's subject.
SELECT = ("--no-cache", "--select", "TPL102,TPL501")


def test_cli_reports_cell_in_concise_full_json_github_and_sarif(tmp_path):
    shutil.copy(TRAIN_LOOP, tmp_path / "train.ipynb")
    concise = torchperf_lint(*SELECT, "--output-format", "concise", "train.ipynb", cwd=tmp_path)
    assert concise.returncode == 1
    assert concise.stdout.splitlines()[:2] == [
        (
            "train.ipynb:cell 3:2:10: TPL102 `DataLoader` in a CUDA module without "
            "`pin_memory=True`; pin batches for faster, async copies"
        ),
        (
            "train.ipynb:cell 5:9:5: TPL501 Loss stored across iterations keeps its autograd "
            "graph alive; store `.detach()`"
        ),
    ]
    full = torchperf_lint(*SELECT, "train.ipynb", cwd=tmp_path).stdout
    assert "9 |     losses.append(loss)\n  |     ^^^^^^^^^^^^^^^^^^^ TPL501" in full
    records = json.loads(
        torchperf_lint(*SELECT, "--output-format", "json", "train.ipynb", cwd=tmp_path).stdout
    )
    assert [(r["code"], r["cell"], r["location"], r["noqa_row"]) for r in records] == [
        ("TPL102", 3, {"row": 2, "column": 10}, 2),
        ("TPL501", 5, {"row": 9, "column": 5}, 9),
    ]
    # Fix edits are relative to the cell too.
    assert records[1]["fix"]["edits"][0]["location"] == {"row": 9, "column": 19}
    # Formats that name a line of the file point at the `.ipynb` line holding the code.
    row, line_start = file_position(tmp_path / "train.ipynb", '"    losses.append(loss)')
    column = line_start + 4  # The finding starts at column 5 of that source line.
    github = torchperf_lint(*SELECT, "--output-format", "github", "train.ipynb", cwd=tmp_path)
    span = f"line={row},col={column},endLine={row},endColumn={column + 19}"
    assert f",{span}::cell 5: TPL501 " in github.stdout
    sarif = json.loads(
        torchperf_lint(*SELECT, "--output-format", "sarif", "train.ipynb", cwd=tmp_path).stdout
    )
    result = sarif["runs"][0]["results"][1]
    assert result["properties"] == {"cell": 5}
    assert result["message"]["text"].startswith("cell 5: Loss stored")
    assert result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": row,
        "startColumn": column,
        "endLine": row,
        "endColumn": column + 19,
    }


def file_position(path: Path, quoted_line: str) -> tuple[int, int]:
    """The row and column, in the notebook file, of the first character of the source line
    whose JSON string starts with `quoted_line`."""
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if quoted_line in line:
            return row, line.index(quoted_line) + 2
    raise AssertionError(f"{quoted_line} is not in {path}")


def test_ipython_lines_are_skipped_and_rows_stay_right():
    data = notebook(
        ["!pip install torch\n", "%load_ext autoreload\n", "files = !ls\n", "?DataLoader\n"]
        + IMPORTS,
        ["%%time\n", "DataLoader.__doc__?\n", "loader = DataLoader(ds)\n", "%timeit next(iter(loader))"],
        ["%%bash\n", "echo DataLoader(ds)"],
        ["%pip install \\\n", "    torchvision\n", "loader2 = DataLoader(ds)"],
        moves_batches("loader", "loader2"),
    )
    assert found(data) == [
        ("TPL101", 2, 3, 10),
        ("TPL101", 4, 3, 11),
    ]


def test_a_cell_that_declares_another_language_is_not_linted():
    # ms-swift's notebooks: shell cells that VS Code marks as such, in a Python notebook.
    document = json.loads(notebook(IMPORTS, ["git clone https://example.com/repo.git\n"], ["x = 1\n"]))
    document["cells"][1]["metadata"] = {"vscode": {"languageId": "shellscript"}}
    data = (json.dumps(document) + "\n").encode()
    assert lint_notebook(data, "nb.ipynb", DEFAULTS).diagnostics == []
    document["cells"][1]["metadata"] = {"vscode": {"languageId": "python"}}
    [diagnostic] = lint_notebook((json.dumps(document) + "\n").encode(), "nb.ipynb", DEFAULTS).diagnostics
    assert diagnostic.code == "E902"


def test_an_indented_shell_escape_that_starts_a_cell_is_an_ipython_line():
    # IPython removes a cell's leading indentation: ` !tts --text ...` runs the shell.
    data = notebook(
        IMPORTS,
        [" !tts --text 'hello' \\\n", "    --out_path out.wav\n", " %ls\n"],
        ["loader = DataLoader(ds)\n"],
        moves_batches("loader"),
    )
    assert found(data) == [("TPL101", 3, 1, 10)]


def test_a_line_that_starts_with_percent_inside_a_statement_is_python():
    # `% (count, minutes)` continues the `print(` above it: IPython reads magics only where a
    # statement starts; `%time` after the closed bracket is one.
    data = notebook(
        IMPORTS,
        [
            "print(\n",
            '    "%d examples in %.2f minutes"\n',
            "    % (len(ds), 0.5)\n",
            ")\n",
            "%time x = 1\n",
            "loader = DataLoader(ds)\n",
        ],
        moves_batches("loader"),
    )
    assert found(data) == [("TPL101", 2, 6, 10)]
    linted, unparsable = lintable(read_notebook(data), "nb.ipynb")
    assert unparsable == []
    assert linted.cells[1].ipython_lines == ("%time x = 1\n",)


def test_noqa_in_a_cell_is_honoured():
    data = notebook(
        IMPORTS,
        ["loader = DataLoader(ds, num_workers=2)  # noqa: TPL102\n", "other = DataLoader(ds, num_workers=2)"],
        moves_batches("loader", "other"),
    )
    assert found(data) == [("TPL102", 2, 2, 9)]


def test_syntax_error_names_the_cell_and_its_row():
    result = lint_notebook(notebook(IMPORTS, ["x = 1\n", "def broken(:\n"]), "nb.ipynb", DEFAULTS)
    assert result.error is None
    assert [(d.code, d.cell, d.location, d.message) for d in result.diagnostics] == [
        ("E902", 2, Location(2, 12), "syntax error: invalid syntax")
    ]


# Not Python, and IPython stops at their syntax error too: a shell transcript, a pasted log.
TRANSCRIPT = ["$ python train.py --epochs 3\n", "$ ls checkpoints/"]
TRAINING_LOG = ["Epoch 1/3\n", "loss: 0.6931 - acc: 0.5012\n"]


def test_each_cell_that_does_not_parse_is_e902_and_the_other_cells_are_linted():
    data = notebook(
        ("markdown", "# Training"),
        IMPORTS,
        TRANSCRIPT,
        ["loader = DataLoader(ds, num_workers=2)"],
        TRAINING_LOG,
        LOOP,
    )
    assert found(data) == [("E902", 3, 1, 1), ("TPL102", 4, 1, 10), ("E902", 5, 1, 7), ("TPL501", 6, 6, 5)]
    errors = [d for d in lint_notebook(data, "nb.ipynb", DEFAULTS).diagnostics if d.code == "E902"]
    assert {(d.message, d.fix, d.noqa_row) for d in errors} == {
        ("syntax error: invalid syntax", None, None)
    }


def test_a_one_line_automagic_cell_is_an_ipython_line_and_python_is_never_one():
    # IPython runs a one-line cell `ls /content/checkpoints/` or `pip install x` as the alias or
    # line magic; `ls -la` and `cd(x)` parse as Python and are Python; an assignment (`ls = `)
    # and a longer cell are never automagic in IPython either.
    cells = [
        ["ls /content/checkpoints/\n"],
        "\npip install torchvision\n\n",
        ["ls -la"],
        ["ls = [1]\n", "cd(ls)"],
        ["ls = "],
        ["pip install torchvision\n", "import torch"],
        ["mkdirs data/"],
    ]
    data = notebook(
        IMPORTS, *cells, ["loader = DataLoader(ds, num_workers=2)"], moves_batches("loader")
    )
    assert found(data) == [
        ("E902", 6, 1, 6),
        ("E902", 7, 1, 5),
        ("E902", 8, 1, 8),
        ("TPL102", 9, 1, 10),
    ]
    linted, unparsable = lintable(read_notebook(data), "nb.ipynb")
    assert [error.cell for error in unparsable] == [6, 7, 8]
    assert [(cell.number, cell.ipython_lines) for cell in linted.cells] == [
        (1, ()),
        (2, ("ls /content/checkpoints/\n",)),
        (3, ("pip install torchvision\n",)),
        (4, ()),
        (5, ()),
        (9, ()),
        (10, ()),
    ]


def test_a_notebook_whose_only_non_python_cell_is_automagic_is_linted_without_an_error():
    data = notebook(
        IMPORTS,
        ["ls /content/checkpoints/"],
        ["loader = DataLoader(ds, num_workers=2)"],
        moves_batches("loader"),
    )
    assert found(data) == [("TPL102", 3, 1, 10)]


def test_a_notebook_with_an_unparsable_cell_is_reported_by_the_cli_in_that_cell(tmp_path):
    (tmp_path / "nb.ipynb").write_bytes(
        notebook(
            IMPORTS,
            TRANSCRIPT,
            ["loader = DataLoader(ds, num_workers=2)"],
            TRAINING_LOG,
            moves_batches("loader"),
        )
    )
    completed = torchperf_lint(
        "--no-cache", "--select", "TPL102", "--output-format", "concise", "nb.ipynb", cwd=tmp_path
    )
    assert completed.returncode == 1
    assert completed.stdout.splitlines()[:3] == [
        "nb.ipynb:cell 2:1:1: E902 syntax error: invalid syntax",
        (
            "nb.ipynb:cell 3:1:10: TPL102 `DataLoader` in a CUDA module without "
            "`pin_memory=True`; pin batches for faster, async copies"
        ),
        "nb.ipynb:cell 4:1:7: E902 syntax error: invalid syntax",
    ]


def test_diff_and_fix_only_fail_on_a_cell_that_does_not_parse(tmp_path):
    (tmp_path / "nb.ipynb").write_bytes(notebook(IMPORTS, TRANSCRIPT, ["x = 1"]))
    for mode in ("--diff", "--fix-only"):
        completed = torchperf_lint("--no-cache", mode, "nb.ipynb", cwd=tmp_path)
        assert completed.returncode == 1, mode
        assert "error: nb.ipynb: cell 2: syntax error: invalid syntax\n" in completed.stderr, mode
        assert completed.stdout == "", mode


def test_fix_and_add_noqa_change_the_other_cells_and_never_an_unparsable_one(tmp_path):
    data = notebook(
        IMPORTS,
        TRANSCRIPT,
        ["ls /content/checkpoints/\n", "\n"],
        ["loader = DataLoader(ds, num_workers=2)"],
        moves_batches("loader"),
    )
    path = tmp_path / "nb.ipynb"
    path.write_bytes(data)
    completed = torchperf_lint(
        "--no-cache", "--fix", "--unsafe-fixes", "--select", "TPL102", "--output-format",
        "concise", "nb.ipynb", cwd=tmp_path,
    )
    assert completed.returncode == 1
    assert completed.stdout.splitlines()[0] == (
        "nb.ipynb:cell 2:1:1: E902 syntax error: invalid syntax"
    )
    fixed = data.decode().replace(
        '"loader = DataLoader(ds, num_workers=2)"',
        '"loader = DataLoader(ds, num_workers=2, pin_memory=True)"',
    )
    assert path.read_text(encoding="utf-8") == fixed
    path.write_bytes(data)
    completed = torchperf_lint(
        "--no-cache", "--add-noqa", "--select", "TPL102", "nb.ipynb", cwd=tmp_path
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert path.read_text(encoding="utf-8") == data.decode().replace(
        '"loader = DataLoader(ds, num_workers=2)"',
        '"loader = DataLoader(ds, num_workers=2)  # noqa: TPL102"',
    )


def test_a_syntax_error_is_reported_in_its_cell_and_at_its_line_of_the_file(tmp_path):
    (tmp_path / "nb.ipynb").write_bytes(notebook(IMPORTS, ["x = 1\n", "def broken(:\n"]))
    concise = torchperf_lint("--no-cache", "--output-format", "concise", "nb.ipynb", cwd=tmp_path)
    assert concise.stdout.startswith("nb.ipynb:cell 2:2:")
    assert ": E902 syntax error" in concise.stdout.splitlines()[0]
    row, _ = file_position(tmp_path / "nb.ipynb", '"def broken(:')
    github = torchperf_lint("--no-cache", "--output-format", "github", "nb.ipynb", cwd=tmp_path)
    assert f",line={row}," in github.stdout
    assert "::cell 2: E902 syntax error" in github.stdout


def test_invalid_json_and_non_notebooks_are_file_errors_and_left_untouched(tmp_path):
    broken = tmp_path / "broken.ipynb"
    broken.write_bytes(b'{"cells": [')
    wrong = tmp_path / "wrong.ipynb"
    wrong.write_bytes(b'{"nbformat": 4}')
    pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 12345\n"
    (tmp_path / "lfs.ipynb").write_bytes(pointer)
    completed = torchperf_lint(
        "--no-cache", "--fix", "--output-format", "concise", ".", cwd=tmp_path
    )
    assert completed.returncode == 1
    lines = completed.stdout.splitlines()
    assert lines[0].startswith("broken.ipynb:1:1: E902 not a notebook: invalid JSON: ")
    assert lines[1] == (
        "lfs.ipynb:1:1: E902 not a notebook: a Git LFS pointer to one (`git lfs pull` fetches it)"
    )
    assert lines[2] == "wrong.ipynb:1:1: E902 not a notebook: no list of `cells`"
    assert broken.read_bytes() == b'{"cells": ['
    assert wrong.read_bytes() == b'{"nbformat": 4}'
    assert (tmp_path / "lfs.ipynb").read_bytes() == pointer


def test_other_kernels_are_not_linted():
    julia = {"kernelspec": {"language": "julia", "name": "julia-1.9"}}
    assert found(notebook(IMPORTS, ["loader = DataLoader(ds)"], metadata=julia)) == []


def test_fix_rewrites_only_the_changed_cells_keeping_json_layout(tmp_path):
    path = tmp_path / "train.ipynb"
    shutil.copy(TRAIN_LOOP, path)
    before = path.read_text(encoding="utf-8")
    completed = torchperf_lint(
        "--no-cache", "--fix", "--unsafe-fixes", "--select", "TPL102,TPL104,TPL501", "train.ipynb",
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    expected = (
        before.replace(
            '"loader = DataLoader(dataset, batch_size=64, num_workers=4)\\n"',
            '"loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)\\n"',
        )
        .replace(
            '"    inputs, targets = inputs.to(device), targets.to(device)\\n"',
            '"    inputs, targets = inputs.to(device, non_blocking=True), '
            'targets.to(device, non_blocking=True)\\n"',
        )
        .replace('"    losses.append(loss)\\n"', '"    losses.append(loss.detach())\\n"')
    )
    assert path.read_text(encoding="utf-8") == expected
    # The magics in the fixed cells are kept, and a second --fix changes nothing.
    assert '"%%time\\n"' in expected and '"!pip install -q torchvision\\n"' in expected
    again = torchperf_lint("--no-cache", "--fix", "--unsafe-fixes", "train.ipynb", cwd=tmp_path)
    assert path.read_text(encoding="utf-8") == expected, again.stdout


def test_fix_keeps_string_sources_indent_and_missing_final_newline(tmp_path):
    data = notebook(
        "import torch\nfor b in loader: x = torch.zeros(3).to('cuda')",
        ["%timeit y = torch.zeros(2).to('cuda')\n", "for b in loader: y = torch.zeros(2).to('cuda')"],
        indent=2,
    )[:-1]
    path = tmp_path / "nb.ipynb"
    path.write_bytes(data)
    completed = torchperf_lint("--no-cache", "--fix", "--select", "TPL105", "nb.ipynb", cwd=tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    expected = (
        data.decode()
        .replace(
            '"import torch\\nfor b in loader: x = torch.zeros(3).to(\'cuda\')"',
            '"import torch\\nfor b in loader: x = torch.zeros(3, device=\'cuda\')"',
        )
        .replace(
            '"for b in loader: y = torch.zeros(2).to(\'cuda\')"',
            '"for b in loader: y = torch.zeros(2, device=\'cuda\')"',
        )
    )
    assert path.read_text(encoding="utf-8") == expected


def test_diff_of_a_notebook_writes_nothing(tmp_path):
    path = tmp_path / "train.ipynb"
    shutil.copy(TRAIN_LOOP, path)
    completed = torchperf_lint(
        "--no-cache", "--diff", "--unsafe-fixes", "--select", "TPL501", "train.ipynb", cwd=tmp_path
    )
    assert completed.returncode == 1
    assert '-    "    losses.append(loss)\\n",' in completed.stdout
    assert '+    "    losses.append(loss.detach())\\n",' in completed.stdout
    assert path.read_bytes() == TRAIN_LOOP.read_bytes()


def test_cell_relative_locations_of_a_multi_line_finding():
    data = notebook(IMPORTS, ["loader = DataLoader(\n", "    ds,\n", ")"], ["for x in loader: model(x.cuda()).sum().backward()"])
    result = lint_notebook(data, "nb.ipynb", DEFAULTS)
    first = result.diagnostics[0]
    assert (first.cell, first.location, first.end_location) == (2, Location(1, 10), Location(3, 2))


@pytest.mark.parametrize("indent", [1, None])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_cell_rows_map_to_the_lines_and_columns_of_the_notebook_file(indent, ascii_only):
    """Escapes (`\\t`, `\\"`, `\\u00e9`, surrogate pairs) and sources stored as one string or as
    a list of lines, in an indented or a one-line file."""
    document = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n"]},
            {
                "cell_type": "code",
                "metadata": {},
                "source": ["import torch\n", 'x = "a\tb" + "é😀" + y\n', "z = 1"],
            },
            {"cell_type": "code", "metadata": {}, "source": "a = 1\nbb = 2\n"},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)
    lines = notebook_lines(text)
    file_lines = text.split("\n")

    def at(cell: int, row: int, column: int, length: int) -> str:
        location = lines.file_location(cell, Location(row, column))
        return file_lines[location.row - 1][location.column - 1 :][:length]

    assert at(2, 1, 1, 6) == "import"
    assert at(2, 2, 1, 3) == "x ="
    assert at(2, 2, 20, 1) == "y"  # After a tab, two quotes, an é and an emoji.
    assert at(2, 3, 1, 5) == "z = 1"
    assert at(3, 2, 1, 6) == "bb = 2"
    assert lines.file_location(4, Location(1, 1)) is None
    assert lines.file_location(2, Location(9, 1)) is None
