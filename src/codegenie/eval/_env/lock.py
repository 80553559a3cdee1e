"""One build of an environment at a time, across processes: a lock file per digest.

``flock`` on ``<environments>/.locks/<hex>.lock``: released by the kernel
when its holder exits, however it exits, so a killed build never leaves a
lock behind. Two commands that need one environment build it once: the
second waits, then finds it built.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ("hold_lock", "try_lock")


def _open(root: Path, name: str) -> int:
    locks = root / ".locks"
    locks.mkdir(mode=0o700, parents=True, exist_ok=True)
    return os.open(locks / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)


@contextlib.contextmanager
def hold_lock(root: Path, name: str) -> Iterator[None]:
    """Hold the lock ``name`` under ``root`` for the block, waiting for it if another has it."""
    fd = _open(root, name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def try_lock(root: Path, name: str) -> Iterator[bool]:
    """Hold the lock ``name`` for the block if it is free: yields whether it is held."""
    try:
        fd = _open(root, name)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
