"""A new, empty session keyring for every run: the kernel's keyrings are not namespaced.

A process inherits its session keyring, and bubblewrap's namespaces do not
change that: a run started from a login (``pam_keyinit``) or a systemd
service would share the harness's session keyring, read the keys in it and
leave keys behind for later runs. So every run is started, and watched to
its end, by a thread that has first joined a new anonymous session keyring
(``keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)``). Credentials, and with them
the session keyring, belong to a thread: the caller's own keyring is
untouched. The thread lives as long as the run, not just its start:
bubblewrap asks to be killed when its parent dies (``--die-with-parent``),
and to the kernel its parent is the thread that started it.

Under bubblewrap the seccomp filter denies the keyring calls besides; under
``none`` the run still holds a keyring of its own, though it may reach the
user's keyring (``@u``) as any process of the user may. Where the kernel
has no keyrings, or a container's seccomp profile refuses the call, the run
is started as it would be otherwise (:func:`run_in_new_keyring` says whether
the keyring is new).
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections.abc import Callable
from typing import Final, TypeVar

__all__ = ("join_new_session_keyring", "keyctl_join", "run_in_new_keyring")

_T = TypeVar("_T")

# keyctl's number where this module knows it (x86_64, and the generic table).
_KEYCTL: Final = {"x86_64": 250, "aarch64": 219, "riscv64": 219}
_KEYCTL_JOIN_SESSION_KEYRING: Final = 1
# How often a waiting caller wakes up for KeyboardInterrupt.
_WAKE: Final = 0.25


def _load_syscall() -> Callable[..., int] | None:
    try:
        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    return function


_SYSCALL: Final = _load_syscall()


def keyctl_join() -> tuple[int, int] | None:
    """Return the call that joins a new session keyring here: keyctl's number and the operation.

    ``None`` on a machine whose table this module does not know. A warm run's
    init makes the same call (it is given these numbers with its setup).
    """
    number = _KEYCTL.get(os.uname().machine)
    return None if number is None else (number, _KEYCTL_JOIN_SESSION_KEYRING)


def join_new_session_keyring() -> bool:
    """Join a new anonymous session keyring in this thread; return whether that was done."""
    call = keyctl_join()
    if _SYSCALL is None or call is None:
        return False
    return _SYSCALL(*call, None) >= 0


def run_in_new_keyring(body: Callable[[], _T], *, stop: Callable[[], None]) -> tuple[_T, bool]:
    """Return ``body()``, run in a thread of its own that joined a new session keyring first.

    Also returns whether the keyring is new. ``body`` starts a process
    (which inherits the thread's keyring) and watches it to its end. What
    ``body`` raises is raised here. A ``KeyboardInterrupt`` that arrives
    meanwhile (in the main thread) calls ``stop``, which must make ``body``
    end soon (kill what it started); ``body`` is waited for to its end,
    then the interrupt is raised.
    """
    done = threading.Event()
    outcome: list[tuple[_T | None, BaseException | None, bool]] = []

    def thread_body() -> None:
        signal.pthread_sigmask(
            signal.SIG_SETMASK, mask
        )  # the caller's: what the body starts inherits it
        joined = join_new_session_keyring()
        try:
            outcome.append((body(), None, joined))
        except BaseException as exc:
            outcome.append((None, exc, joined))
        finally:
            done.set()

    thread = threading.Thread(target=thread_body, name="codegenie-run", daemon=True)
    # Ctrl-C while the thread starts would leave its body running unwatched: it waits,
    # blocked, until the loop below takes it (and stops the body).
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    thread.start()
    interrupted: KeyboardInterrupt | None = None
    blocked = True
    while True:
        try:
            if blocked:
                blocked = False
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            while not done.wait(_WAKE):
                pass
        except KeyboardInterrupt as exc:  # the run is stopped and waited for, then this is raised
            interrupted = exc
            stop()
            continue
        break
    value, error, joined = outcome[0]
    if interrupted is not None:
        raise interrupted
    if error is not None:
        raise error
    return value, joined  # type: ignore[return-value]
