"""``codegenie-bench list``: its output, and the cache that makes a repeat run cheap.

Listing a large manifest is dominated by reading and validating it. The
validated entries are therefore cached under the user cache directory
(``$XDG_CACHE_HOME/codegenie-eval/manifests/``), keyed on the BLAKE2b-256 digest
of the manifest's bytes — never on its modification time — and on this
package's version. :func:`fast_list` serves a plain ``list`` straight from that
cache with nothing heavier than the built-in ``_blake2`` imported (``hashlib``
would load OpenSSL: ~3 ms, a tenth of the run); on any doubt (no cache entry,
a corrupt, truncated or foreign one, an unusual command line) it returns
``None`` and the full command line runs, validates the manifest and writes
the cache.

The cache is an optimisation that can never change an answer (design
section 10); anything off is a miss, never an error:

- its directory is created private (0700) and is used only when it is a real
  directory (not a symbolic link) owned by this user and writable by nobody
  else; it is opened once and every file in it is reached through that open
  directory, so swapping the path afterwards changes nothing;
- an entry is read only when it is a regular file owned by this user (opened
  with ``O_NOFOLLOW | O_NONBLOCK``, checked with ``fstat``) of bounded size;
- an entry records the digest of the manifest it lists, and a keyed
  checksum (BLAKE2b keyed with a random key kept in the directory, readable
  only by this user) of its header and payload: an entry edited by hand, even
  with a checksum recomputed, or one copied from another account, is a miss;
- entries are written to a fresh private temporary file (``O_CREAT |
  O_EXCL | O_NOFOLLOW``, mode 0600, a random name) and renamed into place, so
  a link planted in the directory is replaced, never written through;
- pruning removes only names this cache writes (``<digest>.cache`` and its
  own stale temporary files).

This module imports only the standard library's lightest modules: it runs
before the rest of the package on the cached path.
"""

from __future__ import annotations

import os
import stat
import sys
import time

from codegenie.eval._paths import (
    MANIFEST_SIZE_LIMIT,
    FileRefused,
    absolute,
    cache_dir,
    find_manifest_path,
    read_regular_file,
)
from codegenie.eval._version import __version__

try:
    # The built-in module: hashlib would load OpenSSL (~3 ms, a tenth of a cached list).
    from _blake2 import blake2b
except ImportError:  # a Python built without it
    from hashlib import blake2b

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("Listing", "fast_list", "read_cached", "render_json", "render_text", "store")

_MAGIC = f"codegenie-eval manifest cache 2 {__version__}"
_KEEP = 32  # cache entries kept; older ones are removed when a new one is written
_SUFFIX = ".cache"
_KEY_NAME = "key"
_KEY_SIZE = 32
_TEMP_PREFIX = "tmp-"
_TEMP_SUFFIX = ".partial"
_STALE_TEMP_SECONDS = 3600.0
# A payload holds the manifest's slugs, modules and roots: never more than its bytes.
_MAX_ENTRY = MANIFEST_SIZE_LIMIT + 4096
_HEX = frozenset("0123456789abcdef")

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_NOFOLLOW | _O_CLOEXEC
_READ_FLAGS = (
    os.O_RDONLY | _O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
) | _O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
# Every file is reached through the open directory: without that (Windows),
# there is no cache at all rather than one open to races.
_SUPPORTED = (
    bool(_O_NOFOLLOW)
    and os.open in os.supports_dir_fd
    and os.rename in os.supports_dir_fd  # os.replace is not listed, but takes what rename takes
    and os.unlink in os.supports_dir_fd
    and os.scandir in os.supports_fd
)

# slugs, modules and roots, in manifest order
Listing = tuple[list[str], list[str], list[str]]


def _foreign(status: os.stat_result) -> bool:
    """Whether another user owns the file (never, where there are no user ids)."""
    owner = os.geteuid() if hasattr(os, "geteuid") else None
    return owner is not None and status.st_uid != owner


def _open_directory(*, create: bool) -> int | None:
    """Open the cache directory; ``None`` unless it is private to this user."""
    path = os.path.join(cache_dir(), "manifests")
    if create:
        missing = []
        directory = path
        while not os.path.isdir(directory) and os.path.dirname(directory) != directory:
            missing.append(directory)
            directory = os.path.dirname(directory)
        for directory in reversed(missing):  # XDG: create missing directories 0700
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


