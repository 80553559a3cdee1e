"""A private cache directory: the rules every on-disk cache of this package follows.

A cache is an optimisation that can never change an answer; anything off is
a miss, never an error. This module holds the rules, whatever is cached:

- a cache directory (``<cache home>/<name>``) is created private (0700) and
  used only when it is a real directory (not a symbolic link) owned by this
  user and writable by nobody else; it is opened once, and every file in it
  is reached through that open directory, so swapping the path afterwards
  changes nothing;
- a file is read only when it is a regular file owned by this user (opened
  with ``O_NOFOLLOW | O_NONBLOCK``, checked with ``fstat``) of bounded size;
- what is read is authenticated with a keyed checksum (BLAKE2b keyed with a
  random key kept in the directory, readable only by this user), so a file
  edited by hand, even with its plain checksums recomputed, or one copied
  from another account, is a miss;
- files are written through the package's one atomic write
  (:mod:`codegenie.eval._atomic`): a fresh private temporary file
  (``O_CREAT | O_EXCL | O_NOFOLLOW``, mode 0600, a random name), synced and
  renamed into place, then the directory synced, so a link planted in the
  directory is replaced, never written through;
- pruning removes only the names the cache itself writes.

It imports only the standard library's lightest modules: the cached ``list``
runs it before anything else is imported.
"""

from __future__ import annotations

import os
import stat

from codegenie.eval._paths import cache_dir

try:
    # The built-in module: hashlib would load OpenSSL (~3 ms, a tenth of a cached list).
    from _blake2 import blake2b
except ImportError:  # a Python built without it
    from hashlib import blake2b

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = (
    "KEY_SIZE",
    "SUPPORTED",
    "checksum",
    "hash_hex",
    "open_directory",
    "open_private",
    "open_to_read",
    "prune",
    "read_key",
    "read_or_make_key",
    "unlink",
    "write_file",
)

_KEY_NAME = "key"
#: Bytes of the directory's secret key.
KEY_SIZE = 32
_TEMP_PREFIX = "tmp-"
_TEMP_SUFFIX = ".partial"
_STALE_TEMP_SECONDS = 3600.0

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_NOFOLLOW | _O_CLOEXEC
_READ_FLAGS = (
    os.O_RDONLY | _O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
) | _O_CLOEXEC

#: Whether this platform can keep the rules at all. Every file is reached
#: through the open directory, and sections are read at an offset: without
#: that (Windows), there is no cache rather than one open to races.
SUPPORTED = (
    bool(_O_NOFOLLOW)
    and hasattr(os, "pread")
    and os.open in os.supports_dir_fd
    and os.rename in os.supports_dir_fd  # os.replace is not listed, but takes what rename takes
    and os.unlink in os.supports_dir_fd
    and os.scandir in os.supports_fd
)


def hash_hex(data: bytes) -> str:
    """Return the BLAKE2b-256 of ``data``, in hex."""
    return blake2b(data, digest_size=32).hexdigest()


def checksum(key: bytes, signed: bytes) -> str:
    """Return the BLAKE2b-256 of ``signed`` keyed with ``key``, in hex."""
    return blake2b(signed, key=key, digest_size=32).hexdigest()


def _foreign(status: os.stat_result) -> bool:
    """Whether another user owns the file (never, where there are no user ids)."""
    owner = os.geteuid() if hasattr(os, "geteuid") else None
    return owner is not None and status.st_uid != owner


def open_directory(name: str, *, create: bool) -> int | None:
    """Open the cache directory ``name``; ``None`` unless it is private to this user.

    With ``create``, missing directories on the way are created 0700 (as the
    XDG rules ask). Raises ``OSError`` when it cannot be opened.
    """
    path = os.path.join(cache_dir(), name)
    if create:
        missing = []
        directory = path
        while not os.path.isdir(directory) and os.path.dirname(directory) != directory:
            missing.append(directory)
            directory = os.path.dirname(directory)
        for directory in reversed(missing):
            try:  # noqa: SIM105 - contextlib costs this path ~3 ms
                os.mkdir(directory, 0o700)
            except FileExistsError:
                pass
    fd = os.open(path, _DIR_FLAGS)
    status = os.fstat(fd)
    if not stat.S_ISDIR(status.st_mode) or status.st_mode & 0o022 or _foreign(status):
        os.close(fd)
        return None
    return fd


