"""Trees sent to another machine: packed once where they are, unpacked on the node that runs.

A run on another machine (:mod:`codegenie.eval._exec.on_ray`) reads three
trees — its task class's directory outside ``cases/``, its case, its
candidate — that no shared file system brings there. :func:`pack_tree`
reads one with the walk the copies and digests use
(:class:`~codegenie.eval._tree.Walk`: never following a link below the
top, within the copies' bounds of entries, bytes and depth) into one
``bytes`` value: each entry's kind, path, mode, times and content or link
text. A FIFO, socket or device is refused (:class:`TreeNotShipped`), as a
copy refuses it, and so is a directory on another file system (a mount);
so is a tree beyond the bounds, or one that cannot be read.

:func:`unpack_tree` makes the tree again under a new directory, exactly
(names, kinds, modes, contents, link texts: :func:`tree_digest` of the
result is the digest of the tree packed; and the files' and directories'
times, as a copy keeps them), refusing anything a driver that
is not this module's could have put in: a name that is empty, ``.``,
``..`` or holds a ``/`` or NUL, an entry whose parent is not a directory
made earlier in the same value (so nothing is ever written through a
link), more entries, bytes or depth than the bounds. Links are made as
links and not judged here: the run's copies refuse a link that leaves its
tree (:func:`codegenie.eval.rubrics.execute`), as on one machine.
"""

from __future__ import annotations

import os
import pickle
import stat
from typing import Final, Literal, final

from codegenie.eval._run.digest import UNKEYED_NAMES
from codegenie.eval._tree import Entry, TreeBeyondBounds, TreeBounds, Walk, special_kind

__all__ = ("TreeNotShipped", "pack_tree", "unpack_tree")

_FORMAT: Final = "codegenie-eval tree 2"
_CHUNK: Final = 1 << 20

