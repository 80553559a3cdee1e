"""Where built environments are kept, and how one is found, checked and removed.

Environments live in the user's cache (``$CODEGENIE_ENV_DIR``, else
``<cache>/codegenie-eval/environments``), one directory per digest, named
by its hex digits. A directory is an environment only once it holds its
record, :data:`RECORD_NAME`: the build writes it last, in a temporary
directory that is then renamed into place (:mod:`.build`), so a half-built
environment is never found. The record holds two digests of what the build
left, and :func:`inspect_environment` compares the directory with them
before the environment is handed out:

- :func:`listing_digest`, of every entry's status as the file system keeps
  it: name, kind, size, mode, owner, link count, inode, modification *and
  change* time (``st_ctime``), a link's target. It costs a walk and an
  ``lstat`` per entry, and it moves with any change to a file: no process
  can set a change time back (``utime`` sets the others, and sets it to
  now), so a rewrite that keeps a file's size and restores its times, a
  spoiled ``.pyc``, a new ``chmod``, ``chown`` or extended attribute all
  move it;
- :func:`contents_digest`, of what a run can observe: every entry's name,
  kind, mode, owner and extended attributes, a file's bytes, a link's
  target. Read only when the listing differs from the one last verified —
  after a run under ``--sandbox none`` wrote into the environment, or a
  cache was restored (new inodes and change times, the same contents):
  equal contents make that listing the verified one (kept beside the
  environment, ``.<hex>.verified``), different ones make the environment
  damaged.

A damaged environment is never used: :func:`inspect_environment` says why,
``env list`` shows it, and the next build removes it and builds it again.
The record is no signature: whoever can write to the store (a run under
``--sandbox none`` can) can rewrite it too.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

from codegenie.eval._atomic import write_atomically
from codegenie.eval._env.lock import try_lock
from codegenie.eval._env.spec import DIGEST_LABEL, EnvironmentSpec
from codegenie.eval._paths import cache_dir
from codegenie.eval._sandbox.policy import Interpreter, interpreter_prefixes

__all__ = (
    "RECORD_FORMAT",
    "RECORD_NAME",
    "VERIFIED_SUFFIX",
    "Environment",
    "Inspected",
    "built_environments",
    "contents_digest",
    "environments_dir",
    "inspect_environment",
    "installed_digest",
    "listing_digest",
    "open_environment",
    "prune",
    "remove_tree",
    "store_problem",
)

#: The record a finished build leaves in the environment's directory.
RECORD_NAME: Final = ".codegenie-environment.json"
#: Prefix of the directories builds work in (and of those being removed).
WORK_PREFIX: Final = ".work-"
#: Suffix of the file beside an environment (``.<hex>.verified``) holding its verified listing.
VERIFIED_SUFFIX: Final = ".verified"
#: The record's format: 2 added the contents digest (a record of 1 is an environment to rebuild).
RECORD_FORMAT: Final = 2
_RECORD_LIMIT: Final = 1024 * 1024
_CHUNK: Final = 1024 * 1024


def environments_dir() -> Path:
    """Return the directory environments are kept in (made on first build, not here).

    ``$CODEGENIE_ENV_DIR`` when set to an absolute path, else ``environments``
    in this tool's user cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``).
    """
    chosen = os.environ.get("CODEGENIE_ENV_DIR", "")
    if os.path.isabs(chosen):
        return Path(chosen)
    return Path(cache_dir()) / "environments"


def store_problem(root: Path) -> str | None:
    """Return why the environments directory ``root`` must not be used, or ``None``.

    The rules of the user's other caches (:mod:`codegenie.eval._cache.directory`):
    a real directory, not a symbolic link, owned by this user and writable by
    nobody else. Anyone who can write there could plant an environment a
    rubric then runs in, or swap one after it was checked. Raises ``OSError``
    when ``root`` cannot be looked at (``FileNotFoundError``: there is none).
    """
    status = os.lstat(root)
    if stat.S_ISLNK(status.st_mode):
        return "it is a symbolic link: name the directory it leads to"
    if not stat.S_ISDIR(status.st_mode):
        return "it is not a directory"
    if status.st_uid != os.geteuid():
        return f"it belongs to another user (uid {status.st_uid}): use a directory of yours"
    if status.st_mode & 0o022:
        return f"others can write to it (mode {status.st_mode & 0o777:o}): chmod go-w it"
    return None


def _private(root: Path) -> bool:
    try:
        return store_problem(root) is None
    except OSError:
        return False


def _entries(top: str) -> Iterator[tuple[str, str, os.stat_result]]:
    """Yield ``(relative name, path, lstat)`` of every entry under ``top``, sorted, depth first.

    Links are not followed; the record at the top is left out.
    """
    pending = [("", top)]
    while pending:
        relative, directory = pending.pop()
        with os.scandir(directory) as listing:
            names = sorted(entry.name for entry in listing)
        below: list[tuple[str, str]] = []
        for name in names:
            if not relative and name == RECORD_NAME:
                continue
            path = os.path.join(directory, name)
            entry = os.path.join(relative, name)
            status = os.lstat(path)
            yield entry, path, status
            if stat.S_ISDIR(status.st_mode):
                below.append((entry, path))
        pending.extend(reversed(below))


def _line(*parts: object) -> bytes:
    return " ".join(map(str, parts)).encode("utf-8", "surrogateescape") + b"\0"


def listing_digest(root: Path | str) -> tuple[str, int, int]:
    """Return ``(digest, total bytes, files)`` of the status of what is under ``root``.

    Covers each entry's relative name and kind; its mode, owner, group,
    inode and change time; a file's size, link count and modification
    time; a link's target. Its record is left out. Any change to an entry
    moves it, and so does a copy of the same contents (other inodes).
    """
    digest = hashlib.blake2b(digest_size=32)
    total = files = 0
    for entry, path, status in _entries(os.fspath(root)):
        common = (status.st_mode, status.st_uid, status.st_gid, status.st_ino, status.st_ctime_ns)
        if stat.S_ISLNK(status.st_mode):
            digest.update(_line("L", entry, *common, os.readlink(path)))
        elif stat.S_ISDIR(status.st_mode):
            digest.update(_line("D", entry, *common, status.st_mtime_ns))
        else:
            digest.update(
                _line("F", entry, *common, status.st_size, status.st_nlink, status.st_mtime_ns)
            )
            total += status.st_size
            files += 1
    return digest.hexdigest(), total, files


def contents_digest(root: Path | str) -> str:
    """Return a digest of what a run can observe under ``root``: its record left out.

    Covers each entry's relative name and kind, mode (all of its bits),
    owner, group and extended attributes; a file's bytes; a link's target.
    Not times, sizes or inodes: a copy of the same tree has the same one.
    Reads every byte. Raises ``OSError`` when an entry cannot be read.
    """
    digest = hashlib.blake2b(digest_size=32)
    for entry, path, status in _entries(os.fspath(root)):
        kind = stat.S_IFMT(status.st_mode)
        digest.update(
            _line(kind, entry, stat.S_IMODE(status.st_mode), status.st_uid, status.st_gid)
        )
        if stat.S_ISLNK(status.st_mode):
            digest.update(_line("->", os.readlink(path)))
            continue
        for name in sorted(_xattrs(path)):
            value = os.getxattr(path, name, follow_symlinks=False)
            digest.update(_line("x", name, len(value)) + value)
        if stat.S_ISREG(status.st_mode):
            digest.update(_file_digest(path))
    return digest.hexdigest()


def _xattrs(path: str) -> list[str]:
    try:
        return os.listxattr(path, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return []
        raise


def _file_digest(path: str) -> bytes:
    content = hashlib.blake2b(digest_size=32)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        while chunk := os.read(fd, _CHUNK):
            content.update(chunk)
    finally:
        os.close(fd)
    return content.digest()


def installed_digest(root: Path | str) -> str:
    """Return a digest of the distributions installed under ``root``, at build time.

    Covers each ``*.dist-info/RECORD`` (every installed file's name and
    hash: the distribution's name, version and contents) and each ``.pth``
    file, by relative name. One digest of a spec can be built into other
    packages — an unpinned requirement after a release, a wheel replaced in
    a ``--find-links`` directory — and results must not be served across them.
    """
    digest = hashlib.blake2b(digest_size=16)
    top = os.fspath(root)
    for directory, names, filenames in os.walk(top):
        names.sort()
        in_dist_info = directory.endswith(".dist-info")
        for name in sorted(filenames):
            if not (name.endswith(".pth") or (in_dist_info and name == "RECORD")):
                continue
            path = os.path.join(directory, name)
            with open(path, "rb") as file:
                content = hashlib.blake2b(file.read(), digest_size=32).digest()
            entry = os.path.relpath(path, top).encode("utf-8", "surrogateescape")
            digest.update(entry + b"\0" + content)
    return digest.hexdigest()


@final
@dataclass(frozen=True, slots=True)
class Environment:
    """A built environment: its ``digest``, its ``path``, and what its record says.

    ``python`` is its interpreter's full version (``3.12.1``),
    ``python_request`` what the manifest asked for (``None``: the harness's
    own), ``requirements`` the file it was built from (as a path, when
    built), ``size`` and ``files`` what it holds, ``uv`` the uv that built it,
    ``packages`` what it was built into (:func:`installed_digest`).
    ``declared`` is the declaration it was made ready from
    (:func:`~codegenie.eval._env.declared.ready_environment` sets it; one
    read from the store alone has none): what a node of a cluster builds
    the same environment from.
    """

    digest: str
    path: Path
    python: str
    python_request: str | None
    requirements: str | None
    size: int
    files: int
    uv: str
    built_at: str
    sys_version: str
    cache_tag: str
    base_prefixes: tuple[str, ...]
    packages: str
    declared: EnvironmentSpec | None = None

    @property
    def executable(self) -> Path:
        """The environment's interpreter, ``bin/python``."""
        return self.path / "bin" / "python"

    def interpreter(self) -> Interpreter:
        """Return the interpreter a rubric of this environment runs with, and what to mount for it.

        Mounted (read-only, by the sandbox): the environment's directory and
        its base installation (its prefixes, and each directory on the way
        from ``bin/python`` through its links). Nothing of the harness's own
        virtual environment. ``version`` and ``packages`` identify it for the
        ledger: the interpreter's ``sys.version`` and cache tag, and this
        environment's digest and installed packages (a rebuild under the
        same digest into other packages is another key).
        """
        prefixes = interpreter_prefixes(str(self.executable), [str(self.path), *self.base_prefixes])
        return Interpreter(
            executable=self.executable,
            prefixes=prefixes,
            version=f"{self.sys_version} {self.cache_tag}",
            packages=f"environment {self.digest} packages {self.packages}",
        )

    @classmethod
    def from_record(cls, path: Path, record: dict[str, Any]) -> Environment:
        """Return the environment at ``path`` that ``record`` describes.

        Raises ``KeyError`` or ``TypeError`` for a record that lacks a field or mistypes one.
        """

        def text(key: str) -> str:
            value = record[key]
            if not isinstance(value, str):
                raise TypeError(key)
            return value

        def optional(key: str) -> str | None:
            value = record.get(key)
            return value if isinstance(value, str) else None

        def number(key: str) -> int:
            value = record[key]
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(key)
            return value

        prefixes = record["base_prefixes"]
        if not isinstance(prefixes, list) or not all(isinstance(p, str) for p in prefixes):
            raise TypeError("base_prefixes")
        return cls(
            digest=text("digest"),
            path=path,
            python=text("python"),
            python_request=optional("python_request"),
            requirements=optional("requirements"),
            size=number("size"),
            files=number("files"),
            uv=text("uv"),
            built_at=text("built_at"),
            sys_version=text("sys_version"),
            cache_tag=text("cache_tag"),
            base_prefixes=tuple(prefixes),
            packages=text("packages"),
        )


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        fd = os.open(path / RECORD_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _RECORD_LIMIT + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        record = json.loads(data)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


@final
@dataclass(frozen=True, slots=True)
class Inspected:
    """What the store holds under a digest: the ``environment`` when whole, else ``damage``.

    Both ``None``: not built (or the store is not this user's alone, which
    building reports). ``damage`` says, in a clause, why the directory
    there is not used.
    """

    environment: Environment | None
    damage: str | None = None


def inspect_environment(digest: str, *, check: bool = True) -> Inspected:
    """Return the built environment of ``digest``, or why there is none (see :class:`Inspected`).

    Damaged: a link or another kind in its place, no readable record, a
    record of another format or digest, or (``check``) a directory whose
    listing is not the last one verified and whose contents are not the
    built ones. Contents found equal make the new listing the verified one
    (kept beside the environment when the store lets it: otherwise the
    contents are read again next time).
    """
    root = environments_dir()
    path = root / digest.removeprefix(DIGEST_LABEL)
    mode = _lstat_mode(path)
    if not _private(root) or mode == 0:
        return Inspected(None)
    if not stat.S_ISDIR(mode):  # a link is not an environment, even to a whole one
        return Inspected(None, "it is not a directory (a link, or another kind of file)")
    record = _read_record(path)
    if record is None:
        return Inspected(None, f"its record ({RECORD_NAME}) is missing or unreadable")
    if record.get("format") != RECORD_FORMAT:
        return Inspected(None, "it was built by another version of codegenie-eval")
    if record.get("digest") != digest:
        return Inspected(None, "its record names another digest")
    try:
        environment = Environment.from_record(path, record)
    except (KeyError, TypeError):
        return Inspected(None, "its record lacks a field")
    if not check:
        return Inspected(environment)
    try:
        listing = listing_digest(path)[0]
        if listing in (record.get("listing"), _verified_listing(path)):
            return Inspected(environment)
        contents = contents_digest(path)
    except OSError as exc:
        return Inspected(None, f"it cannot be read: {exc.strerror or exc}")
    if contents != record.get("contents"):
        return Inspected(
            None,
            "its files are not the ones built (contents, names, kinds, modes, owners or "
            "extended attributes changed)",
        )
    with contextlib.suppress(OSError):
        write_atomically(_verified_path(path), f"{listing}\n".encode())
    return Inspected(environment)


def _verified_path(path: Path) -> Path:
    """Where the listing last verified by contents is kept: beside the environment, hidden.

    Not inside it: writing there would move the listing of whoever walks it meanwhile.
    """
    return path.parent / f".{path.name}{VERIFIED_SUFFIX}"


def _verified_listing(path: Path) -> str | None:
    try:
        fd = os.open(_verified_path(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, 256) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("ascii", "replace").strip() or None


def open_environment(digest: str, *, check: bool = True) -> Environment | None:
    """Return the built environment of ``digest``, or ``None``: not built, or damaged.

    :func:`inspect_environment`, without the reason.
    """
    return inspect_environment(digest, check=check).environment


def _lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def built_environments() -> Iterator[tuple[Path, Environment | None]]:
    """Yield each environment directory kept, and its environment (``None``: damaged).

    Not checked against its record: :func:`open_environment` does that. A
    link where an environment would be is yielded as damaged. Nothing, for
    a directory that is not this user's alone (:func:`store_problem`).
    """
    root = environments_dir()
    if not _private(root):
        return
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return
    for name in names:
        path = root / name
        if name.startswith("."):
            continue
        if stat.S_ISLNK(_lstat_mode(path)):
            yield path, None
            continue
        if not path.is_dir():
            continue
        record = _read_record(path)
        environment = None
        if record is not None:
            with contextlib.suppress(KeyError, TypeError):
                environment = Environment.from_record(path, record)
        yield path, environment


def remove_tree(path: Path) -> None:
    """Remove ``path`` for good: first renamed aside (so it is never found half-removed)."""
    aside = path.parent / f"{WORK_PREFIX}removed-{uuid.uuid4().hex}"
    with contextlib.suppress(OSError):
        os.unlink(_verified_path(path))
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    _remove(aside)


def _remove(path: Path) -> None:
    """Remove the directory ``path``; only the link, if it is one (never what it leads to)."""
    if stat.S_ISLNK(_lstat_mode(path)):
        with contextlib.suppress(OSError):
            os.unlink(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


def prune(keep: set[str]) -> list[Path]:
    """Remove every kept environment whose digest is not in ``keep``; return what was removed.

    Also removes what interrupted builds and removals left (``.work-*``
    directories no build is using: their lock is free).
    """
    removed: list[Path] = []
    root = environments_dir()
    if not _private(root):
        return removed
    for path, environment in built_environments():
        if environment is not None and environment.digest in keep:
            continue
        remove_tree(path)
        removed.append(path)
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(root)):
            if name.startswith(".") and name.endswith(VERIFIED_SUFFIX):
                if not stat.S_ISDIR(_lstat_mode(root / name[1 : -len(VERIFIED_SUFFIX)])):
                    with contextlib.suppress(OSError):
                        os.unlink(root / name)
                continue
            if not name.startswith(WORK_PREFIX):
                continue
            owner = name.removeprefix(WORK_PREFIX).split("-", 1)[0]
            with try_lock(root, owner) as held:
                if held:
                    _remove(root / name)
                    removed.append(root / name)
    return removed
