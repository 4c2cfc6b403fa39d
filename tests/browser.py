"""A headless Chromium driven through the DevTools protocol over a pipe (no WebSocket, no
package): open a page, evaluate JavaScript in it, take a screenshot, and record every network
request the page makes. For tests of `verify --html`."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
MISSING = "Chromium is missing: run scripts/install-test-env.sh (it installs Debian's chromium)"
ANSWER_TIMEOUT_S = 60


def chromium_executable() -> str:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError(MISSING)


class Browser:
    """One headless Chromium (`with Browser() as browser: ...`)."""

    def __init__(self) -> None:
        self._profile = tempfile.mkdtemp(prefix="verify-html-browser-")
        commands_in, self._commands = os.pipe()
        self._answers, answers_out = os.pipe()

        def plumb_pipes() -> None:  # the DevTools pipe is fds 3 (commands) and 4 (answers)
            os.dup2(commands_in, 3)
            os.dup2(answers_out, 4)

        self.process = subprocess.Popen(
            [
                chromium_executable(),
                "--headless",
                "--no-sandbox",  # tests run as root in CI, where Chromium refuses its sandbox
                "--disable-gpu",
                "--remote-debugging-pipe",
                f"--user-data-dir={self._profile}",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--window-size=1000,1400",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=plumb_pipes,  # noqa: PLW1509 - the tests start no thread
        )
        os.close(commands_in)
        os.close(answers_out)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        self._session: str | None = None

    def __enter__(self) -> Browser:  # noqa: PYI034 - Self is typing 3.11+
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.call("Browser.close", session=False)
        except (AssertionError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._answers)
        shutil.rmtree(self._profile, ignore_errors=True)

    def call(self, method: str, session: bool = True, **params: object) -> dict:
        """Send one command (to the page's session unless `session` is False); its result."""
        self._next_id += 1
        message: dict = {"id": self._next_id, "method": method, "params": params}
        if session and self._session:
            message["sessionId"] = self._session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._receive()
            if answer.get("id") == self._next_id:
                assert "error" not in answer, f"{method}: {answer['error']}"
                return answer.get("result", {})
            self.events.append(answer)

    def wait_for(self, method: str) -> dict:
        """The next event named `method` (events already received first)."""
        for event in self.events:
            if event.get("method") == method:
                self.events.remove(event)
                return event
        while True:
            event = self._receive()
            if event.get("method") == method:
                return event
            self.events.append(event)

    def open(self, path: Path) -> None:
        """Open a tab on `path` with network events on, and wait until it has loaded."""
        target = self.call("Target.createTarget", session=False, url="about:blank")["targetId"]
        self._session = self.call(
            "Target.attachToTarget", session=False, targetId=target, flatten=True
        )["sessionId"]
        self.call("Network.enable")
        self.call("Page.enable")
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> object:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"]["value"]

    def requested_urls(self) -> list[str]:
        """Every URL the page asked for, its own document included."""
        return [
            event["params"]["request"]["url"]
            for event in self.events
            if event.get("method") == "Network.requestWillBeSent"
        ]

    def screenshot(self, width: int, height: int, scale: float) -> list[list[tuple[int, int, int]]]:
        """The top `width` x `height` CSS pixels of the page, drawn at `scale`, as rows of RGB
        pixels."""
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": scale}
        data = self.call("Page.captureScreenshot", format="png", clip=clip)["data"]
        return decode_png(base64.b64decode(data))

    def _receive(self) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._answers], [], [], ANSWER_TIMEOUT_S)
            assert ready, "Chromium did not answer"
            chunk = os.read(self._answers, 1 << 20)
            assert chunk, "Chromium closed the DevTools pipe"
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)


def decode_png(data: bytes) -> list[list[tuple[int, int, int]]]:
    """RGB rows of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, compressed = 8, b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            compressed += body
        position += 12 + length
    raw = zlib.decompress(compressed)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - corner
                distances = (abs(estimate - left), abs(estimate - up), abs(estimate - corner))
                nearest = (left, up, corner)[distances.index(min(distances))]
                line[i] = (line[i] + nearest) & 0xFF
        rows.append([tuple(line[i : i + 3]) for i in range(0, stride, channels)])
        previous = line
    return rows
