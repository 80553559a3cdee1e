"""Reading ``bench.toml``: the one bounded reader of its bytes, and finding the nearest one.

Only a regular file (or a symbolic link to one) of at most 16 MiB is read,
opened without blocking and checked on the open descriptor, so a FIFO never
hangs the caller and a device is never read. Every command, the loader and
``check`` read the manifest here.
"""

from __future__ import annotations

import os
from pathlib import Path

from codegenie.eval._paths import (
    MANIFEST_NAME,
    MANIFEST_SIZE_LIMIT,
    FileRefused,
    find_manifest_path,
    read_regular_file,
)
from codegenie.eval.errors import BenchManifestInvalid, BenchManifestNotFound, ManifestProblem

__all__ = ("find_manifest", "read_manifest", "read_manifest_bytes")


def file_problem(message: str) -> ManifestProblem:
    """Return a problem of the whole file (its line 1), such as its size or kind."""
    return ManifestProblem(1, 1, "", message, "syntax")


def read_manifest_bytes(path: Path | str) -> bytes:
    """Return the bytes of the manifest file at ``path``: the one way a manifest is read.

    Only a regular file (or a symbolic link to one) of at most 16 MiB is
    read. It is opened without blocking and checked on the open descriptor,
    so a FIFO never hangs the caller and a device is never read.

    Raises ``BenchManifestNotFound(path)`` when there is no such file, and
    ``BenchManifestInvalid(path, problems)`` with one problem at line 1 when
    the path is a directory, a FIFO, a device or a socket (the message says
    which), when the file is over 16 MiB (refused before reading), or when it
    cannot be read (permissions, I/O error).
    """
    return read_manifest(Path(path))[0]


def read_manifest(file: Path) -> tuple[bytes, os.stat_result]:
    """Return the bytes and status of the manifest at ``file``, as :func:`read_manifest_bytes`."""
    try:
        return read_regular_file(str(file), MANIFEST_SIZE_LIMIT)
    except (FileNotFoundError, NotADirectoryError):
        raise BenchManifestNotFound(file, searched_parents=False) from None
    except FileRefused as exc:
        raise BenchManifestInvalid(file, (file_problem(f"the file {exc.reason}"),)) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise BenchManifestInvalid(
            file, (file_problem(f"cannot read the file: {reason}"),)
        ) from exc


def find_manifest(start: Path) -> Path:
    """Return the nearest ``bench.toml`` in ``start`` or its parents.

    Only a regular file (or a link to one) counts. When there is none, a
    ``bench.toml`` that is something else — a directory, a FIFO — is reported
    for what it is (the nearest such one, ``BenchManifestInvalid`` as
    :func:`read_manifest_bytes` words it); with no ``bench.toml`` of any kind,
    ``BenchManifestNotFound`` names ``start/bench.toml``, the first place looked.
    """
    first, found = find_manifest_path(str(start))
    if found is not None:
        return Path(found)
    directory = os.path.dirname(first)
    while True:
        candidate = os.path.join(directory, MANIFEST_NAME)
        if os.path.lexists(candidate):
            read_manifest_bytes(candidate)  # raises: it is no regular file
        parent = os.path.dirname(directory)
        if parent == directory:
            raise BenchManifestNotFound(Path(first))
        directory = parent
