"""The head of a plain run's command: its confinement's last steps, taken inside the sandbox.

Bubblewrap can bind the host's device nodes read-write, or read-only with
``nodev`` (which makes them unusable), never read-only with devices
allowed. So a plain run's bubblewrap leaves its command
:data:`CAPABILITIES` (in the sandbox's user namespace) and no seccomp
filter, and the command starts with :func:`head`: the run's interpreter
running :mod:`codegenie.eval._sandbox.confine`, which seals the device
nodes, drops every capability, loads the filter, then execs the rubric's
command in its place. A warm worker's zygote takes the same steps from the
same source (:data:`SOURCE`) for each run it forks.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Final

__all__ = ("CAPABILITIES", "FAILED", "SOURCE", "head", "source")

#: The file whose source the head runs (and the zygote receives).
SOURCE: Final = Path(__file__).with_name("confine.py")
#: What bubblewrap leaves the head, which drops both: a remount, and clearing the bounding set.
CAPABILITIES: Final = ("CAP_SYS_ADMIN", "CAP_SETPCAP")
#: What the head says, on stderr, before why, when a step failed and the run did not start.
FAILED: Final = "codegenie sandbox: cannot confine the run"


@functools.cache
def source() -> str:
    """Return :data:`SOURCE`'s text, read once per process."""
    return SOURCE.read_text(encoding="utf-8")


def head(python: str, filter_fd: int) -> list[str]:
    """Return the argv head that confines a run and execs what follows it.

    ``python`` is an interpreter visible in the sandbox (the run's own);
    ``filter_fd`` a descriptor the head reads the seccomp filter from, whole,
    and closes. Isolated and without ``site`` (``-I -S``): nothing of the
    run's environment or directories is imported. A failing step ends the
    run with status 125, the reason on its stderr.
    """
    return [python, "-I", "-S", "-c", source(), str(filter_fd), "--"]