def open_to_read(name: str) -> int | None:
    """Open the cache directory ``name`` to read from it; ``None`` when there is none to read.

    Never raises: a platform without the rules (:data:`SUPPORTED`, looked up
    at each call, so that tests can turn the cache off), a missing
    directory, one that is not private to this user, or one that cannot be
    opened, all read as an empty cache.
    """
    if not SUPPORTED:
        return None
    try:
        return open_directory(name, create=False)
    except OSError:
        return None


def open_private(directory: int, name: str, limit: int) -> tuple[int, int] | None:
    """Open ``name`` if it is a regular file of this user's of ``limit`` bytes at most.

    Returns the descriptor and the file's size, or ``None``.
    """
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=directory)
    except OSError:  # missing, a symbolic link (ELOOP), a socket (ENXIO)...
        return None
    try:
        status = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(status.st_mode) or status.st_size > limit or _foreign(status):
        os.close(fd)
        return None
    return fd, status.st_size


def read_key(directory: int) -> bytes | None:
    """Return the directory's secret key; ``None`` when there is none, or it is off."""
    opened = open_private(directory, _KEY_NAME, KEY_SIZE)
    if opened is None:
        return None
    fd, _ = opened
    try:
        key = os.read(fd, KEY_SIZE + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return key if len(key) == KEY_SIZE else None


def read_or_make_key(directory: int) -> bytes:
    """Return the directory's secret key, making a new one when there is none.

    Raises ``OSError`` when a new key cannot be written.
    """
    key = read_key(directory)
    if key is None:
        key = os.urandom(KEY_SIZE)
        write_file(directory, _KEY_NAME, key)
    return key


def write_file(directory: int, name: str, content: bytes) -> None:
    """Replace ``name`` in the open cache ``directory`` with ``content``, atomically.

    Through the package's one atomic write (:mod:`codegenie.eval._atomic`): a
    fresh private temporary file (0600, ``O_EXCL | O_NOFOLLOW``) named as
    :func:`prune` recognises a stale one, synced, renamed over ``name``, the
    directory synced. Raises ``OSError`` (the temporary file removed) when it
    cannot be written.
    """
    from codegenie.eval._atomic import write_atomically  # noqa: PLC0415 - start-up: the cached list only reads

    write_atomically(name, content, directory=directory, prefix=_TEMP_PREFIX, suffix=_TEMP_SUFFIX)


def prune(directory: int, owned: Callable[[str], bool], *, keep: int, keep_bytes: int) -> None:
    """Keep the ``keep`` newest files named ``owned`` (and ``keep_bytes`` of them at most).

    The newest file is always kept. Stale temporary files are removed too;
    no other name is ever touched.
    """
    import time  # noqa: PLC0415 - only when pruning

    entries = []
    now = time.time()
    with os.scandir(directory) as listing:
        for item in listing:
            try:
                status = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if owned(item.name):
                entries.append((status.st_mtime, status.st_size, item.name))
            elif (
                item.name.startswith(_TEMP_PREFIX)
                and item.name.endswith(_TEMP_SUFFIX)
                and now - status.st_mtime > _STALE_TEMP_SECONDS
            ):
                unlink(directory, item.name)
    entries.sort(reverse=True)
    total = 0
    for kept, (_, size, name) in enumerate(entries):
        total += size
        if kept >= keep or (kept and total > keep_bytes):
            unlink(directory, name)


def unlink(directory: int, name: str) -> None:
    """Remove ``name`` from ``directory``, if it is there."""
    # Not contextlib.suppress: importing contextlib costs this path ~3 ms.
    try:  # noqa: SIM105
        os.unlink(name, dir_fd=directory)
    except OSError:
        pass
