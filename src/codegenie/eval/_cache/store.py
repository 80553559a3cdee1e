"""Writing the cache of validated manifests: encoding an entry, writing it safely, pruning.

The format is :mod:`codegenie.eval._cache.entry`'s and the rules
:mod:`codegenie.eval._cache.directory`'s; this is the one writer of manifest
entries, imported only when an entry is written, so that reading stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from codegenie.eval._cache import directory as _directory
from codegenie.eval._cache.directory import (
    checksum,
    hash_hex,
    open_directory,
    prune,
    read_or_make_key,
    write_file,
)
from codegenie.eval._cache.entry import DIRECTORY, MAGIC, SUFFIX, Extra, Positions, digest
from codegenie.eval._cache.listing import Listing, render_text
from codegenie.eval._toml.positions import entry_positions

__all__ = ("BLOCK_SIZE", "GRAMS_FROM", "store", "store_listing")

#: Entries per sorted block: a lookup reads and checks one block of this many.
BLOCK_SIZE = 256
#: Manifests with at least this many slugs get the bigram index for suggestions;
#: below it, ranking every slug directly takes a few milliseconds.
GRAMS_FROM = 16384

_KEEP = 32  # cache entries kept; older ones are removed when a new one is written
_KEEP_BYTES = 256 * 1024 * 1024  # ... and no more than this in all (the newest is always kept)
_HEX = frozenset("0123456789abcdef")
# slug, module, root, then the six positions (see entry.Positions)
_RECORD = "%s\t%s\t%s\t%d %d %d %d %d %d"
# then, tab-separated, each optional key the entry sets: key, line, column, value (see entry.Extra)
_EXTRA = "%s %d %d %s"


def _storable(extras: tuple[Extra, ...]) -> bool:
    """Whether a record can hold ``extras`` and read them back the same (no tab, no newline)."""
    return all(
        " " not in key and "\t" not in value and "\n" not in value for key, _, _, value in extras
    )


def store_listing(
    data: bytes,
    listing: Listing,
    *,
    version: int,
    optional: Sequence[Mapping[str, str]] | None = None,
) -> None:
    """Cache the manifest whose bytes are ``data`` and which validated into ``listing``.

    The caller vouches that ``data`` validated into these slugs, modules and
    roots (in file order), with ``schema-version`` ``version``, and that
    each entry sets exactly the optional keys of ``optional`` (one mapping
    per slug, key to value as text: ``accept`` its codes space-separated;
    ``None``: none sets any). Never raises; does nothing for a manifest
    without slugs, or when the cache directory cannot be made private to
    this user. The positions the cache keeps for error messages are read
    from ``data`` itself (:func:`codegenie.eval._toml.positions.entry_positions`).
    """
    slugs, modules, roots = listing
    if not slugs:
        return
    if optional is not None and len(optional) != len(slugs):
        return
    try:
        version_at, table_at, positions, written = entry_positions(data.decode(), slugs)
    except (UnicodeDecodeError, ValueError):
        return
    extras: list[tuple[Extra, ...]] | None = None
    if optional is not None:
        extras = []
        for keys, at, record in zip(optional, written, positions, strict=True):
            table = (record[0], record[1])
            extras.append(
                tuple((key, *at.get(key, table), value) for key, value in sorted(keys.items()))
            )
    store(
        data,
        slugs,
        modules,
        roots,
        positions,
        schema_version=version,
        globals_=(version_at, table_at),
        text=render_text(listing),
        extras=extras,
    )


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
    extras: Sequence[tuple[Extra, ...]] | None = None,
) -> None:
    """Cache what validating the manifest whose bytes are ``data`` found; never raise.

    ``slugs``, ``modules``, ``roots``, ``positions`` and ``extras`` (the
    optional keys each sets; ``None``: none) describe each declared
    task class, in file order; ``schema_version`` is the manifest's
    ``schema-version`` and ``globals_`` says where it and ``task-classes`` are
    first written; ``text`` is ``list``'s text output.
    The caller vouches that ``data`` validated into exactly these. Does
    nothing for a manifest without slugs, or when the cache directory cannot
    be made private to this user.
    """
    if not slugs or not _directory.SUPPORTED:
        return
    if not len(slugs) == len(modules) == len(roots) == len(positions):
        return
    if extras is not None and (len(extras) != len(slugs) or not all(map(_storable, extras))):
        return
    try:
        directory = open_directory(DIRECTORY, create=True)
    except OSError:
        return
    if directory is None:
        return
    try:
        key = read_or_make_key(directory)
        manifest_digest = digest(data)
        globals_line = " ".join(map(str, (schema_version, *globals_[0], *globals_[1])))
        entry = _encode(
            manifest_digest,
            key,
            (slugs, modules, roots, positions),
            globals_line=globals_line,
            text=text,
            extras=extras,
        )
        write_file(directory, manifest_digest + SUFFIX, entry)
        prune(directory, _own_entry, keep=_KEEP, keep_bytes=_KEEP_BYTES)
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
    extras: Sequence[tuple[Extra, ...]] | None = None,
) -> bytes:
    """Return the bytes of the entry: header, table of contents, sections."""
    slugs, modules, roots, positions = columns
    body: list[bytes] = []
    size = 0

    def add(section: bytes) -> str:
        nonlocal size
        span = f"{size},{len(section)},{hash_hex(section)}"
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
    if extras is not None:
        records = [
            "\t".join([record, *(_EXTRA % extra for extra in optional)])
            for record, optional in zip(records, extras, strict=True)
        ]
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
    signed = b"\n".join((MAGIC.encode(), manifest_digest.encode(), toc_size, contents))
    head = b"\n".join(
        (MAGIC.encode(), manifest_digest.encode(), checksum(key, signed).encode(), toc_size)
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


def _own_entry(name: str) -> bool:
    return len(name) == 64 + len(SUFFIX) and name.endswith(SUFFIX) and _HEX.issuperset(name[:64])
