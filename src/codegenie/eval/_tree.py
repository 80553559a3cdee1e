"""Walking a tree someone else made: bounded, iterative, by descriptors, in a stable order.

A candidate, a case, a task class's directory and a bench root are trees
the package does not control, and more than one part reads them whole: the
validation ledger hashes them, the rubric runner copies them and removes
its copies, the sandbox measures what a run adds to its directory, ``check``
looks for registrations in them, the bench digest hashes a root. They all
walk through :class:`Walk`, so they share one set of bounds and one rule for
what is not a plain file or directory:

- **Bounds** (:class:`TreeBounds`): at most :data:`ENTRIES_LIMIT` entries,
  :data:`BYTES_LIMIT` bytes of file content and :data:`DEPTH_LIMIT` levels,
  and never more than ``held`` names in memory at once.
  Crossing one raises :class:`TreeBeyondBounds`, which says where and why in
  words a user can act on (``the tree is deeper than 512 levels``). A walk
  that must see a tree whole, whatever it holds (the removal, the disk
  watch), is given :data:`NO_BOUNDS`.
- **Links** are never followed: a symbolic link is reported as a link, and
  its text is read only when asked for.
- **Special files** (a FIFO, a socket, a device) are reported by their kind
  and never opened. A regular file is opened without following a link and
  without blocking (``O_NOFOLLOW | O_NONBLOCK``), and what was opened is
  checked again with ``fstat``: a file swapped for a FIFO since the listing
  is seen as what it now is.

The walk never recurses in Python (a tree 5,000 levels deep is no deeper for
the interpreter's stack than one level) and reaches each directory by name
from the one above it (:class:`Descent`), never through a path longer than
one name, so a tree whose paths are longer than ``PATH_MAX`` is walked as
any other. It holds at most :data:`HELD` directory descriptors, whatever the
depth, plus one while a directory is listed and one for an opened file.
Entries come in a stable order — a depth-first walk, each directory's
entries sorted by name — so a digest of what it yields is the same on every
machine and every run.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, Literal, final

__all__ = (
    "BYTES_LIMIT",
    "DEPTH_LIMIT",
    "ENTRIES_LIMIT",
    "HELD",
    "NO_BOUNDS",
    "Descent",
    "Entry",
    "Kind",
    "TreeBeyondBounds",
    "TreeBounds",
    "TreeFile",
    "Walk",
    "special_kind",
)

#: The most entries (files, directories, links, special files) in one tree.
ENTRIES_LIMIT: Final = 100_000
#: The most bytes of regular files read from one tree.
BYTES_LIMIT: Final = 1024 * 1024 * 1024
#: The most levels below the top of one tree: an entry ``a/b/c`` is 3 levels down.
#: No tree anyone writes comes near it: source trees, virtual environments and
#: ``node_modules`` stay within a few dozen levels, and 512 levels of
#: one-letter names already make a path of 1,024 bytes, a quarter of
#: ``PATH_MAX`` (4,096), the longest path most programs can open a file by.
#: Deeper trees are made to break tools that recurse once per level (Python
#: stops at 1,000 frames): refusing them costs no real candidate anything.
DEPTH_LIMIT: Final = 512
#: The most directory descriptors one :class:`Descent` (and so one walk) holds.
HELD: Final = 4

Kind = Literal["directory", "file", "link", "special"]

_DIRECTORY: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
# Never follow a link swapped in since the listing, never block on a FIFO or a device.
_FILE: Final = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_CHUNK: Final = 1024 * 1024


@final
class TreeBeyondBounds(Exception):
    """A tree crossed one of its :class:`TreeBounds`.

    ``path`` is where: the entry that crossed the entries or the bytes bound,
    or the top of the tree for the depth bound (the path of an entry that
    deep can be longer than any message should be, or than ``PATH_MAX``).
    ``reason`` says which bound, in words: ``the tree has more than 100,000
    entries``, ``the tree holds more than 1 GiB``, ``the tree is deeper than
    512 levels``.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[type[TreeBeyondBounds], tuple[str, str]]:
        return (TreeBeyondBounds, (self.path, self.reason))


