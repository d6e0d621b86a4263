"""Debian's Chromium, headless, driven over the DevTools protocol: open a page, and see what a reader
would — its console errors, the requests it made, its JavaScript state, a screenshot.

One browser per :func:`open_page`, with a fresh profile and nothing that calls home
(``--disable-background-networking`` and friends), so every request logged is the page's own.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import websocket

CHROMIUM = shutil.which("chromium")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--hide-scrollbars", "--remote-debugging-port=0")
START_TIMEOUT_S = 30.0


class Page:
    """One tab: commands over its DevTools websocket, and every event it sent so far."""

    def __init__(self, ws_url: str):
        self._ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self._next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, timeout_s: float = 30.0, **params) -> dict:
        """Run one DevTools command and return its result (events arriving meanwhile are kept)."""
        self._next_id += 1
        self._ws.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            message = json.loads(self._ws.recv())
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)
        raise TimeoutError(f"{method}: no answer in {timeout_s:g} s")

    def wait_for(self, method: str, timeout_s: float = 60.0) -> dict:
        """The first event named ``method`` (one already received counts)."""
        deadline = time.monotonic() + timeout_s
        while True:
            for event in self.events:
                if event.get("method") == method:
                    return event
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} in {timeout_s:g} s")
            self._ws.settimeout(max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(websocket.WebSocketTimeoutException):
                self.events.append(json.loads(self._ws.recv()))

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_until(self, expression: str, timeout_s: float = 60.0) -> None:
        """Poll a JavaScript condition until it holds."""
        deadline = time.monotonic() + timeout_s
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression} still false after {timeout_s:g} s")
            time.sleep(0.2)

    def drag(self, x_px: float, y_px: float, dx_px: float, steps: int = 10) -> None:
        """Press the left button at (x, y), move it ``dx_px`` sideways in ``steps`` and let go, as a hand would."""
        self.send("Input.dispatchMouseEvent", type="mousePressed", x=x_px, y=y_px, button="left", clickCount=1)
        for k in range(1, steps + 1):
            self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x_px + dx_px * k / steps, y=y_px,
                      button="left", buttons=1)
        self.send("Input.dispatchMouseEvent", type="mouseReleased", x=x_px + dx_px, y=y_px, button="left",
                  clickCount=1)

    def errors(self) -> list[str]:
        """Everything the page reported as an error: uncaught exceptions, console.error, failed loads."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                out.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                out.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}".strip())
            elif method == "Network.loadingFailed":
                out.append(f"load failed: {params.get('errorText')}")
        return out

    def requested_urls(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page."""
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self._ws.close()


def _devtools_port(profile: Path, process: subprocess.Popen) -> int:
    """Chromium writes the port it listens on into its profile once it is up."""
    deadline = time.monotonic() + START_TIMEOUT_S
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with {process.returncode}: "
                               f"{(profile / 'stderr.txt').read_text()[-2000:]}")
        if marker.is_file() and marker.read_text().strip():
            return int(marker.read_text().splitlines()[0])
        time.sleep(0.1)
    raise TimeoutError(f"chromium did not start in {START_TIMEOUT_S:g} s")


@contextlib.contextmanager
def open_page(url: str, width_px: int = 1280, height_px: int = 900):
    """A headless Chromium showing ``url`` once its load event fired; console and network recorded from
    before the page started loading."""
    with tempfile.TemporaryDirectory(prefix="shiftbed-chromium-") as profile, \
            open(Path(profile) / "stderr.txt", "w") as stderr:
        # its own process group: the browser's renderers and helpers are ended with it, and nothing else
        process = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}",
                                    f"--window-size={width_px},{height_px}", "about:blank"],
                                   stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
        page = None
        try:
            port = _devtools_port(Path(profile), process)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
                targets = [t for t in json.load(answer) if t.get("type") == "page"]
            page = Page(targets[0]["webSocketDebuggerUrl"])
            for domain in ("Runtime", "Log", "Network", "Page"):
                page.send(f"{domain}.enable")
            page.send("Page.navigate", url=url)
            page.wait_for("Page.loadEventFired")
            yield page
        finally:
            if page is not None:
                page.close()
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # any helper the browser left behind
