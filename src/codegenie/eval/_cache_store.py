"""Writing the cache of validated manifests: encoding an entry, writing it safely, pruning.

The format and the rules are :mod:`codegenie.eval._cache`'s; this half is
imported only when an entry is written, so that reading stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from codegenie.eval import _cache
from codegenie.eval._cache import (
    _KEY_NAME,
    _KEY_SIZE,
    _MAGIC,
    _O_CLOEXEC,
    _O_NOFOLLOW,
    _SUFFIX,
    Positions,
    _checksum,
    _open_directory,
    _read_key,
    _section_hash,
    digest,
)

__all__ = ("BLOCK_SIZE", "GRAMS_FROM", "store")

#: Entries per sorted block: a lookup reads and checks one block of this many.
BLOCK_SIZE = 256
#: Manifests with at least this many slugs get the bigram index for suggestions;
#: below it, ranking every slug directly takes a few milliseconds.
GRAMS_FROM = 16384

_KEEP = 32  # cache entries kept; older ones are removed when a new one is written
_KEEP_BYTES = 256 * 1024 * 1024  # ... and no more than this in all (the newest is always kept)
_TEMP_PREFIX = "tmp-"
_TEMP_SUFFIX = ".partial"
_STALE_TEMP_SECONDS = 3600.0
_HEX = frozenset("0123456789abcdef")
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
# slug, module, root, then the six positions (see _cache.Positions)
_RECORD = "%s\t%s\t%s\t%d %d %d %d %d %d"


def store(
    data: bytes,
    slugs: Sequence[str],
    modules: Sequence[str],
    roots: Sequence[str],
    positions: Sequence[Positions],
    *,
    schema_version: int,
    globals_: tuple[tuple[int, int], tuple[int, int]],
    text: str,
) -> None:
    """Cache what validating the manifest whose bytes are ``data`` found; never raise.

    ``slugs``, ``modules``, ``roots`` and ``positions`` describe each declared
    task class, in file order; ``schema_version`` is the manifest's
    ``schema-version`` and ``globals_`` says where it and ``task-classes`` are
    first written; ``text`` is ``list``'s text output.
    The caller vouches that ``data`` validated into exactly these. Does
    nothing for a manifest without slugs, or when the cache directory cannot
    be made private to this user.
    """
    if not slugs or not _cache._SUPPORTED:
        return
    if not len(slugs) == len(modules) == len(roots) == len(positions):
        return
    try:
        directory = _open_directory(create=True)
    except OSError:
        return
    if directory is None:
        return
    try:
        key = _read_key(directory) or _new_key(directory)
        manifest_digest = digest(data)
        globals_line = " ".join(map(str, (schema_version, *globals_[0], *globals_[1])))
        entry = _encode(
            manifest_digest,
            key,
            (slugs, modules, roots, positions),
            globals_line=globals_line,
            text=text,
        )
        _write_into(directory, manifest_digest + _SUFFIX, entry)
        _prune(directory)
    except (OSError, ValueError):
        pass
    finally:
        os.close(directory)


def _encode(
    manifest_digest: str,
    key: bytes,
    columns: tuple[Sequence[str], Sequence[str], Sequence[str], Sequence[Positions]],
    *,
    globals_line: str,
    text: str,
) -> bytes:
    """Return the bytes of the entry: header, table of contents, sections."""
    slugs, modules, roots, positions = columns
    body: list[bytes] = []
    size = 0

    def add(section: bytes) -> str:
        nonlocal size
        span = f"{size},{len(section)},{_section_hash(section)}"
        body.append(section)
        size += len(section)
        return span

    toc = {
        "count": str(len(slugs)),
        "globals": globals_line,
        "text": add(text.encode()),
        "slugs": add("\n".join(slugs).encode()),
    }
    # One record per slug, formatted at C speed, then sorted by slug into blocks.
    rows = zip(slugs, modules, roots, *zip(*positions, strict=True), strict=True)
    records = list(map(_RECORD.__mod__, rows))
    order = sorted(range(len(slugs)), key=slugs.__getitem__)
    fences, blocks = [], []
    for start in range(0, len(order), BLOCK_SIZE):
        chosen = order[start : start + BLOCK_SIZE]
        fences.append(slugs[chosen[0]])
        blocks.append(add("\n".join(map(records.__getitem__, chosen)).encode()))
    toc["fences"] = " ".join(fences)
    toc["blocks"] = " ".join(blocks)
    if len(slugs) >= GRAMS_FROM:
        directory = []
        for gram, kind, section in _grams(slugs):
            offset, length, expected = add(section).split(",")
            directory.append(f"{gram} {kind} {offset} {length} {expected}")
        toc["grams"] = add("\n".join(directory).encode()) if directory else "-"
    contents = "\n".join(f"{name} {value}" for name, value in toc.items()).encode()
    toc_size = str(len(contents)).encode()
    signed = b"\n".join((_MAGIC.encode(), manifest_digest.encode(), toc_size, contents))
    head = b"\n".join(
        (_MAGIC.encode(), manifest_digest.encode(), _checksum(key, signed).encode(), toc_size)
    )
    return b"".join([head, b"\n", contents, *body])


def _grams(slugs: Sequence[str]) -> list[tuple[str, str, bytes]]:
    """Return, per character pair, the slugs holding it: a bit set, or a list when sparse.

    A bit set costs ``len(slugs) / 8`` bytes; a list of 4-byte indices is
    kept instead when it is smaller.
    """
    postings: dict[str, list[int]] = {}
    for index, slug in enumerate(slugs):
        for pair in {slug[i : i + 2] for i in range(len(slug) - 1)}:
            found = postings.get(pair)
            if found is None:
                postings[pair] = [index]
            else:
                found.append(index)
    count = len(slugs)
    grams = []
    for pair in sorted(postings):
        indices = postings[pair]
        if len(indices) * 32 >= count:
            bits = bytearray((count + 7) // 8)
            for index in indices:
                bits[index >> 3] |= 1 << (index & 7)
            grams.append((pair, "bits", bytes(bits)))
        else:
            encoded = b"".join(index.to_bytes(4, "little") for index in indices)
            grams.append((pair, "list", encoded))
    return grams


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
    """Keep the newest entries (32, 256 MiB); remove stale temporary files. Only our own names."""
    import time  # noqa: PLC0415 - only when pruning

    entries = []
    now = time.time()
    with os.scandir(directory) as listing:
        for item in listing:
            try:
                status = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if _own_entry(item.name):
                entries.append((status.st_mtime, status.st_size, item.name))
            elif _own_temporary(item.name) and now - status.st_mtime > _STALE_TEMP_SECONDS:
                _unlink(directory, item.name)
    entries.sort(reverse=True)
    total = 0
    for kept, (_, size, name) in enumerate(entries):
        total += size
        if kept >= _KEEP or (kept and total > _KEEP_BYTES):
            _unlink(directory, name)


def _unlink(directory: int, name: str) -> None:
    # Not contextlib.suppress: importing contextlib costs this path ~3 ms.
    try:  # noqa: SIM105
        os.unlink(name, dir_fd=directory)
    except OSError:
        pass
