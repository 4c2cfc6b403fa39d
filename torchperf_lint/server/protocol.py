"""The language server: LSP 3.17 over stdio on pygls, glue between the editor's documents and
`projects.py` / `actions.py`.

Linting runs in one worker thread, one file at a time, so that the server keeps reading
messages while a large file is linted and the program is only ever changed by one lint.
Changes are debounced by coalescing: a file changed while it waits, or while another lint
runs, is linted once, with its newest text. A lint that changes the program queues the other
open files whose findings depend on it. Diagnostics are published from the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lsprotocol import types as lsp
from pygls.exceptions import FeatureRequestError, JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from torchperf_lint import __version__
from torchperf_lint.config import OWN_CONFIG, PYPROJECT
from torchperf_lint.diagnostics import FILE_ERROR_CODE, Diagnostic
from torchperf_lint.server.actions import (
    FIX_ALL,
    FIX_ALL_TITLE,
    QUICK_FIX,
    Action,
    actions_for,
    fix_all,
    hover_text,
    offers_fix_all,
)
from torchperf_lint.server.documents import NotebookSource, PythonSource, error_cell
from torchperf_lint.server.projects import Linted, Projects, lint_detached
from torchperf_lint.server.text import LineIndex, text_edits

logger = logging.getLogger(__name__)

SOURCE = "torchperf-lint"
CONFIG_FILES = (PYPROJECT, OWN_CONFIG)
WATCHED = ("**/*.py", "**/*.ipynb", f"**/{PYPROJECT}", f"**/{OWN_CONFIG}")


class _Protocol(LanguageServerProtocol):
    """pygls' protocol, except that a request whose parameters cannot be read is answered
    with the error (pygls only logs it, and the client would wait for ever)."""

    def structure_message(self, data: dict):
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "id" in data and "method" in data:
                self._send_response(data["id"], None, error.to_response_error())
            raise


class TorchperfLanguageServer(LanguageServer):
    """The server's state: the projects, the last lint of each open document (by the URI of
    the text document, or of the notebook), and the queue of documents to lint."""

    def __init__(self) -> None:
        super().__init__(
            SOURCE,
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
            notebook_document_sync=lsp.NotebookDocumentSyncOptions(
                notebook_selector=[
                    lsp.NotebookDocumentFilterWithCells(
                        notebook="*", cells=[lsp.NotebookCellLanguage(language="python")]
                    )
                ],
                save=True,
            ),
            protocol_cls=_Protocol,
        )
        self.projects = Projects()
        self.unsafe_fixes = False
        self.linted: dict[str, Linted] = {}
        self._queue: dict[str, None] = {}  # An ordered set of URIs.
        self._uri_of: dict[Path, str] = {}
        self._draining: asyncio.Task | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchperf-lint")

    def report_server_error(self, error: Exception, source: type) -> None:
        """An error outside a request (a malformed message, a failed notification) goes to
        the editor's log rather than a pop-up; a failed request was answered with it."""
        if source is not FeatureRequestError:
            self.window_log_message(
                lsp.LogMessageParams(type=lsp.MessageType.Error, message=f"{SOURCE}: {error}")
            )

    # Settings -------------------------------------------------------------------------------

    def configure(self, settings: object) -> None:
        """Read the editor's settings: `{"unsafeFixes": true}`, bare or under
        `"torchperf-lint"`."""
        if isinstance(settings, dict):
            own = settings.get(SOURCE, settings)
            if isinstance(own, dict) and "unsafeFixes" in own:
                self.unsafe_fixes = bool(own["unsafeFixes"])

    # Linting --------------------------------------------------------------------------------

    def request_lint(self, uris: Sequence[str]) -> None:
        """Queue documents to lint; the queue is drained in the worker, in order."""
        for uri in uris:
            self._queue[uri] = None
        if self._draining is None or self._draining.done():
            self._draining = asyncio.get_running_loop().create_task(self._drain())

    def relint(self, paths: Sequence[Path] | None) -> None:
        """Queue the open documents of these files (None: every open document)."""
        if paths is None:
            self.request_lint(list(self._uri_of.values()))
        else:
            self.request_lint([self._uri_of[path] for path in paths if path in self._uri_of])

    def is_tracked(self, uri: str) -> bool:
        """Whether the document at `uri` is linted (Python, open)."""
        return uri in self.linted or uri in self._queue

    async def settled(self) -> None:
        """Wait until every queued document is linted (before a code action, say)."""
        while self._draining is not None and not self._draining.done():
            await asyncio.shield(self._draining)

    async def in_worker(self, function, *arguments):
        """Run `function` in the worker, after the lints queued before it."""
        return await asyncio.get_running_loop().run_in_executor(self._worker, function, *arguments)

    async def _drain(self) -> None:
        while self._queue:
            uri = next(iter(self._queue))
            del self._queue[uri]
            snapshot = self._snapshot(uri)
            if snapshot is None:
                continue
            path, source = snapshot
            try:
                linted, again, unread = await self.in_worker(self._lint, uri, path, source)
                if self._snapshot(uri) is None:
                    continue  # Closed while it was linted.
                self.linted[uri] = linted
                self.publish(uri, linted)
                self.relint(again)
                if unread is not None:
                    self.relint(await self.in_worker(self._load, unread))
            except Exception:
                # A bug met linting one document is reported; the server goes on.
                logger.exception("internal error while linting %s", uri)
                self.window_log_message(
                    lsp.LogMessageParams(
                        type=lsp.MessageType.Error, message=f"internal error while linting {uri}"
                    )
                )

    def _snapshot(self, uri: str) -> tuple[Path | None, PythonSource | NotebookSource] | None:
        """The file and the current text of an open document (None: closed), read in the
        event loop: the worker never reads the workspace while messages change it."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            cells = [
                (
                    cell.document,
                    cell.kind == lsp.NotebookCellKind.Code,
                    self.workspace.get_text_document(cell.document).source,
                )
                for cell in notebook.cells
            ]
            metadata = notebook.metadata if isinstance(notebook.metadata, dict) else None
            source: PythonSource | NotebookSource = NotebookSource.from_cells(cells, metadata)
        elif uri in self.workspace.text_documents:
            source = PythonSource(self.workspace.get_text_document(uri).source)
        else:
            return None
        path = _path(uri)
        if path is not None:
            self._uri_of[path] = uri
        return path, source

    def _lint(
        self, uri: str, path: Path | None, source: PythonSource | NotebookSource
    ) -> tuple[Linted, list[Path], Path | None]:
        """In the worker: lint one document. Returns the other open files to lint again, and
        the file when its project is still to be read from disk."""
        if path is None:
            return lint_detached(uri.rsplit("/", 1)[-1], source), [], None
        project = self.projects.project_of(path)
        linted = project.lint(path, source)
        again = [other for other in project.stale() if other != path]
        return linted, again, None if project.loaded else path

    def _load(self, path: Path) -> list[Path]:
        """In the worker: read the project of `path` from disk; the open files to lint again."""
        project = self.projects.project_of(path)
        if project.loaded:
            return []
        project.load()
        return project.stale()

    async def close(self, uri: str, published: Sequence[str]) -> None:
        """A document was closed: clear the diagnostics it published, give its project the
        file on disk, and lint again the open files that depended on the buffer."""
        self._queue.pop(uri, None)
        if self.linted.pop(uri, None) is None:
            return
        for target in published:
            self._send(target, [])
        path = _path(uri)
        if path is not None:
            self._uri_of.pop(path, None)
            self.relint(await self.in_worker(self._close, path))

    def _close(self, path: Path) -> list[Path]:
        project = self.projects.project_of(path)
        project.close(project.name_of(path))
        return project.stale()

    async def files_changed(self, paths: Sequence[Path]) -> None:
        """Files changed on disk: a configuration (every project is read again) or sources
        (which the programs take unless they are open)."""
        self.relint(await self.in_worker(self._files_changed, paths))

    def _files_changed(self, paths: Sequence[Path]) -> list[Path] | None:
        if any(path.name in CONFIG_FILES for path in paths):
            self.projects.forget_all()
            return None
        again = []
        for path in paths:
            project = self.projects.project_of(path)
            if project.loaded:
                project.changed_on_disk(path)
                again.extend(project.stale())
        return again

    # Publishing -------------------------------------------------------------------------------

    def publish(self, uri: str, linted: Linted) -> None:
        """Send a document's diagnostics: a notebook's to each of its cells."""
        source = linted.source
        if isinstance(source, PythonSource):
            lines = self.lines(source.text)
            diagnostics = [self.to_lsp(d, lines, linted) for d in linted.diagnostics]
            self._send(uri, diagnostics + _errors(linted, lines, None))
            return
        for number, cell_uri in enumerate(source.cell_uris, start=1):
            cell = source.code_cell(number)
            lines = self.lines(cell.source if cell is not None else "")
            diagnostics = [
                self.to_lsp(d, lines, linted) for d in linted.diagnostics if d.cell == number
            ]
            self._send(cell_uri, diagnostics + _errors(linted, lines, number))

    def _send(self, uri: str, diagnostics: list[lsp.Diagnostic]) -> None:
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
        )

    def lines(self, text: str) -> LineIndex:
        """Positions in `text`, counted in the encoding negotiated with the client."""
        return LineIndex(text, self.workspace.position_encoding or "utf-16")

    def to_lsp(self, diagnostic: Diagnostic, lines: LineIndex, linted: Linted) -> lsp.Diagnostic:
        """A finding as an LSP diagnostic, with its rule page and related locations."""
        related = [
            lsp.DiagnosticRelatedInformation(
                location=lsp.Location(
                    uri=from_fs_path(str(linted.root / item.filename)) or item.filename,
                    # Columns count code points; the related file's text is not at hand
                    # and differs only after a character beyond the BMP on that line.
                    range=_point(item.location.row - 1, item.location.column - 1),
                ),
                message=item.message,
            )
            for item in diagnostic.related
            if item.location is not None and linted.root is not None
        ]
        return lsp.Diagnostic(
            range=_range(lines, diagnostic),
            # A notebook's cell that does not parse (E902) comes with the findings of the rest.
            severity=lsp.DiagnosticSeverity.Error
            if diagnostic.code == FILE_ERROR_CODE
            else lsp.DiagnosticSeverity.Warning,
            code=diagnostic.code,
            code_description=lsp.CodeDescription(href=diagnostic.url) if diagnostic.url else None,
            source=SOURCE,
            message=diagnostic.message,
            related_information=related or None,
        )

    # Finding what a request is about -----------------------------------------------------

    def lookup(self, uri: str) -> tuple[Linted, int | None, str] | None:
        """The last lint of the document holding `uri` (a file, or a notebook cell), the
        cell's number, and the text `uri` positions are in."""
        linted = self.linted.get(uri)
        if linted is not None and isinstance(linted.source, PythonSource):
            return linted, None, linted.source.text
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        linted = self.linted.get(notebook.uri) if notebook is not None else None
        if linted is None or not isinstance(linted.source, NotebookSource):
            return None
        if uri not in linted.source.cell_uris:
            return None
        number = linted.source.cell_uris.index(uri) + 1
        cell = linted.source.code_cell(number)
        return linted, number, cell.source if cell is not None else ""

    def diagnostics_in(
        self, uri: str, span: lsp.Range
    ) -> tuple[Linted, LineIndex, list[Diagnostic]] | None:
        """The last lint of the document at `uri`, the positions of its text, and its
        findings that overlap `span`."""
        found = self.lookup(uri)
        if found is None:
            return None
        linted, cell, text = found
        lines = self.lines(text)
        start = lines.row_column(span.start.line, span.start.character)
        end = lines.row_column(span.end.line, span.end.character)
        overlapping = [
            d
            for d in linted.diagnostics
            if d.cell == cell
            and (d.location.row, d.location.column) <= end
            and start <= (d.end_location.row, d.end_location.column)
        ]
        return linted, lines, overlapping

    def workspace_edit(self, uri: str, linted: Linted, action: Action) -> lsp.WorkspaceEdit:
        """An action's changes as edits of the file, or of the notebook's cells."""
        changes = {}
        for change in action.changes:
            target = uri
            if change.cell is not None and isinstance(linted.source, NotebookSource):
                target = linted.source.cell_uri(change.cell) or uri
            lines = self.lines(change.before)
            changes[target] = [
                lsp.TextEdit(
                    range=lsp.Range(
                        start=_position(lines.position_at(edit.start)),
                        end=_position(lines.position_at(edit.end)),
                    ),
                    new_text=edit.content,
                )
                for edit in text_edits(change.before, change.after)
            ]
        return lsp.WorkspaceEdit(changes=changes)


