"""`torchperf-lint server`: a language server (LSP 3.17 over stdio) for editors.

It needs the `lsp` extra (`torchperf-lint[lsp]`, which brings pygls); the core
install never imports pygls. `documents.py` holds a file's text, `projects.py` the projects
and their warm programs (`program/session.py`), `actions.py` quick fixes and hover,
`text.py` positions and edits, and `protocol.py` the LSP glue.
"""

from __future__ import annotations

import sys

EXTRA = "lsp"
MISSING_EXTRA = (
    f"error: `torchperf-lint server` needs the `{EXTRA}` extra (pygls): "
    f"install `torchperf-lint[{EXTRA}]` (README, Installing)"
)


def serve() -> int:
    """Serve one editor over stdin and stdout; 2 when the `lsp` extra is not installed."""
    try:
        import pygls  # noqa: F401 - only to tell whether the extra is there
    except ImportError:
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    from torchperf_lint.server.protocol import serve as serve_stdio

    serve_stdio()
    return 0
