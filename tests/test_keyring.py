"""codegenie.eval._sandbox.keyring: each run in a new session keyring, the caller's untouched."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import pytest

from codegenie.eval._sandbox import keyring

_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219}.get(os.uname().machine)
pytestmark = pytest.mark.skipif(_KEYCTL is None, reason="no keyctl number for this machine")


def session_keyring() -> int:
    """The serial of this thread's session keyring (KEYCTL_GET_KEYRING_ID, creating none)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    assert _KEYCTL is not None
    return int(libc.syscall(_KEYCTL, 0, -3, 0))


def test_the_body_runs_in_a_new_keyring_and_the_callers_is_untouched() -> None:
    """The body's thread has a keyring of its own, new at each call; the caller keeps its own."""
    before = session_keyring()
    first, joined = keyring.run_in_new_keyring(session_keyring, stop=lambda: None)
    second, _ = keyring.run_in_new_keyring(session_keyring, stop=lambda: None)
    if not joined:
        pytest.skip("this kernel (or a container's seccomp profile) refuses keyctl")
    assert session_keyring() == before
    assert len({before, first, second}) == 3


def test_what_the_body_raises_is_raised_in_the_caller() -> None:
    """An exception of the body reaches the caller as it was."""

    def body() -> None:
        raise LookupError("from the run's thread")

    with pytest.raises(LookupError, match="from the run's thread"):
        keyring.run_in_new_keyring(body, stop=lambda: None)


# Runs in a process of its own, whose main thread is the one the signal interrupts
# (under pytest-xdist a test may not run in its process's main thread).
INTERRUPTED = """
import json, signal, threading, time
from codegenie.eval._sandbox import keyring

stopped, ended = threading.Event(), threading.Event()
main = threading.get_ident()


def body():
    signal.pthread_kill(main, signal.SIGINT)  # Ctrl-C, while the caller waits
    stopped.wait()
    time.sleep(0.05)  # still running when the caller would otherwise return
    ended.set()
    return "done"


try:
    keyring.run_in_new_keyring(body, stop=stopped.set)
    raised = None
except KeyboardInterrupt:
    raised = "KeyboardInterrupt"
print(json.dumps({"raised": raised, "stopped": stopped.is_set(), "ended": ended.is_set()}))
"""


def test_an_interrupt_stops_the_body_and_waits_for_it_before_it_is_raised() -> None:
    """Ctrl-C while a run is watched: ``stop`` is called, the body ends, then the interrupt."""
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stdout) == {
        "raised": "KeyboardInterrupt",
        "stopped": True,
        "ended": True,
    }
