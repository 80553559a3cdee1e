"""The first process of a run: join the run's cgroups, set its rlimits, then exec bubblewrap.

The process supervisor only takes an argv, an environment and a working
directory, so this is done by the head of the argv rather than by a
``preexec_fn`` (which is not safe in a threaded harness, and ties the
sandbox to one way of starting processes). The cheapest heads, measured
(ADR-0004): ``/bin/sh`` writing ``0`` (itself) into each cgroup's join file
(0.5 ms; see :attr:`RunCgroup.join_files
<codegenie.eval._sandbox.cgroups.RunCgroup.join_files>` for why ``0`` and
which file) and util-linux's ``prlimit`` (0.8 ms), each ending in ``exec``;
where there is no ``prlimit``, a Python started with ``-I -S`` does both
(8 ms). Both heads are single-threaded when they join. Whatever exec's next
keeps the process ID, so the cgroups hold the whole run from its first
process on.
"""

from __future__ import annotations

import os
import resource
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from codegenie.eval._sandbox.rlimits import RLIMIT_FLAGS, Rlimit

__all__ = ("JOIN_FAILED", "launcher_args", "prlimit_path")

#: The exit status of a run whose first process could not join its cgroup.
JOIN_FAILED: Final = 125

_JOIN = (
    'for f do case $f in --) break;; esac; echo 0 >"$f" || '
    '{ echo "codegenie sandbox: cannot join the run\'s cgroup $f" >&2; exit 125; }; shift; done; '
    'shift; exec "$@"'
)

_PYTHON = """\
import os, resource, sys
args = sys.argv[1:]
end = args.index("--")
try:
    for spec in args[:end]:
        kind, _, value = spec.partition("=")
        if kind == "join":
            fd = os.open(value, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        else:
            soft, hard = value.split(":")
            resource.setrlimit(int(kind), (int(soft), int(hard)))
    os.execv(args[end + 1], args[end + 1:])
except OSError as exc:
    sys.stderr.write(f"codegenie sandbox: cannot start the run: {exc}\\n")
    os._exit(125)
"""


def prlimit_path() -> str | None:
    """Return util-linux's ``prlimit``, if this machine has it."""
    for candidate in ("/usr/bin/prlimit", "/bin/prlimit"):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("prlimit", path="/usr/local/bin:/usr/bin:/bin")


def _value(number: int) -> str:
    return "unlimited" if number == resource.RLIM_INFINITY else str(number)


def launcher_args(
    join_files: Sequence[Path], rlimits: Sequence[Rlimit], *, prlimit: str | None = None
) -> list[str]:
    """Return the argv head that joins ``join_files``, sets ``rlimits`` and execs the rest.

    Joining writes ``0`` into each file: the kernel reads it as the writer.

    Empty when there is nothing to do. ``prlimit`` is the ``prlimit`` binary
    to use (default: :func:`prlimit_path`); pass ``""`` to force the Python
    head. A run whose head fails exits with :data:`JOIN_FAILED` (125) and
    says why on stderr.
    """
    tool = prlimit_path() if prlimit is None else prlimit
    if not tool and (join_files or rlimits):
        specs = [f"join={p}" for p in join_files]
        specs += [f"{which}={soft}:{hard}" for which, soft, hard in rlimits]
        return [sys.executable, "-I", "-S", "-c", _PYTHON, *specs, "--"]
    head: list[str] = []
    if join_files:
        head += ["/bin/sh", "-c", _JOIN, "codegenie-sandbox", *map(str, join_files), "--"]
    if rlimits:
        head.append(tool or "prlimit")
        head += [f"{RLIMIT_FLAGS[w]}={_value(s)}:{_value(h)}" for w, s, h in rlimits]
        head.append("--")
    return head
