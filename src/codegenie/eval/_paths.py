"""Where things are (the manifest, the user cache directory), and reading a file safely.

Kept free of heavy imports (no pathlib, no pydantic): the cached ``list``
path runs on it before anything else is imported.
"""

from __future__ import annotations

import os
import stat
import sys

__all__ = (
    "MANIFEST_NAME",
    "MANIFEST_SIZE_LIMIT",
    "FileRefused",
    "absolute",
    "cache_dir",
    "find_manifest_path",
    "fs_path",
    "read_regular_file",
    "refusal",
)

MANIFEST_NAME = "bench.toml"
#: The largest manifest that is read at all: 16 MiB (``docs/security.md``).
MANIFEST_SIZE_LIMIT = 16 * 1024 * 1024

# O_NONBLOCK: opening a FIFO must not wait for a writer. O_NOCTTY: opening a
# terminal must not make it ours. Both are absent on Windows, where neither applies.
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


_FS_UTF8 = sys.getfilesystemencoding().lower().replace("-", "").replace("_", "") == "utf8"


class FileRefused(Exception):
    """A file that exists but is not read: not a regular file, or too large.

    ``reason`` completes the sentence "the file …", e.g. ``"is a FIFO (named
    pipe), not a regular file"``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def refusal(mode: int) -> FileRefused:
    """Return why a file of ``mode``, not a regular file, is not read (``is a FIFO …``)."""
    kind = _kind(mode)
    if kind.startswith("not "):
        return FileRefused(f"is {kind}")
    return FileRefused(f"is {kind}, not a regular file")


def read_regular_file(path: str, limit: int = MANIFEST_SIZE_LIMIT) -> tuple[bytes, os.stat_result]:
    """Return the bytes of the regular file ``path`` and the ``fstat`` of what was read.

    The file is opened without blocking and without becoming a controlling
    terminal, then checked with ``fstat`` on the open descriptor (no race with
    a rename): anything but a regular file — a directory, a FIFO, a device, a
    socket — raises :class:`FileRefused` before a byte is read, and so does a
    file larger than ``limit`` bytes (checked before reading, and again while
    reading, for a file that grows). Symbolic links are followed, as for any
    file the user names. Raises ``OSError`` when the file cannot be opened or
    read (``FileNotFoundError`` when there is none).
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except IsADirectoryError:
        raise FileRefused("is a directory, not a regular file") from None
    except OSError as exc:
        # Opening a socket fails (ENXIO); say what the file is, not the errno.
        try:
            mode = os.stat(path).st_mode
        except OSError:
            raise exc from None
        if not stat.S_ISREG(mode):
            raise refusal(mode) from None
        raise
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise refusal(status.st_mode)
        if status.st_size > limit:
            raise FileRefused(_too_large(status.st_size, limit))
        chunks = []
        remaining = limit + 1  # one byte more than allowed tells a file that grew
        while remaining > 0:
            chunk = os.read(fd, min(remaining, max(status.st_size + 1, 1 << 16)))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(data) > limit:
        raise FileRefused(_too_large(len(data), limit))
    return data, status


def _too_large(size: int, limit: int) -> str:
    return f"is {size} bytes; files over {limit // (1024 * 1024)} MiB are not read"


def absolute(path: str) -> str:
    """Return ``path`` made absolute against the working directory, as ``Path.absolute`` does."""
    joined = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    # Path.absolute() drops empty and "." components but keeps "..".
    parts = [part for part in joined.split("/") if part not in {"", "."}]
    return "/" + "/".join(parts)


def fs_path(text: str) -> str:
    """Return the path written as ``text`` (in ``bench.toml``, say) in the file system's form.

    File names are bytes; a manifest holds text, written as UTF-8. When the
    file system's encoding is not UTF-8 (``LC_ALL=C`` without Python's UTF-8
    mode: ASCII), ``os`` functions cannot take ``"données"`` at all: they
    take the name's UTF-8 bytes decoded as the file system decodes names
    (``"donn\udcc3\udca9es"``), which is what ``os.getcwd``, ``os.listdir``
    and the command line give. Every path made from a manifest's text goes
    through here, once, before it meets a path from the file system. Under
    a UTF-8 file system (the usual case) it is returned unchanged.
    """
    if _FS_UTF8 or text.isascii():
        return text
    return os.fsdecode(text.encode("utf-8", "surrogateescape"))


def find_manifest_path(start: str) -> tuple[str, str | None]:
    """Look for ``bench.toml`` in ``start`` and its parents.

    Returns ``(first_place_looked, found)``, ``found`` being ``None`` when
    there is no manifest. Only regular files (or links to one) count: a
    directory or a FIFO called ``bench.toml`` is passed over.
    """
    directory = absolute(start)
    first = os.path.join(directory, MANIFEST_NAME)
    while True:
        candidate = os.path.join(directory, MANIFEST_NAME)
        if os.path.isfile(candidate):
            return first, candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return first, None
        directory = parent


def cache_dir() -> str:
    """Return this tool's directory in the user cache: ``$XDG_CACHE_HOME``, else ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: ignore a relative value
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "codegenie-eval")