@final
@dataclass(frozen=True, slots=True)
class TreeBounds:
    """How much of a tree a walk reads before it gives up: entries, bytes, depth, names held.

    ``held`` bounds the names the walk holds in memory at once: those listed
    and not yet gone through, of every directory it is in (a directory is
    listed whole, to go through it in a stable order). By default it is
    unbounded: ``entries`` bounds them already. A walk without an
    ``entries`` bound (a bench digest, which streams every file) keeps its
    memory bounded by it.
    """

    entries: int = ENTRIES_LIMIT
    bytes: int = BYTES_LIMIT
    depth: int = DEPTH_LIMIT
    held: int = sys.maxsize

    def too_many_entries(self) -> str:
        """Return the reason for a tree beyond ``entries``."""
        return f"the tree has more than {self.entries:,} entries"

    def too_many_bytes(self) -> str:
        """Return the reason for a tree beyond ``bytes``."""
        gib, rest = divmod(self.bytes, 1024 * 1024 * 1024)
        limit = f"{gib} GiB" if gib and not rest else f"{self.bytes:,} bytes"
        return f"the tree holds more than {limit}"

    def too_deep(self) -> str:
        """Return the reason for a tree beyond ``depth``."""
        return f"the tree is deeper than {self.depth:,} levels"

    def too_many_held(self) -> str:
        """Return the reason for a tree beyond ``held``."""
        return (
            f"walking the tree means holding more than {self.held:,} names at once "
            "(a directory that large, or large directories inside one another)"
        )


#: No bound at all: for a walk that must see the whole tree (to remove it, or to measure it).
NO_BOUNDS: Final = TreeBounds(
    entries=sys.maxsize, bytes=sys.maxsize, depth=sys.maxsize, held=sys.maxsize
)