def _read_private(directory: int, name: str, limit: int = _MAX_ENTRY) -> bytes | None:
    """Return the bytes of ``name`` if it is a regular file of this user's, of ``limit`` at most."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=directory)
    except OSError:  # missing, a symbolic link (ELOOP), a socket (ENXIO)...
        return None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size > limit or _foreign(status):
            return None
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, max(status.st_size + 1, 1 << 16)))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    finally:
        os.close(fd)


def _digest(data: bytes) -> str:
    return blake2b(data, digest_size=32).hexdigest()


def _checksum(key: bytes, header: bytes, payload: bytes) -> str:
    checksum = blake2b(header, key=key, digest_size=32)
    checksum.update(payload)
    return checksum.hexdigest()


def _read_key(directory: int) -> bytes | None:
    key = _read_private(directory, _KEY_NAME, _KEY_SIZE)
    return key if key is not None and len(key) == _KEY_SIZE else None


def read_cached(data: bytes) -> Listing | None:
    """Return the cached entries of the manifest whose bytes are ``data``; ``None`` on any doubt.

    Never raises: a missing, foreign, damaged or unsafe cache is a miss.
    """
    if not _SUPPORTED:
        return None
    try:
        directory = _open_directory(create=False)
    except OSError:
        return None
    if directory is None:
        return None
    try:
        digest = _digest(data)
        blob = _read_private(directory, digest + _SUFFIX)
        key = _read_key(directory) if blob is not None else None
    except OSError:
        return None
    finally:
        os.close(directory)
    if blob is None or key is None:
        return None
    return _decode(blob, digest, key)


def _decode(blob: bytes, digest: str, key: bytes) -> Listing | None:
    try:
        magic, manifest_digest, checksum, payload = blob.split(b"\n", 3)
        signed = blob[: len(magic) + len(manifest_digest) + 2]
        if magic.decode() != _MAGIC or manifest_digest.decode() != digest:
            return None
        if _checksum(key, signed, payload) != checksum.decode():
            return None
        slugs, modules, roots = (part.split("\n") for part in payload.decode().split("\0"))
    except ValueError:  # truncated, not UTF-8, not three columns: not ours
        return None
    if not slugs[0] or not len(slugs) == len(modules) == len(roots):
        return None
    return slugs, modules, roots


def store(data: bytes, listing: Listing) -> None:
    """Cache the validated entries of the manifest whose bytes are ``data``; never raise.

    Does nothing when the cache directory cannot be made private to this user.
    """
    slugs, modules, roots = listing
    if not slugs or not _SUPPORTED:
        return
    try:
        directory = _open_directory(create=True)
    except OSError:
        return
    if directory is None:
        return
    try:
        key = _read_key(directory) or _new_key(directory)
        digest = _digest(data)
        payload = "\0".join("\n".join(column) for column in (slugs, modules, roots)).encode()
        signed = f"{_MAGIC}\n{digest}\n".encode()
        entry = signed + _checksum(key, signed, payload).encode() + b"\n" + payload
        _write_into(directory, digest + _SUFFIX, entry)
        _prune(directory)
    except (OSError, ValueError):
        pass
    finally:
        os.close(directory)


def _new_key(directory: int) -> bytes:
    key = os.urandom(_KEY_SIZE)
    _write_into(directory, _KEY_NAME, key)
    return key


def _write_into(directory: int, name: str, content: bytes) -> None:
    """Write ``content`` to a fresh private file, then rename it to ``name`` (atomic)."""
    temporary = ""
    fd = -1
    for _ in range(16):
        temporary = f"{_TEMP_PREFIX}{os.urandom(8).hex()}{_TEMP_SUFFIX}"
        try:
            fd = os.open(temporary, _CREATE_FLAGS, 0o600, dir_fd=directory)
            break
        except FileExistsError:
            continue
    if fd < 0:
        raise FileExistsError("no fresh temporary name in the cache directory")
    try:
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        # Replaces whatever is at ``name`` — a planted link included — never its target.
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except OSError:
        _unlink(directory, temporary)
        raise


def _own_entry(name: str) -> bool:
    return len(name) == 64 + len(_SUFFIX) and name.endswith(_SUFFIX) and _HEX.issuperset(name[:64])


def _own_temporary(name: str) -> bool:
    return name.startswith(_TEMP_PREFIX) and name.endswith(_TEMP_SUFFIX)


def _prune(directory: int) -> None:
    """Keep the newest entries; remove stale temporary files. Only this cache's own names."""
    entries = []
    now = time.time()
    with os.scandir(directory) as listing:
        for item in listing:
            try:
                status = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if _own_entry(item.name):
                entries.append((status.st_mtime, item.name))
            elif _own_temporary(item.name) and now - status.st_mtime > _STALE_TEMP_SECONDS:
                _unlink(directory, item.name)
    entries.sort(reverse=True)
    for _, name in entries[_KEEP:]:
        _unlink(directory, name)


