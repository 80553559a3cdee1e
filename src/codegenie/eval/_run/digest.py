"""The digest of a tree a run reads: its task class, its case, its candidate.

A rubric run's outcome is a function of the rubric and every file of its
task-class directory outside ``cases/`` (a rubric may read data beside it),
the case directory and the candidate tree, among the rest of its
:class:`~codegenie.eval._run.spec.RunSpec`. :func:`tree_digest` hashes a
tree's names, kinds, executable bits, contents and links; an edit to any
file it covers changes it, and nothing else does (a ``__pycache__``
directory the import system wrote). A run reads *copies* of its case and
candidate, and the copies carry exactly what the digest covers: every file
``0o644`` or ``0o755`` by its executable bit (:func:`copy_mode`), every
directory :data:`COPY_DIRECTORY_MODE`, every time :data:`COPY_TIME_NS`,
owned by the harness, without extended attributes, each link by its text.
So two candidates with one digest are one run, whatever their other
permission bits, times, owners or attributes: none of them reaches a run.
A tree that cannot be read whole, or is beyond the bounds of a walk
(:mod:`codegenie.eval._tree`, the bounds of the copies too), has no digest:
its runs have no key, and are never stored.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Final

from codegenie.eval._tree import Entry, TreeBeyondBounds, TreeBounds, Walk

__all__ = (
    "COPY_DIRECTORY_MODE",
    "COPY_TIME_NS",
    "DIGEST_LABEL",
    "UNKEYED_NAMES",
    "copy_mode",
    "executable",
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

#: The time of every file, directory and link of a run's copies (access and
#: modification): 2000-01-01 00:00:00 UTC. A copy carries what the digest
#: covers and nothing more, so its times are not its source's (a checkout's
#: times are when it was made, never the same twice): one fixed time, as
#: reproducible archives have, after 1980 in every time zone (ZIP takes it).
COPY_TIME_NS: Final = 946_684_800 * 1_000_000_000
#: The mode of every directory of a run's copies, its top included.
COPY_DIRECTORY_MODE: Final = 0o755


def executable(mode: int) -> bool:
    """Whether a file of ``mode`` (an ``st_mode``) is executable, for the digest and the copies."""
    return bool(mode & 0o111)


def copy_mode(mode: int) -> int:
    """Return the mode a run's copy of a regular file of ``mode`` has: ``0o755`` or ``0o644``.

    The executable bit is all of a file's mode the digest covers (all a
    checkout, a patch or an archive of a candidate reliably carries), so it
    is all a copy keeps: no other permission, no set-user-ID, no sticky bit.
    """
    return 0o755 if executable(mode) else 0o644


def tree_digest(
    root: Path | str, *, exclude: frozenset[str] = frozenset(), bounds: TreeBounds | None = None
) -> str | None:
    """Return the BLAKE2b-256 of the tree at ``root``: names, kinds, x bits, contents, links.

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
    """Hash a regular file (its x bit, size, content), or the kind of a special file swapped in."""
    with entry.open() as file:
        mode = file.status.st_mode
        if not file.regular:  # swapped for a FIFO or a device since the listing
            digest.update(f"s {name!r} {stat.S_IFMT(mode)}\n".encode())
            return
        bit = "x" if executable(mode) else "-"
        digest.update(f"f {name!r} {bit} {file.status.st_size}\n".encode())
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