# (kind, relative path, mode, content, (atime, mtime) in ns): "d" a directory, "f" a regular
# file (bytes), "l" a symbolic link (its text; mode 0 and no times, as a copy makes it).
_Times = tuple[int, int]
_Entry = tuple[Literal["d", "f", "l"], str, int, bytes | str, _Times]
_NO_TIMES: Final = (0, 0)
_DIRECTORY: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@final
class TreeNotShipped(Exception):
    """A tree that cannot be packed, or a packed value that is not one: ``path`` and ``reason``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def pack_tree(root: str, *, exclude: frozenset[str] = frozenset(), caches: bool = False) -> bytes:
    """Return the tree at ``root`` as one value for :func:`unpack_tree`; raise ``TreeNotShipped``.

    The top-level names in ``exclude`` are left out (a task class's
    ``cases/``), and so is ``__pycache__`` unless ``caches`` (a task class,
    mounted whole on one machine): the run sees what a copy (or the task
    class's mount) shows it there. ``root`` itself may be a link to a
    directory (a case may be).
    """
    entries: list[_Entry] = []

    def skip(entry: Entry) -> bool:
        if not caches and entry.name in UNKEYED_NAMES:
            return True
        return entry.depth == 1 and entry.name in exclude

    try:
        with Walk(root, skip=skip) as walk:
            device = walk.top_status.st_dev
            for entry in walk:
                name = entry.relative
                if entry.kind == "link":
                    entries.append(("l", name, 0, entry.readlink(), _NO_TIMES))
                elif entry.kind == "directory":
                    status = entry.lstat()
                    if status.st_dev != device:  # as a copy refuses it
                        raise TreeNotShipped(entry.path, "it is on another file system (a mount)")
                    entries.append(("d", name, stat.S_IMODE(status.st_mode), b"", _times(status)))
                elif entry.kind == "file":
                    with entry.open() as file:
                        if not file.regular:
                            kind = special_kind(file.status.st_mode)
                            raise TreeNotShipped(entry.path, f"it is {kind}, not a regular file")
                        content = b"".join(file.chunks(_CHUNK))
                        mode = stat.S_IMODE(file.status.st_mode)
                        entries.append(("f", name, mode, content, _times(file.status)))
                else:
                    kind = special_kind(entry.lstat().st_mode)
                    raise TreeNotShipped(entry.path, f"it is {kind}, not a regular file")
            top = walk.top_status
    except TreeBeyondBounds as exc:
        raise TreeNotShipped(exc.path, exc.reason) from None
    except OSError as exc:
        raise TreeNotShipped(exc.filename or root, exc.strerror or type(exc).__name__) from None
    head = (stat.S_IMODE(top.st_mode), _times(top))
    return pickle.dumps((_FORMAT, head, entries), protocol=pickle.HIGHEST_PROTOCOL)


def _times(status: os.stat_result) -> _Times:
    return (status.st_atime_ns, status.st_mtime_ns)


def unpack_tree(data: bytes, target: str) -> None:
    """Make the tree ``data`` holds at ``target`` (which must not exist); raise ``TreeNotShipped``.

    On failure what was made is left for the caller to remove (it made the
    directory ``target`` is in).
    """
    try:
        value = pickle.loads(data)  # noqa: S301 - the driver's own value
    except Exception as exc:
        raise TreeNotShipped(target, f"the packed tree cannot be read ({exc})") from None
    if not (isinstance(value, tuple) and len(value) == 3 and value[0] == _FORMAT):
        found = value[0] if isinstance(value, tuple) and value else type(value).__name__
        raise TreeNotShipped(
            target,
            f"the packed tree is {found!r}, not {_FORMAT!r}: the driver and this node run "
            "different versions of codegenie-eval",
        )
    _, head, entries = value
    if not (isinstance(head, tuple) and len(head) == 2 and isinstance(entries, list)):
        raise TreeNotShipped(target, "the packed tree holds a header of another shape")
    top_mode, top_times = head
    _checked(("d", "top", top_mode, b"", top_times), target)
    bounds = TreeBounds()
    if len(entries) > bounds.entries:
        raise TreeNotShipped(target, bounds.too_many_entries())
    os.mkdir(target, 0o700)
    _make(entries, target, (top_mode, top_times), bounds)


def _make(entries: list[object], target: str, top: tuple[int, _Times], bounds: TreeBounds) -> None:
    """Make ``entries`` under the new, empty directory ``target``, one name at a time.

    Each name is made from its directory's descriptor, never through a path
    (a tree deeper than ``PATH_MAX`` is made as a copy makes it), and one
    descriptor is held whatever the depth: the entries come depth first, so
    the directory being filled is entered and left as a walk does. A
    directory gets its mode and times once it is full.
    """
    # The directories entered, outermost first: (relative path, mode, times).
    stack: list[tuple[str, int, _Times]] = [("", *top)]
    fd = os.open(target, _DIRECTORY)
    made: set[str] = set()
    spent = 0
    try:
        for item in entries:
            kind, relative, mode, content, times = _checked(item, target)
            parent, _, name = relative.rpartition("/")
            while len(stack) > 1 and stack[-1][0] != parent:
                fd = _leave(fd, stack.pop())
            if stack[-1][0] != parent:
                raise TreeNotShipped(
                    target, f"{relative!r} is not under a directory made before it"
                )
            if relative in made:
                raise TreeNotShipped(target, f"the packed tree holds {relative!r} twice")
            made.add(relative)
            if len(stack) > bounds.depth:
                raise TreeNotShipped(target, bounds.too_deep())
            if kind == "d":
                os.mkdir(name, 0o700, dir_fd=fd)
                inner = os.open(name, _DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = inner
                stack.append((relative, mode, times))
            elif kind == "l":
                os.symlink(str(content), name, dir_fd=fd)
            else:
                assert isinstance(content, bytes)
                spent += len(content)
                if spent > bounds.bytes:
                    raise TreeNotShipped(target, bounds.too_many_bytes())
                _write_file(name, fd, content, mode, times)
        while len(stack) > 1:
            fd = _leave(fd, stack.pop())
        _, mode, times = stack[0]
        os.fchmod(fd, mode)
        os.utime(fd, ns=times)
    finally:
        os.close(fd)


def _leave(fd: int, entered: tuple[str, int, _Times]) -> int:
    """Give the full directory ``fd`` its mode and times; return its parent's descriptor."""
    parent = os.open("..", _DIRECTORY, dir_fd=fd)
    try:
        _, mode, times = entered
        os.fchmod(fd, mode)
        os.utime(fd, ns=times)
    except BaseException:
        os.close(parent)
        raise
    finally:
        os.close(fd)
    return parent


def _write_file(name: str, directory: int, content: bytes, mode: int, times: _Times) -> None:
    """Make the regular file ``name`` in ``directory`` (never through a link, never over one)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=directory)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
        os.utime(fd, ns=times)
    finally:
        os.close(fd)


def _checked(item: object, target: str) -> _Entry:
    """Return ``item`` as an entry, or raise ``TreeNotShipped`` for one no packing makes."""
    if not (isinstance(item, tuple) and len(item) == 5):
        raise TreeNotShipped(target, "the packed tree holds an entry of another shape")
    kind, relative, mode, content, times = item
    names = relative.split("/") if isinstance(relative, str) else [""]
    if any(name in ("", ".", "..") or "\0" in name for name in names):
        raise TreeNotShipped(target, f"the packed tree holds the name {relative!r}")
    if not isinstance(mode, int) or mode != stat.S_IMODE(mode):
        raise TreeNotShipped(target, f"the packed tree gives {relative!r} the mode {mode!r}")
    fits = (
        (kind == "d" and content == b"")
        or (kind == "f" and isinstance(content, bytes))
        or (kind == "l" and isinstance(content, str) and content and "\0" not in content)
    )
    if not fits:
        raise TreeNotShipped(target, f"the packed tree holds {relative!r} as a {kind!r}")
    if not (
        isinstance(times, tuple)
        and len(times) == 2
        and all(isinstance(t, int) and not isinstance(t, bool) for t in times)
    ):
        raise TreeNotShipped(target, f"the packed tree gives {relative!r} the times {times!r}")
    return (kind, relative, mode, content, times)
