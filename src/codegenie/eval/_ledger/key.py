"""What a rubric run depends on, as one digest: the key of the validation ledger.

A rubric run's outcome is a function of the rubric and every file of its
task-class directory outside ``cases/`` (a rubric may read data beside it),
the case directory, the candidate tree, the interpreter, this package's
version, the run's limits and its sandbox. :func:`run_key` hashes all of
them; an edit to any file it covers changes the key, and nothing else does
(another case, the manifest, a ``__pycache__`` directory the import system
wrote). A tree that cannot be read whole, or is beyond the copy bounds, has
no key: its runs are never stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from codegenie.eval._version import __version__

__all__ = ("TREE_BYTES_LIMIT", "TREE_ENTRIES_LIMIT", "run_key", "tree_digest")

#: The most entries (files, directories, links) hashed in one tree.
TREE_ENTRIES_LIMIT: Final = 100_000
#: The most bytes of regular files hashed in one tree.
TREE_BYTES_LIMIT: Final = 1024 * 1024 * 1024
#: Directories whose content is the import system's, never the bench's.
_IGNORED: Final = frozenset({"__pycache__"})
_CHUNK: Final = 1024 * 1024
# 2: runs since the seccomp filter, the hidden init and the disk limits; no verdict
# of the earlier sandbox, which a candidate could forge, is served again.
_FORMAT: Final = "codegenie-eval run key 2"
# Never follow a link swapped in since the listing, never block on a FIFO or a device.
_FILE_FLAGS: Final = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
) | getattr(os, "O_CLOEXEC", 0)


class _Unhashable(Exception):
    """A tree that cannot be read whole, or is beyond the bounds."""


def tree_digest(root: Path | str, *, exclude: frozenset[str] = frozenset()) -> str | None:
    """Return the BLAKE2b-256 of the tree at ``root``: names, kinds, modes, contents, links.

    Symbolic links are hashed as the text they hold, never followed; a
    special file (FIFO, socket, device) as its kind. ``__pycache__``
    directories are left out everywhere, and so are the top-level names in
    ``exclude``. Returns ``None`` when the tree cannot be read whole or is
    beyond :data:`TREE_ENTRIES_LIMIT` entries or :data:`TREE_BYTES_LIMIT` bytes.
    """
    digest = hashlib.blake2b(digest_size=32)
    budget = [TREE_ENTRIES_LIMIT, TREE_BYTES_LIMIT]  # entries, bytes left
    try:
        _hash_tree(os.fspath(root), "", digest, budget, exclude)
    except (OSError, _Unhashable):
        return None
    return digest.hexdigest()


def _hash_tree(
    path: str, relative: str, digest: Any, budget: list[int], exclude: frozenset[str]
) -> None:
    with os.scandir(path) as listing:
        entries = sorted(listing, key=lambda entry: entry.name)
    for entry in entries:
        if entry.name in _IGNORED or (not relative and entry.name in exclude):
            continue
        budget[0] -= 1
        if budget[0] < 0:
            raise _Unhashable("too many entries")
        name = f"{relative}/{entry.name}" if relative else entry.name
        # The listing's own file types: no system call for directories and links.
        if entry.is_symlink():
            digest.update(f"l {name!r} {os.readlink(entry.path)!r}\n".encode())
        elif entry.is_dir(follow_symlinks=False):
            digest.update(f"d {name!r}\n".encode())
            _hash_tree(entry.path, name, digest, budget, exclude)
        elif entry.is_file(follow_symlinks=False):
            _hash_file(entry.path, name, digest, budget)
        else:  # a FIFO, a socket, a device: its kind only, never opened
            kind = stat.S_IFMT(entry.stat(follow_symlinks=False).st_mode)
            digest.update(f"s {name!r} {kind}\n".encode())


def _hash_file(path: str, name: str, digest: Any, budget: list[int]) -> None:
    """Hash the regular file at ``path`` (its mode, size, content), or a special file's kind."""
    fd = os.open(path, _FILE_FLAGS)
    try:
        status = os.fstat(fd)
        mode = status.st_mode
        if not stat.S_ISREG(mode):  # swapped for a FIFO or a device since the listing
            digest.update(f"s {name!r} {stat.S_IFMT(mode)}\n".encode())
            return
        budget[1] -= status.st_size
        if budget[1] < 0:
            raise _Unhashable("too many bytes")
        executable = "x" if mode & 0o111 else "-"
        digest.update(f"f {name!r} {executable} {status.st_size}\n".encode())
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
    finally:
        os.close(fd)
    digest.update(b"\n")


def run_key(
    *,
    task_class_dir: str | None,
    case_dir: str | None,
    candidate: str | None,
    limits: Mapping[str, object],
    sandbox: str,
) -> str:
    """Return the key of one rubric run from the digests of what it reads and how it runs.

    ``task_class_dir``, ``case_dir`` and ``candidate`` are :func:`tree_digest`
    values (the task-class directory without ``cases/``); ``limits`` the
    run's limits and timeout; ``sandbox`` the sandbox it runs in. The
    interpreter's version and this package's version are part of every key.
    """
    document = {
        "format": _FORMAT,
        "package": __version__,
        "python": sys.version,
        "implementation": sys.implementation.cache_tag,
        "task_class": task_class_dir,
        "case": case_dir,
        "candidate": candidate,
        "limits": {name: limits[name] for name in sorted(limits)},
        "sandbox": sandbox,
    }
    encoded = json.dumps(document, sort_keys=True, default=str).encode()
    return hashlib.blake2b(encoded, digest_size=32).hexdigest()


def task_class_digest(directory: Path | str, cases: Path | str) -> str | None:
    """Return the digest of a task class's directory, its ``cases`` directory left out.

    ``cases`` is left out only when it lies directly in ``directory`` (the
    usual layout); elsewhere it is not inside the tree anyway.
    """
    directory, cases = os.fspath(directory), os.fspath(cases)
    exclude = (
        frozenset({os.path.basename(cases)})
        if os.path.dirname(os.path.normpath(cases)) == os.path.normpath(directory)
        else frozenset()
    )
    return tree_digest(directory, exclude=exclude)
