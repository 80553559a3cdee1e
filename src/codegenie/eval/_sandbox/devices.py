"""The host's device nodes every sandbox binds, and saying plainly when one is missing or wrong.

Bubblewrap's ``--dev`` (and a warm worker's fresh ``/dev``, which binds the
worker's) binds six of the host's nodes into each sandbox: ``/dev/null``,
``zero``, ``full``, ``random``, ``urandom`` and ``tty``. One that is
missing makes bubblewrap fail with a message about a bind mount, which
reads like a kernel that refuses namespaces; one that is not the character
device it should be (a regular file in its place) is bound as it is, and
every run then writes ``/dev/null``'s output into a host file. So each is
checked before a sandbox starts: :func:`check_device_nodes` raises
:class:`~codegenie.eval.errors.SandboxUnavailable` naming the node, what is
there instead, and the command that makes it again.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from codegenie.eval.errors import SandboxUnavailable

__all__ = ("DEVICE_NODES", "broken_device_nodes", "check_device_nodes")

#: Each node a sandbox binds, with its device numbers (major, minor) on Linux, which are fixed.
DEVICE_NODES: Final[dict[str, tuple[int, int]]] = {
    "null": (1, 3),
    "zero": (1, 5),
    "full": (1, 7),
    "random": (1, 8),
    "urandom": (1, 9),
    "tty": (5, 0),
}
_NONE_FIX: Final = "run with --sandbox none to grade without a sandbox, knowingly"


def _found(mode: int) -> str:
    """Name the kind of file ``mode`` says (for a node that is not a character device)."""
    kinds = (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((said for test, said in kinds if test(mode)), "not a device")


def broken_device_nodes(root: Path = Path("/dev")) -> list[tuple[Path, str]]:
    """Return each node of :data:`DEVICE_NODES` under ``root`` that is not as it must be, and why.

    As it must be: a character device with its numbers (a link to one is
    followed, as bubblewrap follows it). Why, in words: ``"missing"``,
    ``"a regular file"``, ``"character device 1:5, not 1:7"``, or the error
    that made it unreadable. In :data:`DEVICE_NODES`' order.
    """
    broken: list[tuple[Path, str]] = []
    for name, (major, minor) in DEVICE_NODES.items():
        path = root / name
        try:
            found = os.stat(path)
        except FileNotFoundError:
            broken.append((path, "missing" if not os.path.islink(path) else "a dangling link"))
            continue
        except OSError as exc:
            broken.append((path, f"unreadable ({exc.strerror or type(exc).__name__})"))
            continue
        if not stat.S_ISCHR(found.st_mode):
            broken.append((path, _found(found.st_mode)))
            continue
        numbers = (os.major(found.st_rdev), os.minor(found.st_rdev))
        if numbers != (major, minor):
            said = f"{numbers[0]}:{numbers[1]}"
            broken.append((path, f"character device {said}, not {major}:{minor}"))
    return broken


def check_device_nodes(mode: str, root: Path = Path("/dev")) -> None:
    """Raise :class:`SandboxUnavailable` when a node of :data:`DEVICE_NODES` is broken.

    ``mode`` is the ``--sandbox`` value asked for. The cause names each
    broken node and what is there instead; the fixes say how to make them
    again (as root, ``mknod``; or a reboot, which makes every node afresh).
    """
    broken = broken_device_nodes(root)
    if not broken:
        return
    listed = "; ".join(f"{path} is {what}" for path, what in broken)
    remake = " && ".join(
        f"rm -f {path} && mknod -m 666 {path} c {DEVICE_NODES[path.name][0]} "
        f"{DEVICE_NODES[path.name][1]}"
        for path, _ in broken
    )
    raise SandboxUnavailable(
        mode,
        f"the host's device nodes that every sandbox binds are not as they must be: {listed}",
        (f"make them again, as root: {remake} (or reboot)", _NONE_FIX),
    )
