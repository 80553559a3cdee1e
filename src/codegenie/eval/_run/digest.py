"""The digest of a tree a run reads: its task class, its case, its candidate.

A rubric run's outcome is a function of the rubric and every file of its
task-class directory outside ``cases/`` (a rubric may read data beside it),
the case directory and the candidate tree, among the rest of its
:class:`~codegenie.eval._run.spec.RunSpec`. :func:`tree_digest` hashes a
tree's names, kinds, modes, contents and links; an edit to any file it
covers changes it, and nothing else does (a ``__pycache__`` directory the
import system wrote). A tree that cannot be read whole, or is beyond the
bounds of a walk (:mod:`codegenie.eval._tree`, the bounds of the copies
too), has no digest: its runs have no key, and are never stored.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Final

from codegenie.eval._tree import Entry, TreeBeyondBounds, TreeBounds, Walk

__all__ = (
    "DIGEST_LABEL",
    "UNKEYED_NAMES",
    "labelled",
    "task_class_digest",
    "tree_digest",
    "whole_tree_digest",
)

#: How a digest shown to users says which hash made it: ``blake2b-256:<hex>``.
DIGEST_LABEL: Final = "blake2b-256:"

#: Names whose content is the import system's, never the bench's: no digest covers them,
#: and no copy for a run carries them (so a run never reads what its key does not cover).
UNKEYED_NAMES: Final = frozenset({"__pycache__"})


def tree_digest(
    root: Path | str, *, exclude: frozenset[str] = frozenset(), bounds: TreeBounds | None = None
) -> str | None:
    """Return the BLAKE2b-256 of the tree at ``root``: names, kinds, modes, contents, links.

    The tree is read by :class:`codegenie.eval._tree.Walk`, within its
    bounds. Symbolic links are hashed as the text they hold, never followed;
    a special file (FIFO, socket, device) as its kind. ``__pycache__``
    directories are left out everywhere, and so are the top-level names in
    ``exclude``. Returns ``None`` when the tree cannot be read whole or is
    beyond the walk's ``bounds`` (entries, bytes, depth; by default a copy's).
    """
    try:
        return whole_tree_digest(root, exclude=exclude, bounds=bounds)
    except (OSError, TreeBeyondBounds):
        return None


def whole_tree_digest(
    root: Path | str, *, exclude: frozenset[str] = frozenset(), bounds: TreeBounds | None = None
) -> str:
    """Return :func:`tree_digest`'s digest, or raise why there is none.

    Raises the ``OSError`` of what could not be read, or
    :class:`~codegenie.eval._tree.TreeBeyondBounds` (where, and which bound).
    """
    digest = hashlib.blake2b(digest_size=32)

    def skip(entry: Entry) -> bool:
        return entry.name in UNKEYED_NAMES or (entry.depth == 1 and entry.name in exclude)

    with Walk(root, skip=skip, bounds=bounds) as walk:
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


def labelled(digest: str | None) -> str | None:
    """Return ``digest`` (hex) as reports show it, with the name of its hash; ``None`` stays."""
    return None if digest is None else DIGEST_LABEL + digest
