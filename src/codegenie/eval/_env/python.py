"""Finding the Python a task class asks for (``python = "3.12"``), and what it is.

:func:`find_python` looks where a user's interpreters live: ``pythonX.Y``
on ``PATH``, pyenv's versions, uv's managed installations, ``/usr/local/bin``
and ``/usr/bin``; it starts each candidate once (``-I``) to learn what it is,
and skips one that cannot start (a pyenv shim for a version that is not
selected fails so). Nothing is downloaded. Results are remembered for the
process: ``check`` asks once per distinct version, whatever the number of
task classes.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from typing import Final, final

__all__ = ("VERSION_PATTERN", "Python", "find_python", "valid_version")

#: A version a manifest may ask for: ``3.12`` or ``3.12.1``.
VERSION_PATTERN: Final = r"^3\.[0-9]{1,3}(\.[0-9]{1,3})?$"
_VERSION: Final = re.compile(VERSION_PATTERN)

# What a candidate interpreter reports about itself, as one JSON line.
_PROBE: Final = (
    "import json, platform, sys, sysconfig; print(json.dumps({"
    "'version': platform.python_version(), "
    "'implementation': sys.implementation.name, "
    "'platform': sysconfig.get_platform(), "
    "'executable': sys.executable}))"
)
# Longest a candidate may take to say what it is (a cold start on a loaded machine).
_PROBE_TIMEOUT: Final = 30.0


@final
@dataclass(frozen=True, slots=True)
class Python:
    """An interpreter environments can be built from.

    ``executable`` is its absolute path, ``version`` its full version
    (``3.12.1``), ``implementation`` (``cpython``) and ``platform``
    (``linux-x86_64``) say what wheels fit it.
    """

    executable: str
    version: str
    implementation: str
    platform: str

    @property
    def identity(self) -> str:
        """What of it defines an environment: implementation, version and platform."""
        return f"{self.implementation}-{self.version}-{self.platform}"


def valid_version(text: str) -> bool:
    """Return whether ``text`` is a version a manifest may ask for (``3.12``, ``3.12.1``)."""
    return _VERSION.fullmatch(text) is not None


def _harness_python() -> Python:
    """Return the harness's own interpreter: its virtual environment's base, if it runs in one."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return Python(
        executable=os.path.abspath(base),
        version=".".join(map(str, sys.version_info[:3])),
        implementation=sys.implementation.name,
        platform=sysconfig.get_platform(),
    )


def _candidates(version: str) -> list[str]:
    """Paths that may be ``version``'s interpreter, most likely first, each once."""
    minor = ".".join(version.split(".")[:2])
    name = f"python{minor}"
    found: list[str] = []
    on_path = shutil.which(name)
    if on_path:
        found.append(on_path)
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found += sorted(
        glob.glob(os.path.join(glob.escape(pyenv), "versions", f"{minor}*", "bin", name)),
        reverse=True,
    )
    uv_dir = os.environ.get("UV_PYTHON_INSTALL_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "uv", "python"
    )
    found += sorted(
        glob.glob(os.path.join(glob.escape(uv_dir), f"cpython-{minor}*", "bin", name)), reverse=True
    )
    found += [f"/usr/local/bin/{name}", f"/usr/bin/{name}"]
    unique: list[str] = []
    for path in found:
        if path not in unique and os.access(path, os.X_OK):
            unique.append(path)
    return unique


def _probe(executable: str) -> Python | None:
    """Start ``executable`` once and return what it says it is; ``None`` if it cannot start."""
    try:
        done = subprocess.run(
            [executable, "-I", "-c", _PROBE],
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    try:
        said = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        # The interpreter that answered, not the path asked: a shim (pyenv's) picks its
        # Python by the directory it starts in, and a build starts elsewhere.
        real = str(said["executable"])
        return Python(
            executable=real
            if os.path.isabs(real) and os.access(real, os.X_OK)
            else os.path.abspath(executable),
            version=str(said["version"]),
            implementation=str(said["implementation"]),
            platform=str(said["platform"]),
        )
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _matches(found: str, wanted: str) -> bool:
    return found == wanted or found.startswith(wanted + ".")


@functools.lru_cache(maxsize=32)
def find_python(version: str | None) -> Python | None:
    """Return the interpreter for ``version`` (``None``: the harness's own), or ``None``.

    ``version`` is ``3.12`` (any 3.12) or ``3.12.1`` (exactly). The harness's
    own interpreter answers when its version matches; otherwise the first
    candidate (see the module) that starts and reports a matching version.
    """
    own = _harness_python()
    if version is None or _matches(own.version, version):
        return own
    if not valid_version(version):
        return None
    for candidate in _candidates(version):
        found = _probe(candidate)
        if found is not None and _matches(found.version, version):
            return found
    return None
