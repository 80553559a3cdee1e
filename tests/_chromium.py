"""A headless Chromium driven over the Chrome DevTools Protocol, with the standard library only.

The browser is started with ``--remote-debugging-pipe``: it reads commands
on its file descriptor 3 and writes answers and events on its descriptor 4,
each message one JSON object ended by a NUL byte. :class:`Chromium` starts
it in a session of its own (so that every process it forks can be killed
with its process group), reads its messages on a thread, and offers what
the page tests need: open a URL in a new tab, evaluate an expression, take
a screenshot, and every error the page reported (an uncaught exception, a
console error, a log entry at level error, a Content-Security-Policy
violation among them).

Timeouts are generous on purpose: a loaded machine is slow, never wrong.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ("BrowserError", "Chromium", "chromium_path", "open_chromium")

#: How long the browser may take to answer one command, or a page to load.
TIMEOUT = 180.0

# Make the two descriptors given the browser's 3 and 4, close them, and exec the browser.
_TRAMPOLINE = """\
import os, sys
commands, answers = int(sys.argv[1]), int(sys.argv[2])
os.dup2(commands, 3)
os.dup2(answers, 4)
os.close(commands)
os.close(answers)
os.execv(sys.argv[3], sys.argv[3:])
"""


class BrowserError(Exception):
    """The browser answered a command with an error, went away, or did not answer in time."""


def chromium_path() -> str | None:
    """The Chromium on ``PATH`` (Debian's ``chromium``), or ``None``."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _high(fd: int) -> int:
    """Return a copy of ``fd`` numbered 10 or more (closed on exec): never 3 or 4 itself."""
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return copy


class Chromium:
    """One headless Chromium and one tab in it; see the module's docstring."""

    def __init__(self, executable: str, profile: Path) -> None:
        commands_read, commands_write = (_high(fd) for fd in os.pipe())
        answers_read, answers_write = (_high(fd) for fd in os.pipe())
        flags = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--mute-audio",
            "--window-size=1280,900",
            "about:blank",
        ]
        # The browser's ends of the pipes are passed down (pass_fds) and made its 3 and 4 by
        # a small Python that then execs it: no code of this process runs between fork and
        # exec (a preexec_fn would, which threads make unsafe; dash takes no fd above 9).
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _TRAMPOLINE,
                str(commands_read),
                str(answers_write),
                executable,
                *flags,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(commands_read, answers_write),
            start_new_session=True,
        )
        os.close(commands_read)
        os.close(answers_write)
        self._out = commands_write
        self._in = answers_read
        self._next_id = 0
        self._lock = threading.Condition()
        self._answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._closed = False
        self._stderr: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr_reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_reader.start()
        self.session: str | None = None

    # -- the pipe -------------------------------------------------------------------------

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._in, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._lock:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(message)
                self._lock.notify_all()
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if len(self._stderr) < 200:
                self._stderr.append(line)

    def stderr(self) -> str:
        """What the browser wrote on stderr so far (its first 200 lines), for failure messages."""
        return b"".join(self._stderr).decode("utf-8", "replace")

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = True
    ) -> dict[str, Any]:
        """Send one command (to the tab's session unless ``session=False``); return its result."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        with self._lock:
            while ident not in self._answers:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    why = "went away" if self._closed else f"did not answer in {TIMEOUT:.0f} s"
                    msg = f"{method}: the browser {why}\n{self.stderr()}"
                    raise BrowserError(msg)
                self._lock.wait(left)
            answer = self._answers.pop(ident)
        if "error" in answer:
            msg = f"{method}: {answer['error']}"
            raise BrowserError(msg)
        result: dict[str, Any] = answer.get("result", {})
        return result

    def wait_for_event(self, method: str, start: int = 0) -> dict[str, Any]:
        """Return the first event ``method`` of the tab at or after index ``start`` of :attr:`events`."""
        deadline = time.monotonic() + TIMEOUT
        with self._lock:
            while True:
                for event in self.events[start:]:
                    if event.get("method") == method and event.get("sessionId") == self.session:
                        return event
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    msg = f"no {method} event from the browser\n{self.stderr()}"
                    raise BrowserError(msg)
                self._lock.wait(left)

    # -- what the tests do ----------------------------------------------------------------

    def open(self, url: str) -> None:
        """Open a new tab, attach to it, enable its reports, load ``url`` and wait for its load."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.call(
            "Target.attachToTarget",
            {"targetId": target["targetId"], "flatten": True},
            session=False,
        )
        self.session = attached["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable")
        with self._lock:
            start = len(self.events)
        self.call("Page.navigate", {"url": url})
        self.wait_for_event("Page.loadEventFired", start)

    def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (awaited when it is a promise)."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            msg = f"{expression!r} raised: {result['exceptionDetails']}"
            raise BrowserError(msg)
        return result["result"].get("value")

    def screenshot(self) -> bytes:
        """A PNG of the whole page."""
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        return base64.b64decode(shot["data"])

    def errors(self) -> list[dict[str, Any]]:
        """Every error the tab reported: exceptions, console errors, log entries at level error."""
        with self._lock:
            events = [e for e in self.events if e.get("sessionId") == self.session]
        found = []
        for event in events:
            method, params = event.get("method"), event.get("params", {})
            if (
                method == "Runtime.exceptionThrown"
                or (method == "Runtime.consoleAPICalled" and params.get("type") == "error")
                or (method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error")
            ):
                found.append(event)
        return found

    def close(self) -> None:
        """Ask the browser to close, then kill its whole process group and reap it."""
        with contextlib.suppress(BrowserError, OSError):
            self.call("Browser.close", session=False)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        with contextlib.suppress(OSError):
            os.close(self._out)
        # Every process of the group is gone, and with it the pipe's write end: the reader ends.
        self._reader.join(timeout=TIMEOUT)
        self._stderr_reader.join(timeout=TIMEOUT)
        with contextlib.suppress(OSError):
            os.close(self._in)
        if self.process.stderr is not None:
            self.process.stderr.close()


@contextlib.contextmanager
def open_chromium(executable: str, profile: Path) -> Iterator[Chromium]:
    """A :class:`Chromium` for the ``with`` block; its whole process group killed at the end."""
    browser = Chromium(executable, profile)
    try:
        yield browser
    finally:
        browser.close()
