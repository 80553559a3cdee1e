"""What tests observe from the outside: a tree's contents, whether processes ended, a terminal.

Shared by the rubric, grade, check and CLI tests, which all assert side
effects rather than internals: the bench and the candidates unchanged, no
process left behind, what a user's terminal showed.
"""

from __future__ import annotations

import hashlib
import os
import pty
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ("gone", "on_a_terminal", "processes_with", "running", "tree_digest")


def tree_digest(root: Path) -> str:
    """A digest of everything under ``root``: names, kinds, modes, contents, link targets."""
    digest = hashlib.sha256()
    for directory, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(directory, name)
            info = path.lstat()
            digest.update(f"{path.relative_to(root)}|{info.st_mode:o}|".encode())
            if path.is_symlink():
                digest.update(os.readlink(path).encode())
            elif path.is_file():
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _ended(pid: int) -> bool:
    """Whether ``pid`` no longer runs (a zombie awaiting its reaper counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return file.read().rpartition(b")")[2].split()[0] in {b"Z", b"X"}
    except OSError:
        return True


def running(pids: Sequence[int], within: float = 30.0) -> list[int]:
    """Return the ``pids`` still running after waiting up to ``within`` seconds for them to end."""
    deadline = time.monotonic() + within
    while True:
        alive = [pid for pid in pids if not _ended(pid)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.02)


def gone(pid: int, within: float = 30.0) -> bool:
    """Whether process ``pid`` ends within ``within`` seconds (a zombie counts as ended)."""
    return not running([pid], within)


def processes_with(marker: str) -> list[int]:
    """The live processes of this machine (not this one) whose command line holds ``marker``.

    A zombie's command line is empty: only processes that still run are found.
    """
    wanted = marker.encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                if wanted in Path(f"/proc/{name}/cmdline").read_bytes():
                    found.append(int(name))
            except OSError:
                continue
    return found


def on_a_terminal(
    command: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdout_too: bool,
    timeout: float = 120,
) -> tuple[bytes, str, int]:
    """Run ``command`` with stderr (and stdout when ``stdout_too``) on a pseudo-terminal.

    Returns what went to the stdout pipe (empty when ``stdout_too``), what
    the terminal showed, and the exit status.
    """
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=terminal if stdout_too else subprocess.PIPE,
            stderr=terminal,
            env={**env, "TERM": "xterm"},
        )
        os.close(terminal)
        terminal = -1
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the terminal's last writer has gone
                break
            if not chunk:
                break
            chunks.append(chunk)
        stdout, _ = process.communicate(timeout=timeout)
    finally:
        os.close(controller)
        if terminal != -1:
            os.close(terminal)
    return stdout or b"", b"".join(chunks).decode("utf-8", "replace"), process.returncode