def _unlink(directory: int, name: str) -> None:
    # Not contextlib.suppress: importing contextlib costs this path ~3 ms.
    try:  # noqa: SIM105
        os.unlink(name, dir_fd=directory)
    except OSError:
        pass


def render_text(listing: Listing) -> str:
    """Return the text output: aligned columns slug, module, root."""
    slugs, modules, roots = listing
    if not slugs:
        return ""
    count = len(slugs)
    # map() over str.ljust: ~30% faster than %-formatting each line (13,000 lines: 2.1 ms).
    slug_cells = map(str.ljust, slugs, [max(map(len, slugs))] * count)
    module_cells = map(str.ljust, modules, [max(map(len, modules))] * count)
    return "\n".join(map("  ".join, zip(slug_cells, module_cells, roots, strict=True))) + "\n"


def render_json(manifest: str, listing: Listing) -> str:
    """Return the JSON output (design section 7)."""
    import json  # noqa: PLC0415 - not on the cheap text path

    slugs, modules, roots = listing
    document = {
        "manifest": manifest,
        "task_classes": [
            {"slug": slug, "module": module, "root": root}
            for slug, module, root in zip(slugs, modules, roots, strict=True)
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def _plain_list_options(argv: Sequence[str]) -> tuple[str | None, str, bool] | None:
    """Parse ``list`` with only --manifest, --format text|json and -q; else ``None``."""
    manifest: str | None = None
    fmt = "text"
    quiet = False
    seen_list = False
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "list" and not seen_list:
            seen_list = True
        elif arg in {"-q", "--quiet"}:
            quiet = True
        elif arg == "--manifest" and args:
            manifest = args.pop(0)
        elif arg.startswith("--manifest="):
            manifest = arg.partition("=")[2]
        elif arg == "--format" and args and args[0] in {"text", "json"}:
            fmt = args.pop(0)
        elif arg in {"--format=text", "--format=json"}:
            fmt = arg.partition("=")[2]
        else:
            return None
    if not seen_list or manifest == "":
        return None
    return manifest, fmt, quiet


def fast_list(argv: Sequence[str]) -> int | None:
    """Serve ``codegenie-bench list`` from the cache; ``None`` when the full CLI must run."""
    options = _plain_list_options(argv)
    if options is None:
        return None
    manifest, fmt, _quiet = options
    if manifest is None:
        _, path = find_manifest_path(".")
        if path is None:
            return None
    else:
        path = absolute(manifest)
    try:
        data, _ = read_regular_file(path)
    except (OSError, FileRefused):
        return None  # the full command line reports it
    listing = read_cached(data)
    if listing is None:
        return None
    output = render_json(path, listing) if fmt == "json" else render_text(listing)
    return _write(output)


def _write(output: str) -> int | None:
    """Print ``output``; ``None`` (nothing written) when the full command line must answer."""
    stdout = sys.stdout
    if stdout is None:
        return None  # stdout closed: the full command line decides what that means
    try:
        stdout.write(output)
        stdout.flush()
    except UnicodeEncodeError:
        return None  # nothing written: how to show it in this locale is the CLI's choice
    except BrokenPipeError:
        # The reader stopped (``| head``): end quietly, and let no flush at exit complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        os.close(devnull)
    return 0