def _path(uri: str) -> Path | None:
    """The file of a `file:` URI; None for other schemes (an unsaved buffer)."""
    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return Path(path).resolve() if path else None


def _position(position: tuple[int, int]) -> lsp.Position:
    return lsp.Position(line=position[0], character=position[1])


def _point(line: int, character: int) -> lsp.Range:
    return lsp.Range(start=lsp.Position(line, character), end=lsp.Position(line, character))


def _range(lines: LineIndex, diagnostic: Diagnostic) -> lsp.Range:
    start = lines.position(diagnostic.location.row, diagnostic.location.column)
    end = lines.position(diagnostic.end_location.row, diagnostic.end_location.column)
    return lsp.Range(start=_position(start), end=_position(end))


def _errors(linted: Linted, lines: LineIndex, cell: int | None) -> list[lsp.Diagnostic]:
    """A file error (E902: the text does not parse) or a broken configuration, as errors on
    the text of `lines` (the cell `cell` of a notebook, None for a file): a notebook's go to
    the cell the error names, else to its first code cell."""
    first_cell = None
    if isinstance(linted.source, NotebookSource) and linted.source.notebook.cells:
        first_cell = linted.source.notebook.cells[0].number
    found = []
    if linted.error is not None:
        named_cell, reason = error_cell(linted.error)
        if (named_cell or first_cell) == cell:
            location = linted.error.location
            line, character = lines.position(location.row, location.column) if location else (0, 0)
            found.append(
                lsp.Diagnostic(
                    range=_point(line, character),
                    severity=lsp.DiagnosticSeverity.Error,
                    code=FILE_ERROR_CODE,
                    source=SOURCE,
                    message=reason,
                )
            )
    if linted.config_error is not None and cell == first_cell:
        found.append(
            lsp.Diagnostic(
                range=_point(0, 0),
                severity=lsp.DiagnosticSeverity.Error,
                source=SOURCE,
                message=f"configuration error: {linted.config_error}",
            )
        )
    return found


