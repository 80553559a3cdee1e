"""What a rubric run depends on, as one digest: the key of the validation ledger.

A rubric run's outcome is a function of the rubric and every file of its
task-class directory outside ``cases/`` (a rubric may read data beside it),
the case directory, the candidate tree, the interpreter, this package's
version, the run's limits and its sandbox. :func:`run_key` hashes all of
them; an edit to any file it covers changes the key, and nothing else does
(another case, the manifest, a ``__pycache__`` directory the import system
wrote). A tree that cannot be read whole, or is beyond the bounds of a
walk (:mod:`codegenie.eval._tree`, the bounds of the copies too), has no
key: its runs are never stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from codegenie.eval._tree import Entry, TreeBeyondBounds, Walk
from codegenie.eval._version import __version__

__all__ = ("run_key", "task_class_digest", "tree_digest")

#: Directories whose content is the import system's, never the bench's.
_IGNORED: Final = frozenset({"__pycache__"})
# 2: runs since the seccomp filter, the hidden init and the disk limits; no verdict
# of the earlier sandbox, which a candidate could forge, is served again.
_FORMAT: Final = "codegenie-eval run key 2"


def tree_digest(root: Path | str, *, exclude: frozenset[str] = frozenset()) -> str | None:
    """Return the BLAKE2b-256 of the tree at ``root``: names, kinds, modes, contents, links.

    The tree is read by :class:`codegenie.eval._tree.Walk`, within its
    bounds. Symbolic links are hashed as the text they hold, never followed;
    a special file (FIFO, socket, device) as its kind. ``__pycache__``
    directories are left out everywhere, and so are the top-level names in
    ``exclude``. Returns ``None`` when the tree cannot be read whole or is
    beyond the walk's bounds (entries, bytes, depth).
    """
    digest = hashlib.blake2b(digest_size=32)

    def skip(entry: Entry) -> bool:
        return entry.name in _IGNORED or (entry.depth == 1 and entry.name in exclude)

    try:
        with Walk(root, skip=skip) as walk:
            for entry in walk:
                name = entry.relative
                if entry.kind == "link":
                    digest.update(f"l {name!r} {entry.readlink()!r}\n".encode())
                elif entry.kind == "directory":
                    digest.update(f"d {name!r}\n".encode())
                elif entry.kind == "file":
                    _hash_file(entry, name, digest)
                else:  # a FIFO, a socket, a device: its kind only, never opened
                    kind = stat.S_IFMT(entry.lstat().st_mode)
                    digest.update(f"s {name!r} {kind}\n".encode())
    except (OSError, TreeBeyondBounds):
        return None
    return digest.hexdigest()


def _hash_file(entry: Entry, name: str, digest: hashlib.blake2b) -> None:
    """Hash a regular file (its mode, size, content), or the kind of a special file swapped in."""
    with entry.open() as file:
        mode = file.status.st_mode
        if not file.regular:  # swapped for a FIFO or a device since the listing
            digest.update(f"s {name!r} {stat.S_IFMT(mode)}\n".encode())
            return
        executable = "x" if mode & 0o111 else "-"
        digest.update(f"f {name!r} {executable} {file.status.st_size}\n".encode())
        for chunk in file.chunks():
            digest.update(chunk)
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
