"""`torchperf-lint server` end to end: the real server process over stdio, driven by pygls'
LSP client as an editor drives it, checked against what the CLI prints and rewrites."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the `lsp` extra is not installed")
pytestmark = pytest.mark.slow

from cli_helpers import torchperf_lint
from lsp_client import TIMEOUT_S, Editor, running_server, uri_of
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcMethodNotFound

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLE = Path(__file__).parent.parent / "examples" / "train.py"

TRAIN = """\
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer):
    loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
    for x, y in loader:
        x = x.to("cuda")
        y = y.to("cuda", non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""
ADAM = """\
import torch


def build(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.05)
"""


def project(tmp_path: Path, files: dict[str, str], config: str = "") -> Path:
    """A project folder (its `pyproject.toml` marks the root) holding `files`."""
    root = tmp_path / "project"
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(config, encoding="utf-8")
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def cli_findings(root: Path, *arguments: str) -> list[dict]:
    result = torchperf_lint("--output-format", "json", "--no-cache", *arguments, cwd=root)
    return json.loads(result.stdout)


def spans(diagnostics: list[lsp.Diagnostic]) -> list[tuple]:
    """(code, start line, start character, end line, end character), sorted."""
    return sorted(
        (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
        for d in diagnostics
    )


def cli_spans(findings: list[dict]) -> list[tuple]:
    """The CLI's JSON findings in LSP terms (0-based lines and characters)."""
    return sorted(
        (
            f["code"],
            f["location"]["row"] - 1,
            f["location"]["column"] - 1,
            f["end_location"]["row"] - 1,
            f["end_location"]["column"] - 1,
        )
        for f in findings
    )


def apply(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP edits (ASCII text: characters are code points) as an editor does."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: lsp.Position) -> int:
        return starts[min(position.line, len(lines))] + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


async def code_actions(
    editor: Editor, uri: str, diagnostic: lsp.Diagnostic, only: list[str] | None = None
) -> list[lsp.CodeAction]:
    return await editor.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=lsp.CodeActionContext(diagnostics=[diagnostic], only=only),
        )
    )


def test_a_training_file_gets_the_cli_findings_with_rule_links_and_the_rule_page_on_hover(
    tmp_path: Path,
) -> None:
    root = project(tmp_path, {"train.py": EXAMPLE.read_text(encoding="utf-8")})
    expected = cli_findings(root, "train.py")

    async def scenario() -> None:
        async with running_server(root) as editor:
            uri = editor.open(root / "train.py")
            diagnostics = await editor.diagnostics(uri, lambda found: bool(found))
            assert spans(diagnostics) == cli_spans(expected)
            assert {d.source for d in diagnostics} == {"torchperf-lint"}
            assert {d.severity for d in diagnostics} == {lsp.DiagnosticSeverity.Warning}
            urls = {f["code"]: f["url"] for f in expected}
            assert all(d.code_description.href == urls[d.code] for d in diagnostics)
            [sync] = [d for d in diagnostics if d.code == "TPL201"]
            hover = await editor.text_document_hover_async(
                lsp.HoverParams(lsp.TextDocumentIdentifier(uri), sync.range.start)
            )
            page = torchperf_lint("rule", "TPL201", cwd=root).stdout
            assert hover.contents.kind == lsp.MarkupKind.Markdown
            assert hover.contents.value == page

    asyncio.run(scenario())


def test_quick_fix_and_noqa_equal_the_cli_rewrites_and_unsafe_fixes_wait_for_the_setting(
    tmp_path: Path,
) -> None:
    root = project(tmp_path, {"train.py": TRAIN, "adam.py": ADAM})
    fixed_copy = project(tmp_path / "fixed", {"train.py": TRAIN, "adam.py": ADAM})
    torchperf_lint("--fix", "--no-cache", "train.py", cwd=fixed_copy)
    torchperf_lint("--fix", "--unsafe-fixes", "--no-cache", "adam.py", cwd=fixed_copy)
    noqa_copy = project(tmp_path / "noqa", {"train.py": TRAIN})
    torchperf_lint("--add-noqa", "--no-cache", "train.py", cwd=noqa_copy)

    async def scenario() -> None:
        async with running_server(root) as editor:
            uri = editor.open(root / "train.py")
            [blocking] = await editor.diagnostics(uri, lambda found: bool(found))
            fix, noqa = await code_actions(editor, uri, blocking, only=["quickfix"])
            assert fix.title == "torchperf-lint (TPL104): Add `non_blocking=True`"
            assert fix.kind == lsp.CodeActionKind.QuickFix and fix.is_preferred
            assert apply(TRAIN, fix.edit.changes[uri]) == (fixed_copy / "train.py").read_text()
            assert noqa.title == "torchperf-lint (TPL104): Disable for this line (`# noqa`)"
            assert apply(TRAIN, noqa.edit.changes[uri]) == (noqa_copy / "train.py").read_text()

            adam_uri = editor.open(root / "adam.py")
            [adam] = await editor.diagnostics(adam_uri, lambda found: bool(found))
            titles = [a.title for a in await code_actions(editor, adam_uri, adam, only=["quickfix"])]
            assert titles == ["torchperf-lint (TPL601): Disable for this line (`# noqa`)"]
            editor.workspace_did_change_configuration(
                lsp.DidChangeConfigurationParams(settings={"torchperf-lint": {"unsafeFixes": True}})
            )
            unsafe, _ = await code_actions(editor, adam_uri, adam)
            assert unsafe.title.endswith("(unsafe fix)") and not unsafe.is_preferred
            assert apply(ADAM, unsafe.edit.changes[adam_uri]) == (fixed_copy / "adam.py").read_text()

    asyncio.run(scenario())


def test_fix_all_applies_every_safe_fix_as_the_cli_does(tmp_path: Path) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    root = project(tmp_path, {"train.py": text})
    fixed_copy = project(tmp_path / "fixed", {"train.py": text})
    torchperf_lint("--fix", "--no-cache", "train.py", cwd=fixed_copy)

    async def scenario() -> None:
        async with running_server(root) as editor:
            uri = editor.open(root / "train.py")
            diagnostics = await editor.diagnostics(uri, lambda found: bool(found))
            actions = await code_actions(editor, uri, diagnostics[0], only=["source.fixAll"])
            [offered] = actions
            assert offered.kind == "source.fixAll.torchperf-lint"
            assert offered.edit is None  # Computed when chosen: the client resolves edits.
            fix_all = await editor.code_action_resolve_async(offered)
            assert apply(text, fix_all.edit.changes[uri]) == (fixed_copy / "train.py").read_text()

    asyncio.run(scenario())


def test_editing_the_caller_in_the_editor_or_on_disk_updates_the_helper_diagnostics(tmp_path: Path) -> None:
    root = tmp_path / "per_step_helper"
    shutil.copytree(FIXTURES / "projects" / "per_step_helper", root)
    engine_text = (root / "engine.py").read_text(encoding="utf-8")

    async def scenario() -> None:
        async with running_server(root) as editor:
            utils = editor.open(root / "utils.py")
            found = await editor.diagnostics(utils, lambda found: len(found) == 2)
            logged = next(d for d in found if d.range.start.line == 4)
            assert logged.code == "TPL201"
            [related] = logged.related_information
            assert related.location.uri == uri_of(root / "engine.py")
            assert related.location.range.start == lsp.Position(line=14, character=8)
            assert related.message == "calls `log_metrics` on every training step"

            engine = editor.open(root / "engine.py")
            await editor.diagnostics(engine)
            published = editor.published_at[utils]
            editor.change(engine, engine_text.replace("        log_metrics(loss)\n", ""), 2)
            found = await editor.diagnostics(utils, after=published)
            assert [(d.code, d.range.start.line) for d in found] == [("TPL201", 14)]

            # Closed, the caller is the file on disk again; then it changes on disk.
            editor.text_document_did_close(
                lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(engine))
            )
            await editor.diagnostics(utils, lambda found: len(found) == 2)
            published = editor.published_at[utils]
            (root / "engine.py").write_text(
                engine_text.replace("        log_metrics(loss)\n", ""), encoding="utf-8"
            )
            editor.workspace_did_change_watched_files(
                lsp.DidChangeWatchedFilesParams(
                    [lsp.FileEvent(uri=engine, type=lsp.FileChangeType.Changed)]
                )
            )
            found = await editor.diagnostics(utils, after=published)
            assert [(d.code, d.range.start.line) for d in found] == [("TPL201", 14)]

    asyncio.run(scenario())