def _is_python(uri: str, language_id: str | None) -> bool:
    """A Python buffer (a notebook opened as JSON text is not one: notebooks are linted
    through notebook sync)."""
    return language_id == "python" or uri.endswith(".py")


def _only(kinds: Sequence[str] | None, kind: str) -> bool:
    """Whether a code action of `kind` is among the kinds the client asked for."""
    return not kinds or any(kind == asked or kind.startswith(f"{asked}.") for asked in kinds)


# Handlers -----------------------------------------------------------------------------------


def _initialize(ls: TorchperfLanguageServer, params: lsp.InitializeParams) -> None:
    ls.configure(params.initialization_options)


async def _initialized(ls: TorchperfLanguageServer, params: lsp.InitializedParams) -> None:
    watching = ls.client_capabilities.workspace
    watched = watching.did_change_watched_files if watching is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    options = lsp.DidChangeWatchedFilesRegistrationOptions(
        watchers=[lsp.FileSystemWatcher(glob_pattern=glob) for glob in WATCHED]
    )
    registration = lsp.Registration(
        id="torchperf-lint-watched-files",
        method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=options,
    )
    await ls.client_register_capability_async(lsp.RegistrationParams([registration]))


def _did_change_configuration(
    ls: TorchperfLanguageServer, params: lsp.DidChangeConfigurationParams
) -> None:
    ls.configure(params.settings)


