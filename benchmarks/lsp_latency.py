"""Latency of `torchperf-lint server` as an editor sees it, on a 1,000-line training file.

    python benchmarks/lsp_latency.py [--lines N] [--edits N]

Starts the real server over stdio with pygls' client (the one the tests use), opens a
generated training file of about N lines (the pattern of `examples/train.py`, repeated) in a
project of its own, and prints:

- the time from sending `initialize` to the first `publishDiagnostics` of the file (and from
  starting the process);
- the time from each `didChange` (one edited line, the next change sent once the previous
  one's diagnostics arrived) to its `publishDiagnostics`: median, 90th percentile, maximum;
- the processor time the server process spent per change (Linux: `/proc`), which is what the
  latency comes to on an idle machine: on a busy shared one the wall time waits for a core;
- for scale, the linter's own time on that text in this process (`engine.analyse_text`).

This prints numbers; it asserts nothing. Tests never time anything.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from lsp_client import CAPABILITIES, Editor, server_command, uri_of
from lsprotocol import types as lsp


def training_file(lines: int) -> str:
    """`examples/train.py`'s model, evaluation and loop, repeated under new names."""
    example = (ROOT / "examples" / "train.py").read_text(encoding="utf-8")
    head, rest = example.split("class SmallNet", 1)
    body = "class SmallNet" + rest.split("if __name__")[0]
    parts = [head]
    copy = 0
    while sum(part.count("\n") for part in parts) < lines:
        parts.append(re.sub(r"\b(SmallNet|evaluate|main)\b", rf"\g<1>{copy}", body))
        copy += 1
    return "".join(parts)


def engine_seconds(text: str, repeats: int = 5) -> tuple[float, float]:
    """The median wall and processor time of linting `text` in this process."""
    from torchperf_lint.config import Configuration
    from torchperf_lint.engine import analyse_text

    settings = Configuration().settings_for(Path("train.py"))
    wall, processor = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        analyse_text(text, "train.py", settings)
        wall.append(time.perf_counter() - start)
        processor.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(processor)


def cpu_seconds(pid: int) -> float | None:
    """The processor time (user + system) process `pid` has used; None off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(text: str, edits: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "pyproject.toml").write_text("", encoding="utf-8")
        path = root / "train.py"
        path.write_text(text, encoding="utf-8")
        editor = Editor()
        started = time.perf_counter()
        await editor.start_io(*server_command())
        initialize = time.perf_counter()
        await editor.initialize_async(
            lsp.InitializeParams(capabilities=CAPABILITIES, root_uri=uri_of(root))
        )
        editor.initialized(lsp.InitializedParams())
        uri = editor.open(path)
        await editor.diagnostics(uri)
        first = editor.published_at[uri]
        await asyncio.sleep(1.0)  # Let the project be read and the file linted again.
        latencies, processor = [], []
        pid = editor._server.pid
        target = "lr=1e-3"
        for version in range(2, edits + 2):
            edited = text.replace(target, f"lr={version}e-4", 1)
            before = cpu_seconds(pid)
            sent = time.perf_counter()
            editor.change(uri, edited, version)
            await editor.diagnostics(uri, after=sent)
            latencies.append(editor.published_at[uri] - sent)
            after = cpu_seconds(pid)
            if before is not None and after is not None:
                processor.append(after - before)
        await editor.shutdown_async(None)
        editor.exit(None)
        await editor.stop()
    return {
        "from_initialize": first - initialize,
        "from_start": first - started,
        "latencies": latencies,
        "processor": processor,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=20)
    arguments = parser.parse_args()
    text = training_file(arguments.lines)
    result = asyncio.run(measure(text, arguments.edits))
    latencies = sorted(result["latencies"])
    decile = latencies[max(0, int(len(latencies) * 0.9) - 1)]
    print(f"file: {text.count(chr(10))} lines")
    print(
        f"first diagnostics: {result['from_initialize'] * 1000:.0f} ms after initialize "
        f"({result['from_start'] * 1000:.0f} ms after starting the process)"
    )
    print(
        f"didChange -> publishDiagnostics over {len(latencies)} edits: "
        f"median {statistics.median(latencies) * 1000:.0f} ms, "
        f"p90 {decile * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms"
    )
    if result["processor"]:
        median_cpu = statistics.median(result["processor"])
        print(f"server processor time per change: median {median_cpu * 1000:.0f} ms")
    wall, processor = engine_seconds(text)
    print(
        f"engine.analyse_text on the same text, in process: {wall * 1000:.0f} ms "
        f"({processor * 1000:.0f} ms of processor time)"
    )
    print(f"load average: {' '.join(f'{load:.1f}' for load in os.getloadavg())} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