def special_kind(mode: int) -> str:
    """Return what kind of special file ``mode`` (an ``st_mode``) is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


@final
class _Level:
    """One directory of a :class:`Descent`: its name in the one above, identity, descriptor."""

    __slots__ = ("fd", "identity", "name")

    def __init__(self, name: str, fd: int, status: os.stat_result) -> None:
        self.name = name
        self.fd: int | None = fd
        self.identity = (status.st_dev, status.st_ino)


@final
class Descent:
    """A directory and a chain of directories below it, each entered by its name.

    Every directory is opened from the one above it, by one name, without
    following a link: no path longer than a name is ever given to the
    system, so the chain can go deeper than ``PATH_MAX``. Only the top
    directory and the deepest ones are held open — at most :data:`HELD`
    descriptors in all; a directory whose descriptor was let go is opened
    again, when the chain climbs back to it, as ``..`` of the one below,
    and must be the same directory (device and inode) it was, else
    ``OSError`` (``ESTALE``): the tree changed while it was walked.

    ``top`` is opened following a link only when ``follow`` is true.
    ``repair``: a directory that cannot be entered for want of permission
    is given back its owner's permissions first, and every directory
    entered is made writable and searchable by its owner (``0o700``), so
    that its entries can be removed: what a removal needs, whatever the
    tree's maker did to its modes. A context manager: leaving it closes
    every descriptor.
    """

    def __init__(self, top: str, *, follow: bool = True, repair: bool = False) -> None:
        self._repair = repair
        flags = _DIRECTORY | (0 if follow else _NOFOLLOW)
        try:
            fd = os.open(top, flags)
        except PermissionError:
            if not repair:
                raise
            os.chmod(top, 0o700, follow_symlinks=follow)
            fd = os.open(top, flags)
        if repair:
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o700)
        try:
            #: What ``top`` is (after the link, when followed).
            self.top_status = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        self._levels = [_Level(top, fd, self.top_status)]

    def __enter__(self) -> Descent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def depth(self) -> int:
        """How many directories below the top the chain is (0: at the top)."""
        return len(self._levels) - 1

    @property
    def name(self) -> str:
        """The name of the deepest directory in the one above it (the top's path at the top)."""
        return self._levels[-1].name

    def fd(self) -> int:
        """Return a descriptor of the deepest directory, valid until the chain moves."""
        fd = self._levels[-1].fd
        if fd is None:  # let go of only when deeper ones were held; leave() opens it again
            fd = self._reopen(len(self._levels) - 1)
        return fd

    def enter(self, name: str) -> os.stat_result:
        """Go down into the directory ``name`` of the deepest one; return what it is.

        A link, or anything but a directory, is ``OSError`` (``ELOOP``,
        ``ENOTDIR``): it is never followed.
        """
        fd = self._open(name, self.fd())
        try:
            status = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        self._levels.append(_Level(name, fd, status))
        stale = len(self._levels) - HELD  # the top, and HELD - 1 of the deepest, stay open
        if stale >= 1:
            level = self._levels[stale]
            if level.fd is not None:
                os.close(level.fd)
                level.fd = None
        return status

    def _open(self, name: str, parent: int) -> int:
        """Open the directory ``name`` in ``parent``, never following a link (repaired if asked)."""
        try:
            fd = os.open(name, _DIRECTORY | _NOFOLLOW, dir_fd=parent)
        except PermissionError:
            if not self._repair:
                raise
            os.chmod(name, 0o700, dir_fd=parent)
            fd = os.open(name, _DIRECTORY | _NOFOLLOW, dir_fd=parent)
        if self._repair:
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o700)
        return fd

    def leave(self) -> None:
        """Go back up one level (never above the top)."""
        if len(self._levels) == 1:
            msg = "the chain is at its top"
            raise ValueError(msg)
        level = self._levels.pop()
        assert level.fd is not None  # the deepest directory is always held
        try:
            above = self._levels[-1]
            if above.fd is None:
                fd = os.open("..", _DIRECTORY | _NOFOLLOW, dir_fd=level.fd)
                if _identity(fd) == above.identity:
                    above.fd = fd
                else:  # moved meanwhile: by name from the top, each one checked
                    os.close(fd)
                    self._reopen(len(self._levels) - 1)
        finally:
            os.close(level.fd)

    def _reopen(self, index: int) -> int:
        """Open the levels down to ``index`` from the deepest one held; return its descriptor.

        Each level opened is checked to be the directory it was; the ones
        above the deepest :data:`HELD` - 1 are let go of again on the way.
        """
        start = max(i for i in range(index) if self._levels[i].fd is not None)
        for i in range(start + 1, index + 1):
            above, level = self._levels[i - 1], self._levels[i]
            assert above.fd is not None
            fd = os.open(level.name, _DIRECTORY | _NOFOLLOW, dir_fd=above.fd)
            if _identity(fd) != level.identity:
                os.close(fd)
                raise OSError(errno.ESTALE, "the tree changed while it was read")
            level.fd = fd
            if 1 <= i - 1 <= len(self._levels) - HELD:
                os.close(above.fd)
                above.fd = None
        reopened = self._levels[index].fd
        assert reopened is not None
        return reopened

    def close(self) -> None:
        """Close every descriptor the chain holds."""
        for level in self._levels:
            if level.fd is not None:
                os.close(level.fd)
                level.fd = None


def _identity(fd: int) -> tuple[int, int]:
    status = os.fstat(fd)
    return (status.st_dev, status.st_ino)


@final
class TreeFile:
    """A regular file of a walk, opened: its descriptor and what ``fstat`` says it is.

    ``regular`` is false when the name no longer held a regular file when it
    was opened (a FIFO or a device swapped in since the listing): read
    nothing from it. :meth:`chunks` counts what it reads against the walk's
    bytes bound. A context manager: leaving it closes the descriptor.
    """

    def __init__(self, fd: int, path: str, walk: Walk) -> None:
        self.fd = fd
        self._path = path
        self._walk = walk
        try:
            #: The file's ``fstat``, taken when it was opened.
            self.status = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        #: Whether what was opened is a regular file.
        self.regular = stat.S_ISREG(self.status.st_mode)
        if self.regular and self.status.st_size > walk._bytes_left:
            os.close(fd)
            raise TreeBeyondBounds(path, walk.bounds.too_many_bytes())

    def __enter__(self) -> TreeFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.fd)

    def chunks(self, size: int = _CHUNK) -> Iterator[bytes]:
        """Yield the file's content, ``size`` bytes at a time, within the walk's bytes bound.

        Counted as it is read: a file that grows, or claims to be empty and
        is not, is bounded too.
        """
        if not self.regular:
            return
        while chunk := os.read(self.fd, size):
            self._walk._spend(self._path, len(chunk))
            yield chunk


