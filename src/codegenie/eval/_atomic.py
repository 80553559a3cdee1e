"""Writing a file whole or not at all: the package's one atomic write.

Every file the package writes for someone to read later — a report
(``--output-file``), a manifest it edits (``new``), an entry of one of its
caches — is written here, one way:

- to a fresh temporary file in the target's own directory (so that the
  rename cannot cross file systems), created with ``O_CREAT | O_EXCL |
  O_NOFOLLOW`` and mode 0600 under a random name, so no existing file and no
  planted symbolic link is ever written through;
- the data written whole, then the file synced (``fsync``) and, when asked,
  given its mode, before it is renamed over the target: a reader sees the
  old bytes or the new, never half, and after a crash the new name never
  holds a file whose data was not on the disk;
- then the directory synced, so the rename itself survives a crash (where
  the platform cannot sync a directory — Windows, a file system that
  refuses it with ``EINVAL`` — the rename is left to the system);
- and on any failure, an interrupt included, the temporary file removed and
  the error raised (``OSError`` for what the system refused).

The target is a path, or a name inside a directory the caller already holds
open (``directory=``, a descriptor): the caches reach every file through
their open directory, so that swapping a path afterwards changes nothing.

It imports only ``os`` and ``errno`` (built in): the caches' reading path
imports the modules that write, and the cached ``list`` runs before
anything else is imported.
"""

from __future__ import annotations

import errno
import os

__all__ = ("write_atomically",)

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CREATE_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_BINARY", 0)
)
#: Attempts at a fresh random temporary name before giving up (as ``tempfile`` does, fewer).
_ATTEMPTS = 16
#: What syncing a directory answers where the file system cannot sync one.
_CANNOT_SYNC = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})


def write_atomically(
    target: str | os.PathLike[str],
    data: bytes,
    *,
    directory: int | None = None,
    mode: int | None = None,
    prefix: str | None = None,
    suffix: str = ".tmp",
) -> None:
    """Replace ``target`` with ``data``: a reader sees the old file or the new one, never half.

    ``target`` is a path, or, with ``directory`` (an open directory's
    descriptor, which stays the caller's), a name in that directory.
    ``mode``: the new file's permissions (default 0600, whatever the
    umask). The temporary file is ``<prefix><16 hex digits><suffix>`` in the
    same directory (``prefix`` defaults to ``.<target's name>.``), so that a
    cache can recognise and prune what a killed writer left. Raises
    ``OSError`` when it cannot be written, the temporary file removed; the
    target is then as it was. An error syncing the directory, once the new
    file is in place, is raised too: the file is there, but may not survive
    a crash.
    """
    path = os.fspath(target)
    parent, name = os.path.split(path)
    lead = f".{name}." if prefix is None else prefix
    fd = -1
    temporary = ""
    for _ in range(_ATTEMPTS):
        temporary = os.path.join(parent, f"{lead}{os.urandom(8).hex()}{suffix}")
        try:
            fd = os.open(temporary, _CREATE_FLAGS, 0o600, dir_fd=directory)
            break
        except FileExistsError:
            continue
    if fd < 0:
        raise FileExistsError(f"no fresh temporary name for {path!r} after {_ATTEMPTS} attempts")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                _chmod(fd, temporary, mode, directory)
            os.fsync(fd)
        finally:
            os.close(fd)
        # Replaces whatever is at the target — a planted link included — never its target.
        os.replace(temporary, path, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        try:  # noqa: SIM105 - contextlib costs the cached list's path ~3 ms
            os.unlink(temporary, dir_fd=directory)
        except OSError:
            pass
        raise
    _sync_directory(parent, directory)


def _chmod(fd: int, temporary: str, mode: int, directory: int | None) -> None:
    """Give the open temporary file ``mode`` (through its descriptor where the platform can)."""
    if os.chmod in os.supports_fd:
        os.chmod(fd, mode)
    else:
        os.chmod(temporary, mode, dir_fd=directory)


def _sync_directory(parent: str, directory: int | None) -> None:
    """Sync the directory that holds the new name, so the rename survives a crash.

    A platform or file system that cannot sync a directory is left to write
    it back in its own time; any other failure is raised.
    """
    if not _O_DIRECTORY:  # Windows: a directory cannot be opened, nor synced
        return
    try:
        if directory is not None and not parent:
            os.fsync(directory)
            return
        fd = os.open(parent or ".", os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC, dir_fd=directory)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno not in _CANNOT_SYNC:
            raise
