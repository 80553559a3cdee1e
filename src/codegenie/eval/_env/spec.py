"""What defines an environment, and the digest it is kept under.

An :class:`EnvironmentSpec` is a manifest entry's ``environment`` and
``python``, read: the requirements file's path and bytes, and the version
asked for. Its digest (:meth:`EnvironmentSpec.digest`) covers exactly what
decides what gets built — the requirements' bytes, the interpreter
(implementation, full version, platform) and uv's version — and nothing
else: the same file in two benches is one environment, and a changed pin,
a new interpreter or a new uv is another.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

from codegenie.eval._env.python import Python

__all__ = (
    "DIGEST_LABEL",
    "REQUIREMENTS_LIMIT",
    "EnvironmentSpec",
    "short_digest",
    "uv_binary",
    "uv_version",
)

#: How a digest is written in reports: ``blake2b-256:<64 hex digits>``.
DIGEST_LABEL: Final = "blake2b-256:"
#: The largest requirements file read (1 MiB).
REQUIREMENTS_LIMIT: Final = 1024 * 1024
# Changes when what a digest covers changes.
_FORMAT: Final = "codegenie-eval environment 1"


def short_digest(digest: str) -> str:
    """Return the first 12 hex digits of ``digest`` (with or without its label), for people."""
    return digest.removeprefix(DIGEST_LABEL)[:12]


@functools.cache
def uv_binary() -> str:
    """Return the ``uv`` executable: the one the ``uv`` package installed, else ``uv`` on PATH."""
    try:
        from uv import find_uv_bin  # noqa: PLC0415 - only environments need uv

        return os.fsdecode(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return "uv"


@functools.cache
def uv_version() -> str:
    """Return what ``uv --version`` prints (``uv 0.13.9 (…)``), or ``"uv (unknown)"``."""
    try:
        done = subprocess.run(
            [uv_binary(), "--version"],
            capture_output=True,
            timeout=60,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "uv (unknown)"
    text = done.stdout.decode("utf-8", "replace").strip()
    return text if done.returncode == 0 and text else "uv (unknown)"


@final
@dataclass(frozen=True, slots=True)
class EnvironmentSpec:
    """A task class's declared environment: ``requirements`` (path and ``data``), ``python``.

    ``requirements`` is the absolute path of the requirements file, or
    ``None`` for a task class that declares only ``python`` (an environment
    with no packages); ``data`` its bytes as read; ``python`` the version
    asked for, ``None`` for the harness's own.
    """

    requirements: Path | None
    data: bytes
    python: str | None

    def digest(self, python: Python, uv: str | None = None) -> str:
        """Return the digest of the environment built from this spec with ``python`` and ``uv``.

        ``uv`` defaults to :func:`uv_version`'s. Labelled: ``blake2b-256:<hex>``.
        """
        document = {
            "format": _FORMAT,
            "requirements": hashlib.blake2b(self.data, digest_size=32).hexdigest(),
            "python": python.identity,
            "uv": uv_version() if uv is None else uv,
        }
        encoded = json.dumps(document, sort_keys=True).encode()
        return DIGEST_LABEL + hashlib.blake2b(encoded, digest_size=32).hexdigest()