@final
class Entry:
    """One entry of a walk: its name, where it is, and its kind — valid until the walk moves on.

    ``relative`` is its path from the top of the tree, with ``/`` between
    names; ``depth`` the number of those names (1 for the top's own
    entries). ``kind`` comes from the directory listing: ``"link"`` for a
    symbolic link (never followed), ``"special"`` for a FIFO, socket or
    device (never opened). ``siblings`` are the names of every entry of its
    directory, its own and the skipped ones included.

    :meth:`lstat`, :meth:`readlink` and :meth:`open` reach the entry through
    its directory's descriptor, so they may be called while the walk is on
    this entry (or while it asks ``skip`` about it), not after.
    """

    __slots__ = ("_walk", "depth", "kind", "name", "siblings")

    def __init__(
        self, walk: Walk, name: str, kind: Kind, depth: int, siblings: frozenset[str]
    ) -> None:
        self._walk = walk
        self.name = name
        self.kind: Kind = kind
        self.depth = depth
        self.siblings = siblings

    def __repr__(self) -> str:
        return f"Entry({self.name!r}, {self.kind!r}, depth={self.depth})"

    @property
    def relative(self) -> str:
        """The entry's path from the top of the tree (``a/b/c``)."""
        return "/".join([*self._walk._names_of(self), self.name])

    @property
    def path(self) -> str:
        """The entry's path: the top's path joined with :attr:`relative` (for messages)."""
        return os.path.join(self._walk.top, self.relative)

    def lstat(self) -> os.stat_result:
        """Return the entry's status, not following a link."""
        return os.stat(self.name, dir_fd=self._walk._parent_fd(self), follow_symlinks=False)

    def readlink(self) -> str:
        """Return the text of a symbolic link."""
        return os.readlink(self.name, dir_fd=self._walk._parent_fd(self))

    def unlink(self) -> None:
        """Remove the entry (not a directory: see :meth:`rmdir`); gone already is no error."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.name, dir_fd=self._walk._parent_fd(self))

    def rmdir(self) -> None:
        """Remove the directory entry once empty (from a walk's ``leave``); gone already is fine."""
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(self.name, dir_fd=self._walk._parent_fd(self))

    def open(self) -> TreeFile:
        """Open a ``"file"`` entry for reading (never following a link, never blocking)."""
        path = self.path
        fd = os.open(self.name, _FILE, dir_fd=self._walk._parent_fd(self))
        return TreeFile(fd, path, self._walk)


@final
class Walk:
    """The entries of the tree at ``top``, depth first, each directory's sorted by name.

    ``bounds``: beyond them, iterating raises :class:`TreeBeyondBounds`.
    Entries are counted as their directory is listed, so a directory that
    alone holds more names than ``bounds.entries`` is beyond them whatever
    ``skip`` leaves out; bytes as :meth:`TreeFile.chunks` reads them.
    ``skip(entry)``: an entry for which it is true is not yielded, not
    counted, and — a directory — not entered. ``follow``: whether ``top``
    may be a symbolic link to a directory (links below it never are
    followed). ``unreadable``: ``"raise"`` (the default) lets the
    ``OSError`` of a directory that cannot be opened or listed propagate;
    ``"skip"`` walks on as if it were empty. ``leave(entry)``: called for
    each directory entered, once the walk has gone through it and is back in
    the directory above (so a removal can :meth:`Entry.rmdir` it).
    ``repair``: see :class:`Descent` (a removal's walk).

    Any other trouble with the file system is an ``OSError``. A context
    manager: leaving it (or finishing the iteration) closes every
    descriptor; it is iterated once.
    """

    def __init__(
        self,
        top: os.PathLike[str] | str,
        *,
        bounds: TreeBounds | None = None,
        skip: Callable[[Entry], bool] | None = None,
        follow: bool = True,
        unreadable: Literal["raise", "skip"] = "raise",
        leave: Callable[[Entry], None] | None = None,
        repair: bool = False,
    ) -> None:
        #: The top of the tree, as given.
        self.top = os.fspath(top)
        #: The bounds of this walk.
        self.bounds = bounds or TreeBounds()
        self._skip = skip
        self._unreadable = unreadable
        self._leave = leave
        self._descent = Descent(self.top, follow=follow, repair=repair)
        #: What ``top`` is (after the link, when followed).
        self.top_status = self._descent.top_status
        self._entries_left = self.bounds.entries
        self._bytes_left = self.bounds.bytes
        # Names listed and not yet gone through, in every directory the walk is in.
        self._held = 0
        self._current: Entry | None = None
        # The names of the directories the walk is in, below the top.
        self._names: list[str] = []
        self._started = False

    def __enter__(self) -> Walk:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every descriptor the walk holds."""
        self._current = None
        self._descent.close()

    def __iter__(self) -> Iterator[Entry]:
        if self._started:
            msg = "a walk is iterated once"
            raise RuntimeError(msg)
        self._started = True
        try:
            yield from self._walk()
        finally:
            self.close()

    def _walk(self) -> Iterator[Entry]:
        # Each directory being gone through: what is left of its entries, and its own entry.
        pending: list[tuple[Iterator[Entry], Entry | None]] = [(iter(self._list(1)), None)]
        while pending:
            entry = next(pending[-1][0], None)
            if entry is not None:
                self._held -= 1
            if entry is None:
                _, directory = pending.pop()
                if self._names:
                    self._names.pop()
                    self._descent.leave()
                if directory is not None and self._leave is not None:
                    self._current = directory
                    try:
                        self._leave(directory)
                    finally:
                        self._current = None
                continue
            self._current = entry
            yield entry
            self._current = None
            if entry.kind != "directory":
                continue
            try:
                self._descent.enter(entry.name)
            except OSError:
                if self._unreadable == "raise":
                    raise
                continue
            self._names.append(entry.name)
            pending.append((iter(self._list(entry.depth + 1)), entry))

    def _list(self, depth: int) -> list[Entry]:
        """Return the entries of the deepest directory the walk is in, sorted, counted."""
        listed: list[tuple[str, Kind]] = []
        try:
            with os.scandir(self._descent.fd()) as listing:
                for item in listing:
                    if len(listed) >= self.bounds.entries:
                        where = os.path.join(self.top, *self._names, item.name)
                        raise TreeBeyondBounds(where, self.bounds.too_many_entries())
                    if self._held + len(listed) >= self.bounds.held:
                        where = os.path.join(self.top, *self._names)
                        raise TreeBeyondBounds(where, self.bounds.too_many_held())
                    listed.append((item.name, _kind(item)))
        except OSError:
            if self._unreadable == "raise":
                raise
            return []
        listed.sort()
        siblings = frozenset(name for name, _ in listed)
        kept: list[Entry] = []
        for name, kind in listed:
            entry = Entry(self, name, kind, depth, siblings)
            if self._skip is not None:
                self._current = entry  # the entry may be looked at while skip decides
                try:
                    skipped = self._skip(entry)
                finally:
                    self._current = None
                if skipped:
                    continue
            if depth > self.bounds.depth:
                raise TreeBeyondBounds(self.top, self.bounds.too_deep())
            self._entries_left -= 1
            if self._entries_left < 0:
                where = os.path.join(self.top, *self._names, name)
                raise TreeBeyondBounds(where, self.bounds.too_many_entries())
            kept.append(entry)
        self._held += len(kept)
        return kept

    def _names_of(self, entry: Entry) -> list[str]:
        """Return the names of the directories ``entry`` is in, below the top."""
        self._check(entry)
        return self._names

    def _parent_fd(self, entry: Entry) -> int:
        """Return a descriptor of the directory ``entry`` is in."""
        self._check(entry)
        return self._descent.fd()

    def _spend(self, path: str, count: int) -> None:
        """Count ``count`` bytes read from ``path`` against the bytes bound."""
        self._bytes_left -= count
        if self._bytes_left < 0:
            raise TreeBeyondBounds(path, self.bounds.too_many_bytes())

    def _check(self, entry: Entry) -> None:
        if self._current is not entry:
            msg = f"{entry!r} is used after the walk moved on from it"
            raise RuntimeError(msg)


def _kind(item: os.DirEntry[str]) -> Kind:
    """Return the kind of a listed entry, from the listing's own file type where it has one."""
    if item.is_symlink():
        return "link"
    if item.is_dir(follow_symlinks=False):
        return "directory"
    if item.is_file(follow_symlinks=False):
        return "file"
    return "special"