# Edits of `examples/train.py`, applied one after the other as an editor sends them: inside a
# function (re-parsed alone; the lines below move), one that changes another function's
# findings, a syntax error and its repair, and module-level edits (an import, the CUDA device)
# that change findings everywhere.
EDITS = [
    ("    model = SmallNet().to(device)\n", '    print("starting")\n    model = SmallNet().to(device)\n'),
    ("batch_size=64, shuffle=True)", "batch_size=64, shuffle=True, pin_memory=True)"),
    # The loop of `evaluate` no longer moves batches: `val_loader` in `main` needs no pinning.
    ("        images, labels = images.to(device), labels.to(device)\n", ""),
    ("    criterion = nn.CrossEntropyLoss()\n", "    criterion = nn.CrossEntropyLoss(\n"),
    ("    criterion = nn.CrossEntropyLoss(\n", "    criterion = nn.CrossEntropyLoss()\n"),
    ("from torch.cuda.amp import GradScaler, autocast\n", "from torch.amp import GradScaler, autocast\n"),
    ('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'device = torch.device("cpu")'),
]


def test_each_edit_gets_the_diagnostics_the_cli_gives_for_the_new_text(tmp_path: Path) -> None:
    """The server re-parses only what an edit touched and keeps positions per statement;
    what it publishes must still be what the CLI finds in the whole new text."""
    root = project(tmp_path, {"train.py": EXAMPLE.read_text(encoding="utf-8")})
    texts = [EXAMPLE.read_text(encoding="utf-8")]
    for old, new in EDITS:
        assert old in texts[-1]
        texts.append(texts[-1].replace(old, new, 1))
    expected = []
    for step, text in enumerate(texts):
        cli_root = project(tmp_path / f"cli{step}", {"train.py": text})
        result = torchperf_lint("--output-format", "json", "--no-cache", "train.py", cwd=cli_root)
        expected.append(cli_spans(json.loads(result.stdout)))
    # Every edit changes the findings (the repaired text has those of the text before).
    assert all(before != after for before, after in zip(expected, expected[1:]))

    async def scenario() -> None:
        async with running_server(root) as editor:
            uri = editor.open(root / "train.py")
            for version, (text, wanted) in enumerate(zip(texts, expected), start=1):
                if version > 1:
                    editor.change(uri, text, version)
                try:
                    await editor.diagnostics(uri, lambda found, wanted=wanted: spans(found) == wanted)
                except asyncio.TimeoutError:
                    pass
                assert spans(editor.published[uri]) == wanted, f"after edit {version - 1}"

    asyncio.run(scenario())


def open_notebook(
    editor: Editor,
    notebook_uri: str,
    cells: list[tuple[str, str, str]],
    metadata: dict | None = None,
) -> None:
    """Opens in `editor` a notebook of (cell URI, "code" or "markdown", text) cells."""
    editor.notebook_document_did_open(
        lsp.DidOpenNotebookDocumentParams(
            notebook_document=lsp.NotebookDocument(
                uri=notebook_uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[
                    lsp.NotebookCell(
                        kind=(
                            lsp.NotebookCellKind.Code
                            if kind == "code"
                            else lsp.NotebookCellKind.Markup
                        ),
                        document=uri,
                    )
                    for uri, kind, _ in cells
                ],
                metadata=metadata,
            ),
            cell_text_documents=[
                lsp.TextDocumentItem(
                    uri=uri,
                    language_id="python" if kind == "code" else "markdown",
                    version=1,
                    text=text,
                )
                for uri, kind, text in cells
            ],
        )
    )


def test_a_notebook_cell_that_does_not_parse_is_an_error_beside_the_other_cells_findings(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    notebook_uri = uri_of(root / "demo.ipynb")
    cells = [
        (f"{notebook_uri}#cell1", "code", "$ python train.py --epochs 3\n"),
        (f"{notebook_uri}#cell2", "code", "import torch\nscaler = torch.cuda.amp.GradScaler()\n"),
    ]

    async def scenario() -> None:
        async with running_server(root) as editor:
            open_notebook(editor, notebook_uri, cells)
            [broken] = await editor.diagnostics(cells[0][0])
            assert (broken.code, broken.severity) == ("E902", lsp.DiagnosticSeverity.Error)
            [deprecated] = await editor.diagnostics(cells[1][0])
            assert (deprecated.code, deprecated.severity) == ("TPL301", lsp.DiagnosticSeverity.Warning)

    asyncio.run(scenario())


def test_a_notebook_gets_its_findings_per_cell_and_a_cell_quick_fix(tmp_path: Path) -> None:
    notebook_path = FIXTURES / "notebooks" / "train_loop.ipynb"
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    shutil.copy(notebook_path, root / "train_loop.ipynb")
    expected = cli_findings(root, "train_loop.ipynb")
    document = json.loads(notebook_path.read_text(encoding="utf-8"))
    notebook_uri = uri_of(root / "train_loop.ipynb")
    cells = [
        (f"{notebook_uri}#cell{number}", cell["cell_type"], "".join(cell["source"]))
        for number, cell in enumerate(document["cells"], start=1)
    ]

    async def scenario() -> None:
        async with running_server(root, {"unsafeFixes": True}) as editor:
            open_notebook(editor, notebook_uri, cells, document["metadata"])
            published = {}
            for uri, _, _ in cells:
                published[uri] = await editor.diagnostics(uri)
            for number, (uri, _, _) in enumerate(cells, start=1):
                assert spans(published[uri]) == cli_spans(
                    [f for f in expected if f["cell"] == number]
                ), f"cell {number}"

            cell_uri, _, cell_text = cells[4]
            [kept_loss] = [d for d in published[cell_uri] if d.code == "TPL501"]
            fix, _ = await code_actions(editor, cell_uri, kept_loss, only=["quickfix"])
            assert fix.title.startswith("torchperf-lint (TPL501): ")
            assert list(fix.edit.changes) == [cell_uri]
            fixed = apply(cell_text, fix.edit.changes[cell_uri])
            assert fixed == cell_text.replace("losses.append(loss)", "losses.append(loss.detach())")

    asyncio.run(scenario())


def test_unparsable_text_and_malformed_messages_do_not_stop_the_server(tmp_path: Path) -> None:
    root = project(tmp_path, {"train.py": TRAIN})

    async def scenario() -> None:
        async with running_server(root) as editor:
            uri = editor.open(root / "train.py", text=TRAIN + "\ndef broken(:\n")
            [error] = await editor.diagnostics(uri, lambda found: bool(found))
            assert error.code == "E902"
            assert error.severity == lsp.DiagnosticSeverity.Error
            assert error.message.startswith("syntax error")
            assert error.range.start.line == 14

            editor.send_raw(b'{"jsonrpc": "2.0", "id": 99, "method": ')
            hover = {"textDocument": {"uri": 7}, "position": "top"}
            request = {"jsonrpc": "2.0", "id": 100, "method": "textDocument/hover", "params": hover}
            response = editor.send_raw(json.dumps(request).encode(), request_id=100)
            with pytest.raises(JsonRpcInvalidParams):
                await asyncio.wait_for(response, TIMEOUT_S)
            with pytest.raises(JsonRpcMethodNotFound):
                await editor.protocol.send_request_async("torchperf/unknown", {})
            assert editor.messages[0] == "torchperf-lint: Expecting value: line 1 column 40 (char 39)"

            published = editor.published_at[uri]
            editor.change(uri, TRAIN, 2)
            [blocking] = await editor.diagnostics(uri, after=published)
            assert blocking.code == "TPL104"

    asyncio.run(scenario())


def test_excluded_files_get_no_diagnostics_and_a_broken_configuration_is_reported(
    tmp_path: Path,
) -> None:
    root = project(
        tmp_path,
        {"train.py": TRAIN, "legacy.py": TRAIN},
        config='[tool.torchperf-lint]\nextend-exclude = ["legacy.py"]\n',
    )

    async def scenario() -> None:
        async with running_server(root) as editor:
            legacy = editor.open(root / "legacy.py")
            assert not await editor.diagnostics(legacy)
            (root / "pyproject.toml").write_text(
                '[tool.torchperf-lint]\nselect = ["TPL999"]\n', encoding="utf-8"
            )
            editor.text_document_did_save(
                lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri_of(root / "pyproject.toml")))
            )
            [broken] = await editor.diagnostics(legacy, lambda found: bool(found))
            assert broken.severity == lsp.DiagnosticSeverity.Error
            assert "unknown rule code or prefix 'TPL999'" in broken.message

    asyncio.run(scenario())


def test_without_the_extra_the_command_names_it_and_exits_2() -> None:
    code = "import sys; sys.modules['pygls'] = None; from torchperf_lint.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-c", code, "server"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert result.stderr == (
        "error: `torchperf-lint server` needs the `lsp` extra (pygls): "
        "install `torchperf-lint[lsp]` (README, Installing)\n"
    )
