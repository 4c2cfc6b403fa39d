"""Rows and columns for the calls on a finding's per-step path, found only when reported.

Summaries name calls by their ordinal among a file's calls, so that moving a line in a caller
changes nothing a helper's cached findings depend on. Before findings are printed, the calls
on their paths are located: each file on a path is parsed once more (only those files) and its
calls are counted in the same source order as the summary's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torchperf_lint.diagnostics import Diagnostic, FileResult, Location, Related

# For a file on a path: its Python text, and for a notebook the cell and cell-relative row of
# a row of that text (None for a `.py` file). None when the file cannot be read any more.
SourceReader = Callable[[str], "tuple[str, Callable[[int], tuple[int, int]] | None] | None"]


def locate_related(results: Sequence[FileResult], read: SourceReader) -> None:
    """Give every related call of every diagnostic its row and column (in place); calls that
    can no longer be found are dropped from `related`."""
    located: dict[str, list[Related | None] | None] = {}
    for result in results:
        updated = []
        for diagnostic in result.diagnostics:
            if any(item.location is None for item in diagnostic.related):
                diagnostic = _located(diagnostic, located, read)
            updated.append(diagnostic)
        result.diagnostics = updated


def _located(
    diagnostic: Diagnostic, located: dict[str, list | None], read: SourceReader
) -> Diagnostic:
    related = []
    for item in diagnostic.related:
        if item.location is not None or item.call is None:
            related.append(item)
            continue
        if item.filename not in located:
            located[item.filename] = _call_places(item.filename, read)
        places = located[item.filename]
        if places is None or not 0 <= item.call < len(places):
            continue
        location, cell = places[item.call]
        message = item.message if cell is None else f"cell {cell}: {item.message}"
        related.append(Related(item.filename, location, message))
    return diagnostic._replace(related=tuple(related))


def _call_places(filename: str, read: SourceReader) -> list | None:
    # Imported here: a run replayed from the cache, whose paths are located already, never
    # loads LibCST.
    import libcst as cst

    from torchperf_lint.facts.index import build_index
    from torchperf_lint.positions import node_positions

    source = read(filename)
    if source is None:
        return None
    text, cell_of_row = source
    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError, MemoryError):
        return None  # The file changed since it was linted: its calls cannot be located.
    calls = build_index(module).calls
    positions = node_positions(module, calls)
    places = []
    for call in calls:
        start = positions[call].start
        row, cell = start.line, None
        if cell_of_row is not None:
            cell, row = cell_of_row(row)
        places.append((Location(row, start.column + 1), cell))
    return places
