"""An editor for the language server tests and benchmark: pygls' own LSP client driving the
real `torchperf-lint server` process over stdio, and remembering what it publishes."""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

# How long a test waits for the diagnostics it expects before it fails.
TIMEOUT_S = 20.0


class Editor(LanguageClient):
    """A client that keeps the diagnostics last published for each URI, with their times."""

    def __init__(self) -> None:
        super().__init__("torchperf-lint-tests", "1")
        self.published: dict[str, list[lsp.Diagnostic]] = {}
        self.published_at: dict[str, float] = {}
        self.messages: list[str] = []
        self._changed = asyncio.Condition()

        @self.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        async def _published(params: lsp.PublishDiagnosticsParams) -> None:
            self.published[params.uri] = params.diagnostics
            self.published_at[params.uri] = time.perf_counter()
            async with self._changed:
                self._changed.notify_all()

        @self.feature(lsp.WINDOW_LOG_MESSAGE)
        def _logged(params: lsp.LogMessageParams) -> None:
            self.messages.append(params.message)

        @self.feature(lsp.WINDOW_SHOW_MESSAGE)
        def _shown(params: lsp.ShowMessageParams) -> None:
            self.messages.append(params.message)

    async def diagnostics(
        self,
        uri: str,
        until: Callable[[list[lsp.Diagnostic]], bool] = lambda diagnostics: True,
        after: float = 0.0,
    ) -> list[lsp.Diagnostic]:
        """The diagnostics of `uri` once published (after the time `after`) and satisfying
        `until`."""

        def ready() -> bool:
            return (
                uri in self.published
                and self.published_at[uri] > after
                and until(self.published[uri])
            )

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(ready), TIMEOUT_S)
        return self.published[uri]

    def send_raw(self, body: bytes, request_id: int | None = None) -> asyncio.Future | None:
        """Write a message as bytes, bypassing the client's checks (a malformed one); with
        `request_id`, the future of its response."""
        response = None
        if request_id is not None:
            response = asyncio.get_running_loop().create_future()
            self.protocol._request_futures[request_id] = response
        self._server.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        return response

    def open(self, path: Path, text: str | None = None, version: int = 1) -> str:
        uri = uri_of(path)
        self.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(
                    uri=uri,
                    language_id="python",
                    version=version,
                    text=path.read_text(encoding="utf-8") if text is None else text,
                )
            )
        )
        return uri

    def change(self, uri: str, text: str, version: int) -> None:
        """Replace the whole text (the server asks for full synchronisation)."""
        self.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )


def uri_of(path: Path) -> str:
    return from_fs_path(str(path.resolve()))


def server_command() -> list[str]:
    """The installed console script, as a user runs it."""
    script = shutil.which("torchperf-lint", path=str(Path(sys.executable).parent))
    return [script or "torchperf-lint", "server"]


CAPABILITIES = lsp.ClientCapabilities(
    workspace=lsp.WorkspaceClientCapabilities(configuration=True),
    text_document=lsp.TextDocumentClientCapabilities(
        code_action=lsp.CodeActionClientCapabilities(
            code_action_literal_support=lsp.ClientCodeActionLiteralOptions(
                code_action_kind=lsp.ClientCodeActionKindOptions(value_set=["quickfix", "source"])
            ),
            resolve_support=lsp.ClientCodeActionResolveOptions(properties=["edit"]),
        ),
        hover=lsp.HoverClientCapabilities(content_format=[lsp.MarkupKind.Markdown]),
        publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(related_information=True),
    ),
    notebook_document=lsp.NotebookDocumentClientCapabilities(
        synchronization=lsp.NotebookDocumentSyncClientCapabilities()
    ),
)


@asynccontextmanager
async def running_server(
    root: Path, initialization_options: dict | None = None
) -> AsyncIterator[Editor]:
    """A started and initialized server whose workspace is `root`; shut down on exit."""
    editor = Editor()
    await editor.start_io(*server_command())
    await editor.initialize_async(
        lsp.InitializeParams(
            capabilities=CAPABILITIES,
            root_uri=uri_of(root),
            workspace_folders=[lsp.WorkspaceFolder(uri=uri_of(root), name=root.name)],
            initialization_options=initialization_options,
        )
    )
    editor.initialized(lsp.InitializedParams())
    try:
        yield editor
    finally:
        await asyncio.wait_for(editor.shutdown_async(None), TIMEOUT_S)
        editor.exit(None)
        await asyncio.wait_for(editor.stop(), TIMEOUT_S)