def _did_open(ls: TorchperfLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
    document = params.text_document
    if _is_python(document.uri, document.language_id):
        ls.request_lint([document.uri])


def _did_change(ls: TorchperfLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
    if ls.is_tracked(params.text_document.uri):
        ls.request_lint([params.text_document.uri])


async def _did_save(ls: TorchperfLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = _path(uri)
    if path is not None and path.name in CONFIG_FILES:
        await ls.files_changed([path])
    elif ls.is_tracked(uri):
        ls.request_lint([uri])


async def _did_close(ls: TorchperfLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
    await ls.close(params.text_document.uri, [params.text_document.uri])


def _notebook_changed(ls: TorchperfLanguageServer, params) -> None:
    ls.request_lint([params.notebook_document.uri])


async def _notebook_closed(
    ls: TorchperfLanguageServer, params: lsp.DidCloseNotebookDocumentParams
) -> None:
    cells = [cell.uri for cell in params.cell_text_documents]
    linted = ls.linted.get(params.notebook_document.uri)
    if linted is not None and isinstance(linted.source, NotebookSource):
        cells = list(linted.source.cell_uris)
    await ls.close(params.notebook_document.uri, cells)


async def _watched_files_changed(
    ls: TorchperfLanguageServer, params: lsp.DidChangeWatchedFilesParams
) -> None:
    paths = [path for path in (_path(change.uri) for change in params.changes) if path is not None]
    await ls.files_changed(paths)


async def _code_action(
    ls: TorchperfLanguageServer, params: lsp.CodeActionParams
) -> list[lsp.CodeAction] | None:
    await ls.settled()
    uri = params.text_document.uri
    found = ls.diagnostics_in(uri, params.range)
    if found is None:
        return None
    linted, lines, diagnostics = found
    kinds = params.context.only
    result = []
    if _only(kinds, QUICK_FIX):
        actions = await ls.in_worker(
            lambda: [a for d in diagnostics for a in actions_for(linted, d, ls.unsafe_fixes)]
        )
        for action in actions:
            result.append(
                lsp.CodeAction(
                    title=action.title,
                    kind=action.kind,
                    diagnostics=[ls.to_lsp(action.diagnostic, lines, linted)],
                    is_preferred=action.preferred or None,
                    edit=ls.workspace_edit(uri, linted, action),
                )
            )
    if _only(kinds, FIX_ALL) and offers_fix_all(linted):
        # Fixing a whole file lints it several times: a client that can resolve the edit
        # later gets it only when the action is chosen.
        action = lsp.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL, data={"uri": uri})
        result.append(action if _resolves_edits(ls) else await _resolve_fix_all(ls, action))
    return result


async def _resolve_fix_all(ls: TorchperfLanguageServer, action: lsp.CodeAction) -> lsp.CodeAction:
    """The fix-all action with its edit (none when nothing is left to fix)."""
    await ls.settled()
    uri = action.data.get("uri") if isinstance(action.data, dict) else None
    found = ls.lookup(uri) if isinstance(uri, str) else None
    if found is None:
        return action
    linted = found[0]
    fixed = await ls.in_worker(fix_all, linted)
    if fixed is not None:
        action.edit = ls.workspace_edit(uri, linted, fixed)
    return action


def _resolves_edits(ls: TorchperfLanguageServer) -> bool:
    """Whether the client resolves a code action's edit when it is chosen."""
    text_document = ls.client_capabilities.text_document
    code_action = text_document.code_action if text_document is not None else None
    support = code_action.resolve_support if code_action is not None else None
    return support is not None and "edit" in support.properties


async def _hover(ls: TorchperfLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
    await ls.settled()
    span = lsp.Range(start=params.position, end=params.position)
    found = ls.diagnostics_in(params.text_document.uri, span)
    if found is None:
        return None
    text = hover_text(found[2])
    if text is None:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text))


def create_server() -> TorchperfLanguageServer:
    """The server with its handlers registered."""
    server = TorchperfLanguageServer()
    server.feature(lsp.INITIALIZE)(_initialize)
    server.feature(lsp.INITIALIZED)(_initialized)
    server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)(_did_change_configuration)
    server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)(_did_open)
    server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)(_did_change)
    server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)(_did_save)
    server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)(_did_close)
    server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)(_notebook_changed)
    server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)(_notebook_changed)
    server.feature(lsp.NOTEBOOK_DOCUMENT_DID_SAVE)(_notebook_changed)
    server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)(_notebook_closed)
    server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)(_watched_files_changed)
    server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True
        ),
    )(_code_action)
    server.feature(lsp.CODE_ACTION_RESOLVE)(_resolve_fix_all)
    server.feature(lsp.TEXT_DOCUMENT_HOVER)(_hover)
    return server


def serve() -> None:
    """Serve one client over stdin and stdout until it exits."""
    create_server().start_io()

